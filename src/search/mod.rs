//! Move choice behind one interface, [`Search`]: the searchless policy of the paper and
//! MCTS/PUCT over the same networks.
//!
//! Contract of a [`Search`] (Lc0's `SearchBase`, Stockfish's engine facade):
//! - [`Search::start`] returns at once; the search runs on its own thread.
//! - [`Search::stop`] and [`Search::ponderhit`] return at once; the search reads them as flags
//!   ([`control::Control`]) and answers as soon as it can.
//! - [`Search::wait`] blocks until the search has printed its `bestmove`.
//! - Output goes only through the search's [`sink::SearchSink`]: typed `Info` lines and exactly
//!   one `BestMove` per `go` (a fallback move if the network cannot answer in time).
//!
//! The engine holds a `Box<dyn Search>` made by [`create`] from the `SearchMode` option and knows
//! nothing of the implementations. Data flows one way: engine → search → evaluator
//! (`crate::model::backend`) → ONNX Runtime; answers come back only through the sink.
//!
//! - [`runner`]: the thread, job queue, answer protocol and hard-limit timer shared by both
//!   searches ([`runner::Algorithm`] is what a search implements).
//! - [`searchless`]: one batched forward pass over the legal moves, play the best (Ruoss et al.).
//! - [`mcts`]: PUCT tree search with batching, solver and tree reuse.
//! - [`analysis`]: every legal move scored with the rules (searchless, `eval`, `bench`).
//! - [`evaluator`]: the evaluator interface as the searches see it, and the bare-king rule layer.
//! - [`report`]: the typed reports (`Info`, `BestMove`) and the [`report::Listener`] they go to.
//! - [`limits`]: the limits of one `go` ([`GoParams`]).
//! - [`stack`]: what the runner hands a search ([`stack::Net`]) and the cache it keeps.
//! - [`endgame`]: the bare-king (mop-up) rule MCTS uses in K+Q/R vs K.

pub mod analysis;
pub mod control;
pub mod endgame;
pub mod evaluator;
pub mod limits;
pub mod mcts;
pub mod report;
pub mod runner;
pub mod searchless;
pub mod sink;
pub mod stack;

use crate::game::Game;
use crate::model::{LoadKey, SharedNetwork};
use crate::settings::Settings;
use crate::tablebase::Probe;
use crate::time::TimeManager;
pub use limits::GoParams;
use report::{BestMove, Listener};
use shakmaty::Move;
use std::sync::Arc;
use std::time::Instant;

/// Everything one `go` needs, decided by the engine at `go` time.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// Which network.
    pub key: LoadKey,
    /// Position to move in (with its history).
    pub game: Game,
    /// Root moves allowed (`go searchmoves`, resolved; empty: all).
    pub searchmoves: Vec<Move>,
    /// The `go` command.
    pub go: GoParams,
    /// Options at `go` time.
    pub settings: Settings,
    /// Effective sampling temperature (0: argmax).
    pub temperature: f64,
    /// Uniform draw in [0, 1) for sampling.
    pub u: f64,
    /// The clock of this move.
    pub time: TimeManager,
    /// When `go` arrived.
    pub start: Instant,
    /// The Syzygy tables and their settings (`None`: no `SyzygyPath`, or `SyzygyProbeLimit` 0).
    pub tablebase: Option<Probe>,
    /// Whether the network for `key` was loaded (or had failed to load) when `go` arrived. When
    /// it was not (still loading in the background, or never asked for) and the mover has no game
    /// clock, the search waits for it and its time limit counts from the moment it is ready.
    pub net_ready: bool,
}

/// A search as the engine sees it. See the module documentation for the contract.
pub trait Search: Send {
    /// The `SearchMode` value this search implements.
    fn mode(&self) -> SearchMode;

    /// Starts a search and returns at once. A search still running is stopped first (its
    /// `bestmove` comes before the new search's output).
    fn start(&mut self, request: SearchRequest);

    /// Asks the running search to answer now; returns at once.
    fn stop(&mut self);

    /// The ponder move was played: the clock runs from now. Returns at once; `false` if no ponder
    /// search is waiting for it.
    fn ponderhit(&mut self) -> bool;

    /// Blocks until the current search (if any) has printed its `bestmove`.
    fn wait(&mut self);

    /// Whether a search has started and not yet printed its `bestmove`.
    fn searching(&self) -> bool;

    /// Whether the search thread has work in flight (a search, even one already answered by the
    /// hard-limit timer, or a new-game reset). The engine answers `isready` at once then, and does
    /// not touch the network.
    fn busy(&self) -> bool;

    /// `ucinewgame`: forget what belongs to the old game (MCTS tree and cache) and prepare for the
    /// next one with `settings` (MCTS takes its `Hash` memory now, off the clock). Runs on the
    /// search thread; `isready` waits for it.
    fn new_game(&mut self, settings: &Settings);

