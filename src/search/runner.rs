//! The search thread shared by every [`Search`] implementation: one worker thread per search
//! object, a job queue, the answer protocol and the hard-limit timer.
//!
//! Threading and ownership: the engine thread calls the [`Search`] methods; they only send jobs,
//! set flags on the search's [`Control`] and arm the timer, so they never block (except
//! [`Search::wait`] and [`Search::shutdown`], which are meant to). The worker thread runs jobs in
//! order: for a search it locks the shared network for the whole search, calls the
//! [`Algorithm`], and prints the answer through the [`SearchSink`]. UCI rules kept here: no
//! `bestmove` before `stop` (or `ponderhit`) for `go infinite` / `go ponder`; exactly one
//! `bestmove` per `go`. The worker's job loop is the one place on this thread where a panic is
//! caught: it becomes an `info string` error and a fallback `bestmove`.

use super::control::Control;
use super::evaluator::{with_stack, Layers};
use super::report::{BestMove, Info, Listener};
use super::sink::SearchSink;
use super::stack::{LayerChoice, Net, SearchCache};
use super::{request_fallback, Search, SearchMode, SearchRequest};
use crate::model::runtime::panic_message;
use crate::model::Note;
use crate::model::{Capabilities, Network, NetworkSlot, SharedNetwork};
use crate::settings::Settings;
use crate::time::{self, Deadlines, TimeManager};
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why a search could not produce its own move (the runner then plays the fallback move).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SearchError {
    /// No network is loaded.
    #[error("no network loaded")]
    NoNetwork,
    /// The network failed.
    #[error("network evaluation failed: {0}")]
    Network(#[from] crate::model::ModelError),
    /// MCTS ended before its first evaluation.
    #[error("MCTS ended before the first evaluation")]
    NoEvaluation,
}

/// A search's result: its final info lines and its move.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Final `info` lines (one per MultiPV entry).
    pub infos: Vec<Info>,
    /// The move (and ponder move) to play.
    pub best: BestMove,
}

/// What a search algorithm implements; [`Runner`] turns it into a [`Search`].
pub trait Algorithm: Send + 'static {
    /// The `SearchMode` value.
    fn mode(&self) -> SearchMode;

    /// Searches `request` on `net` (the evaluator stack the runner built with the layers of
    /// [`Algorithm::layers`], the net's capabilities and run costs) until a limit,
    /// `ctl.stopped()` or (for a ponder search) `ctl.ponderhit_seen()`; progress goes to
    /// `sink.info`, diagnostics to `sink.note`/`sink.error`. The root has legal moves.
    ///
    /// # Errors
    /// The search has no move of its own (the runner plays the fallback move).
    fn think(
        &mut self,
        net: &mut Net<'_>,
        request: &SearchRequest,
        ctl: &Control,
        sink: &SearchSink,
    ) -> Result<Outcome, SearchError>;

    /// The evaluator layers to search through with `settings` on a net that answers `caps`
    /// (default: the network alone).
    fn layers(&self, _settings: &Settings, _caps: Capabilities) -> LayerChoice {
        LayerChoice::default()
    }

    /// Whether the runner's evaluation cache is this algorithm's (then `ucinewgame` sizes and
    /// clears it).
    fn caches(&self) -> bool {
        false
    }

    /// `ucinewgame`: drop state that belongs to the old game; prepare for the next with `settings`.
    fn new_game(&mut self, _settings: &Settings) {}
}

enum Job {
    Search {
        request: Box<SearchRequest>,
        ctl: Arc<Control>,
        sink: SearchSink,
        fallback: BestMove,
        /// The clock starts when the network is ready (see [`SearchRequest::net_ready`]).
        deferred: bool,
    },
    NewGame(Box<Settings>),
}

/// The search the engine last started.
struct Current {
    ctl: Arc<Control>,
    sink: SearchSink,
    time: TimeManager,
    pondering: bool,
    fallback: BestMove,
}

/// A [`Search`] made of an [`Algorithm`] on its own worker thread.
pub struct Runner {
    mode: SearchMode,
    jobs: Option<Sender<Job>>,
    pending: Arc<AtomicUsize>,
    current: Option<Current>,
    listener: Arc<dyn Listener>,
}

