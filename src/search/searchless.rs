//! Searchless policies (Ruoss et al., 2024, section 2.2): score every legal move in one batched
//! forward pass and play the best. AV: argmax expected win probability (ties → lowest action id);
//! SV: minimise the opponent's value after the move; BC: argmax log-prob over legal moves;
//! MAV (one-pass multi-action-value): as AV, with every legal move scored from one network row.
//! Rules the model lacks: repetition (a move allowing a threefold claim or making a fivefold gets
//! 0.5) and mate in one (always played).
//!
//! Row layouts (see `model::onnx`): AV `[0, 77 tokens of the position, action]` per move; SV
//! `[0, 77 tokens of the position after the move]` per move (its value is the opponent's, so the
//! mover's value is `1 − E`, i.e. the reversed bucket distribution); BC one row
//! `[0, 77 tokens]` whose 1968 log-probs are renormalised (log-softmax) over the legal moves;
//! MAV one row `[0, 77 tokens]` with the legal moves' action ids (ascending) as the `actions` input,
//! giving K bucket log-probs per move in one ORT run.
//! The FEN fed to the tokenizer is python-chess's `board.fen()` ([`crate::game::model_fen`]).

use crate::game::{model_fen, standard_uci, Game};
use crate::model::actions::uci_to_action;
use crate::model::buckets::{bucket_centres, bucket_mode, expected_value};
use crate::model::{Model, ModelError, ModelKind};
use shakmaty::{Chess, Move, Position};

/// Win probability given to a move after which the game would be a repetition draw.
pub const REPETITION_VALUE: f32 = 0.5;

/// One legal move's score.
#[derive(Debug, Clone)]
pub struct MoveScore {
    /// The move.
    pub mv: Move,
    /// UCI string for the GUI (Chess960-aware).
    pub uci: String,
    /// Action id in the 1968 table (standard notation).
    pub action: u16,
    /// Win probability for the side to move in [0, 1] after rules (repetition → 0.5, mate → 1.0).
    /// For BC this is the renormalised policy probability. Exactly 1.0 marks a mate in one
    /// (or, for BC, a move with all the probability mass).
    pub win_prob: f32,
    /// The network's own value before rules.
    pub raw_win_prob: f32,
    /// Index of the most likely bucket (AV/SV); for BC, 0.
    pub bucket_mode: usize,
}

/// Every legal move scored, in ascending action-id order.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Scores in ascending action id.
    pub moves: Vec<MoveScore>,
    /// Network rows evaluated (UCI `nodes`): one per move for AV and SV, one per position for BC
    /// and MAV.
    pub evals: usize,
}

impl Analysis {
    /// Index (into `moves`) of the argmax of `win_prob`, first maximum in action order; `None` when
    /// there are no legal moves.
    pub fn best(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, m) in self.moves.iter().enumerate() {
            match best {
                Some(b) if self.moves[b].win_prob >= m.win_prob => {}
                _ => best = Some(i),
            }
        }
        best
    }

    /// Indices into `moves` sorted by descending `win_prob` (ties in action order), e.g. for
    /// MultiPV output.
    pub fn ranking(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.moves.len()).collect();
        idx.sort_by(|&a, &b| {
            self.moves[b]
                .win_prob
                .partial_cmp(&self.moves[a].win_prob)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        idx
    }
}

/// log-softmax over `values` (stable), in f64.
fn log_softmax(values: &[f32]) -> Vec<f64> {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = values.iter().map(|&v| (v as f64 - max).exp()).sum();
    let lse = max + sum.ln();
    values.iter().map(|&v| v as f64 - lse).collect()
}

