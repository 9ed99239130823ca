//! The search worker: one thread that owns the model and runs jobs in order.
//!
//! Threading and ownership: the reader thread (`Engine`) sends [`Job`]s over a crossbeam channel
//! and never touches the model; the worker owns it. A search's `bestmove` is printed exactly once
//! through [`SearchShared::answer`], by the worker or, if the clock's hard limit passes first, by a
//! watchdog thread with a fallback move. `stop` and `ponderhit` reach a running search as
//! [`Signal`]s. Every job runs under `catch_unwind`: a panic becomes an `info string` error and, for
//! a search, a fallback `bestmove`.

use super::sink::Out;
use super::{load_model, panic_message, LoadKey};
use crate::game::Game;
use crate::model::buckets::win_prob_to_cp;
use crate::model::{Model, ModelInfo};
use crate::search::evaluator::{Evaluator, MopUp, NetEvaluator};
use crate::search::mcts::{self, EvalCache, Limits, Progress, RootLine, StopReason, Tree};
use crate::search::searchless::{self, Analysis};
use crate::uci::output::{format_bestmove, format_info, BestMove, Info, Score, Wdl};
use crate::uci::Settings;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use shakmaty::{Move, Position};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Messages to a running search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `stop`: answer now.
    Stop,
    /// `ponderhit`: the ponder move was played; answer now unless `infinite`.
    PonderHit,
}

/// What the worker reports about `eval`.
pub struct EvalReport {
    /// Every legal move scored.
    pub analysis: Analysis,
    /// Index of the move the policy plays (temperature 0).
    pub chosen: Option<usize>,
    /// The model used.
    pub info: ModelInfo,
    /// Milliseconds the analysis took.
    pub ms: f64,
}

/// Work for the worker thread.
pub enum Job {
    /// Make sure the model for `key` is loaded and warmed up, then reply.
    Ensure {
        /// Which model.
        key: LoadKey,
        /// Gets `()` when done.
        reply: Sender<()>,
    },
    /// Analyse for `eval`.
    Eval {
        /// Which model.
        key: LoadKey,
        /// Position.
        game: Game,
        /// Gets the report or an error message.
        reply: Sender<Result<EvalReport, String>>,
    },
    /// Run a `go`.
    Search(Box<SearchJob>),
    /// `ucinewgame`: drop the MCTS tree and evaluation cache.
    NewGame,
}

/// One `go`.
pub struct SearchJob {
    /// Which model.
    pub key: LoadKey,
    /// Position to move in.
    pub game: Game,
    /// Moves to consider (empty: all).
    pub searchmoves: Vec<Move>,
    /// Options at `go` time.
    pub settings: Settings,
    /// Effective sampling temperature (0: argmax).
    pub temperature: f64,
    /// Uniform draw in [0, 1) for sampling.
    pub u: f64,
    /// `go infinite`.
    pub infinite: bool,
    /// `go ponder`.
    pub ponder: bool,
    /// Optimum time in ms from `start` (None: no limit, or a ponder search whose clock has not
    /// started); the hard limit is enforced by the engine's watchdog.
    pub optimum_ms: Option<u64>,
    /// For a ponder search: the optimum in ms from `ponderhit`.
    pub ponder_optimum_ms: Option<u64>,
    /// `go nodes N` (MCTS: playouts).
    pub nodes: Option<u64>,
    /// `go depth D` (MCTS: mean playout depth).
    pub depth: Option<u32>,
    /// The once-only answer.
    pub shared: Arc<SearchShared>,
    /// `stop` / `ponderhit`.
    pub signals: Receiver<Signal>,
    /// The move to play without a network answer.
    pub fallback: BestMove,
    /// When `go` arrived.
    pub start: Instant,
}

/// The once-only `bestmove` of one search, shared by worker, watchdog and reader.
pub struct SearchShared {
    answered: Mutex<bool>,
    cv: Condvar,
    out: Out,
}

