//! The evaluator interface as the searches see it ([`crate::model::backend`]), the one layer
//! that belongs to search rather than to the network ([`MopUp`] answers bare-king endings by rule
//! before the network sees them), and [`with_stack`], the one place that puts the layers together
//! for every user of the network (MCTS, searchless, `eval`, `bench`).

use super::endgame::bare_king_value;
pub use crate::model::backend::{EvalRequest, EvalStats, Evaluator, Network, Scores};
use crate::model::cache::{Cached, EvalCache};
use crate::model::{InferenceError, ModelError};
use shakmaty::Position;

/// The layers over the network, chosen from the settings: what [`with_stack`] builds.
pub struct Layers<'c> {
    /// The result cache by position hash (MCTS, UCI `Hash`); `None`: no cache.
    pub cache: Option<&'c mut EvalCache>,
    /// The bare-king rule ([`MopUp`], UCI `MopUp`).
    pub mop_up: bool,
}

impl Layers<'_> {
    /// The network alone (the searchless policy, `eval`, the searchless `bench`).
    pub fn none() -> Layers<'static> {
        Layers {
            cache: None,
            mop_up: false,
        }
    }
}

/// The evaluator stack over `network` (the [`Network`], or a test evaluator): the cache of
/// `layers` (when given) over the bare-king rule (with `layers.mop_up`) over `network`, handed
/// to `f` as one [`Evaluator`]. The layers borrow `network` and the cache, so they live for the
/// call of `f`; the counters (`stats`) and the cache stay with their owners between calls.
pub fn with_stack<R>(
    network: &mut dyn Evaluator,
    layers: Layers<'_>,
    f: impl FnOnce(&mut dyn Evaluator) -> R,
) -> R {
    let mut rule = MopUp::new(network);
    let rules: &mut dyn Evaluator = if layers.mop_up {
        &mut rule
    } else {
        rule.into_inner()
    };
    match layers.cache {
        Some(cache) => f(&mut Cached::new(cache, rules)),
        None => f(rules),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, Chess};

    /// Records batch sizes; Q = 0.5 for every move.
    #[derive(Default)]
    struct Recorder(Vec<usize>);
    impl Evaluator for Recorder {
        fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
            self.0.push(batch.len());
            Ok(batch
                .iter()
                .map(|r| vec![0.5; r.moves.len()].into())
                .collect())
        }
        fn stats(&self) -> EvalStats {
            EvalStats {
                runs: self.0.len() as u64,
                ..EvalStats::default()
            }
        }
    }

    fn request(fen: &str, hash: u64) -> EvalRequest {
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap();
        let moves = pos.legal_moves().into_iter().collect();
        EvalRequest { pos, moves, hash }
    }

    const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
    const KQK: &str = "8/8/8/4k3/8/8/8/KQ6 w - - 0 1";

    #[test]
    fn the_stack_caches_and_applies_the_rule_as_the_layers_say() {
        let mut net = Recorder::default();
        let mut cache = EvalCache::new(1 << 16);
        let batch = [request(START, 7), request(KQK, 8)];
        let layers = Layers {
            cache: Some(&mut cache),
            mop_up: true,
        };
        with_stack(&mut net, layers, |e| {
            assert_eq!(e.probe(7, 20), None);
            let out = e.evaluate(&batch).unwrap();
            assert_eq!(out.len(), 2);
            assert!(out[1].q.iter().any(|&q| q != 0.5), "KQK by the rule");
            assert_eq!(e.probe(7, 20), Some(vec![0.5; 20].into()));
            assert_eq!(e.probe(7, 19), None, "a different move count is a miss");
            assert!(e.hashfull() > 0);
            assert_eq!(e.stats().runs, 1, "the counters are the network's");
        });
        assert_eq!(
            net.0,
            vec![1],
            "only the start position reached the network"
        );
        assert_eq!(cache.len(), 2);
        with_stack(&mut net, Layers::none(), |e| {
            e.evaluate(&batch).unwrap();
            assert_eq!(e.probe(7, 20), None, "no cache layer");
        });
        assert_eq!(net.0, vec![1, 2], "without the rule both reach the network");
    }
}