impl Runner {
    /// Starts the worker thread for `algorithm` on the shared network, reporting to `listener`.
    pub fn spawn<A: Algorithm>(
        algorithm: A,
        net: SharedNetwork,
        listener: Arc<dyn Listener>,
    ) -> Runner {
        let (tx, rx) = unbounded();
        let pending = Arc::new(AtomicUsize::new(0));
        let mode = algorithm.mode();
        let worker = Worker {
            algorithm,
            net,
            cache: SearchCache::default(),
            pending: Arc::clone(&pending),
            released: false,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("glimpse-{}", mode.as_str()))
            .spawn(move || worker.run(rx));
        let jobs = match spawned {
            Ok(_) => Some(tx),
            Err(e) => {
                listener.note(Note::Error(format!("cannot start the search thread: {e}")));
                None
            }
        };
        Runner {
            mode,
            jobs,
            pending,
            current: None,
            listener,
        }
    }

    fn send(&mut self, job: Job) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        let sent = self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
        if !sent {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            self.listener
                .note(Note::Error("the search worker is gone".to_string()));
        }
        sent
    }

    /// Arms the hard-limit timer for the current search (see [`arm_hard_limit`]).
    fn arm(&self, hard: Option<Instant>, note: &'static str) {
        if let Some(c) = self.current.as_ref() {
            arm_hard_limit(hard, &c.ctl, &c.sink, &c.fallback, note);
        }
    }
}

/// The note of the hard-limit timer when the network was ready at `go`.
const LATE_NOTE: &str = "warning: no network answer within the time budget";
/// The note of the hard-limit timer when the network was still loading at `go` and the game clock
/// was too short to wait for it.
const LOADING_NOTE: &str =
    "warning: the network was still loading at go and the clock is too short to wait for it";
/// How long `stop` waits for the search's own answer before the fallback move answers for it
/// (UCI GUIs expect `bestmove` promptly; the fuzzer's bound is 100 ms).
pub const STOP_ANSWER: Duration = Duration::from_millis(80);
/// How often a search waiting for its network looks at the stop flag.
const NET_WAIT_POLL: Duration = Duration::from_millis(10);
/// A wait for the network at least this long is reported in an `info string`.
const NET_WAIT_REPORTED: Duration = Duration::from_millis(20);

/// The hard-limit timer of one search: at `hard` it sets the stop flag and, unless the search
/// answered, prints `note` and plays the search's best move so far, or else `fallback`
/// ([`SearchSink::answer_for`]). Nothing without a deadline.
fn arm_hard_limit(
    hard: Option<Instant>,
    ctl: &Arc<Control>,
    sink: &SearchSink,
    fallback: &BestMove,
    note: &'static str,
) {
    let Some(deadline) = hard else {
        return;
    };
    let (ctl, sink, waiter, fallback) = (
        Arc::clone(ctl),
        sink.clone(),
        sink.clone(),
        fallback.clone(),
    );
    time::arm_hard_limit(
        deadline,
        move |d| waiter.wait_until(Some(d)),
        move || {
            ctl.stop();
            sink.answer_for(note, &fallback);
        },
    );
}

impl Runner {
    /// Stops the current search and waits up to `wait` for its answer; then answers for it
    /// ([`SearchSink::answer_for`] with `why`). Nothing when it has answered.
    fn stop_within(&mut self, wait: Duration, why: &str) {
        let Some(c) = &self.current else { return };
        if c.sink.is_answered() {
            return;
        }
        c.ctl.stop();
        if !c.sink.wait_until(Some(Instant::now() + wait)) {
            c.sink.answer_for(why, &c.fallback);
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(c) = &self.current {
            c.ctl.stop();
        }
    }
}

impl Search for Runner {
    fn mode(&self) -> SearchMode {
        self.mode
    }

