//! One-pass multi-action-value (MAV, `glimpse.kind = multi_action_value`,
//! `training/README.md`): one row per position, `tokens` int64 `[rows, 78]` (`[0, 77 state
//! tokens]`) and `actions` int64 `[rows, moves]` (the moves' action ids, padded with
//! [`PAD_ACTION`] to the batch's largest move count), output `log_probs` float32
//! `[rows, moves, K]`; an optional `value` output is ignored. Padded slots are discarded.

use super::{action_id, state_row, value_buckets, BucketsError, KindSpec};
use crate::model::backend::{EvalRequest, Evaluated, MoveValue};
use crate::model::buckets::{bucket_centres, bucket_mode, expected_value};
use crate::model::error::ModelError;
use crate::model::inference::{Model, PAD_ACTION};
use crate::model::tokenizer::STATE_TOKENS;

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

    fn outputs(&self, buckets: Option<usize>) -> Result<(usize, usize), BucketsError> {
        value_buckets(buckets)
    }

    fn one_row_per_position(&self) -> bool {
        true
    }

    fn evaluate(&self, model: &mut Model, batch: &[EvalRequest]) -> Result<Evaluated, ModelError> {
        let rows = Rows::build(batch)?;
        let lp = model.run_moves(&rows.tokens, &rows.actions, batch.len(), rows.moves)?;
        Ok(Evaluated {
            rows: batch.len(),
            values: rows.decode(&lp, batch, model.info().outputs, None),
            wdl: Vec::new(),
        })
    }
}

/// The two inputs of a one-pass batch: `tokens` `[rows, 78]` and `actions` `[rows, moves]`
/// (padded with [`PAD_ACTION`] to the batch's largest move count `moves`).
pub(super) struct Rows {
    pub tokens: Vec<i64>,
    pub actions: Vec<i64>,
    pub moves: usize,
}

impl Rows {
    /// The inputs for `batch`.
    ///
    /// # Errors
    /// A position that cannot be tokenized or a move outside the action table.
    pub fn build(batch: &[EvalRequest]) -> Result<Rows, ModelError> {
        let m = batch
            .iter()
            .map(|r| r.moves.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let mut tokens = Vec::with_capacity(batch.len() * (STATE_TOKENS + 1));
        let mut actions = Vec::with_capacity(batch.len() * m);
        for r in batch {
            tokens.extend(state_row(&r.pos)?);
            for mv in &r.moves {
                actions.push(action_id(mv)?);
            }
            actions.extend(std::iter::repeat_n(PAD_ACTION, m - r.moves.len()));
        }
        Ok(Rows {
            tokens,
            actions,
            moves: m,
        })
    }

    /// One [`MoveValue`] per requested move from `log_probs` `[rows, moves, k]`; with `policy`
    /// logits `[rows, moves]`, each move's prior is the softmax over the request's real moves
    /// (padding excluded).
    pub fn decode(
        &self,
        lp: &[f32],
        batch: &[EvalRequest],
        k: usize,
        policy: Option<&[f32]>,
    ) -> Vec<Vec<MoveValue>> {
        let (m, centres) = (self.moves, bucket_centres(k));
        batch
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let n = r.moves.len();
                let priors = policy.map(|p| softmax(&p[i * m..i * m + n]));
                (0..n)
                    .map(|j| {
                        let at = (i * m + j) * k;
                        let l = &lp[at..at + k];
                        MoveValue {
                            q: expected_value(l, &centres),
                            mode: bucket_mode(l),
                            prior: priors.as_ref().map(|p| p[j]),
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

/// Softmax of `logits` (max-subtracted; an empty slice gives an empty vector).
pub(super) fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = logits.iter().map(|&x| (x - max).exp()).collect();
    let total: f32 = e.iter().sum();
    e.into_iter().map(|x| x / total).collect()
}
