//! Engine facade: game, options, model handle and search worker.
//!
//! Threading and ownership: the caller's thread (the stdin reader) owns [`Engine`]: the game, the
//! options and the random generator. It parses each line into a typed command and acts on it; it
//! never runs the network. A worker thread ([`worker`]) owns the model and runs loads, `eval` and
//! searches in order. While a search runs, the reader keeps answering `isready` at once and
//! forwards `stop`/`ponderhit`, so `go` never blocks the protocol. All output goes through one
//! [`Out`] so stdout carries UCI only.

mod sink;
pub mod worker;

pub use sink::Out;

use crate::game::Game;
use crate::model::{Backend, Model, ModelInfo, RuntimeConfig};
use crate::search::searchless::Analysis;
use crate::time;
use crate::uci::options::{self, Options, Settings};
use crate::uci::output::BestMove;
use crate::uci::{self, Command, GoParams, StartPosition};
use crate::weights;
use crossbeam_channel::{unbounded, Sender};
use parking_lot::Mutex;
use shakmaty::{Color, Move, Position};
use std::io::BufRead;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use worker::{Job, SearchJob, SearchShared, Signal, Worker};

/// The standard start position.
pub const STARTPOS_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// How long `quit` waits for a running network pass before the process exits anyway.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// Which model to load: the options that decide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadKey {
    /// File, or `None` for the embedded net.
    pub weights: Option<String>,
    /// Execution provider.
    pub backend: Backend,
    /// ORT intra-op threads.
    pub threads: usize,
}

impl LoadKey {
    /// The key for the current options.
    pub fn from_settings(s: &Settings) -> LoadKey {
        LoadKey {
            weights: s.weights_file.clone(),
            backend: s.backend,
            threads: s.threads,
        }
    }
}

/// Loads the model a [`LoadKey`] names (the embedded net or a file).
///
/// # Errors
/// No embedded net, missing or corrupt file, no ONNX Runtime, contract mismatch (message text).
pub fn load_model(key: &LoadKey, warnings: &mut Vec<String>) -> Result<Model, String> {
    let cfg = RuntimeConfig {
        backend: key.backend,
        intra_threads: key.threads.max(1),
    };
    let result = match &key.weights {
        None => match weights::embedded() {
            Some(bytes) => Model::load_bytes(bytes, options::EMBEDDED, &cfg, warnings),
            None => return Err(weights::missing_message()),
        },
        Some(path) => Model::load_file(Path::new(path), &cfg, warnings),
    };
    result.map_err(|e| e.to_string())
}

/// The text of a caught panic.
pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Whether the reader loop goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read the next line.
    Continue,
    /// `quit`.
    Quit,
}

/// A search that has not necessarily printed `bestmove` yet.
struct ActiveSearch {
    shared: Arc<SearchShared>,
    signals: Sender<Signal>,
    go: GoParams,
    white: bool,
    overhead_ms: u64,
    fallback: BestMove,
    pondering: bool,
}