    fn start(&mut self, request: SearchRequest) {
        self.stop();
        let fallback = request_fallback(&request);
        // Without a game clock a search whose network is not ready waits for it, and its clock
        // starts when the network is ready (the worker arms the timer then).
        let deferred = !request.net_ready && !request.time.clocked();
        let deadlines = if deferred {
            Deadlines::none(request.start)
        } else {
            request.time.at_go(request.start)
        };
        let note = if request.net_ready {
            LATE_NOTE
        } else {
            LOADING_NOTE
        };
        let ctl = Arc::new(Control::new(deadlines));
        let sink = SearchSink::new(Arc::clone(&self.listener));
        self.current = Some(Current {
            ctl: Arc::clone(&ctl),
            sink: sink.clone(),
            time: request.time,
            pondering: request.go.ponder,
            fallback: fallback.clone(),
        });
        let job = Job::Search {
            request: Box::new(request),
            ctl,
            sink: sink.clone(),
            fallback: fallback.clone(),
            deferred,
        };
        if !self.send(job) {
            sink.bestmove(&[], &fallback);
            return;
        }
        self.arm(deadlines.hard(), note);
    }

    fn stop(&mut self) {
        // UCI: `stop` is answered at once. A search in the middle of a network run or waiting for
        // a load gets STOP_ANSWER to finish; after that its best move so far (or the fallback
        // move) answers for it, and its own answer is dropped by the sink. Returning only after
        // the answer also puts the `bestmove` before the `readyok` of a later `isready`.
        self.stop_within(STOP_ANSWER, "stopped during a network run");
    }

    fn ponderhit(&mut self) -> bool {
        let Some(c) = self.current.as_mut() else {
            return false;
        };
        if !c.pondering || c.sink.is_answered() {
            return false;
        }
        c.pondering = false;
        // The engine's clock runs from now: the same budget, measured from ponderhit.
        let deadlines = c.time.at_ponderhit(Instant::now());
        c.ctl.ponderhit(deadlines);
        self.arm(deadlines.hard(), LATE_NOTE);
        true
    }

    fn wait(&mut self) {
        if let Some(c) = &self.current {
            c.sink.wait_until(None);
        }
    }

    fn searching(&self) -> bool {
        self.current.as_ref().is_some_and(|c| !c.sink.is_answered())
    }

    fn busy(&self) -> bool {
        self.pending.load(Ordering::SeqCst) > 0
    }

    fn new_game(&mut self, settings: &Settings) {
        self.send(Job::NewGame(Box::new(settings.clone())));
    }

