//! The playout loop: gather a minibatch of leaves (virtual loss), ask the evaluator, expand and
//! back up; stop on a playout, depth or time limit, a proof, or the poll callback. Cached network
//! results come from the evaluator's cache layer ([`Evaluator::probe`]).

use super::tree::{Leaf, Tree, MAX_NODES};
use super::{MctsParams, Proven};
use crate::model::backend::Scores;
use crate::model::{EvalRequest, EvalStats, Evaluator, InferenceError, ModelError};
use shakmaty::{Move, Position};
use std::sync::mpsc;
use std::time::Instant;

/// A leaf waiting for the network: path and hash stack (its position, moves and hash are
/// in the matching [`EvalRequest`]).
type PendingLeaf = (Vec<u32>, Vec<u64>);

/// Limits of one search; the poll callback may change them (e.g. `ponderhit` sets a deadline).
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// `go nodes N`: playouts in this search.
    pub playouts: Option<u64>,
    /// `go depth D`: stop when the mean playout depth reaches D (as Lc0).
    pub depth: Option<u32>,
    /// Stop at this instant (the move's optimum time).
    pub deadline: Option<Instant>,
    /// `go infinite` or pondering: no early stop, no one-move shortcut.
    pub infinite: bool,
    /// `go searchmoves`: root moves allowed (empty: all).
    pub searchmoves: Vec<Move>,
}

/// What a search did so far.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// When the search started.
    pub start: Instant,
    /// Playouts completed in this search (UCI `nodes` counts the root's visits, reused ones too).
    pub playouts: u64,
    /// Sum of playout depths (plies below the root).
    pub depth_sum: u64,
    /// Deepest playout.
    pub seldepth: u32,
    /// Descents that hit a leaf already in flight.
    pub collisions: u64,
    /// Network counters of this search.
    pub eval: EvalStats,
    /// The evaluation cache's fill, per mille (UCI `hashfull`).
    pub hashfull: u32,
    /// Wall time of the last minibatch (gather, network, backup): a deadline is not started
    /// on when less than this is left.
    pub last_batch: std::time::Duration,
}

impl Progress {
    /// Mean playout depth, at least 1 once a playout is done.
    pub fn mean_depth(&self) -> u32 {
        if self.playouts == 0 {
            0
        } else {
            ((self.depth_sum as f64 / self.playouts as f64).round() as u32).max(1)
        }
    }

    /// Playouts per second.
    pub fn nps(&self) -> u64 {
        let s = self.start.elapsed().as_secs_f64();
        if s > 0.0 {
            (self.playouts as f64 / s) as u64
        } else {
            0
        }
    }
}

/// Why a search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// Playout, depth or time limit.
    Limit,
    /// The best move cannot change within the remaining budget.
    Decided,
    /// The root is proven.
    Proven,
    /// The poll callback asked to stop (`stop`, `quit`).
    Signal,
    /// Only one legal move (timed search).
    OnlyMove,
    /// [`MAX_NODES`] reached.
    TreeFull,
    /// The network failed; the tree so far stands.
    Error(ModelError),
}

/// Runs playouts from the tree's root until a limit, a proof or the poll callback stops it.
/// `poll` runs after every minibatch with the tree, the limits (mutable) and the progress, and
/// returns `true` to stop. The root must have legal moves.
///
/// With `params.pipelined` the evaluator runs on a second thread and one batch is in flight
/// while the next is gathered (its leaves kept apart by the first one's virtual loss, as Lc0's
/// gathering runs beside the backend): the network's time and the tree's overlap, at the cost
/// of one batch of staleness. The cache is then probed on the evaluator's thread.
pub fn search(
    tree: &mut Tree,
    evaluator: &mut dyn Evaluator,
    params: &MctsParams,
    limits: &mut Limits,
    poll: &mut dyn FnMut(&Tree, &mut Limits, &Progress) -> bool,
) -> (StopReason, Progress) {
    let base = evaluator.stats();
    let hashfull = evaluator.hashfull();
    if !params.pipelined {
        let mut pipe = Direct {
            evaluator,
            sent: None,
        };
        return run(tree, &mut pipe, (base, hashfull), params, limits, poll);
    }
    std::thread::scope(|s| {
        let (job_tx, job_rx) = mpsc::channel::<Vec<EvalRequest>>();
        let (result_tx, result_rx) = mpsc::channel::<Evaluated>();
        s.spawn(move || {
            for requests in job_rx {
                let result = evaluate_probing(evaluator, &requests);
                let evaluated = Evaluated {
                    requests,
                    result,
                    stats: evaluator.stats(),
                    hashfull: evaluator.hashfull(),
                };
                if result_tx.send(evaluated).is_err() {
                    break;
                }
            }
        });
        let mut pipe = Threaded {
            job_tx,
            result_rx,
            stats: (base, hashfull),
        };
        run(tree, &mut pipe, (base, hashfull), params, limits, poll)
    })
}