impl SearchShared {
    /// A search not yet answered.
    pub fn new(out: Out) -> Arc<SearchShared> {
        Arc::new(SearchShared {
            answered: Mutex::new(false),
            cv: Condvar::new(),
            out,
        })
    }

    /// Prints `lines` then `bestmove` unless already answered; returns whether it printed.
    pub fn answer(&self, lines: &[String], best: &BestMove) -> bool {
        let mut answered = self.answered.lock();
        if *answered {
            return false;
        }
        let mut all = lines.to_vec();
        all.push(format_bestmove(best));
        self.out.lines(&all);
        *answered = true;
        self.cv.notify_all();
        true
    }

    /// Prints `lines` (e.g. info before waiting) unless the search has been answered.
    pub fn print_if_open(&self, lines: &[String]) {
        let answered = self.answered.lock();
        if !*answered {
            self.out.lines(lines);
        }
    }

    /// Whether `bestmove` has been printed.
    pub fn is_answered(&self) -> bool {
        *self.answered.lock()
    }

    /// Waits until answered or `deadline`; returns whether it was answered.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut answered = self.answered.lock();
        while !*answered {
            if self.cv.wait_until(&mut answered, deadline).timed_out() {
                return *answered;
            }
        }
        true
    }
}

/// Signals an MCTS search consumed while it ran.
#[derive(Debug, Default, Clone, Copy)]
pub struct SignalsSeen {
    /// `stop` arrived.
    pub stop: bool,
    /// `ponderhit` arrived.
    pub ponderhit: bool,
}

/// How often MCTS prints its progress `info` lines.
pub const MCTS_INFO_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1000);

