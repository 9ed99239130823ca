//! Action-value (AV, `glimpse.kind = action_value`; Ruoss et al., 2024): one row
//! `[0, 77 state tokens, action]` int64 `[rows, 79]` per (position, move), output K bucket
//! log-probs `[rows, K]`; Q(s, a) = Σ softmax(log-probs)·centres.

use super::{action_id, state_row, value_buckets, BucketsError, KindSpec};
use crate::model::backend::{EvalRequest, Evaluated, MoveValue};
use crate::model::buckets::{bucket_centres, bucket_mode, expected_value};
use crate::model::error::ModelError;
use crate::model::inference::Model;
use crate::model::tokenizer::STATE_TOKENS;

/// The action-value kind.
pub struct ActionValue;

impl KindSpec for ActionValue {
    fn name(&self) -> &'static str {
        "action_value"
    }

    fn label(&self) -> &'static str {
        "ActionValue"
    }

    fn seq_len(&self) -> usize {
        STATE_TOKENS + 2
    }

    fn outputs(&self, buckets: Option<usize>) -> Result<(usize, usize), BucketsError> {
        value_buckets(buckets)
    }

    fn one_row_per_position(&self) -> bool {
        false
    }

    fn row(&self, mut state: Vec<i64>, action: Option<u16>) -> Vec<i64> {
        state.push(i64::from(action.unwrap_or(0)));
        state
    }

    fn evaluate(&self, model: &mut Model, batch: &[EvalRequest]) -> Result<Evaluated, ModelError> {
        let k = model.info().outputs;
        let rows: usize = batch.iter().map(|r| r.moves.len()).sum();
        let mut tokens = Vec::with_capacity(rows * self.seq_len());
        for r in batch {
            // Tokenize once, then set the last token per move.
            let mut base = state_row(&r.pos)?;
            base.push(0);
            let last = base.len() - 1;
            for mv in &r.moves {
                base[last] = action_id(mv)?;
                tokens.extend_from_slice(&base);
            }
        }
        let lp = model.run(&tokens, rows)?;
        let centres = bucket_centres(k);
        let mut values = lp.chunks_exact(k).map(|l| MoveValue {
            q: expected_value(l, &centres),
            mode: bucket_mode(l),
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
