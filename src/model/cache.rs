//! The cache layer of the backend: network results by position hash within a byte budget
//! (UCI `Hash`, MB), as a wrapper around any [`Evaluator`].
//!
//! Ownership: the [`EvalCache`] outlives searches (MCTS keeps it between moves; `ucinewgame`
//! clears it); a [`Cached`] evaluator borrows it and the inner evaluator for one search.

use super::backend::{EvalRequest, EvalStats, Evaluator, Scores};
use super::error::ModelError;
use std::collections::HashMap;

/// Network results by position hash, within a byte budget. When full it is cleared (the tree
/// keeps what the current search needs).
#[derive(Debug, Default)]
pub struct EvalCache {
    map: HashMap<u64, Entry>,
    bytes: usize,
    budget: usize,
    /// Lookups that found an entry.
    pub hits: u64,
    /// Lookups.
    pub lookups: u64,
}

/// One stored result: Q per move and, from a net with a policy head, the priors.
#[derive(Debug)]
struct Entry {
    q: Box<[f32]>,
    policy: Option<Box<[f32]>>,
}

/// Approximate bytes an entry with `n` values (and priors, when `policy`) takes.
fn entry_bytes(n: usize, policy: bool) -> usize {
    64 + 4 * n * if policy { 2 } else { 1 }
}

impl EvalCache {
    /// An empty cache of at most `budget_bytes`.
    pub fn new(budget_bytes: usize) -> EvalCache {
        EvalCache {
            budget: budget_bytes,
            ..EvalCache::default()
        }
    }

    /// Changes the budget (clears if the content no longer fits).
    pub fn set_budget(&mut self, budget_bytes: usize) {
        self.budget = budget_bytes;
        if self.bytes > self.budget {
            self.clear();
        }
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }

    /// The scores stored for `hash` if they have `n` moves (counted as a lookup).
    pub fn get(&mut self, hash: u64, n: usize) -> Option<Scores> {
        self.lookups += 1;
        let found = self.map.get(&hash).filter(|v| v.q.len() == n);
        if found.is_some() {
            self.hits += 1;
        }
        found.map(|e| Scores {
            q: e.q.to_vec(),
            policy: e.policy.as_deref().map(<[f32]>::to_vec),
        })
    }

    /// Stores `scores` for `hash` (clears first when the budget would be exceeded).
    pub fn insert(&mut self, hash: u64, scores: &Scores) {
        let cost = entry_bytes(scores.q.len(), scores.policy.is_some());
        if cost > self.budget {
            return;
        }
        if self.bytes + cost > self.budget {
            self.clear();
        }
        let entry = Entry {
            q: scores.q.as_slice().into(),
            policy: scores.policy.as_deref().map(Into::into),
        };
        if self.map.insert(hash, entry).is_none() {
            self.bytes += cost;
        }
    }

    /// Fill in per mille (UCI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        if self.budget == 0 {
            return 0;
        }
        ((self.bytes as u128 * 1000) / self.budget as u128).min(1000) as u32
    }

    /// Entries stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// An [`Evaluator`] that answers [`Evaluator::probe`] from the cache and stores every result the
/// inner evaluator returns under the request's `hash`.
pub struct Cached<'a> {
    cache: &'a mut EvalCache,
    inner: &'a mut dyn Evaluator,
}

impl<'a> Cached<'a> {
    /// Wraps `inner` with `cache`.
    pub fn new(cache: &'a mut EvalCache, inner: &'a mut dyn Evaluator) -> Cached<'a> {
        Cached { cache, inner }
    }
}

impl Evaluator for Cached<'_> {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        let out = self.inner.evaluate(batch)?;
        for (r, q) in batch.iter().zip(&out) {
            self.cache.insert(r.hash, q);
        }
        Ok(out)
    }

    fn stats(&self) -> EvalStats {
        self.inner.stats()
    }

    fn probe(&mut self, hash: u64, n: usize) -> Option<Scores> {
        self.cache.get(hash, n)
    }

    fn hashfull(&self) -> u32 {
        self.cache.hashfull()
    }
}