/// Scores all legal moves of the game's current position with one batched ORT run.
/// `searchmoves`, if non-empty, restricts the moves scored (moves not legal here are ignored; if
/// none is legal, all legal moves are scored).
///
/// # Errors
/// Tokenizer or ORT failure.
pub fn analyse(
    model: &mut Model,
    game: &Game,
    searchmoves: &[Move],
) -> Result<Analysis, ModelError> {
    let pos = game.position();
    let mut moves: Vec<Move> = game.legal_moves();
    if !searchmoves.is_empty() && moves.iter().any(|m| searchmoves.contains(m)) {
        moves.retain(|m| searchmoves.contains(m));
    }
    let mut scored: Vec<(u16, Move)> = moves
        .into_iter()
        .map(|m| {
            let uci = standard_uci(&m);
            uci_to_action(&uci)
                .map(|a| (a, m))
                .ok_or_else(|| ModelError(format!("move {uci} is not in the action table")))
        })
        .collect::<Result<_, _>>()?;
    scored.sort_by_key(|&(a, _)| a);
    if scored.is_empty() {
        return Ok(Analysis {
            moves: Vec::new(),
            evals: 0,
        });
    }
    let children: Vec<Chess> = scored
        .iter()
        .map(|&(_, m)| {
            let mut c = pos.clone();
            c.play_unchecked(m);
            c
        })
        .collect();

    let info = model.info().clone();
    let n = scored.len();
    // (raw win probability, bucket mode) per move, and rows evaluated.
    let (raw, evals): (Vec<(f32, usize)>, usize) = match info.kind {
        ModelKind::ActionValue => {
            // `[0, 77 tokens, action]`: tokenize once, then set the last token per move.
            let mut base = model.row(&model_fen(pos), Some(0))?;
            let mut tokens = Vec::with_capacity(n * info.seq_len);
            for &(a, _) in &scored {
                *base.last_mut().expect("AV rows are 79 long") = i64::from(a);
                tokens.extend_from_slice(&base);
            }
            let out = model.run(&tokens, n)?;
            let centres = bucket_centres(info.outputs);
            let raw = out
                .chunks_exact(info.outputs)
                .map(|lp| (expected_value(lp, &centres), bucket_mode(lp)))
                .collect();
            (raw, n)
        }
        ModelKind::MultiActionValue => {
            // One row: `[0, 77 tokens]` and the n action ids → n × K log-probs.
            let row = model.row(&model_fen(pos), None)?;
            let actions: Vec<i64> = scored.iter().map(|&(a, _)| i64::from(a)).collect();
            let out = model.run_moves(&row, &actions, 1, n)?;
            let centres = bucket_centres(info.outputs);
            let raw = out
                .chunks_exact(info.outputs)
                .map(|lp| (expected_value(lp, &centres), bucket_mode(lp)))
                .collect();
            (raw, 1)
        }
        ModelKind::StateValue => {
            let mut tokens = Vec::with_capacity(n * info.seq_len);
            for c in &children {
                tokens.extend(model.row(&model_fen(c), None)?);
            }
            let out = model.run(&tokens, n)?;
            // The mover's distribution is the opponent's reversed along the bucket axis.
            let reversed: Vec<f32> = bucket_centres(info.outputs).into_iter().rev().collect();
            let raw = out
                .chunks_exact(info.outputs)
                .map(|lp| {
                    (
                        expected_value(lp, &reversed),
                        info.outputs - 1 - bucket_mode(lp),
                    )
                })
                .collect();
            (raw, n)
        }
        ModelKind::BehavioralCloning => {
            let row = model.row(&model_fen(pos), None)?;
            let out = model.run(&row, 1)?;
            let legal: Vec<f32> = scored.iter().map(|&(a, _)| out[a as usize]).collect();
            let raw = log_softmax(&legal)
                .into_iter()
                .map(|lp| (lp.exp() as f32, 0))
                .collect();
            (raw, 1)
        }
    };

    let repetition = match info.kind {
        ModelKind::BehavioralCloning => vec![false; n],
        _ => game.moves_allowing_repetition(&scored.iter().map(|&(_, m)| m).collect::<Vec<_>>()),
    };
    let moves = scored
        .iter()
        .zip(&children)
        .zip(raw)
        .zip(repetition)
        .map(|((((action, mv), child), (raw_win_prob, mode)), rep)| {
            let win_prob = if child.is_checkmate() {
                1.0
            } else if rep {
                REPETITION_VALUE
            } else {
                raw_win_prob
            };
            MoveScore {
                mv: *mv,
                uci: game.move_to_uci(mv),
                action: *action,
                win_prob,
                raw_win_prob,
                bucket_mode: mode,
            }
        })
        .collect();
    Ok(Analysis { moves, evals })
}