/// A batch's answer: its requests back, the scores, and the evaluator's counters and cache fill
/// after it.
struct Evaluated {
    requests: Vec<EvalRequest>,
    result: Result<Vec<Scores>, ModelError>,
    stats: EvalStats,
    hashfull: u32,
}

/// How batches reach the evaluator: at once on this thread ([`Direct`]) or through a second
/// thread with one batch in flight ([`Threaded`]).
trait Pipe {
    /// A cached result for a leaf while gathering (only where the cache is on this thread).
    fn probe(&mut self, hash: u64, n: usize) -> Option<Scores>;
    /// Sends a batch; its answer comes from the matching [`Pipe::receive`].
    fn send(&mut self, requests: Vec<EvalRequest>);
    /// The oldest batch sent and not yet received, answered.
    fn receive(&mut self) -> Evaluated;
    /// The evaluator's counters and cache fill as last seen.
    fn stats(&mut self) -> (EvalStats, u32);
    /// Whether a batch stays in flight while the next is gathered.
    fn pipelined(&self) -> bool;
}

struct Direct<'e> {
    evaluator: &'e mut dyn Evaluator,
    sent: Option<Vec<EvalRequest>>,
}

impl Pipe for Direct<'_> {
    fn probe(&mut self, hash: u64, n: usize) -> Option<Scores> {
        self.evaluator.probe(hash, n)
    }
    fn send(&mut self, requests: Vec<EvalRequest>) {
        self.sent = Some(requests);
    }
    fn receive(&mut self) -> Evaluated {
        let requests = self.sent.take().unwrap_or_default();
        let result = if requests.is_empty() {
            Ok(Vec::new())
        } else {
            self.evaluator.evaluate(&requests)
        };
        let (stats, hashfull) = self.stats();
        Evaluated {
            requests,
            result,
            stats,
            hashfull,
        }
    }
    fn stats(&mut self) -> (EvalStats, u32) {
        (self.evaluator.stats(), self.evaluator.hashfull())
    }
    fn pipelined(&self) -> bool {
        false
    }
}

struct Threaded {
    job_tx: mpsc::Sender<Vec<EvalRequest>>,
    result_rx: mpsc::Receiver<Evaluated>,
    stats: (EvalStats, u32),
}

impl Pipe for Threaded {
    fn probe(&mut self, _hash: u64, _n: usize) -> Option<Scores> {
        None
    }
    fn send(&mut self, requests: Vec<EvalRequest>) {
        // The evaluator's thread ends only when this sender is dropped.
        let _ = self.job_tx.send(requests);
    }
    fn receive(&mut self) -> Evaluated {
        let evaluated = self.result_rx.recv().unwrap_or_else(|_| Evaluated {
            requests: Vec::new(),
            result: Err(InferenceError::Panicked("the evaluator's thread ended".into()).into()),
            stats: self.stats.0,
            hashfull: self.stats.1,
        });
        self.stats = (evaluated.stats, evaluated.hashfull);
        evaluated
    }
    fn stats(&mut self) -> (EvalStats, u32) {
        self.stats
    }
    fn pipelined(&self) -> bool {
        true
    }
}

/// The evaluator's answer for `requests` with cached results served first and only the misses
/// run (one call).
fn evaluate_probing(
    evaluator: &mut dyn Evaluator,
    requests: &[EvalRequest],
) -> Result<Vec<Scores>, ModelError> {
    let cached: Vec<Option<Scores>> = requests
        .iter()
        .map(|r| evaluator.probe(r.hash, r.moves.len()))
        .collect();
    let misses: Vec<EvalRequest> = requests
        .iter()
        .zip(&cached)
        .filter(|(_, c)| c.is_none())
        .map(|(r, _)| r.clone())
        .collect();
    let mut run = if misses.is_empty() {
        Vec::new()
    } else {
        evaluator.evaluate(&misses)?
    }
    .into_iter();
    cached
        .into_iter()
        .map(|c| {
            c.or_else(|| run.next())
                .ok_or(ModelError::Inference(InferenceError::TooFewResults))
        })
        .collect()
}

/// A batch sent to the evaluator: its leaves (path and hash stack, in request order) and the
/// paths of its collided descents.
struct InFlight {
    pending: Vec<PendingLeaf>,
    collided: Vec<Vec<u32>>,
}

