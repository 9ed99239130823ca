//! The batch-splitting layer of the backend: a wrapper that runs a batch larger than the
//! backend's maximum as several smaller ones (Lc0's batch-splitting meta-backend), so that a GPU
//! provider with a fixed maximum batch, or a memory limit, never sees more rows than it takes.

use super::backend::{EvalRequest, EvalStats, Evaluator, Scores};
use super::error::ModelError;

/// An [`Evaluator`] that passes at most `max_positions` requests per call to `inner`.
pub struct SplitBatches<'a> {
    inner: &'a mut dyn Evaluator,
    max_positions: usize,
}

impl<'a> SplitBatches<'a> {
    /// Wraps `inner`; `max_positions` is clamped to at least 1.
    pub fn new(inner: &'a mut dyn Evaluator, max_positions: usize) -> SplitBatches<'a> {
        SplitBatches {
            inner,
            max_positions: max_positions.max(1),
        }
    }
}

impl Evaluator for SplitBatches<'_> {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        let mut out = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(self.max_positions) {
            out.extend(self.inner.evaluate(chunk)?);
        }
        Ok(out)
    }

    fn stats(&self) -> EvalStats {
        self.inner.stats()
    }

    fn probe(&mut self, hash: u64, n: usize) -> Option<Scores> {
        self.inner.probe(hash, n)
    }

    fn hashfull(&self) -> u32 {
        self.inner.hashfull()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cache::{Cached, EvalCache};
    use shakmaty::{Chess, Position};

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
            EvalStats::default()
        }
    }

    fn request(hash: u64) -> EvalRequest {
        let pos = Chess::default();
        let moves = pos.legal_moves().into_iter().collect();
        EvalRequest { pos, moves, hash }
    }

    #[test]
    fn batches_are_split_and_results_kept_in_order() {
        let mut rec = Recorder::default();
        let batch: Vec<EvalRequest> = (0..7).map(request).collect();
        let out = SplitBatches::new(&mut rec, 3).evaluate(&batch).unwrap();
        assert_eq!(out.len(), 7);
        assert!(out.iter().all(|s| s.q.len() == 20 && s.policy.is_none()));
        assert_eq!(rec.0, vec![3, 3, 1]);
    }

    #[test]
    fn the_cache_layer_stores_and_answers_probes() {
        let mut rec = Recorder::default();
        let mut cache = EvalCache::new(1000);
        let mut cached = Cached::new(&mut cache, &mut rec);
        assert_eq!(cached.probe(7, 20), None);
        cached.evaluate(&[request(7)]).unwrap();
        assert_eq!(cached.probe(7, 20), Some(vec![0.5; 20].into()));
        assert_eq!(
            cached.probe(7, 19),
            None,
            "a different move count is a miss"
        );
        assert!(cached.hashfull() > 0);
        assert_eq!((cache.hits, cache.lookups), (1, 3));
    }

    #[test]
    fn the_cache_keeps_the_priors() {
        let mut cache = EvalCache::new(10_000);
        let scores = Scores {
            q: vec![0.4, 0.6],
            policy: Some(vec![0.25, 0.75]),
        };
        cache.insert(9, &scores);
        assert_eq!(cache.get(9, 2), Some(scores));
        cache.insert(10, &vec![0.5, 0.5].into());
        assert_eq!(cache.get(10, 2).unwrap().policy, None);
    }
}
