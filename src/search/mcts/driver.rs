//! MCTS as a [`Search`](crate::search::Search) algorithm: keeps the tree and the evaluation cache
//! between moves, searches through the evaluator stack (cache → bare-king rule → network,
//! [`with_stack`]), turns `stop`,
//! `ponderhit` and the soft deadline into the playout loop's limits, and reports typed info
//! lines every [`INFO_INTERVAL`].

use super::{playout, position_hash, Limits, Progress, Proven, RootLine, StopReason, Tree};
use crate::game::Game;
use crate::model::cache::EvalCache;
use crate::model::{EvalRequest, Evaluator, LoadKey, Network, NetworkSlot};
use crate::search::control::Control;
use crate::search::evaluator::{with_stack, Layers};
use crate::search::report::{BestMove, Info};
use crate::search::runner::{Algorithm, Outcome, SearchError};
use crate::search::searchless::Searchless;
use crate::search::sink::{line_score, SearchSink};
use crate::search::{SearchMode, SearchRequest};
use crate::settings::Settings;
use crate::tablebase::RootProbe;
use shakmaty::Move;
use std::time::{Duration, Instant};

/// How often MCTS prints its progress `info` lines.
pub const INFO_INTERVAL: Duration = Duration::from_millis(1000);

/// The `info` lines for an MCTS tree: one per MultiPV entry, ranked by the root move order
/// ([`Tree::lines`]); `score mate N` when the line is proven, else the tablebase score when the
/// root is in the tables (`root_tb`), else cp from Q. With `UCI_ShowWDL` the first line (the
/// move to play) reports the root's WDL head ([`Tree::root_wdl`]) unless it is a mate, as the
/// searchless policy does; other lines, and a net without the head, split their Q. `tbhits` is
/// written when the tree probes tables.
pub fn info_lines(
    tree: &Tree,
    game: &Game,
    filter: &[Move],
    progress: &Progress,
    settings: &Settings,
    root_tb: Option<&RootProbe>,
) -> Vec<Info> {
    let elapsed_ms = progress.start.elapsed().as_millis() as u64;
    let tbhits = tree
        .tablebase
        .as_ref()
        .map(|_| tree.tb_hits() + root_tb.map_or(0, |tb| tb.hits));
    tree.lines(filter, settings.multipv)
        .iter()
        .enumerate()
        .map(|(rank, line)| {
            let head = tree
                .root_wdl()
                .filter(|_| rank == 0 && line.mate().is_none());
            let (score, wdl) = line_score(
                &line.mv,
                line.mate(),
                line.value(),
                root_tb,
                head,
                settings.show_wdl,
            );
            Info {
                depth: progress.mean_depth().max(1),
                seldepth: progress.seldepth.max(1),
                multipv: rank as u32 + 1,
                score,
                wdl,
                nodes: u64::from(tree.root().n),
                nps: progress.nps(),
                time_ms: elapsed_ms,
                hashfull: Some(progress.hashfull),
                tbhits,
                pv: pv_uci(game, line),
            }
        })
        .collect()
}

/// Playouts a `go mate N` may spend per move of the mate when nothing else limits the search
/// (MCTS stops earlier once the root is proven).
pub const MATE_PLAYOUTS_PER_MOVE: u64 = 2_000;

/// The playout limit of `go`: `nodes N` (at least 1: `go nodes 0` still evaluates the root and
/// plays the net's first choice, not a fallback move); for `go mate N` alone,
/// [`MATE_PLAYOUTS_PER_MOVE`] × N (at least 1), so that every `go` but `infinite`, `ponder` and a
/// bare `go` ends by itself.
pub fn playout_limit(go: &crate::search::GoParams) -> Option<u64> {
    let mate = go
        .mate
        .filter(|_| go.depth.is_none() && go.movetime.is_none())
        .filter(|_| go.wtime.is_none() && go.btime.is_none())
        .map(|m| (u64::from(m) * MATE_PLAYOUTS_PER_MOVE).max(1));
    match (go.nodes, mate) {
        (Some(n), _) => Some(n.max(1)),
        (None, m) => m,
    }
}