/// SplitMix64: a small, well-mixed generator for the temperature draw (not cryptographic).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`; seed 0 draws from the clock and the process id.
    pub fn new(seed: u64) -> Rng {
        if seed != 0 {
            return Rng(seed);
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng(nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The engine facade, driven by one thread.
pub struct Engine {
    out: Out,
    options: Options,
    game: Game,
    position: (StartPosition, Vec<String>),
    debug: bool,
    jobs: Sender<Job>,
    pending: Arc<AtomicUsize>,
    model_info: Arc<Mutex<Option<ModelInfo>>>,
    search: Option<ActiveSearch>,
    rng: Rng,
}

impl Engine {
    /// An engine writing to `out`, with its worker thread started and the start position set.
    /// The model is not loaded until `isready`, `go` or `eval`.
    pub fn new(out: Out) -> Engine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let options = Options::new(cores);
        let (jobs, rx) = unbounded();
        let pending = Arc::new(AtomicUsize::new(0));
        let model_info = Arc::new(Mutex::new(None));
        let worker = Worker::new(out.clone(), Arc::clone(&model_info), Arc::clone(&pending));
        std::thread::Builder::new()
            .name("glimpse-worker".into())
            .spawn(move || worker.run(rx))
            .expect("spawning the worker thread");
        let rng = Rng::new(options.settings().seed);
        Engine {
            out,
            options,
            game: Game::startpos(),
            position: (StartPosition::StartPos, Vec::new()),
            debug: false,
            jobs,
            pending,
            model_info,
            search: None,
            rng,
        }
    }

    /// Reads lines until `quit` or end of input. Invalid UTF-8 is replaced, not fatal.
    pub fn run<R: BufRead>(&mut self, mut input: R) {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if self.handle_line(&line) == Flow::Quit {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.out.error(&format!("reading input failed: {e}"));
                    break;
                }
            }
        }
        self.shutdown();
    }

    /// Stops a running search and waits (at most [`SHUTDOWN_WAIT`]) for the worker to finish,
    /// so the process does not exit while ONNX Runtime is mid-run.
    pub fn shutdown(&mut self) {
        self.stop_search();
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        while self.pending.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Acts on one input line. Never panics: a panic in a handler is reported as an error.
    pub fn handle_line(&mut self, line: &str) -> Flow {
        let line = line.trim_end_matches(['\r', '\n']);
        self.out.log_input(line);
        let parsed = match uci::parse(line) {
            Ok(None) => return Flow::Continue,
            Ok(Some(p)) => p,
            Err(e) => {
                self.out.error(&e.0);
                return Flow::Continue;
            }
        };
        for w in &parsed.warnings {
            self.out.info_string(&format!("warning: {w}"));
        }
        match catch_unwind(AssertUnwindSafe(|| self.handle(parsed.command))) {
            Ok(flow) => flow,
            Err(p) => {
                self.out
                    .error(&format!("internal error: {}", panic_message(&p)));
                Flow::Continue
            }
        }
    }

    /// Acts on one command.
    pub fn handle(&mut self, cmd: Command) -> Flow {
        match cmd {
            Command::Uci => {
                let mut lines = vec![
                    format!("id name {}", uci::ENGINE_NAME),
                    format!("id author {}", uci::ENGINE_AUTHOR),
                ];
                lines.extend(self.options.uci_lines());
                lines.push("uciok".into());
                self.out.lines(&lines);
            }
            Command::Debug(on) => self.debug = on,
            Command::IsReady => self.is_ready(),
            Command::SetOption { name, value } => self.set_option(&name, value.as_deref()),
            Command::Register(_) => self.debug_note("no registration needed"),
            Command::UciNewGame => {
                let seed = self.options.settings().seed;
                if seed != 0 {
                    self.rng = Rng::new(seed);
                }
                self.set_position(StartPosition::StartPos, Vec::new());
                // The MCTS tree and cache belong to the old game.
                self.send(Job::NewGame);
            }
            Command::Position { start, moves } => self.set_position(start, moves),
            Command::Go(go) => self.go(go),
            Command::Stop => self.stop_search(),
            Command::PonderHit => self.ponder_hit(),
            Command::Quit => return Flow::Quit,
            Command::Display => self.display(),
            Command::Eval => self.eval(),
        }
        Flow::Continue
    }

    fn debug_note(&self, msg: &str) {
        if self.debug {
            self.out.info_string(msg);
        }
    }

    fn searching(&self) -> bool {
        self.search
            .as_ref()
            .is_some_and(|s| !s.shared.is_answered())
    }

    fn is_ready(&mut self) {
        if self.pending.load(Ordering::SeqCst) > 0 {
            // A search or load is running: answer at once (UCI), the worker is alive.
            self.out.line("readyok");
            return;
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        let key = LoadKey::from_settings(&self.options.settings());
        if self.send(Job::Ensure { key, reply: tx }) {
            let _ = rx.recv();
        }
        self.out.line("readyok");
    }

    fn send(&mut self, job: Job) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.jobs.send(job).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            self.out.error("the search worker is gone");
            return false;
        }
        true
    }

    fn set_option(&mut self, name: &str, value: Option<&str>) {
        let Some(decl) = self.options.find(name) else {
            self.out.error(&format!(
                "unknown option '{}' (the 'uci' command lists them)",
                name.trim()
            ));
            return;
        };
        let canonical = decl.name;
        let raw = value.unwrap_or("").trim();
        if canonical == options::WEIGHTS_FILE
            && !options::is_embedded_name(raw)
            && !Path::new(raw).is_file()
        {
            self.out.error(&format!(
                "option WeightsFile: no such file '{raw}'; keeping the previous network"
            ));
            return;
        }
        if canonical == options::LOG_FILE {
            let path = (!raw.is_empty() && raw != "<empty>").then_some(raw);
            if let Err(e) = self.out.set_log(path) {
                self.out.error(&format!("option LogFile: {e}"));
                return;
            }
        }
        match self.options.set(name, value) {
            Ok(changed) => {
                if changed.name == options::SEED {
                    self.rng = Rng::new(self.options.settings().seed);
                }
                if changed.name == options::CHESS960 && changed.differs {
                    let (start, moves) = self.position.clone();
                    self.set_position(start, moves);
                }
                self.debug_note(&format!("{} set", changed.name));
            }
            Err(e) => self.out.error(&e),
        }
    }

    /// Builds a game from a `position` command; on any error the previous position is kept.
    fn set_position(&mut self, start: StartPosition, moves: Vec<String>) {
        let chess960 = self.options.settings().chess960;
        let built = match &start {
            StartPosition::StartPos if !chess960 => Ok(Game::startpos()),
            StartPosition::StartPos => Game::from_fen(STARTPOS_FEN, true),
            StartPosition::Fen(fen) => Game::from_fen(fen, chess960),
        };
        let mut game = match built {
            Ok(g) => g,
            Err(e) => {
                self.out.error(&format!(
                    "position rejected: invalid FEN: {}; keeping the previous position",
                    e.0
                ));
                return;
            }
        };
        for (i, m) in moves.iter().enumerate() {
            if let Err(e) = game.push_uci(m) {
                self.out.error(&format!(
                    "position rejected: move {} '{m}' is not legal here: {}; keeping the previous position",
                    i + 1,
                    e.0
                ));
                return;
            }
        }
        self.game = game;
        self.position = (start, moves);
    }

    /// Resolves `searchmoves` text against the legal moves.
    fn resolve_searchmoves(&mut self, texts: &[String]) -> Vec<Move> {
        let mut found = Vec::new();
        for t in texts {
            match self.game.parse_uci(t) {
                Ok(m) => found.push(m),
                Err(_) => self.out.info_string(&format!(
                    "warning: go searchmoves: '{t}' is not legal here; ignored"
                )),
            }
        }
        if found.is_empty() && !texts.is_empty() {
            self.out
                .info_string("warning: go searchmoves: no legal move given; searching all moves");
        }
        found
    }

    fn go(&mut self, go: GoParams) {
        if self.searching() {
            self.out
                .error("go while a search is running: stopping it first");
        }
        self.stop_search();
        let settings = self.options.settings();
        let searchmoves = self.resolve_searchmoves(&go.searchmoves);
        let fallback = BestMove {
            mv: fallback_move(&self.game, &searchmoves),
            ponder: None,
        };
        let decay = settings.temp_decay_moves;
        let temperature = if decay == 0 || self.game.position().fullmoves().get() <= decay {
            settings.temperature
        } else {
            0.0
        };
        let white = self.game.position().turn() == Color::White;
        let start = Instant::now();
        let budget = time::budget(&go, white, settings.move_overhead_ms);
        let timed = !go.infinite && !go.ponder;
        let shared = SearchShared::new(self.out.clone());
        let (sig_tx, sig_rx) = unbounded();
        if self.debug {
            self.out
                .info_string(&format!("budget {budget:?}, temperature {temperature}"));
        }
        let job = SearchJob {
            key: LoadKey::from_settings(&settings),
            game: self.game.clone(),
            searchmoves,
            temperature,
            u: self.rng.next_f64(),
            infinite: go.infinite,
            ponder: go.ponder,
            optimum_ms: if timed { budget.search_ms() } else { None },
            ponder_optimum_ms: if go.ponder && !go.infinite {
                budget.search_ms()
            } else {
                None
            },
            nodes: go.nodes,
            depth: go.depth,
            shared: Arc::clone(&shared),
            signals: sig_rx,
            fallback: fallback.clone(),
            start,
            settings: settings.clone(),
        };
        if !self.send(Job::Search(Box::new(job))) {
            shared.answer(&[], &fallback);
            return;
        }
        if timed {
            if let Some(hard) = budget.hard_ms {
                spawn_watchdog(
                    Arc::clone(&shared),
                    start + Duration::from_millis(hard),
                    fallback.clone(),
                    self.out.clone(),
                );
            }
        }
        self.search = Some(ActiveSearch {
            shared,
            signals: sig_tx,
            white,
            overhead_ms: settings.move_overhead_ms,
            pondering: go.ponder,
            go,
            fallback,
        });
    }

    /// Sends `stop` to a running search (it prints its `bestmove`).
    fn stop_search(&mut self) {
        if let Some(s) = &self.search {
            if !s.shared.is_answered() {
                let _ = s.signals.send(Signal::Stop);
            }
        }
    }

    fn ponder_hit(&mut self) {
        let Some(s) = self.search.as_mut() else {
            self.debug_note("ponderhit without a ponder search; ignored");
            return;
        };
        if !s.pondering || s.shared.is_answered() {
            self.debug_note("ponderhit without a ponder search; ignored");
            return;
        }
        s.pondering = false;
        let _ = s.signals.send(Signal::PonderHit);
        if !s.go.infinite {
            // Our clock runs from now: the same budget, measured from ponderhit.
            if let Some(hard) = time::budget(&s.go, s.white, s.overhead_ms).hard_ms {
                let deadline = Instant::now() + Duration::from_millis(hard);
                spawn_watchdog(
                    Arc::clone(&s.shared),
                    deadline,
                    s.fallback.clone(),
                    self.out.clone(),
                );
            }
        }
    }

    fn display(&self) {
        let mut text = board_diagram(&self.game.fen());
        text.push_str(&format!("\nFen: {}\n", self.game.fen()));
        text.push_str(&format!("Legal moves: {}\n", self.game.legal_moves().len()));
        match &*self.model_info.lock() {
            Some(i) => text.push_str(&format!(
                "Model: {} | {:?} | {} buckets | seq {} | outputs {} | backend {:?} | {}",
                i.source, i.kind, i.buckets, i.seq_len, i.outputs, i.backend, i.description
            )),
            None => text.push_str("Model: not loaded yet (loads at isready or go)"),
        }
        self.out.info_string(&text);
    }

    fn eval(&mut self) {
        if self.pending.load(Ordering::SeqCst) > 0 {
            self.out
                .error("eval: the engine is busy with a search; send it after bestmove");
            return;
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        let key = LoadKey::from_settings(&self.options.settings());
        if !self.send(Job::Eval {
            key,
            game: self.game.clone(),
            reply: tx,
        }) {
            return;
        }
        match rx.recv() {
            Ok(Ok(r)) => {
                let mut lines = eval_table(&self.game, &r.analysis, r.chosen);
                lines.push(format!(
                    "{} evaluations in {:.1} ms ({})",
                    r.analysis.evals, r.ms, r.info.source
                ));
                self.out.info_string(&lines.join("\n"));
            }
            Ok(Err(e)) => self.out.error(&format!("eval: {e}")),
            Err(_) => self.out.error("eval: the search worker failed"),
        }
    }
}

/// Prints the fallback move after `deadline` unless the search answered first.
fn spawn_watchdog(shared: Arc<SearchShared>, deadline: Instant, fallback: BestMove, out: Out) {
    let spawned = std::thread::Builder::new()
        .name("glimpse-watchdog".into())
        .spawn(move || {
            if !shared.wait_until(deadline) {
                out.info_string(
                    "warning: no network answer within the time budget; playing a fallback move",
                );
                shared.answer(&[], &fallback);
            }
        });
    if spawned.is_err() {
        eprintln!("glimpse: warning: could not start the time watchdog");
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
        .find(|m| worker::gives_mate(game, m))
        .or_else(|| {
            moves
                .iter()
                .max_by_key(|m| value(m))
                .filter(|m| value(m) > 0)
        })
        .or(moves.first())?;
    Some(game.move_to_uci(pick))
}

/// An ASCII board from a FEN's placement field (white at the bottom).
pub fn board_diagram(fen: &str) -> String {
    let placement = fen.split_whitespace().next().unwrap_or("");
    let sep = " +---+---+---+---+---+---+---+---+";
    let mut s = String::new();
    for (r, rank) in placement.split('/').enumerate() {
        s.push_str(sep);
        s.push('\n');
        let mut row = String::new();
        for c in rank.chars() {
            match c.to_digit(10) {
                Some(n) => (0..n).for_each(|_| row.push_str(" |  ")),
                None => row.push_str(&format!(" | {c}")),
            }
        }
        s.push_str(&format!("{row} | {}\n", 8 - r));
    }
    s.push_str(sep);
    s.push_str("\n   a   b   c   d   e   f   g   h");
    s
}

/// The `eval` table: every legal move by descending win probability.
pub fn eval_table(game: &Game, analysis: &Analysis, chosen: Option<usize>) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<7} {:>6} {:>8} {:>8} {:>6} {:>6}",
        "move", "action", "win%", "net%", "cp", "bucket"
    )];
    for i in worker::ranked(analysis) {
        let m = &analysis.moves[i];
        let mark = if Some(i) == chosen { " *" } else { "" };
        let mate = if worker::gives_mate(game, &m.mv) {
            " mate"
        } else {
            ""
        };
        lines.push(format!(
            "{:<7} {:>6} {:>8.3} {:>8.3} {:>6} {:>6}{mate}{mark}",
            m.uci,
            m.action,
            100.0 * m.win_prob,
            100.0 * m.raw_win_prob,
            crate::model::buckets::win_prob_to_cp(f64::from(m.win_prob)),
            m.bucket_mode
        ));
    }
    if analysis.moves.is_empty() {
        lines.push("(no legal moves)".into());
    }
    lines
}

