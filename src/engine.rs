//! Engine facade: the game, the options, the network slot and the current search.
//!
//! Threading and ownership: the caller's thread (the stdin reader) owns [`Engine`]: the game, the
//! options and the random generator. It parses each line into a typed command and acts on it. It
//! never runs a search itself: `go` hands a [`SearchRequest`] to the current `Box<dyn Search>`
//! (made by [`search::create`] from `SearchMode`), which runs on its own thread and answers
//! through its sink; `stop` and `ponderhit` are forwarded and return at once. The network
//! ([`SharedNetwork`]) is loaded in the background by a [`Preloader`] after `uci` and after each
//! change of a network option, so it is ready before the first `go`; `isready` and `eval` wait for
//! that load (they lock the network only while no search is in flight, so `isready` is always
//! answered at once during a search), and a `go` without a game clock that arrives before the load
//! has finished waits for it (`SearchRequest::net_ready`). All output goes through one
//! [`Out`] so stdout carries UCI only. [`Engine::handle_line`] is the engine thread's one panic
//! boundary.

mod rng;

pub use crate::uci::out::Out;
pub use rng::Rng;

use crate::display::{self, eval_table};
use crate::game::Game;
use crate::model::runtime::panic_message;
use crate::model::{ModelInfo, NetworkSlot, Note, Preloader, SharedNetwork};
use crate::search::analysis::analyse_with;
use crate::search::{self, Search, SearchMode, SearchRequest};
use crate::tablebase::{self, Probe, Tablebases};
use crate::time::TimeManager;
use crate::uci::options::{self, Applies, Options};
use crate::uci::{self, Command, GoParams, StartPosition};
use parking_lot::Mutex;
use shakmaty::{Color, Move, Position};
use std::io::BufRead;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The standard start position.
pub const STARTPOS_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// How long `quit` waits for a running network pass before the process exits anyway.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);
/// How long `isready` waits for a `ucinewgame` reset or an answered search to finish before it
/// answers anyway.
pub const READY_WAIT: Duration = Duration::from_secs(5);

/// Whether the reader loop goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read the next line.
    Continue,
    /// `quit`.
    Quit,
}

/// The engine facade, driven by one thread.
pub struct Engine {
    out: Out,
    options: Options,
    game: Game,
    position: (StartPosition, Vec<String>),
    debug: bool,
    net: SharedNetwork,
    model_info: Arc<Mutex<Option<ModelInfo>>>,
    search: Box<dyn Search>,
    rng: Rng,
    /// The Syzygy tables opened from `SyzygyPath` (`None`: none).
    tablebases: Option<Arc<Tablebases>>,
    preloader: Preloader,
    /// `uci` was seen: network option changes start a background load from then on.
    uci_seen: bool,
}

impl Engine {
    /// An engine writing to `out`, with its search thread started and the start position set.
    /// The model is loaded in the background after `uci` (or at the first `isready`, `go` or
    /// `eval`).
    pub fn new(out: Out) -> Engine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let options = Options::new(cores);
        let net = NetworkSlot::shared();
        let model_info = net.lock().info_handle();
        let search = search::create(
            options.settings().search_mode,
            Arc::clone(&net),
            Arc::new(out.clone()),
        );
        let rng = Rng::new(options.settings().seed);
        let notes = out.clone();
        let preloader = Preloader::spawn(Arc::clone(&net), move |n| notes.note(n));
        Engine {
            out,
            options,
            game: Game::startpos(),
            position: (StartPosition::StartPos, Vec::new()),
            debug: false,
            net,
            model_info,
            search,
            rng,
            tablebases: None,
            preloader,
            uci_seen: false,
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

    /// Stops a running search and waits (at most [`SHUTDOWN_WAIT`]) for its thread to finish,
    /// so the process does not exit while ONNX Runtime is mid-run.
    pub fn shutdown(&mut self) {
        self.search.shutdown(SHUTDOWN_WAIT);
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
                    .error(&format!("internal error: {}", panic_message(p.as_ref())));
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
                self.out.info_string(&startup_note(
                    self.options.settings().load_key().weights.as_deref(),
                ));
                self.uci_seen = true;
                self.preloader.request(self.options.settings().load_key());
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
                // The search's state (MCTS tree and cache) belongs to the old game; the new
                // game's search prepares now (MCTS takes its `Hash` memory off the clock).
                let settings = self.options.settings();
                self.sync_search_mode(settings.search_mode);
                self.search.new_game(&settings);
            }
            Command::Position { start, moves } => self.set_position(start, moves),
            Command::Go(go) => self.go(go),
            Command::Stop => self.search.stop(),
            Command::PonderHit => {
                if !self.search.ponderhit() {
                    self.debug_note("ponderhit without a ponder search; ignored");
                }
            }
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

    /// Prints the network slot's diagnostics.
    fn report(out: &Out) -> impl FnMut(Note) + '_ {
        |n| out.note(n)
    }

