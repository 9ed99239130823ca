//! MCTS as a [`Search`](crate::search::Search) algorithm: keeps the tree between moves, searches
//! through the evaluator stack the runner builds for it (cache → bare-king rule → network,
//! [`Algorithm::layers`]), turns `stop`, `ponderhit` and the soft deadline into the playout
//! loop's limits, and reports typed info lines every [`INFO_INTERVAL`].

use super::{
    playout, position_hash, Limits, MctsParams, Progress, Proven, RootLine, StopReason, Tree,
};
use crate::game::Game;
use crate::model::{Capabilities, EvalRequest, Evaluator, LoadKey, ModelError};
use crate::search::control::Control;
use crate::search::report::{BestMove, Info};
use crate::search::runner::{Algorithm, Outcome, SearchError};
use crate::search::searchless::Searchless;
use crate::search::sink::{line_score, SearchSink};
use crate::search::stack::{LayerChoice, Net};
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
/// below its root); the network results by position live in the runner's cache
/// ([`crate::search::stack::SearchCache`]), which MCTS asks for ([`Algorithm::layers`]).
#[derive(Debug, Default)]
pub struct Mcts {
    tree: Option<Tree>,
    /// The `MopUp` setting and net the tree was searched with (a change drops it).
    tree_key: Option<(bool, LoadKey)>,
}

impl Algorithm for Mcts {
    fn mode(&self) -> SearchMode {
        SearchMode::Mcts
    }

    /// The cache and, with `MopUp`, the bare-king rule; nothing for a net without a value
    /// (MCTS hands it to the searchless policy).
    fn layers(&self, settings: &Settings, caps: Capabilities) -> LayerChoice {
        LayerChoice {
            cache: caps.value,
            mop_up: caps.value && settings.mop_up,
        }
    }

    fn caches(&self) -> bool {
        true
    }

    fn new_game(&mut self, _settings: &Settings) {
        self.tree = None;
    }

    /// Searches until a limit, `stop`, or a proof; prints progress every [`INFO_INTERVAL`]. A
    /// network that cannot drive MCTS (BC) is refused with an `info string` and the searchless
    /// policy answers instead.
    fn think(
        &mut self,
        net: &mut Net<'_>,
        req: &SearchRequest,
        ctl: &Control,
        sink: &SearchSink,
    ) -> Result<Outcome, SearchError> {
        if !net.caps.value {
            let refused = ModelError::NoValue {
                kind: net.caps.kind,
            };
            sink.error(&format!("SearchMode mcts refused: {refused}"));
            return Searchless.think(net, req, ctl, sink);
        }
        let head_wdl = req.settings.show_wdl && net.caps.wdl;
        let settings = &req.settings;
        let key = (settings.mop_up, req.key.clone());
        if self.tree_key.as_ref() != Some(&key) {
            self.tree = None;
            self.tree_key = Some(key);
        }
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
        if head_wdl {
            root_wdl(&mut tree, net.evaluator);
        }
        let params = settings
            .mcts_params
            .for_backend(net.caps.backend, settings.threads);
        let (reason, progress) = run_playouts(
            &mut tree,
            net.evaluator,
            (req, &params),
            (ctl, sink),
            &mut limits,
            root_tb.as_ref(),
        );
        if head_wdl {
            root_wdl(&mut tree, net.evaluator);
        }
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
/// search): from the cache when it holds the root with its WDL, else one evaluation of the root
/// through the stack. Nothing for a root not yet evaluated (its expansion brings the head).
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
    if let Some(wdl) = evaluator.probe(hash, moves.len()).and_then(|s| s.wdl) {
        tree.root_wdl = Some(wdl);
        return;
    }
    if let Ok(scores) = evaluator.evaluate(&[EvalRequest { pos, moves, hash }]) {
        tree.root_wdl = scores.first().and_then(|s| s.wdl);
    }
}

/// The playout loop with `params` (the settings' with the minibatch resolved for the backend)
/// and the engine's poll: `stop`, the provisional best move after every
/// minibatch, `ponderhit` (the soft deadline from then on) and an info line every
/// [`INFO_INTERVAL`].
fn run_playouts(
    tree: &mut Tree,
    evaluator: &mut dyn Evaluator,
    (req, params): (&SearchRequest, &MctsParams),
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
    playout::search(tree, evaluator, params, limits, &mut poll)
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