/// Samples a move index from softmax(win_prob / temperature) with a uniform draw `u` in [0, 1);
/// `temperature <= 0` gives [`Analysis::best`]. A mating move is always chosen if present.
pub fn choose(analysis: &Analysis, temperature: f64, u: f64) -> Option<usize> {
    let moves = &analysis.moves;
    if moves.is_empty() {
        return None;
    }
    if let Some(i) = moves.iter().position(|m| m.win_prob >= 1.0) {
        return Some(i);
    }
    if temperature.is_nan() || temperature <= 0.0 {
        return analysis.best();
    }
    let max = moves
        .iter()
        .map(|m| m.win_prob as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = moves
        .iter()
        .map(|m| ((m.win_prob as f64 - max) / temperature).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return analysis.best();
    }
    let target = u.clamp(0.0, 1.0) * total;
    let mut acc = 0.0;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        if target < acc {
            return Some(i);
        }
    }
    Some(moves.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Role, Square};

    fn score(action: u16, win_prob: f32) -> MoveScore {
        MoveScore {
            mv: Move::Normal {
                role: Role::Knight,
                from: Square::G1,
                capture: None,
                to: Square::F3,
                promotion: None,
            },
            uci: "g1f3".into(),
            action,
            win_prob,
            raw_win_prob: win_prob,
            bucket_mode: 0,
        }
    }

    #[test]
    fn best_takes_first_maximum() {
        let a = Analysis {
            moves: vec![score(1, 0.2), score(5, 0.7), score(9, 0.7), score(10, 0.1)],
            evals: 4,
        };
        assert_eq!(a.best(), Some(1));
        assert_eq!(a.ranking(), vec![1, 2, 0, 3]);
        assert_eq!(choose(&a, 0.0, 0.99), Some(1));
        let empty = Analysis {
            moves: vec![],
            evals: 0,
        };
        assert_eq!(empty.best(), None);
        assert_eq!(choose(&empty, 1.0, 0.5), None);
    }

    #[test]
    fn sampling_follows_the_softmax() {
        let a = Analysis {
            moves: vec![score(1, 0.5), score(2, 0.5)],
            evals: 2,
        };
        assert_eq!(choose(&a, 1.0, 0.0), Some(0));
        assert_eq!(choose(&a, 1.0, 0.49), Some(0));
        assert_eq!(choose(&a, 1.0, 0.51), Some(1));
        assert_eq!(choose(&a, 1.0, 0.999), Some(1));
        // A very low temperature is (numerically) the argmax.
        let b = Analysis {
            moves: vec![score(1, 0.40), score(2, 0.60)],
            evals: 2,
        };
        assert_eq!(choose(&b, 0.005, 0.5), Some(1));
        // Mate in one wins regardless of the draw.
        let c = Analysis {
            moves: vec![score(1, 0.9), score(2, 1.0)],
            evals: 2,
        };
        assert_eq!(choose(&c, 10.0, 0.0), Some(1));
    }

    #[test]
    fn log_softmax_normalises() {
        let l = log_softmax(&[1.0, 2.0, 3.0]);
        let s: f64 = l.iter().map(|x| x.exp()).sum();
        assert!((s - 1.0).abs() < 1e-12);
        assert!(l[2] > l[1] && l[1] > l[0]);
    }
}
