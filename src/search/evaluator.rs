//! The evaluator interface as the searches see it ([`crate::model::backend`]) and the one layer
//! that belongs to search rather than to the network: [`MopUp`] answers bare-king endings by rule
//! before the network sees them.

use super::endgame::bare_king_value;
pub use crate::model::backend::{EvalRequest, EvalStats, Evaluator, Network, Scores};
use crate::model::{InferenceError, ModelError};
use shakmaty::Position;

/// An [`Evaluator`] that answers bare-king endings by the rule of
/// [`crate::search::endgame::bare_king_value`] (Q(s, a) = 1 − value of the position after a)
/// and passes every other position to `inner` in one call.
pub struct MopUp<'e> {
    inner: &'e mut dyn Evaluator,
    /// Positions answered by the rule.
    pub by_rule: u64,
}

impl<'e> MopUp<'e> {
    /// Wraps `inner`.
    pub fn new(inner: &'e mut dyn Evaluator) -> MopUp<'e> {
        MopUp { inner, by_rule: 0 }
    }

    /// The wrapped evaluator (to search without the rule).
    pub fn into_inner(self) -> &'e mut dyn Evaluator {
        self.inner
    }
}

impl Evaluator for MopUp<'_> {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        let mut out: Vec<Option<Scores>> = Vec::with_capacity(batch.len());
        let mut forward = Vec::new();
        for r in batch {
            if bare_king_value(&r.pos).is_some() {
                self.by_rule += 1;
                let q: Vec<f32> = r
                    .moves
                    .iter()
                    .map(|mv| {
                        let mut child = r.pos.clone();
                        child.play_unchecked(*mv);
                        // Not a bare-king ending any more (the piece was taken): a draw by
                        // material, which the search scores by the rules anyway.
                        bare_king_value(&child).map_or(0.5, |v| 1.0 - v)
                    })
                    .collect();
                out.push(Some(q.into()));
            } else {
                out.push(None);
                forward.push(r.clone());
            }
        }
        let mut net = self.inner.evaluate(&forward)?.into_iter();
        out.into_iter()
            .map(|o| match o {
                Some(q) => Ok(q),
                None => net
                    .next()
                    .ok_or(ModelError::Inference(InferenceError::TooFewResults)),
            })
            .collect()
    }

    fn stats(&self) -> EvalStats {
        self.inner.stats()
    }
}