    /// Stops the search and waits at most `limit` for the thread to go idle (`quit`).
    fn shutdown(&mut self, limit: std::time::Duration);
}

/// A registered search: the `SearchMode` option's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// One batched pass over the legal moves, play the best (the paper).
    #[default]
    Searchless,
    /// PUCT tree search on the same net.
    Mcts,
}

impl SearchMode {
    /// Every mode, in option order.
    pub const ALL: [SearchMode; 2] = [SearchMode::Searchless, SearchMode::Mcts];

    /// The option value (`searchless`, `mcts`).
    pub const fn as_str(self) -> &'static str {
        match self {
            SearchMode::Searchless => "searchless",
            SearchMode::Mcts => "mcts",
        }
    }

    /// Parses an option value (case-insensitive).
    pub fn parse(s: &str) -> Option<SearchMode> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
    }
}

/// The search modes [`create`] knows, as the `SearchMode` option lists them.
pub const MODES: &[&str] = &[SearchMode::Searchless.as_str(), SearchMode::Mcts.as_str()];

/// The search registered as `mode`, reporting to `listener` and running on the shared network.
pub fn create(
    mode: SearchMode,
    net: SharedNetwork,
    listener: Arc<dyn Listener>,
) -> Box<dyn Search> {
    match mode {
        SearchMode::Searchless => {
            Box::new(runner::Runner::spawn(searchless::Searchless, net, listener))
        }
        SearchMode::Mcts => Box::new(runner::Runner::spawn(mcts::Mcts::default(), net, listener)),
    }
}

/// A move chosen without the network (time trouble, no model): a mate in one, else the most
/// valuable capture, else the first legal move. `None` without legal moves.
pub fn fallback_move(game: &Game, searchmoves: &[Move]) -> Option<String> {
    let moves = if searchmoves.is_empty() {
        game.legal_moves()
    } else {
        searchmoves.to_vec()
    };
    let value =
        |m: &Move| m.capture().map_or(0, |r| r as u32) * 8 + m.promotion().map_or(0, |r| r as u32);
    let pick = moves
        .iter()
        .find(|m| analysis::gives_mate(game, m))
        .or_else(|| {
            moves
                .iter()
                .max_by_key(|m| value(m))
                .filter(|m| value(m) > 0)
        })
        .or(moves.first())?;
    Some(game.move_to_uci(pick))
}

/// The tablebase root probe of a request ([`Probe::root`]) over its `searchmoves`; `None` when
/// there are no tables, the root is not covered, or a table cannot be read (reported once).
pub fn tablebase_root(
    req: &SearchRequest,
    sink: &sink::SearchSink,
) -> Option<crate::tablebase::RootProbe> {
    let probe = req.tablebase.as_ref()?;
    let root = probe.root(&req.game);
    if probe.tables.take_error() {
        sink.error("Syzygy: a table is missing or cannot be read; searching without it");
    }
    Some(root?.restrict(&req.searchmoves))
}

/// The fallback `bestmove` of a request: [`fallback_bestmove`] over its `searchmoves`, narrowed
/// to the moves the tablebase root probe keeps when the root is in the tables (so that a move
/// played in time trouble never gives away a tablebase win or draw).
pub fn request_fallback(req: &SearchRequest) -> BestMove {
    let kept = req
        .tablebase
        .as_ref()
        .and_then(|p| p.root(&req.game))
        .map(|root| root.restrict(&req.searchmoves).keep());
    fallback_bestmove(&req.game, kept.as_deref().unwrap_or(&req.searchmoves))
}

/// The fallback `bestmove` (no ponder move).
pub fn fallback_bestmove(game: &Game, searchmoves: &[Move]) -> BestMove {
    BestMove {
        mv: fallback_move(game, searchmoves),
        ponder: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_prefers_mate_then_captures() {
        let mate = Game::from_fen("6k1/5ppp/8/8/8/1q6/5PPP/3R2K1 w - - 0 1", false).unwrap();
        assert_eq!(fallback_move(&mate, &[]).as_deref(), Some("d1d8"));
        let capture = Game::from_fen("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", false).unwrap();
        assert_eq!(fallback_move(&capture, &[]).as_deref(), Some("d2d5"));
        let only = capture.parse_uci("e1f1").unwrap();
        assert_eq!(fallback_move(&capture, &[only]).as_deref(), Some("e1f1"));
        let stalemate = Game::from_fen("k7/8/1Q6/8/8/8/8/7K b - - 0 1", false).unwrap();
        assert_eq!(fallback_move(&stalemate, &[]), None);
    }

    #[test]
    fn the_registry_knows_the_modes() {
        assert_eq!(MODES, &["searchless", "mcts"]);
        for m in SearchMode::ALL {
            assert_eq!(SearchMode::parse(&m.as_str().to_ascii_uppercase()), Some(m));
        }
        assert_eq!(SearchMode::parse("alphabeta"), None);
    }
}