/// The `info` lines for an MCTS tree: one per MultiPV entry, ranked by the root move order
/// ([`Tree::lines`]); `score mate N` when the line is proven, else cp from Q.
pub fn mcts_info_lines(
    tree: &Tree,
    game: &Game,
    filter: &[Move],
    progress: &Progress,
    settings: &Settings,
) -> Vec<String> {
    let elapsed_ms = progress.start.elapsed().as_millis() as u64;
    tree.lines(filter, settings.multipv)
        .iter()
        .enumerate()
        .map(|(rank, line)| {
            let value = line.value();
            format_info(&Info {
                depth: progress.mean_depth().max(1),
                seldepth: progress.seldepth.max(1),
                multipv: rank as u32 + 1,
                score: match line.mate() {
                    Some(m) => Score::Mate(m),
                    None => Score::Cp(win_prob_to_cp(value)),
                },
                wdl: settings.show_wdl.then(|| Wdl::from_win_prob(value)),
                nodes: u64::from(tree.root().n),
                nps: progress.nps(),
                time_ms: elapsed_ms,
                hashfull: Some(progress.hashfull),
                pv: pv_uci(game, line),
            })
        })
        .collect()
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

/// The worker's state.
pub struct Worker {
    out: Out,
    model: Option<Model>,
    loaded: Option<LoadKey>,
    failed: Option<LoadKey>,
    model_info: Arc<Mutex<Option<ModelInfo>>>,
    pending: Arc<AtomicUsize>,
    released: bool,
    /// Measured milliseconds per network row (moving average), for time planning.
    row_ms: Option<f64>,
    /// The MCTS tree kept between moves (reused when the next position lies below its root).
    tree: Option<Tree>,
    /// MCTS network results by position.
    cache: EvalCache,
    /// The `MopUp` setting and net the cache was filled with (a change clears it).
    cache_key: Option<(bool, LoadKey)>,
}

/// How many rows fit in `left_ms` at `row_ms` each; the first batch has at least
/// [`MIN_FIRST_BATCH`] rows so that some moves are always scored.
pub fn batch_size(left_ms: f64, row_ms: f64, first: bool) -> usize {
    let fit = if row_ms > 0.0 && left_ms > 0.0 {
        (left_ms / row_ms).floor().min(1e6) as usize
    } else if row_ms <= 0.0 {
        usize::MAX / 2
    } else {
        0
    };
    if first {
        fit.max(MIN_FIRST_BATCH)
    } else {
        fit
    }
}

/// The smallest first batch when short of time (the watchdog covers a batch that overruns).
pub const MIN_FIRST_BATCH: usize = 4;

/// A cheap ordering prior for batches under time pressure: mate in one, then captures by victim
/// value, promotions, checks; 0 for quiet moves.
pub fn prior(game: &Game, mv: &Move) -> u32 {
    let mut pos = game.position().clone();
    pos.play_unchecked(*mv);
    if pos.is_checkmate() {
        return 10_000;
    }
    let capture = mv.capture().map_or(0, |r| 100 * r as u32);
    let promotion = mv.promotion().map_or(0, |r| 10 * r as u32);
    let check = if pos.is_check() { 5 } else { 0 };
    capture + promotion + check
}

impl Worker {
    /// A worker that reports through `out`, publishes the loaded model's info in `model_info`
    /// and decrements `pending` after each job.
    pub fn new(
        out: Out,
        model_info: Arc<Mutex<Option<ModelInfo>>>,
        pending: Arc<AtomicUsize>,
    ) -> Worker {
        Worker {
            out,
            model: None,
            loaded: None,
            failed: None,
            model_info,
            pending,
            released: false,
            row_ms: None,
            tree: None,
            cache: EvalCache::new(0),
            cache_key: None,
        }
    }

    /// Marks the current job finished for the reader (`pending`), once, before its reply or
    /// `bestmove` goes out, so the reader never sees a stale "busy" after an answer.
    fn release(&mut self) {
        if !self.released {
            self.released = true;
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Runs jobs until the channel closes.
    pub fn run(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            self.released = false;
            let fallback = match &job {
                Job::Search(s) => Some((Arc::clone(&s.shared), s.fallback.clone())),
                _ => None,
            };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| self.job(job))) {
                self.out.error(&format!(
                    "internal error in the search worker: {}",
                    panic_message(&p)
                ));
                self.release();
                if let Some((shared, best)) = fallback {
                    shared.answer(&[], &best);
                }
            }
            self.release();
        }
    }

    fn job(&mut self, job: Job) {
        match job {
            Job::Ensure { key, reply } => {
                self.ensure(&key);
                self.release();
                let _ = reply.send(());
            }
            Job::Eval { key, game, reply } => {
                let report = self.eval(&key, &game);
                self.release();
                let _ = reply.send(report);
            }
            Job::Search(s) => self.search(*s),
            Job::NewGame => {
                self.tree = None;
                self.cache.clear();
                self.release();
            }
        }
    }

    /// Loads and warms up the model for `key` unless it is loaded or already failed to load.
    /// Returns whether some model (possibly the previous one) is available.
    fn ensure(&mut self, key: &LoadKey) -> bool {
        if self.loaded.as_ref() == Some(key) || self.failed.as_ref() == Some(key) {
            return self.model.is_some();
        }
        let t0 = Instant::now();
        let mut warnings = Vec::new();
        let result = catch_unwind(AssertUnwindSafe(|| load_model(key, &mut warnings)))
            .unwrap_or_else(|p| {
                Err(format!(
                    "internal error while loading: {}",
                    panic_message(&p)
                ))
            });
        for w in &warnings {
            self.out.info_string(w);
        }
        let what = key
            .weights
            .as_deref()
            .unwrap_or(crate::uci::options::EMBEDDED);
        match result {
            Ok(mut model) => {
                let load_ms = t0.elapsed().as_secs_f64() * 1e3;
                let t1 = Instant::now();
                // Two passes: the first allocates and picks kernels, the second is timed for
                // the time planning.
                let mut row_ms = None;
                let warm = catch_unwind(AssertUnwindSafe(|| {
                    searchless::analyse(&mut model, &Game::startpos(), &[])?;
                    let t2 = Instant::now();
                    let a = searchless::analyse(&mut model, &Game::startpos(), &[])?;
                    row_ms = Some(t2.elapsed().as_secs_f64() * 1e3 / a.evals.max(1) as f64);
                    Ok::<(), crate::model::ModelError>(())
                }));
                let warm_ms = t1.elapsed().as_secs_f64() * 1e3;
                match warm {
                    Ok(Ok(_)) => {
                        let i = model.info();
                        self.out.info_string(&format!(
                            "loaded {} ({:?}, {} buckets, {:?} backend) in {load_ms:.0} ms, warm-up {warm_ms:.0} ms",
                            i.source, i.kind, i.buckets, i.backend
                        ));
                        *self.model_info.lock() = Some(model.info().clone());
                        self.model = Some(model);
                        self.row_ms = row_ms;
                        self.loaded = Some(key.clone());
                        self.failed = None;
                    }
                    Ok(Err(e)) => {
                        self.load_failed(key, what, &format!("the warm-up run failed: {e}"))
                    }
                    Err(p) => self.load_failed(
                        key,
                        what,
                        &format!("the warm-up run panicked: {}", panic_message(&p)),
                    ),
                }
            }
            Err(e) => self.load_failed(key, what, &e),
        }
        self.model.is_some()
    }

    fn load_failed(&mut self, key: &LoadKey, what: &str, err: &str) {
        let keep = if self.model.is_some() {
            "; keeping the previous model"
        } else {
            ""
        };
        self.out
            .error(&format!("cannot use network '{what}': {err}{keep}"));
        self.failed = Some(key.clone());
    }

    fn eval(&mut self, key: &LoadKey, game: &Game) -> Result<EvalReport, String> {
        if !self.ensure(key) {
            return Err("no network loaded".into());
        }
        let model = self.model.as_mut().ok_or("no network loaded")?;
        let t0 = Instant::now();
        let analysis = searchless::analyse(model, game, &[]).map_err(|e| e.to_string())?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let chosen = analysis.best();
        Ok(EvalReport {
            analysis,
            chosen,
            info: model.info().clone(),
            ms,
        })
    }

    fn search(&mut self, job: SearchJob) {
        let mut seen = SignalsSeen::default();
        let (lines, best) = if job.game.legal_moves().is_empty() {
            (
                Vec::new(),
                BestMove {
                    mv: None,
                    ponder: None,
                },
            )
        } else if !self.ensure(&job.key) {
            self.out
                .error("no network loaded; playing a fallback move (set WeightsFile)");
            (Vec::new(), job.fallback.clone())
        } else {
            let result = if job.settings.mcts {
                self.think_mcts(&job, &mut seen)
            } else {
                self.think(&job)
            };
            match result {
                Ok(r) => r,
                Err(e) => {
                    self.out.error(&format!("{e}; playing a fallback move"));
                    (Vec::new(), job.fallback.clone())
                }
            }
        };
        if seen.stop || (seen.ponderhit && !job.infinite) {
            // MCTS handled `stop` / `ponderhit` itself: answer now.
            self.release();
            job.shared.answer(&lines, &best);
        } else if job.infinite || job.ponder {
            // UCI: no bestmove before `stop` (or `ponderhit` for a ponder search).
            job.shared.print_if_open(&lines);
            loop {
                match job.signals.recv() {
                    Ok(Signal::Stop) | Err(_) => break,
                    Ok(Signal::PonderHit) if !job.infinite => break,
                    Ok(Signal::PonderHit) => {}
                }
            }
            self.release();
            job.shared.answer(&[], &best);
        } else {
            self.release();
            job.shared.answer(&lines, &best);
        }
    }

    /// Scores the candidate moves. With time to spare (the usual case) this is the paper's one
    /// batched pass over all moves. When the per-row cost measured so far says that pass would
    /// overrun the move's optimum time, the moves are ordered by a cheap prior (mates, captures,
    /// promotions, checks) and scored in batches sized to the time left; moves not reached are
    /// left out. Returns the analysis (ascending action id) and whether it is partial.
    fn evaluate(&mut self, job: &SearchJob) -> Result<(Analysis, bool), String> {
        let model = self.model.as_mut().ok_or("no network loaded")?;
        let candidates = if job.searchmoves.is_empty() {
            job.game.legal_moves()
        } else {
            job.searchmoves.clone()
        };
        let n = candidates.len();
        let elapsed = |job: &SearchJob| job.start.elapsed().as_secs_f64() * 1e3;
        // BC and MAV score every move in one row: splitting the moves would only repeat the pass.
        let one_row = model.info().kind.one_row_per_position();
        let plan = match (job.optimum_ms, self.row_ms) {
            (Some(target), Some(row_ms))
                if !one_row && row_ms * n as f64 > target as f64 - elapsed(job) =>
            {
                Some((target as f64, row_ms))
            }
            _ => None,
        };
        let run = |model: &mut Model, moves: &[Move], row_ms: &mut Option<f64>| {
            let t = Instant::now();
            let a = catch_unwind(AssertUnwindSafe(|| {
                searchless::analyse(model, &job.game, moves)
            }))
            .map_err(|p| format!("internal error in the policy: {}", panic_message(&p)))?
            .map_err(|e| format!("network evaluation failed: {e}"))?;
            if a.evals > 0 {
                let per_row = t.elapsed().as_secs_f64() * 1e3 / a.evals as f64;
                *row_ms = Some(row_ms.map_or(per_row, |r| 0.7 * r + 0.3 * per_row));
            }
            Ok::<Analysis, String>(a)
        };
        let Some((target, mut row_ms)) = plan else {
            let a = run(model, &job.searchmoves, &mut self.row_ms)?;
            return Ok((a, false));
        };
        let mut order = candidates;
        order.sort_by_key(|m| std::cmp::Reverse(prior(&job.game, m)));
        let mut merged = Analysis {
            moves: Vec::with_capacity(n),
            evals: 0,
        };
        let mut done = 0;
        while done < n {
            let k = batch_size(target - elapsed(job), row_ms, done == 0);
            if k == 0 {
                break;
            }
            let batch = &order[done..(done + k).min(n)];
            let a = run(model, batch, &mut self.row_ms)?;
            row_ms = self.row_ms.unwrap_or(row_ms);
            merged.evals += a.evals;
            merged.moves.extend(a.moves);
            done += batch.len();
        }
        merged.moves.sort_by_key(|m| m.action);
        if done < n {
            self.out.info_string(&format!(
                "warning: short of time: scored {done} of {n} moves ({row_ms:.2} ms per row)"
            ));
        }
        Ok((merged, done < n))
    }

    /// MCTS (`SearchMode mcts`): searches until a limit, `stop`, or a proof; prints progress every
    /// [`MCTS_INFO_INTERVAL`]; returns the final info lines and the best move with its ponder
    /// move. A network that cannot drive MCTS (BC) is refused with an `info string` and the
    /// searchless policy answers instead.
    fn think_mcts(
        &mut self,
        job: &SearchJob,
        seen: &mut SignalsSeen,
    ) -> Result<(Vec<String>, BestMove), String> {
        let model = self.model.as_mut().ok_or("no network loaded")?;
        let mut net = match NetEvaluator::new(model) {
            Ok(e) => e,
            Err(e) => {
                self.out.error(&format!("SearchMode mcts refused: {e}"));
                return self.think(job);
            }
        };
        let mut mop_up = MopUp::new(&mut net);
        let evaluator: &mut dyn Evaluator = if job.settings.mop_up {
            &mut mop_up
        } else {
            mop_up.into_inner()
        };
        let settings = &job.settings;
        self.cache
            .set_budget(settings.hash_mb.saturating_mul(1 << 20));
        // Cached values belong to one net and one MopUp setting; so do the tree's statistics.
        let key = (settings.mop_up, job.key.clone());
        if self.cache_key.as_ref() != Some(&key) {
            self.cache.clear();
            self.tree = None;
            self.cache_key = Some(key);
        }
        let mut tree = match self.tree.take() {
            Some(mut t) => {
                t.reuse(&job.game);
                t
            }
            None => Tree::new(&job.game),
        };
        let mut limits = Limits {
            playouts: job.nodes,
            depth: job.depth,
            deadline: job
                .optimum_ms
                .map(|ms| job.start + std::time::Duration::from_millis(ms)),
            infinite: job.infinite || job.ponder,
            searchmoves: job.searchmoves.clone(),
        };
        let mut last_info = Instant::now();
        let out_shared = Arc::clone(&job.shared);
        let cache = &mut self.cache;
        let (reason, progress) = {
            let mut poll = |tree: &Tree, limits: &mut Limits, progress: &Progress| {
                while let Ok(sig) = job.signals.try_recv() {
                    match sig {
                        Signal::Stop => {
                            seen.stop = true;
                            return true;
                        }
                        Signal::PonderHit => {
                            seen.ponderhit = true;
                            if !job.infinite {
                                limits.infinite = false;
                                limits.deadline = job.ponder_optimum_ms.map(|ms| {
                                    Instant::now() + std::time::Duration::from_millis(ms)
                                });
                            }
                        }
                    }
                }
                if last_info.elapsed() >= MCTS_INFO_INTERVAL {
                    last_info = Instant::now();
                    let lines =
                        mcts_info_lines(tree, &job.game, &limits.searchmoves, progress, settings);
                    out_shared.print_if_open(&lines);
                }
                false
            };
            mcts::search(
                &mut tree,
                cache,
                evaluator,
                &settings.mcts_params,
                &mut limits,
                &mut poll,
            )
        };
        if let StopReason::Error(e) = &reason {
            self.out
                .error(&format!("network evaluation failed during MCTS: {e}"));
        }
        let lines = mcts_info_lines(&tree, &job.game, &limits.searchmoves, &progress, settings);
        let top = tree.lines(&limits.searchmoves, 1);
        let best = match top.first() {
            Some(line) if line.visits > 0 || line.proven != mcts::Proven::Unknown => {
                let pv = pv_uci(&job.game, line);
                BestMove {
                    mv: pv.first().cloned(),
                    ponder: pv.get(1).cloned(),
                }
            }
            _ if tree.is_empty() => {
                self.tree = None;
                return Err(match reason {
                    StopReason::Error(e) => format!("network evaluation failed: {e}"),
                    _ => "MCTS ended before the first evaluation".into(),
                });
            }
            Some(line) => BestMove {
                mv: Some(job.game.move_to_uci(&line.mv)),
                ponder: None,
            },
            None => job.fallback.clone(),
        };
        self.tree = Some(tree);
        Ok((lines, best))
    }

    /// Runs the policy; returns the info lines and the best move.
    fn think(&mut self, job: &SearchJob) -> Result<(Vec<String>, BestMove), String> {
        let (analysis, partial) = self.evaluate(job)?;
        let model = self.model.as_mut().ok_or("no network loaded")?;
        let first_pass = job.start.elapsed();
        let Some(chosen) = searchless::choose(&analysis, job.temperature, job.u) else {
            return Ok((
                Vec::new(),
                BestMove {
                    mv: None,
                    ponder: None,
                },
            ));
        };
        let best_uci = analysis.moves[chosen].uci.clone();
        let mut nodes = analysis.evals as u64;

        // Ponder move: the opponent's best reply, one more pass, only when time allows.
        let mut ponder = None;
        let time_ok = !partial
            && job
                .optimum_ms
                .is_none_or(|o| first_pass.as_millis() as u64 * 2 < o);
        if job.settings.ponder && time_ok {
            let mut next = job.game.clone();
            if next.push(analysis.moves[chosen].mv).is_ok() && !next.legal_moves().is_empty() {
                let reply =
                    catch_unwind(AssertUnwindSafe(|| searchless::analyse(model, &next, &[])));
                if let Ok(Ok(a)) = reply {
                    nodes += a.evals as u64;
                    ponder = a.best().map(|i| a.moves[i].uci.clone());
                }
            }
        }

        let elapsed_ms = job.start.elapsed().as_millis() as u64;
        let nps = nodes * 1000 / elapsed_ms.max(1);
        let lines = ranked(&analysis)
            .into_iter()
            .take(job.settings.multipv)
            .enumerate()
            .map(|(rank, idx)| {
                let m = &analysis.moves[idx];
                let mate = gives_mate(&job.game, &m.mv);
                let p = f64::from(m.win_prob);
                let mut pv = vec![m.uci.clone()];
                if idx == chosen {
                    pv.extend(ponder.clone());
                }
                format_info(&Info {
                    depth: 1,
                    seldepth: 1,
                    multipv: rank as u32 + 1,
                    score: if mate {
                        Score::Mate(1)
                    } else {
                        Score::Cp(win_prob_to_cp(p))
                    },
                    wdl: job
                        .settings
                        .show_wdl
                        .then(|| Wdl::from_win_prob(if mate { 1.0 } else { p })),
                    nodes,
                    nps,
                    time_ms: elapsed_ms,
                    hashfull: None,
                    pv,
                })
            })
            .collect();
        Ok((
            lines,
            BestMove {
                mv: Some(best_uci),
                ponder,
            },
        ))
    }
}

