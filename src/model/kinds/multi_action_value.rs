//! One-pass multi-action-value (MAV, `glimpse.kind = multi_action_value`,
//! `training/README.md`): one row per position, `tokens` int64 `[rows, 78]` (`[0, 77 state
//! tokens]`) and `actions` int64 `[rows, moves]` (the moves' action ids, padded with
//! [`PAD_ACTION`] to the batch's largest move count), output `log_probs` float32
//! `[rows, moves, K]`; an optional `value` output is ignored. Padded slots are discarded.

use super::{action_id, state_row, value_buckets, KindSpec};
use crate::model::backend::{EvalRequest, Evaluated, MoveValue};
use crate::model::buckets::{bucket_centres, bucket_mode, expected_value};
use crate::model::error::ModelError;
use crate::model::session::{Model, PAD_ACTION};

/// The one-pass multi-action-value kind.
pub struct MultiActionValue;

impl KindSpec for MultiActionValue {
    fn name(&self) -> &'static str {
        "multi_action_value"
    }

    fn label(&self) -> &'static str {
        "MultiActionValue"
    }

    fn actions_input(&self) -> bool {
        true
    }

    fn outputs(&self, buckets: Option<usize>) -> Result<(usize, usize), String> {
        value_buckets(buckets)
    }

    fn one_row_per_position(&self) -> bool {
        true
    }

    fn evaluate(&self, model: &mut Model, batch: &[EvalRequest]) -> Result<Evaluated, ModelError> {
        let k = model.info().outputs;
        let m = batch
            .iter()
            .map(|r| r.moves.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let mut tokens = Vec::with_capacity(batch.len() * self.seq_len());
        let mut actions = Vec::with_capacity(batch.len() * m);
        for r in batch {
            tokens.extend(state_row(&r.pos)?);
            for mv in &r.moves {
                actions.push(action_id(mv)?);
            }
            actions.extend(std::iter::repeat_n(PAD_ACTION, m - r.moves.len()));
        }
        let lp = model.run_moves(&tokens, &actions, batch.len(), m)?;
        let centres = bucket_centres(k);
        let values = batch
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (0..r.moves.len())
                    .map(|j| {
                        let at = (i * m + j) * k;
                        let l = &lp[at..at + k];
                        MoveValue {
                            q: expected_value(l, &centres),
                            mode: bucket_mode(l),
                        }
                    })
                    .collect()
            })
            .collect();
        Ok(Evaluated {
            rows: batch.len(),
            values,
        })
    }
}
