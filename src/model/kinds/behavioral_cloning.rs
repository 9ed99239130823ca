//! Behavioural cloning (BC, `glimpse.kind = behavioral_cloning`; Ruoss et al., 2024): one row
//! `[0, 77 state tokens]` int64 `[rows, 78]` per position, output 1968 action log-probs
//! `[rows, 1968]`, renormalised (log-softmax) over the requested moves. `glimpse.buckets` is 0 or
//! absent. A policy, not a value: [`KindSpec::has_value`] is false, so MCTS refuses it and the
//! repetition rule does not apply.

use super::{action_id, state_row, BucketsError, KindSpec};
use crate::model::actions::NUM_ACTIONS;
use crate::model::backend::{EvalRequest, Evaluated, MoveValue};
use crate::model::error::ModelError;
use crate::model::inference::Model;

/// The behavioural-cloning kind.
pub struct BehavioralCloning;

/// log-softmax over `values` (stable), in f64.
pub fn log_softmax(values: &[f32]) -> Vec<f64> {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = values.iter().map(|&v| (v as f64 - max).exp()).sum();
    let lse = max + sum.ln();
    values.iter().map(|&v| v as f64 - lse).collect()
}

impl KindSpec for BehavioralCloning {
    fn name(&self) -> &'static str {
        "behavioral_cloning"
    }

    fn label(&self) -> &'static str {
        "BehavioralCloning"
    }

    fn outputs(&self, buckets: Option<usize>) -> Result<(usize, usize), BucketsError> {
        match buckets.unwrap_or(0) {
            0 => Ok((0, NUM_ACTIONS)),
            declared => Err(BucketsError::Fixed {
                kind: self.name(),
                declared,
                expected: 0,
            }),
        }
    }

    fn one_row_per_position(&self) -> bool {
        true
    }

    fn has_value(&self) -> bool {
        false
    }

    fn evaluate(&self, model: &mut Model, batch: &[EvalRequest]) -> Result<Evaluated, ModelError> {
        let mut tokens = Vec::with_capacity(batch.len() * self.seq_len());
        for r in batch {
            tokens.extend(state_row(&r.pos)?);
        }
        let out = model.run(&tokens, batch.len())?;
        let mut values = Vec::with_capacity(batch.len());
        for (r, logits) in batch.iter().zip(out.chunks_exact(NUM_ACTIONS)) {
            let legal = r
                .moves
                .iter()
                .map(|mv| action_id(mv).map(|a| logits[a as usize]))
                .collect::<Result<Vec<f32>, _>>()?;
            values.push(
                log_softmax(&legal)
                    .into_iter()
                    .map(|lp| MoveValue {
                        q: lp.exp() as f32,
                        mode: 0,
                        prior: Some(lp.exp() as f32),
                    })
                    .collect(),
            );
        }
        Ok(Evaluated {
            rows: batch.len(),
            values,
            wdl: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_softmax_normalises() {
        let l = log_softmax(&[1.0, 2.0, 3.0]);
        let s: f64 = l.iter().map(|x| x.exp()).sum();
        assert!((s - 1.0).abs() < 1e-12);
        assert!(l[2] > l[1] && l[1] > l[0]);
    }
}
