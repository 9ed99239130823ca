//! State-value (SV, `glimpse.kind = state_value`; Ruoss et al., 2024, 2.2): one row
//! `[0, 77 tokens of the position after the move]` int64 `[rows, 78]` per (position, move), output
//! K bucket log-probs `[rows, K]` for the side to move *after* the move. The mover's value is the
//! reversed distribution's expectation, Q(s, a) = Σ p_k·(1 − c_k), and its mode K − 1 − mode.

use super::{state_row, value_buckets, BucketsError, KindSpec};
use crate::model::backend::{EvalRequest, Evaluated, MoveValue};
use crate::model::buckets::{bucket_centres, bucket_mode, expected_value};
use crate::model::error::ModelError;
use crate::model::inference::Model;
use shakmaty::Position;

/// The state-value kind.
pub struct StateValue;

impl KindSpec for StateValue {
    fn name(&self) -> &'static str {
        "state_value"
    }

    fn label(&self) -> &'static str {
        "StateValue"
    }

    fn outputs(&self, buckets: Option<usize>) -> Result<(usize, usize), BucketsError> {
        value_buckets(buckets)
    }

    fn one_row_per_position(&self) -> bool {
        false
    }

    fn evaluate(&self, model: &mut Model, batch: &[EvalRequest]) -> Result<Evaluated, ModelError> {
        let k = model.info().outputs;
        let rows: usize = batch.iter().map(|r| r.moves.len()).sum();
        let mut tokens = Vec::with_capacity(rows * self.seq_len());
        for r in batch {
            for mv in &r.moves {
                let mut child = r.pos.clone();
                child.play_unchecked(*mv);
                tokens.extend(state_row(&child)?);
            }
        }
        let lp = model.run(&tokens, rows)?;
        // The mover's distribution is the opponent's reversed along the bucket axis.
        let reversed: Vec<f32> = bucket_centres(k).into_iter().rev().collect();
        let mut values = lp.chunks_exact(k).map(|l| MoveValue {
            q: expected_value(l, &reversed),
            mode: k - 1 - bucket_mode(l),
            prior: None,
        });
        let values = batch
            .iter()
            .map(|r| values.by_ref().take(r.moves.len()).collect())
            .collect();
        Ok(Evaluated {
            rows,
            values,
            wdl: Vec::new(),
        })
    }
}
