//! What the runner hands a search for one `go` ([`Net`]: the evaluator stack, the net's
//! capabilities, its run costs) and the evaluation cache the runner keeps between searches
//! ([`SearchCache`], UCI `Hash`), as Lc0's engine owns the NN cache its searches share.
//!
//! The runner builds the stack once per search ([`super::evaluator::with_stack`]) from the layers
//! the algorithm asks for ([`LayerChoice`], from the settings and the capabilities), so that
//! every search reaches the network the same way.

use crate::model::cache::EvalCache;
use crate::model::cost::RowCost;
use crate::model::{Capabilities, Evaluator, LoadKey};
use crate::search::sink::SearchSink;
use crate::settings::Settings;

/// The network as a search sees it during one `go`.
pub struct Net<'a> {
    /// The evaluator stack (a test evaluator in the search tests).
    pub evaluator: &'a mut dyn Evaluator,
    /// What the net can answer.
    pub caps: Capabilities,
    /// Measured run costs (time planning): read before a batch, updated after it.
    pub cost: &'a mut RowCost,
}

/// The layers an algorithm searches through over the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LayerChoice {
    /// The runner's [`SearchCache`] (results by position hash).
    pub cache: bool,
    /// The bare-king rule ([`super::evaluator::MopUp`]).
    pub mop_up: bool,
}

/// The evaluation cache kept between searches: sized by `Hash`, cleared at `ucinewgame` and
/// when the net or the `MopUp` setting changes (its results belong to one of each).
#[derive(Debug, Default)]
pub struct SearchCache {
    /// The cache.
    pub cache: EvalCache,
    /// The `MopUp` setting and net the cache was filled with.
    key: Option<(bool, LoadKey)>,
    /// The shrunk cache size last reported (a short `Hash` is said once, not every move).
    reported_shrink: Option<usize>,
}

impl SearchCache {
    /// `ucinewgame`: empty, at the `Hash` size of `settings`, its memory taken now (between
    /// games rather than on the first move's clock).
    pub fn new_game(&mut self, settings: &Settings) {
        self.cache
            .set_budget(settings.hash_mb.saturating_mul(1 << 20));
        self.cache.clear();
        self.cache.reserve();
    }

    /// Before a search with `settings` on the net `key`: sizes the cache for `Hash` (a shrunk
    /// allocation is said once) and drops its content when the net or the `MopUp` setting
    /// changed.
    pub fn prepare(&mut self, settings: &Settings, key: &LoadKey, sink: &SearchSink) {
        self.cache
            .set_budget(settings.hash_mb.saturating_mul(1 << 20));
        if self.cache.reserve() {
            if let Some(bytes) = self.cache.shrunk_to() {
                if self.reported_shrink != Some(bytes) {
                    self.reported_shrink = Some(bytes);
                    sink.note(&format!(
                        "Hash {} MB could not be allocated; the cache holds {} MB",
                        settings.hash_mb,
                        bytes >> 20
                    ));
                }
            }
        }
        let key = (settings.mop_up, key.clone());
        if self.key.as_ref() != Some(&key) {
            self.cache.clear();
            self.key = Some(key);
        }
    }
}