/// Runs the UCI loop on stdin/stdout until `quit` or end of input.
pub fn run_stdio() {
    let mut engine = Engine::new(Out::stdout());
    let stdin = std::io::stdin();
    engine.run(stdin.lock());
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
    fn rng_is_reproducible_and_uniform_enough() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        let xs: Vec<f64> = (0..1000).map(|_| a.next_f64()).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        assert_eq!(
            xs[..5],
            (0..5).map(|_| b.next_f64()).collect::<Vec<_>>()[..]
        );
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.05, "{mean}");
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    #[test]
    fn diagram_has_eight_ranks() {
        let d = board_diagram(STARTPOS_FEN);
        assert_eq!(d.lines().filter(|l| l.starts_with(" |")).count(), 8);
        assert!(d.contains(" | r | n | b | q | k | b | n | r | 8"));
        assert!(d.ends_with("   a   b   c   d   e   f   g   h"));
    }

    #[test]
    fn engine_answers_through_its_output() {
        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let mut e = Engine::new(Out::new(Box::new(buf.clone())));
        assert_eq!(e.handle_line("uci\n"), Flow::Continue);
        assert_eq!(
            e.handle_line("position startpos moves e2e4 e7e5"),
            Flow::Continue
        );
        e.handle_line("position startpos moves e2e4 e2e4");
        assert_eq!(
            e.game.moves().len(),
            2,
            "the rejected command kept the old position"
        );
        e.handle_line("setoption name MultiPV value 4");
        assert_eq!(e.options.settings().multipv, 4);
        assert_eq!(e.handle_line("quit"), Flow::Quit);
        let text = String::from_utf8(buf.0.lock().clone()).unwrap();
        assert!(text.contains("\nuciok\n"), "{text}");
        assert!(
            text.contains("info string error: position rejected: move 2 'e2e4'"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.starts_with("id ")
            || l.starts_with("option ")
            || l == "uciok"
            || l.starts_with("info string ")));
    }
}
