//! The cache layer of the backend: network results by position hash within a byte budget
//! (UCI `Hash`, MB), as a wrapper around any [`Evaluator`].
//!
//! Ownership: the [`EvalCache`] outlives searches (MCTS keeps it between moves; `ucinewgame`
//! clears it); a [`Cached`] evaluator borrows it and the inner evaluator for one search.

use super::backend::{EvalRequest, EvalStats, Evaluator, Scores};
use super::error::ModelError;

/// Network results by position hash, within a byte budget (UCI `Hash`).
///
/// Like Stockfish's transposition table, the memory is taken once, in full: on the first insert
/// after [`EvalCache::new`] or [`EvalCache::set_budget`], the cache allocates and touches an index
/// (open addressing, linear probing; at most 1/8 of the budget, a power-of-two number of 24-byte
/// slots, filled to at most 3/4) and an arena of `f32` for the values (the rest of the budget). Its
/// resident memory is therefore flat from the first MCTS search on, whatever the fill, instead of
/// growing with it (the 1,000-game soak showed +23 % RSS over the games with a growing map). When
/// the arena or the index is full, the whole cache is cleared (the tree keeps what the current
/// search needs). If the budget cannot be allocated, half of it is tried, and so on.
#[derive(Debug, Default)]
pub struct EvalCache {
    index: Vec<Slot>,
    arena: Vec<f32>,
    /// Arena values in use.
    used: usize,
    /// Occupied index slots.
    entries: usize,
    budget: usize,
    /// Bytes the last allocation got: the budget, or less when memory was short.
    granted: usize,
    /// Lookups that found an entry.
    pub hits: u64,
    /// Lookups.
    pub lookups: u64,
}

/// One index slot: the position hash and where its values lie in the arena (`n` Q values, then
/// `n` priors when `POLICY` is set, then the 3 WDL probabilities when `WDL` is set). 24 bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    key: u64,
    start: u64,
    n: u32,
    flags: u32,
}

const OCCUPIED: u32 = 1;
const POLICY: u32 = 2;
const WDL: u32 = 4;
/// Bytes of one index slot.
const SLOT_BYTES: usize = std::mem::size_of::<Slot>();

/// `(index slots, arena values)` for a budget of `bytes`: the largest power-of-two slot count
/// within 1/8 of the budget, the rest as `f32` values. `(0, 0)` when fewer than 4 slots fit.
fn layout(bytes: usize) -> (usize, usize) {
    let max_slots = bytes / 8 / SLOT_BYTES;
    if max_slots < 4 {
        return (0, 0);
    }
    let slots = 1usize << (usize::BITS - 1 - max_slots.leading_zeros());
    (slots, (bytes - slots * SLOT_BYTES) / 4)
}

impl EvalCache {
    /// An empty cache of at most `budget_bytes` (nothing is allocated before the first insert).
    pub fn new(budget_bytes: usize) -> EvalCache {
        EvalCache {
            budget: budget_bytes,
            ..EvalCache::default()
        }
    }

    /// Changes the budget; a different budget drops the content and the memory (allocated again,
    /// at the new size, on the next insert).
    pub fn set_budget(&mut self, budget_bytes: usize) {
        if budget_bytes != self.budget {
            self.budget = budget_bytes;
            self.index = Vec::new();
            self.arena = Vec::new();
            self.used = 0;
            self.entries = 0;
        }
    }

    /// Drops every entry (the memory stays allocated).
    pub fn clear(&mut self) {
        if self.entries > 0 {
            self.index.fill(Slot::default());
        }
        self.used = 0;
        self.entries = 0;
    }

    /// `Some(bytes)` when the memory is allocated but short of the budget (the allocation of the
    /// full budget failed and a half, a quarter… was taken); `None` otherwise.
    pub fn shrunk_to(&self) -> Option<usize> {
        (!self.index.is_empty() && self.granted < self.budget).then_some(self.granted)
    }

    /// Bytes the cache holds (index and arena; 0 before the first insert).
    pub fn allocated_bytes(&self) -> usize {
        self.index.len() * SLOT_BYTES + self.arena.len() * 4
    }