    fn is_ready(&mut self) {
        // A `ucinewgame` reset (MCTS allocating its `Hash`) or a search that has already answered
        // is about to finish: wait for it (bounded), as GUIs send `isready` after `ucinewgame` for
        // that. A search still thinking is not waited for.
        let deadline = Instant::now() + READY_WAIT;
        while self.search.busy() && !self.search.searching() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if !self.search.busy() {
            // No search in flight: the network is free to load (the reply waits for it).
            let key = self.options.settings().load_key();
            self.net.lock().ensure(&key, &mut Self::report(&self.out));
        }
        // A search or load is running: answer at once (UCI), the search thread is alive.
        self.out.line("readyok");
    }

    fn set_option(&mut self, name: &str, value: Option<&str>) {
        let Some(decl) = self.options.find(name) else {
            self.out.error(&format!(
                "unknown option '{}' (the 'uci' command lists them)",
                name.trim()
            ));
            return;
        };
        let (canonical, applies) = (decl.name, decl.applies);
        let raw = value.unwrap_or("").trim();
        if let Err(message) = self.prepare_option(applies, canonical, raw) {
            self.out.error(&message);
            return;
        }
        match self.options.set(name, value) {
            Ok(changed) => {
                self.apply_option(applies, &changed);
                self.debug_note(&format!("{} set", changed.name));
            }
            Err(e) => self.out.error(&e.to_string()),
        }
    }

    /// What must succeed before an option takes the value `raw`: a `WeightsFile` must be a
    /// readable file, a `LogFile` must open. The message is the error to print.
    fn prepare_option(
        &mut self,
        applies: Applies,
        canonical: &str,
        raw: &str,
    ) -> Result<(), String> {
        match applies {
            Applies::Network
                if canonical == options::WEIGHTS_FILE.name && !options::is_embedded_name(raw) =>
            {
                match weights_file_problem(Path::new(raw)) {
                    Some(problem) => Err(format!(
                        "option WeightsFile: '{raw}' {problem}; keeping the previous network"
                    )),
                    None => Ok(()),
                }
            }
            Applies::Output => {
                let path = (!options::is_empty_value(raw)).then_some(raw);
                self.out
                    .set_log(path)
                    .map_err(|e| format!("option {canonical}: {e}"))
            }
            _ => Ok(()),
        }
    }

    /// Applies a changed option where [`Applies`] says it takes effect at once.
    fn apply_option(&mut self, applies: Applies, changed: &options::Changed) {
        match applies {
            Applies::Tablebases => self.open_tablebases(),
            Applies::Network => {
                if self.uci_seen {
                    self.preloader.request(self.options.settings().load_key());
                }
                if changed.name == options::THREADS.name {
                    let asked = self.options.value(options::THREADS);
                    let cores = self.options.cores();
                    if asked > cores as i64 {
                        self.out.info_string(&format!(
                            "Threads {asked}: this machine has {cores} cores; using {cores}"
                        ));
                    }
                }
            }
            Applies::Random => self.rng = Rng::new(self.options.settings().seed),
            Applies::Position if changed.differs => {
                let (start, moves) = self.position.clone();
                self.set_position(start, moves);
            }
            Applies::Position | Applies::Search | Applies::Mcts | Applies::Output => {}
        }
    }

    /// Opens the tables of `SyzygyPath` (once, when the option is set) and says what was found;
    /// problems are reported and the engine goes on with the tables that could be read.
    fn open_tablebases(&mut self) {
        let value = self.options.value(options::SYZYGY_PATH);
        self.tablebases = None;
        if tablebase::is_empty_path(&value) {
            return;
        }
        let opened = Tablebases::open(&value);
        for p in &opened.problems {
            self.out.error(&format!("option SyzygyPath: {p}"));
        }
        match opened.tables {
            Some(t) => {
                self.out.info_string(&t.describe());
                self.tablebases = Some(Arc::new(t));
            }
            None => self
                .out
                .info_string("Syzygy: no tables found; playing without tablebases"),
        }
    }