    fn shutdown(&mut self, limit: Duration) {
        // At `quit` or the end of input the search may finish its network run (it has been
        // stopped, so it answers with what it has) within `limit`; one that cannot (a run or a
        // load longer than that) still gets its one `bestmove` before the process exits.
        let deadline = Instant::now() + limit;
        self.stop_within(limit, "exiting before the search answered");
        while self.busy() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// The worker thread's state.
struct Worker<A: Algorithm> {
    algorithm: A,
    net: SharedNetwork,
    /// The evaluation cache kept between searches (an algorithm's [`LayerChoice::cache`]).
    cache: SearchCache,
    pending: Arc<AtomicUsize>,
    released: bool,
}

impl<A: Algorithm> Worker<A> {
    /// Marks the current job finished for the engine (`busy`), once, after its `bestmove` went
    /// out: [`Search::shutdown`] waits for `busy` to fall, so the process never exits between the
    /// release and the answer (the engine's `isready` waits, bounded, for an answered search to
    /// release).
    fn release(&mut self) {
        if !self.released {
            self.released = true;
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn run(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            self.released = false;
            let answer = match &job {
                Job::Search { sink, fallback, .. } => Some((sink.clone(), fallback.clone())),
                Job::NewGame(_) => None,
            };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| self.job(job))) {
                let msg = format!(
                    "internal error in the search worker: {}",
                    panic_message(p.as_ref())
                );
                if let Some((sink, best)) = answer {
                    sink.error(&msg);
                    sink.bestmove(&[], &best);
                } else {
                    eprintln!("glimpse: error: {msg}");
                }
                self.release();
            }
            self.release();
        }
    }

    fn job(&mut self, job: Job) {
        match job {
            Job::NewGame(settings) => {
                self.algorithm.new_game(&settings);
                if self.algorithm.caches() {
                    self.cache.new_game(&settings);
                }
                self.release();
            }
            Job::Search {
                request,
                ctl,
                sink,
                fallback,
                deferred,
            } => self.search(*request, &ctl, &sink, fallback, deferred),
        }
    }

    fn search(
        &mut self,
        mut request: SearchRequest,
        ctl: &Arc<Control>,
        sink: &SearchSink,
        fallback: BestMove,
        deferred: bool,
    ) {
        if sink.is_answered() {
            // Stopped (and answered by the fallback move) before this worker got to it: a
            // search now would only delay the next `go`.
            return;
        }
        let net = Arc::clone(&self.net);
        let mut net = if deferred {
            // The network may be loading in the background (it holds the lock): wait for it,
            // and for a `stop`.
            let guard = loop {
                if let Some(g) = net.try_lock_for(NET_WAIT_POLL) {
                    break g;
                }
                if ctl.stopped() {
                    sink.note("stopped while the network was loading; playing a fallback move");
                    sink.bestmove(&[], &fallback);
                    self.release();
                    return;
                }
            };
            let mut guard = guard;
            guard.ensure(&request.key, &mut |n| sink.report(n));
            let waited = request.start.elapsed();
            if waited >= NET_WAIT_REPORTED {
                sink.note(&format!(
                    "waited {} ms for the network to load; the move's time counts from now",
                    waited.as_millis()
                ));
            }
            // The clock starts now: the searches measure their time from `request.start`.
            let now = Instant::now();
            request.start = now;
            let deadlines = if ctl.ponderhit_seen() {
                request.time.at_ponderhit(now)
            } else {
                request.time.at_go(now)
            };
            ctl.restart(deadlines);
            arm_hard_limit(deadlines.hard(), ctl, sink, &fallback, LATE_NOTE);
            guard
        } else {
            net.lock()
        };
        let req = &request;
        let (infos, best) = if req.game.legal_moves().is_empty() {
            (
                Vec::new(),
                BestMove {
                    mv: None,
                    ponder: None,
                },
            )
        } else if !net.ensure(&req.key, &mut |n| sink.report(n)) {
            sink.error("no network loaded; playing a fallback move (set WeightsFile)");
            (Vec::new(), fallback)
        } else {
            match self.think(&mut net, req, ctl, sink) {
                Ok(o) => (o.infos, o.best),
                Err(e) => {
                    sink.error(&format!("{e}; playing a fallback move"));
                    (Vec::new(), fallback)
                }
            }
        };
        drop(net);
        let (infinite, ponder) = (req.go.infinite, req.go.ponder);
        if ctl.stopped() || (ctl.ponderhit_seen() && !infinite) || !(infinite || ponder) {
            sink.bestmove(&infos, &best);
            self.release();
        } else {
            // UCI: no bestmove before `stop` (or `ponderhit` for a ponder search).
            sink.info(&infos);
            ctl.wait_for_signal(!infinite);
            sink.bestmove(&[], &best);
            self.release();
        }
    }
}

impl<A: Algorithm> Worker<A> {
    /// Builds the evaluator stack the algorithm asks for ([`Algorithm::layers`]) over the loaded
    /// net, once for this search, and searches through it.
    fn think(
        &mut self,
        slot: &mut NetworkSlot,
        req: &SearchRequest,
        ctl: &Control,
        sink: &SearchSink,
    ) -> Result<Outcome, SearchError> {
        let (model, cost) = slot.parts().ok_or(SearchError::NoNetwork)?;
        let caps = model.capabilities();
        let choice = self.algorithm.layers(&req.settings, caps);
        if choice.cache {
            self.cache.prepare(&req.settings, &req.key, sink);
        }
        let mut network = Network::new(model);
        let layers = Layers {
            cache: choice.cache.then_some(&mut self.cache.cache),
            mop_up: choice.mop_up,
        };
        let algorithm = &mut self.algorithm;
        with_stack(&mut network, layers, |evaluator| {
            let mut net = Net {
                evaluator,
                caps,
                cost,
            };
            algorithm.think(&mut net, req, ctl, sink)
        })
    }
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