/// Expands and backs up an answered batch, or on an error takes its virtual visits back.
/// Collided descents lose their virtual visits either way.
fn finish(
    tree: &mut Tree,
    batch: InFlight,
    evaluated: Evaluated,
    params: &MctsParams,
    progress: &mut Progress,
) -> Result<(), ModelError> {
    for path in &batch.collided {
        tree.undo_virtual(path);
    }
    match evaluated.result {
        Ok(qs) if qs.len() == batch.pending.len() => {
            for (((path, stack), req), q) in
                batch.pending.into_iter().zip(&evaluated.requests).zip(qs)
            {
                let leaf = *path.last().expect("paths are non-empty");
                let v = tree.expand(leaf, &req.pos, &stack, &req.moves, &q, params);
                record_depth(progress, path.len());
                tree.backup(&path, v);
            }
            Ok(())
        }
        other => {
            for (path, ..) in &batch.pending {
                tree.undo_virtual(path);
            }
            Err(other
                .err()
                .unwrap_or(ModelError::Inference(InferenceError::TooFewResults)))
        }
    }
}

/// The playout loop over `pipe`; `base` are the evaluator's counters and cache fill at the start.
fn run(
    tree: &mut Tree,
    pipe: &mut dyn Pipe,
    (base, hashfull): (EvalStats, u32),
    params: &MctsParams,
    limits: &mut Limits,
    poll: &mut dyn FnMut(&Tree, &mut Limits, &Progress) -> bool,
) -> (StopReason, Progress) {
    let mut progress = Progress {
        start: Instant::now(),
        playouts: 0,
        depth_sum: 0,
        seldepth: 0,
        collisions: 0,
        eval: EvalStats::default(),
        hashfull,
        last_batch: std::time::Duration::ZERO,
    };
    let minibatch = params.for_backend(crate::model::Backend::Cpu, 1).minibatch;
    tree.use_draw_score(params.draw_score.clamp(-0.5, 0.5));
    let legal_root = tree.root_pos.legal_moves();
    limits.searchmoves.retain(|m| legal_root.contains(m));
    let root_moves = if limits.searchmoves.is_empty() {
        legal_root.len()
    } else {
        limits.searchmoves.len()
    };
    let mut in_flight: Option<InFlight> = None;
    let mut reason = loop {
        if tree.nodes[0].expanded {
            if tree.nodes[0].proven != Proven::Unknown && limits.searchmoves.is_empty() {
                break StopReason::Proven;
            }
            if root_moves == 1 && !limits.infinite && limits.deadline.is_some() {
                break StopReason::OnlyMove;
            }
        }
        if let Some(r) = limit_reached(tree, limits, &progress) {
            break r;
        }
        if tree.nodes.len() + 2 * minibatch * 256 > MAX_NODES {
            break StopReason::TreeFull;
        }
        let start = Instant::now();
        let outstanding = in_flight.as_ref().map_or(0, |b| b.pending.len());
        let batch = gather(
            tree,
            pipe,
            params,
            limits,
            &mut progress,
            (minibatch, outstanding),
        );
        // The batch in flight comes back before the new one goes out, and is backed up while
        // the new one runs.
        let previous = in_flight.take().map(|b| (b, pipe.receive()));
        pipe.send(batch.requests);
        in_flight = Some(InFlight {
            pending: batch.pending,
            collided: batch.collided,
        });
        if !pipe.pipelined() {
            let sent = in_flight.take().map(|b| (b, pipe.receive()));
            debug_assert!(previous.is_none());
            if let Err(e) = finish_sent(tree, sent, params, &mut progress) {
                break StopReason::Error(e);
            }
        } else if let Err(e) = finish_sent(tree, previous, params, &mut progress) {
            break StopReason::Error(e);
        }
        (progress.eval, progress.hashfull) = delta(pipe.stats(), base);
        progress.last_batch = start.elapsed();
        if poll(tree, limits, &progress) {
            break StopReason::Signal;
        }
    };
    // A batch still in flight is answered and backed up (or its virtual visits taken back).
    if let Some(b) = in_flight.take() {
        let evaluated = pipe.receive();
        if let Err(e) = finish(tree, b, evaluated, params, &mut progress) {
            if !matches!(reason, StopReason::Error(_)) {
                reason = StopReason::Error(e);
            }
        }
    }
    (progress.eval, progress.hashfull) = delta(pipe.stats(), base);
    (reason, progress)
}

/// [`finish`] for a batch that was sent and answered, if any.
fn finish_sent(
    tree: &mut Tree,
    sent: Option<(InFlight, Evaluated)>,
    params: &MctsParams,
    progress: &mut Progress,
) -> Result<(), ModelError> {
    match sent {
        Some((b, evaluated)) => finish(tree, b, evaluated, params, progress),
        None => Ok(()),
    }
}

/// One minibatch's leaves: those waiting for the network (with their requests, in the same
/// order) and the paths of the collided descents, whose virtual loss stays until the batch is
/// backed up.
struct Batch {
    pending: Vec<PendingLeaf>,
    requests: Vec<EvalRequest>,
    collided: Vec<Vec<u32>>,
}