/// The line's moves in the GUI's notation (Chess960-aware), played from the game's position.
fn pv_uci(game: &Game, line: &RootLine) -> Vec<String> {
    let mut g = game.clone();
    let mut out = Vec::with_capacity(line.pv.len());
    for mv in &line.pv {
        out.push(g.move_to_uci(mv));
        if g.push(*mv).is_err() {
            break;
        }
    }
    out
}

/// MCTS (`SearchMode mcts`): the tree kept between moves (reused when the next position lies
/// below its root) and the network results by position.
#[derive(Debug, Default)]
pub struct Mcts {
    tree: Option<Tree>,
    cache: EvalCache,
    /// The `MopUp` setting and net the cache and tree were filled with (a change clears them).
    cache_key: Option<(bool, LoadKey)>,
    /// The shrunk cache size last reported (a short `Hash` is said once, not every move).
    reported_shrink: Option<usize>,
}

impl Algorithm for Mcts {
    fn mode(&self) -> SearchMode {
        SearchMode::Mcts
    }

    fn new_game(&mut self, settings: &Settings) {
        self.tree = None;
        self.cache
            .set_budget(settings.hash_mb.saturating_mul(1 << 20));
        self.cache.clear();
        // Take the `Hash` memory now, between games, rather than on the first move's clock.
        self.cache.reserve();
    }

    /// Searches until a limit, `stop`, or a proof; prints progress every [`INFO_INTERVAL`]. A
    /// network that cannot drive MCTS (BC) is refused with an `info string` and the searchless
    /// policy answers instead.
    fn think(
        &mut self,
        net: &mut NetworkSlot,
        req: &SearchRequest,
        ctl: &Control,
        sink: &SearchSink,
    ) -> Result<Outcome, SearchError> {
        let model = net.model().ok_or(SearchError::NoNetwork)?;
        let head_wdl = req.settings.show_wdl && model.capabilities().wdl;
        let mut network = match Network::for_values(model) {
            Ok(e) => e,
            Err(e) => {
                sink.error(&format!("SearchMode mcts refused: {e}"));
                return Searchless.think(net, req, ctl, sink);
            }
        };
        let settings = &req.settings;
        self.prepare(settings, &req.key, sink);
        let mut tree = self.root_tree(req);
        // Tablebase root: search only the moves that keep the best WDL (and DTZ progress).
        let root_tb = crate::search::tablebase_root(req, sink);
        let mut limits = Limits {
            playouts: playout_limit(&req.go),
            depth: req.go.depth,
            deadline: ctl.soft_deadline(),
            infinite: req.go.infinite || req.go.ponder,
            searchmoves: root_tb
                .as_ref()
                .map_or_else(|| req.searchmoves.clone(), RootProbe::keep),
        };
        let layers = Layers {
            cache: Some(&mut self.cache),
            mop_up: settings.mop_up,
        };
        let (reason, progress) = with_stack(&mut network, layers, |evaluator| {
            if head_wdl {
                root_wdl(&mut tree, evaluator);
            }
            let run = run_playouts(
                &mut tree,
                evaluator,
                req,
                (ctl, sink),
                &mut limits,
                root_tb.as_ref(),
            );
            if head_wdl {
                root_wdl(&mut tree, evaluator);
            }
            run
        });
        if let StopReason::Error(e) = &reason {
            sink.error(&format!("network evaluation failed during MCTS: {e}"));
        }
        if req
            .tablebase
            .as_ref()
            .is_some_and(|p| p.tables.take_error())
        {
            sink.error("Syzygy: a table is missing or cannot be read; those positions were searched without it");
        }
        let infos = info_lines(
            &tree,
            &req.game,
            &limits.searchmoves,
            &progress,
            settings,
            root_tb.as_ref(),
        );
        let Some(best) = final_move(&tree, &req.game, &limits.searchmoves) else {
            self.tree = None;
            return Err(match reason {
                StopReason::Error(e) => SearchError::Network(e),
                _ => SearchError::NoEvaluation,
            });
        };
        self.tree = Some(tree);
        Ok(Outcome { infos, best })
    }
}

