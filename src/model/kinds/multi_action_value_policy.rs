//! One-pass multi-action-value net with policy and WDL heads (`glimpse.kind =
//! multi_action_value_policy`, the campaign's nets, `training/glimpse_train/heads.py`): the
//! inputs and `log_probs` of [`super::multi_action_value`] (`tokens` int64 `[rows, 78]`,
//! `actions` int64 `[rows, moves]`, `log_probs` float32 `[rows, moves, K]`), plus
//!
//! - `policy` float32 `[rows, moves]`: raw logits of an Lc0-style attention policy head
//!   (ChessFormer, Monroe 2024, App. A.3); read as the softmax over the row's real moves
//!   ([`MoveValue::prior`]: MCTS priors, the searchless `MoveChoice policy`);
//! - `wdl` float32 `[rows, 3]`: log-probabilities of win/draw/loss for the side to move in the
//!   row's position (Lc0's WDL head; [`Evaluated::wdl`] holds their exponentials: UCI `wdl` of
//!   the searchless info line).
//!
//! An optional `value` output `[rows, K]` is ignored. One ORT run per batch, as MAV.

use super::multi_action_value::Rows;
use super::{value_buckets, BucketsError, Dim, ExtraOutput, KindSpec};
use crate::model::backend::{EvalRequest, Evaluated, MoveValue};
use crate::model::error::ModelError;
use crate::model::inference::Model;

/// The extra outputs: `policy` `[batch, moves]` and `wdl` `[batch, 3]`.
const EXTRA: &[ExtraOutput] = &[
    ExtraOutput {
        name: "policy",
        shape: &[Dim::Batch, Dim::Moves],
    },
    ExtraOutput {
        name: "wdl",
        shape: &[Dim::Batch, Dim::Fixed(3)],
    },
];

/// The one-pass kind with policy and WDL heads.
pub struct MultiActionValuePolicy;

impl KindSpec for MultiActionValuePolicy {
    fn name(&self) -> &'static str {
        "multi_action_value_policy"
    }

    fn label(&self) -> &'static str {
        "MultiActionValuePolicy"
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

    fn extra_outputs(&self) -> &'static [ExtraOutput] {
        EXTRA
    }

    fn evaluate(&self, model: &mut Model, batch: &[EvalRequest]) -> Result<Evaluated, ModelError> {
        let rows = Rows::build(batch)?;
        let out =
            model.run_moves_with(&rows.tokens, &rows.actions, batch.len(), rows.moves, EXTRA)?;
        let (policy, wdl) = (&out.extra[0], &out.extra[1]);
        let values: Vec<Vec<MoveValue>> =
            rows.decode(&out.log_probs, batch, model.info().outputs, Some(policy));
        Ok(Evaluated {
            rows: batch.len(),
            values,
            wdl: wdl
                .chunks_exact(3)
                .map(|w| [w[0].exp(), w[1].exp(), w[2].exp()])
                .collect(),
        })
    }
}