    /// Builds a game from a `position` command; on any error the previous position is kept.
    fn set_position(&mut self, start: StartPosition, moves: Vec<String>) {
        let chess960 = self.options.settings().chess960;
        let built = match &start {
            StartPosition::StartPos if !chess960 => Ok((Game::startpos(), Vec::new())),
            StartPosition::StartPos => Game::from_fen_noting(STARTPOS_FEN, true),
            StartPosition::Fen(fen) => Game::from_fen_noting(fen, chess960),
        };
        let mut game = match built {
            Ok((g, notes)) => {
                for n in notes {
                    self.out.info_string(&format!("warning: position: {n}"));
                }
                g
            }
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

    /// Makes the current search the one `SearchMode` names (at `go` and `ucinewgame`); the previous
    /// search answers before the new one starts.
    fn sync_search_mode(&mut self, mode: SearchMode) {
        if self.search.mode() != mode {
            self.search.wait();
            self.search = search::create(mode, Arc::clone(&self.net), Arc::new(self.out.clone()));
        }
    }

    fn go(&mut self, go: GoParams) {
        if self.search.searching() {
            self.out
                .error("go while a search is running: stopping it first");
        }
        self.search.stop();
        let settings = self.options.settings();
        self.sync_search_mode(settings.search_mode);
        let searchmoves = self.resolve_searchmoves(&go.searchmoves);
        let decay = settings.temp_decay_moves;
        let temperature = if decay == 0 || self.game.position().fullmoves().get() <= decay {
            settings.temperature
        } else {
            0.0
        };
        let white = self.game.position().turn() == Color::White;
        let start = Instant::now();
        let time = TimeManager::scaled(&go, white, settings.move_overhead_ms, settings.slow_mover);
        if self.debug {
            self.out.info_string(&format!(
                "budget {:?}, temperature {temperature}",
                time.budget()
            ));
        }
        let tablebase = self
            .tablebases
            .as_ref()
            .filter(|_| settings.syzygy_probe_limit > 0)
            .map(|t| Probe {
                tables: Arc::clone(t),
                limit: settings.syzygy_probe_limit,
                rule50: settings.syzygy_50_move_rule,
            });
        let key = settings.load_key();
        let net_ready = self.net_ready(&key);
        let request = SearchRequest {
            net_ready,
            key,
            game: self.game.clone(),
            searchmoves,
            go,
            settings,
            temperature,
            u: self.rng.next_f64(),
            time,
            start,
            tablebase,
        };
        self.search.start(request);
    }

    /// Whether the network for `key` is ready for a search: no background load pending and the
    /// slot has it (or failed it). A slot locked by the previous search counts as ready: it
    /// answers in moments, and a network change always goes through the loader.
    fn net_ready(&self, key: &crate::model::LoadKey) -> bool {
        if self.preloader.loading() {
            return false;
        }
        self.net.try_lock().is_none_or(|n| n.settled(key))
    }

    fn display(&self) {
        let text = display::position_report(&self.game, self.model_info.lock().as_ref());
        self.out.info_string(&text);
    }

    fn eval(&mut self) {
        if self.search.busy() {
            self.out
                .error("eval: the engine is busy with a search; send it after bestmove");
            return;
        }
        let key = self.options.settings().load_key();
        let mut net = self.net.lock();
        if !net.ensure(&key, &mut Self::report(&self.out)) {
            self.out.error("eval: no network loaded");
            return;
        }
        let Some(model) = net.model() else {
            self.out.error("eval: no network loaded");
            return;
        };
        let t0 = Instant::now();
        // As the searchless policy scores the moves: with the successor values it is set to use.
        let weight = self.options.settings().successor_weight;
        match analyse_with(model, &self.game, &[], weight) {
            Ok(analysis) => {
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                let mut lines = eval_table(&self.game, &analysis, analysis.best());
                lines.push(format!(
                    "{} evaluations in {ms:.1} ms ({})",
                    analysis.evals,
                    model.info().source
                ));
                self.out.info_string(&lines.join("\n"));
            }
            Err(e) => self.out.error(&format!("eval: {e}")),
        }
    }
}

/// The `info string` after `uciok`: the version and which net plays.
pub fn startup_note(weights: Option<&str>) -> String {
    let net = match weights {
        Some(file) => format!("network {file} (WeightsFile); loading it in the background"),
        None if crate::weights::embedded().is_some() => format!(
            "network {} (embedded); loading it in the background",
            crate::weights::embedded_name()
        ),
        None => "no embedded network: set WeightsFile".to_string(),
    };
    format!("{}, {net}", uci::ENGINE_NAME)
}

/// Runs the UCI loop on stdin/stdout until `quit` or end of input.
pub fn run_stdio() {
    let mut engine = Engine::new(Out::stdout());
    let stdin = std::io::stdin();
    engine.run(stdin.lock());
}

#[cfg(test)]
mod tests;

/// Why `path` cannot be a `WeightsFile` before it is even read: missing, a directory, not a
/// regular file (`/dev/null`), or empty. `None` for a non-empty regular file.
pub fn weights_file_problem(path: &Path) -> Option<&'static str> {
    match std::fs::metadata(path) {
        Err(_) => Some("does not exist"),
        Ok(m) if m.is_dir() => Some("is a directory, not an ONNX file"),
        Ok(m) if !m.is_file() => Some("is not a regular file"),
        Ok(m) if m.len() == 0 => Some("is empty (0 bytes), not an ONNX file"),
        Ok(_) => None,
    }
}