    /// Allocates and touches the index and the arena now if not yet done (MCTS does it at
    /// `ucinewgame`, off the clock); false when not even a minimal cache fits the budget or the
    /// memory. Inserts call it too.
    pub fn reserve(&mut self) -> bool {
        if !self.index.is_empty() {
            return true;
        }
        let mut bytes = self.budget;
        loop {
            let (slots, values) = layout(bytes);
            if slots == 0 {
                return false;
            }
            let (mut index, mut arena) = (Vec::new(), Vec::new());
            if index.try_reserve_exact(slots).is_ok() && arena.try_reserve_exact(values).is_ok() {
                // Writing every element commits the pages now (resident memory flat from here on).
                index.resize(slots, Slot::default());
                arena.resize(values, 0.0);
                self.index = index;
                self.arena = arena;
                self.granted = bytes;
                return true;
            }
            bytes /= 2;
        }
    }

    /// The first slot to probe for `hash` (Fibonacci hashing over the power-of-two index).
    fn home(&self, hash: u64) -> usize {
        let bits = self.index.len().trailing_zeros();
        (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The slot holding `hash`, or the empty slot where it would go.
    fn find(&self, hash: u64) -> usize {
        let mask = self.index.len() - 1;
        let mut i = self.home(hash);
        loop {
            let s = &self.index[i];
            if s.flags & OCCUPIED == 0 || s.key == hash {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// The scores stored for `hash` if they have `n` moves (counted as a lookup).
    pub fn get(&mut self, hash: u64, n: usize) -> Option<Scores> {
        self.lookups += 1;
        if self.entries == 0 {
            return None;
        }
        let s = self.index[self.find(hash)];
        if s.flags & OCCUPIED == 0 || s.n as usize != n {
            return None;
        }
        self.hits += 1;
        let start = s.start as usize;
        let wdl_at = start + if s.flags & POLICY != 0 { 2 * n } else { n };
        Some(Scores {
            q: self.arena[start..start + n].to_vec(),
            policy: (s.flags & POLICY != 0).then(|| self.arena[start + n..start + 2 * n].to_vec()),
            wdl: (s.flags & WDL != 0).then(|| {
                let w = &self.arena[wdl_at..wdl_at + 3];
                [w[0], w[1], w[2]]
            }),
            ..Scores::default()
        })
    }

    /// Stores `scores` for `hash` (clears first when the arena or the index is full; a position
    /// already stored keeps its values).
    pub fn insert(&mut self, hash: u64, scores: &Scores) {
        let n = scores.q.len();
        let policy = scores.policy.as_ref().filter(|p| p.len() == n);
        let need =
            n * if policy.is_some() { 2 } else { 1 } + if scores.wdl.is_some() { 3 } else { 0 };
        if n == 0 || n > u32::MAX as usize || !self.reserve() || need > self.arena.len() {
            return;
        }
        if self.used + need > self.arena.len() || (self.entries + 1) * 4 > self.index.len() * 3 {
            self.clear();
        }
        let i = self.find(hash);
        if self.index[i].flags & OCCUPIED != 0 {
            return;
        }
        let start = self.used;
        self.arena[start..start + n].copy_from_slice(&scores.q);
        if let Some(p) = policy {
            self.arena[start + n..start + 2 * n].copy_from_slice(p);
        }
        if let Some(wdl) = scores.wdl {
            self.arena[start + need - 3..start + need].copy_from_slice(&wdl);
        }
        self.used += need;
        self.entries += 1;
        self.index[i] = Slot {
            key: hash,
            start: start as u64,
            n: n as u32,
            flags: OCCUPIED
                | if policy.is_some() { POLICY } else { 0 }
                | if scores.wdl.is_some() { WDL } else { 0 },
        };
    }

    /// Fill in per mille (UCI `hashfull`): the larger of the arena's and the index's fill, against
    /// the point where the cache is cleared.
    pub fn hashfull(&self) -> u32 {
        if self.index.is_empty() {
            return 0;
        }
        let arena = self.used as u128 * 1000 / self.arena.len().max(1) as u128;
        let index = self.entries as u128 * 4000 / (self.index.len() as u128 * 3);
        arena.max(index).min(1000) as u32
    }

    /// Entries stored.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }
}

/// An [`Evaluator`] that answers [`Evaluator::probe`] from the cache and stores every result the
/// inner evaluator returns under the request's `hash` (values, priors and the WDL head's numbers).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(n: usize, seed: u64, policy: bool) -> Scores {
        let q: Vec<f32> = (0..n)
            .map(|i| ((seed + i as u64) % 97) as f32 / 97.0)
            .collect();
        let p = policy.then(|| q.iter().map(|v| 1.0 - v).collect());
        Scores {
            q,
            policy: p,
            ..Scores::default()
        }
    }

    fn with_wdl(mut s: Scores, wdl: [f32; 3]) -> Scores {
        s.wdl = Some(wdl);
        s
    }

    #[test]
    fn values_and_priors_round_trip_and_a_different_move_count_misses() {
        let mut c = EvalCache::new(1 << 16);
        assert_eq!(c.get(5, 3), None);
        c.insert(5, &scores(3, 5, true));
        c.insert(6, &scores(4, 6, false));
        assert_eq!(c.get(5, 3), Some(scores(3, 5, true)));
        assert_eq!(c.get(6, 4), Some(scores(4, 6, false)));
        assert_eq!(c.get(5, 4), None);
        assert_eq!(c.get(7, 3), None);
        assert_eq!((c.hits, c.lookups), (2, 5));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn the_wdl_head_round_trips_with_and_without_priors() {
        let mut c = EvalCache::new(1 << 16);
        let (a, b) = ([0.5, 0.3, 0.2], [0.1, 0.25, 0.65]);
        c.insert(1, &with_wdl(scores(5, 1, true), a));
        c.insert(2, &with_wdl(scores(4, 2, false), b));
        c.insert(3, &scores(3, 3, true));
        assert_eq!(c.get(1, 5), Some(with_wdl(scores(5, 1, true), a)));
        assert_eq!(c.get(2, 4), Some(with_wdl(scores(4, 2, false), b)));
        assert_eq!(
            c.get(3, 3),
            Some(scores(3, 3, true)),
            "no WDL stored, none returned"
        );
        // The next entry starts after the WDL: its values are not overwritten.
        assert_eq!(c.get(1, 5).unwrap().q, scores(5, 1, true).q);
    }

    #[test]
    fn memory_is_taken_once_in_full_and_stays_within_the_budget() {
        let budget = 1 << 20;
        let mut c = EvalCache::new(budget);
        assert_eq!(c.allocated_bytes(), 0, "nothing before the first insert");
        c.insert(1, &scores(30, 1, true));
        let bytes = c.allocated_bytes();
        assert!(
            bytes <= budget && bytes > budget * 3 / 4,
            "{bytes} of {budget}"
        );
        // Fill well past the point where it clears: the memory does not change.
        for h in 2..40_000u64 {
            c.insert(h.wrapping_mul(0x2545_F491_4F6C_DD1D), &scores(30, h, true));
            assert_eq!(c.allocated_bytes(), bytes);
            assert!(c.hashfull() <= 1000);
        }
        c.clear();
        assert!(c.is_empty());
        assert_eq!(c.allocated_bytes(), bytes);
        c.set_budget(budget / 2);
        assert_eq!(c.allocated_bytes(), 0, "a new budget drops the memory");
    }

    #[test]
    fn a_full_cache_clears_and_keeps_the_newest_entry() {
        let mut c = EvalCache::new(1 << 14);
        let mut cleared = false;
        let mut last_len = 0;
        for h in 1..2_000u64 {
            c.insert(h, &scores(20, h, false));
            assert_eq!(c.get(h, 20), Some(scores(20, h, false)), "entry {h}");
            cleared |= c.len() < last_len;
            last_len = c.len();
        }
        assert!(cleared, "a 16 kB cache never filled with 2,000 entries");
    }

    #[test]
    fn colliding_hashes_are_all_found_until_the_cache_clears() {
        // 512 kB: 2,048 index slots, cleared at 1,536 entries; keys share their top bits often.
        let mut c = EvalCache::new(1 << 19);
        let keys: Vec<u64> = (0..1_000u64).map(|i| i << 3).collect();
        for &k in &keys {
            c.insert(k, &scores(8, k, true));
        }
        assert_eq!(c.len(), keys.len());
        for &k in &keys {
            assert_eq!(c.get(k, 8), Some(scores(8, k, true)), "key {k}");
        }
        // A second insert of a stored position keeps the first values.
        c.insert(keys[0], &scores(8, 1234, true));
        assert_eq!(c.get(keys[0], 8), Some(scores(8, keys[0], true)));
    }

    #[test]
    fn budgets_too_small_or_entries_too_large_store_nothing() {
        let mut tiny = EvalCache::new(10);
        tiny.insert(1, &scores(20, 1, false));
        assert!(tiny.is_empty());
        assert_eq!(tiny.hashfull(), 0);
        let mut small = EvalCache::new(1024);
        small.insert(1, &scores(1000, 1, true));
        assert!(small.is_empty());
        small.insert(2, &scores(10, 2, false));
        assert_eq!(small.len(), 1);
    }
}
