//! TensorRT optimisation profile of a model's dynamic inputs.
//!
//! Without explicit profile shapes, ONNX Runtime's TensorRT provider builds its engine for the first
//! input shapes it meets and builds it again (seconds to minutes, mid-game) whenever a later input falls
//! outside the range seen so far: each new number of legal moves or of MCTS rows could stall the clock.
//! Glimpse therefore gives one profile that covers every shape the engine sends (ONNX Runtime docs,
//! "TensorRT Execution Provider", `trt_profile_min_shapes` / `_opt_` / `_max_`): the batch dimension
//! from 1 row to [`MAX_ROWS`] (the `MinibatchSize` maximum), every other dynamic dimension (the
//! `actions` input's moves) from 1 to [`MAX_MOVES`], which is more than the 218 legal moves a chess
//! position can have. The optimum is the MCTS default batch ([`OPT_ROWS`]) at a middlegame's move
//! count ([`OPT_MOVES`]).

/// Most rows in one network run: the `MinibatchSize` option's maximum.
pub const MAX_ROWS: i64 = 1024;
/// Rows TensorRT tunes for: the default `MinibatchSize`.
pub const OPT_ROWS: i64 = 16;
/// Most entries of a non-batch dynamic dimension (moves per row; a position has at most 218).
pub const MAX_MOVES: i64 = 256;
/// Moves per row TensorRT tunes for (a typical middlegame count).
pub const OPT_MOVES: i64 = 40;

/// The three profile strings, in ONNX Runtime's `name:AxB,name:CxD` form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// `trt_profile_min_shapes`.
    pub min: String,
    /// `trt_profile_opt_shapes`.
    pub opt: String,
    /// `trt_profile_max_shapes`.
    pub max: String,
}

/// The profile for inputs given as `(name, dims)`, dims ≤ 0 dynamic (dimension 0 is the batch). `None`
/// when no input has a dynamic dimension (nothing to profile). ONNX Runtime requires every dynamic
/// input to be named once any is, so all of them are.
pub fn for_inputs(inputs: &[(String, Vec<i64>)]) -> Option<Profile> {
    let dynamic: Vec<_> = inputs
        .iter()
        .filter(|(_, dims)| dims.iter().any(|&d| d <= 0))
        .collect();
    if dynamic.is_empty() {
        return None;
    }
    let shapes = |rows: i64, moves: i64| {
        dynamic
            .iter()
            .map(|(name, dims)| {
                let dims: Vec<String> = dims
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| match (d > 0, i) {
                        (true, _) => d,
                        (false, 0) => rows,
                        (false, _) => moves,
                    })
                    .map(|d| d.to_string())
                    .collect();
                format!("{name}:{}", dims.join("x"))
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    Some(Profile {
        min: shapes(1, 1),
        opt: shapes(OPT_ROWS, OPT_MOVES),
        max: shapes(MAX_ROWS, MAX_MOVES),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, dims: &[i64]) -> (String, Vec<i64>) {
        (name.to_string(), dims.to_vec())
    }

    #[test]
    fn one_pass_net_gets_rows_and_moves_ranges_with_fixed_dims_kept() {
        let p = for_inputs(&[input("tokens", &[-1, 78]), input("actions", &[-1, -1])]).unwrap();
        assert_eq!(p.min, "tokens:1x78,actions:1x1");
        assert_eq!(p.opt, "tokens:16x78,actions:16x40");
        assert_eq!(p.max, "tokens:1024x78,actions:1024x256");
    }

    #[test]
    fn static_inputs_are_left_out_and_all_static_means_no_profile() {
        let p = for_inputs(&[input("tokens", &[-1, 79]), input("bias", &[3])]).unwrap();
        assert_eq!(p.max, "tokens:1024x79");
        assert_eq!(for_inputs(&[input("tokens", &[1, 77])]), None);
        assert_eq!(for_inputs(&[]), None);
    }

    #[test]
    fn max_moves_covers_the_most_legal_moves_of_any_position() {
        use shakmaty::{fen::Fen, CastlingMode, Chess, Position};
        // The known position with 218 legal moves, the most any chess position has.
        let fen: Fen = "3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1"
            .parse()
            .unwrap();
        let pos: Chess = fen.into_position(CastlingMode::Standard).unwrap();
        assert_eq!(pos.legal_moves().len(), 218);
        assert!(pos.legal_moves().len() as i64 <= MAX_MOVES);
    }
}