/// Gathers a minibatch: `minibatch` descents that end on a leaf for the network, a value or a
/// cached result (those two are backed up at once), or fewer once the playout limit (counting
/// the `outstanding` leaves of a batch in flight) or the collision limit
/// ([`super::collision_limit`]) is reached.
fn gather(
    tree: &mut Tree,
    pipe: &mut dyn Pipe,
    params: &MctsParams,
    limits: &Limits,
    progress: &mut Progress,
    (minibatch, outstanding): (usize, usize),
) -> Batch {
    let mut batch = Batch {
        pending: Vec::new(),
        requests: Vec::new(),
        collided: Vec::new(),
    };
    let max_collisions =
        super::collision_limit(tree.nodes[0].n, params.max_collision_events) as usize;
    let mut gathered = 0;
    while gathered < minibatch {
        if let Some(cap) = limits.playouts {
            if progress.playouts + (outstanding + batch.pending.len()) as u64 >= cap {
                break;
            }
        }
        match tree.select_leaf(params, &limits.searchmoves) {
            Leaf::Value { path, value } => {
                gathered += 1;
                record_depth(progress, path.len());
                tree.backup(&path, value);
            }
            Leaf::Collision { path } => {
                progress.collisions += 1;
                batch.collided.push(path);
                if batch.collided.len() >= max_collisions {
                    break;
                }
            }
            Leaf::Eval { path, pos, stack } => {
                gathered += 1;
                let hash = *stack.last().expect("the stack holds the leaf");
                let moves: Vec<Move> = pos.legal_moves().into_iter().collect();
                let leaf = *path.last().expect("paths are non-empty");
                if let Some(q) = pipe.probe(hash, moves.len()) {
                    let v = tree.expand(leaf, &pos, &stack, &moves, &q, params);
                    record_depth(progress, path.len());
                    tree.backup(&path, v);
                } else {
                    batch.requests.push(EvalRequest { pos, moves, hash });
                    batch.pending.push((path, stack));
                }
            }
        }
    }
    batch
}

fn record_depth(progress: &mut Progress, path_len: usize) {
    let depth = (path_len - 1) as u32;
    progress.playouts += 1;
    progress.depth_sum += u64::from(depth);
    progress.seldepth = progress.seldepth.max(depth);
}

/// The counters since `base`, and the cache fill.
fn delta((now, hashfull): (EvalStats, u32), base: EvalStats) -> (EvalStats, u32) {
    let stats = EvalStats {
        runs: now.runs - base.runs,
        rows: now.rows - base.rows,
        positions: now.positions - base.positions,
        time: now.time.saturating_sub(base.time),
    };
    (stats, hashfull)
}

/// Playout, depth and time limits, and the early stop when the most visited root move cannot be
/// overtaken by the playouts the remaining budget allows.
fn limit_reached(tree: &Tree, limits: &Limits, progress: &Progress) -> Option<StopReason> {
    if let Some(cap) = limits.playouts {
        if progress.playouts >= cap {
            return Some(StopReason::Limit);
        }
    }
    if let Some(d) = limits.depth {
        if progress.playouts > 0 && progress.mean_depth() >= d {
            return Some(StopReason::Limit);
        }
    }
    let now = Instant::now();
    // The soft deadline only ends a search whose root has been evaluated: with a very low clock it
    // can pass before the first minibatch, and stopping then would leave no move of the net's at
    // all (the hard-limit timer still bounds the move).
    if let Some(deadline) = limits.deadline.filter(|_| tree.nodes[0].expanded) {
        if now + progress.last_batch >= deadline {
            return Some(StopReason::Limit);
        }
    }
    if limits.infinite || progress.playouts < 2 {
        return None;
    }
    let by_nodes = limits.playouts.map(|cap| cap - progress.playouts);
    let by_time = limits.deadline.map(|d| {
        let rate = progress.playouts as f64 / progress.start.elapsed().as_secs_f64().max(1e-3);
        (rate * (d - now).as_secs_f64()).ceil() as u64
    });
    let remaining = match (by_nodes, by_time) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return None,
    };
    let mut visits: Vec<u32> = tree
        .children(0)
        .map(|c| &tree.nodes[c as usize])
        .filter(|c| {
            limits.searchmoves.is_empty() || c.mv.is_some_and(|m| limits.searchmoves.contains(&m))
        })
        .map(|c| c.n)
        .collect();
    visits.sort_unstable_by(|a, b| b.cmp(a));
    match visits.as_slice() {
        [best, second, ..] if u64::from(best - second) > remaining => Some(StopReason::Decided),
        _ => None,
    }
}
