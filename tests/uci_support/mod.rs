//! Drives the built `glimpse` binary over pipes for the `tests/uci_*.rs` integration tests.
//!
//! Every stdout line is checked to be UCI (`id`, `option`, `uciok`, `readyok`, `info`,
//! `bestmove`); anything else fails the test. Waits have generous timeouts so a loaded machine
//! does not fail them; they only bound a hang.

#![allow(dead_code)]

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Upper bound for any single wait.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Where `make test-models` puts the tiny golden action-value model.
pub fn tiny_av_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models/tiny_av.onnx")
}

/// The tiny golden action-value model; panics with a hint when it has not been made.
pub fn tiny_av() -> PathBuf {
    let p = tiny_av_path();
    assert!(
        p.is_file(),
        "{} is missing: run `make test-models` first",
        p.display()
    );
    p
}

/// A model made by `make test-models` (in `$GLIMPSE_TEST_MODELS`, default `target/test-models`);
/// panics with a hint when it has not been made.
pub fn test_model(file: &str) -> PathBuf {
    let dir = std::env::var_os("GLIMPSE_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models"));
    let p = dir.join(file);
    assert!(
        p.is_file(),
        "{} is missing: run `make test-models` (or set GLIMPSE_TEST_MODELS)",
        p.display()
    );
    p
}

/// Whether a stdout line is UCI.
pub fn is_uci_line(line: &str) -> bool {
    const HEADS: [&str; 5] = [
        "id name ",
        "id author ",
        "option name ",
        "info ",
        "bestmove ",
    ];
    line == "uciok" || line == "readyok" || HEADS.iter().any(|h| line.starts_with(h))
}

/// A running engine.
pub struct Engine {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line read so far.
    pub transcript: Vec<String>,
}

impl Engine {
    /// Starts `target/…/glimpse` with stderr discarded.
    pub fn start() -> Engine {
        let mut child = Command::new(env!("CARGO_BIN_EXE_glimpse"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start glimpse");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        Engine {
            child,
            stdin: Some(stdin),
            lines: rx,
            transcript: Vec::new(),
        }
    }

    /// Starts an engine, completes the handshake, and loads the tiny AV model.
    pub fn with_tiny_model() -> Engine {
        let mut e = Engine::start();
        e.handshake();
        e.send(&format!(
            "setoption name WeightsFile value {}",
            tiny_av().display()
        ));
        let lines = e.ready();
        assert!(
            !lines.iter().any(|l| l.contains("error")),
            "loading the tiny model failed: {lines:#?}"
        );
        e
    }

    /// Sends one line.
    pub fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    /// Sends raw bytes (for invalid UTF-8).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("write to engine");
        stdin.flush().expect("flush to engine");
    }

    fn next_line(&mut self, deadline: Instant) -> Option<String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(l) => {
                assert!(is_uci_line(&l), "non-UCI line on stdout: {l:?}");
                self.transcript.push(l.clone());
                Some(l)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Reads lines until one satisfies `done` (included in the result); panics after `PATIENCE`.
    pub fn until(&mut self, what: &str, done: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut got = Vec::new();
        loop {
            match self.next_line(deadline) {
                Some(l) => {
                    let stop = done(&l);
                    got.push(l);
                    if stop {
                        return got;
                    }
                }
                None => panic!("timed out or engine exited waiting for {what}; got {got:#?}"),
            }
        }
    }

    /// Lines that arrive within `wait` (none required).
    pub fn collect_for(&mut self, wait: Duration) -> Vec<String> {
        let deadline = Instant::now() + wait;
        let mut got = Vec::new();
        while let Some(l) = self.next_line(deadline) {
            got.push(l);
        }
        got
    }

    /// `uci` … `uciok`.
    pub fn handshake(&mut self) -> Vec<String> {
        self.send("uci");
        self.until("uciok", |l| l == "uciok")
    }

    /// `isready` … `readyok`; returns the lines before and including `readyok`.
    pub fn ready(&mut self) -> Vec<String> {
        self.send("isready");
        self.until("readyok", |l| l == "readyok")
    }

    /// Sends `go …` and reads to `bestmove`; returns all lines.
    pub fn go(&mut self, args: &str) -> Vec<String> {
        self.send(&format!("go {args}"));
        self.until("bestmove", |l| l.starts_with("bestmove "))
    }

    /// The FEN the engine reports with `d`.
    pub fn fen(&mut self) -> String {
        self.send("d");
        let lines = self.until("the d output", |l| l.starts_with("info string Fen: "));
        lines.last().expect("a line")["info string Fen: ".len()..].to_string()
    }

    /// Sends `quit` and waits for the process to end; returns whether it exited in time.
    pub fn quit(mut self) -> bool {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(b"quit\n");
            let _ = stdin.flush();
        }
        self.wait_exit()
    }

    /// Closes the engine's stdin (end of input) and waits for the process to end.
    pub fn close_input(mut self) -> bool {
        self.stdin = None;
        self.wait_exit()
    }

    fn wait_exit(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                // Drain and check whatever was still printed.
                while let Some(_l) = self.next_line(Instant::now() + Duration::from_millis(200)) {}
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        false
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The move of a `bestmove` line (`None` for `(none)`), and its ponder move.
pub fn bestmove(lines: &[String]) -> (Option<String>, Option<String>) {
    let l = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("bestmove "))
        .expect("a bestmove line");
    let w: Vec<&str> = l.split_whitespace().collect();
    let mv = (w[1] != "(none)").then(|| w[1].to_string());
    let ponder = (w.len() >= 4 && w[2] == "ponder").then(|| w[3].to_string());
    (mv, ponder)
}

/// The `info … multipv …` lines.
pub fn pv_lines(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.starts_with("info depth "))
        .cloned()
        .collect()
}

/// The value after `key` in an info line.
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let w: Vec<&str> = line.split_whitespace().collect();
    w.iter()
        .position(|t| *t == key)
        .and_then(|i| w.get(i + 1))
        .copied()
}

/// Whether `mv` is legal in `fen` (Chess960 notation when `chess960`).
pub fn legal(fen: &str, mv: &str, chess960: bool) -> bool {
    let mut g = glimpse::game::Game::from_fen(fen, chess960).expect("valid FEN");
    g.push_uci(mv).is_ok()
}