impl Mcts {
    /// Sizes the cache for `Hash` (a shrunk allocation is said once) and drops the cache and the
    /// tree when the net or the `MopUp` setting changed: both belong to one of each.
    fn prepare(&mut self, settings: &Settings, net: &LoadKey, sink: &SearchSink) {
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
        let key = (settings.mop_up, net.clone());
        if self.cache_key.as_ref() != Some(&key) {
            self.cache.clear();
            self.tree = None;
            self.cache_key = Some(key);
        }
    }

    /// The tree to search: the kept one moved to the request's position (reuse), or a new one;
    /// with the request's tables.
    fn root_tree(&mut self, req: &SearchRequest) -> Tree {
        let mut tree = match self.tree.take() {
            Some(mut t) => {
                t.reuse(&req.game);
                t
            }
            None => Tree::new(&req.game),
        };
        tree.use_tablebase(req.tablebase.clone());
        tree
    }
}

/// Gives an evaluated root its WDL head when the tree lacks it (a root reused from the last
/// search, or answered from the cache, which keeps no WDL): one evaluation of the root through
/// the stack. Nothing for a root not yet evaluated (its expansion brings the head).
pub(super) fn root_wdl(tree: &mut Tree, evaluator: &mut dyn Evaluator) {
    if tree.root_wdl.is_some() || !tree.root().expanded {
        return;
    }
    let pos = tree.root_position().clone();
    let moves: Vec<Move> = shakmaty::Position::legal_moves(&pos).into_iter().collect();
    if moves.is_empty() {
        return;
    }
    let hash = position_hash(&pos);
    if let Ok(scores) = evaluator.evaluate(&[EvalRequest { pos, moves, hash }]) {
        tree.root_wdl = scores.first().and_then(|s| s.wdl);
    }
}

/// The playout loop with the engine's poll: `stop`, the provisional best move after every
/// minibatch, `ponderhit` (the soft deadline from then on) and an info line every
/// [`INFO_INTERVAL`].
fn run_playouts(
    tree: &mut Tree,
    evaluator: &mut dyn Evaluator,
    req: &SearchRequest,
    (ctl, sink): (&Control, &SearchSink),
    limits: &mut Limits,
    root_tb: Option<&RootProbe>,
) -> (StopReason, Progress) {
    let settings = &req.settings;
    let infinite = req.go.infinite;
    let mut last_info = Instant::now();
    let mut ponderhit_applied = false;
    let mut poll = |tree: &Tree, limits: &mut Limits, progress: &Progress| {
        if ctl.stopped() {
            return true;
        }
        // The tree's choice so far answers a `stop` that cannot wait for the next
        // minibatch (the runner's STOP_ANSWER) and the hard limit.
        if let Some(line) = tree.lines(&limits.searchmoves, 1).first() {
            let pv = pv_uci(&req.game, line);
            sink.provisional(BestMove {
                mv: pv.first().cloned(),
                ponder: pv.get(1).cloned(),
            });
        }
        if !ponderhit_applied && ctl.ponderhit_seen() {
            ponderhit_applied = true;
            if !infinite {
                limits.infinite = false;
                limits.deadline = ctl.soft_deadline();
            }
        }
        if last_info.elapsed() >= INFO_INTERVAL {
            last_info = Instant::now();
            sink.info(&info_lines(
                tree,
                &req.game,
                &limits.searchmoves,
                progress,
                settings,
                root_tb,
            ));
        }
        false
    };
    playout::search(tree, evaluator, &settings.mcts_params, limits, &mut poll)
}

/// The move to play from the searched tree: the best line's first move (and its second as the
/// ponder move) once it has a visit or a proof; an unvisited root move when the root was
/// evaluated but nothing more; the fallback move when the root has no children. `None` when the
/// tree is empty (the root was never evaluated).
fn final_move(tree: &Tree, game: &Game, searchmoves: &[Move]) -> Option<BestMove> {
    let top = tree.lines(searchmoves, 1);
    Some(match top.first() {
        Some(line) if line.visits > 0 || line.proven != Proven::Unknown => {
            let pv = pv_uci(game, line);
            BestMove {
                mv: pv.first().cloned(),
                ponder: pv.get(1).cloned(),
            }
        }
        _ if tree.is_empty() => return None,
        Some(line) => BestMove {
            mv: Some(game.move_to_uci(&line.mv)),
            ponder: None,
        },
        None => crate::search::fallback_bestmove(game, searchmoves),
    })
}