/// Move indices by descending win probability, ties by ascending action id (the policy's order).
pub fn ranked(analysis: &Analysis) -> Vec<usize> {
    let mut order: Vec<usize> = (0..analysis.moves.len()).collect();
    order.sort_by(|&a, &b| {
        let (ma, mb) = (&analysis.moves[a], &analysis.moves[b]);
        mb.win_prob
            .total_cmp(&ma.win_prob)
            .then(ma.action.cmp(&mb.action))
    });
    order
}

/// Whether `mv` checkmates at once.
pub fn gives_mate(game: &Game, mv: &Move) -> bool {
    let mut pos = game.position().clone();
    pos.play_unchecked(*mv);
    pos.is_checkmate()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes() {
        assert_eq!(batch_size(100.0, 10.0, false), 10);
        assert_eq!(batch_size(99.9, 10.0, false), 9);
        assert_eq!(batch_size(5.0, 10.0, false), 0);
        assert_eq!(batch_size(5.0, 10.0, true), MIN_FIRST_BATCH);
        assert_eq!(batch_size(-50.0, 10.0, true), MIN_FIRST_BATCH);
        assert_eq!(batch_size(-50.0, 10.0, false), 0);
        assert!(batch_size(1.0, 0.0, false) > 1000);
    }

    #[test]
    fn prior_orders_forcing_moves_first() {
        let g = Game::from_fen("6k1/5ppp/8/8/8/1q6/5PPP/3R2K1 w - - 0 1", false).unwrap();
        let score = |g: &Game, uci: &str| prior(g, &g.parse_uci(uci).unwrap());
        let c = Game::from_fen("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", false).unwrap();
        assert!(score(&g, "d1d8") > score(&c, "d2d5"), "mate before capture");
        assert!(
            score(&c, "d2d5") > score(&c, "d2d3"),
            "capture before a quiet move"
        );
        assert_eq!(score(&g, "g2g3"), 0);
    }

    #[test]
    fn ranking_is_by_value_then_action() {
        let g = Game::startpos();
        let mk = |uci: &str, action: u16, p: f32| searchless::MoveScore {
            mv: g.parse_uci(uci).unwrap(),
            uci: uci.into(),
            action,
            win_prob: p,
            raw_win_prob: p,
            bucket_mode: 0,
        };
        let a = Analysis {
            moves: vec![
                mk("a2a3", 10, 0.4),
                mk("e2e4", 20, 0.6),
                mk("d2d4", 30, 0.6),
            ],
            evals: 3,
        };
        assert_eq!(ranked(&a), vec![1, 2, 0]);
    }
}
