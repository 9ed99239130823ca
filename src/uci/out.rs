//! The single writer of stdout (and of the optional `LogFile`).
//!
//! Threading: [`Out`] is cloned into the reader thread, the search worker and watchdogs; a mutex
//! keeps every call's lines together and in order. Write errors (a closed pipe) are ignored: the
//! engine then simply has no listener left.

use crate::model::Note;
use crate::search::report::{BestMove, Info, Listener};
use crate::uci::output::{format_bestmove, format_info, format_info_string, printable};
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Arc;

/// The log file cannot be opened for appending.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot open log file '{path}': {reason}")]
pub struct LogError {
    /// The path given.
    pub path: String,
    /// The operating system's reason.
    pub reason: String,
}

struct Inner {
    writer: Box<dyn Write + Send>,
    log: Option<File>,
}

/// A cloneable, thread-safe line writer for UCI output.
#[derive(Clone)]
pub struct Out {
    inner: Arc<Mutex<Inner>>,
}

impl Out {
    /// Output to the process's stdout.
    pub fn stdout() -> Out {
        Out::new(Box::new(std::io::stdout()))
    }

    /// Output to any writer (tests use a shared buffer).
    pub fn new(writer: Box<dyn Write + Send>) -> Out {
        Out {
            inner: Arc::new(Mutex::new(Inner { writer, log: None })),
        }
    }

    /// Writes lines atomically (no other output between them), each followed by `\n`, then flushes.
    pub fn lines<S: AsRef<str>>(&self, lines: &[S]) {
        let mut inner = self.inner.lock();
        let Inner { writer, log } = &mut *inner;
        for l in lines {
            let _ = writeln!(writer, "{}", l.as_ref());
            if let Some(f) = log.as_mut() {
                let _ = writeln!(f, "<< {}", l.as_ref());
            }
        }
        let _ = writer.flush();
    }

    /// Writes one line.
    pub fn line(&self, line: &str) {
        self.lines(&[line]);
    }

    /// Writes `info string <msg>` (multi-line messages become several lines).
    pub fn info_string(&self, msg: &str) {
        self.lines(&format_info_string(msg));
    }

    /// Reports an error: `info string error: <msg>` on stdout and the same text on stderr.
    pub fn error(&self, msg: &str) {
        let clean: String = msg
            .chars()
            .map(|c| if c == '\n' { c } else { printable(c) })
            .collect();
        eprintln!("glimpse: error: {clean}");
        self.info_string(&format!("error: {msg}"));
    }

    /// A diagnostic of the network slot: a remark as `info string`, a failure as an error.
    pub fn note(&self, note: Note) {
        match note {
            Note::Info(m) => self.info_string(&m),
            Note::Error(m) => self.error(&m),
        }
    }

    /// Records an input line in the log file (`>> line`), if logging.
    pub fn log_input(&self, line: &str) {
        let mut inner = self.inner.lock();
        if let Some(f) = inner.log.as_mut() {
            let _ = writeln!(f, ">> {line}");
        }
    }

    /// Starts appending to `path`, or stops logging with `None`.
    ///
    /// # Errors
    /// The file cannot be opened for appending; logging is then unchanged.
    pub fn set_log(&self, path: Option<&str>) -> Result<(), LogError> {
        let file = match path {
            None => None,
            Some(p) => Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| LogError {
                        path: p.to_string(),
                        reason: e.to_string(),
                    })?,
            ),
        };
        self.inner.lock().log = file;
        Ok(())
    }
}

impl Listener for Out {
    /// The search's reports as UCI lines (`info …`, then `bestmove …`), written together.
    fn report(&self, infos: &[Info], best: Option<&BestMove>) {
        let mut lines: Vec<String> = infos.iter().map(format_info).collect();
        lines.extend(best.map(format_bestmove));
        self.lines(&lines);
    }

    fn note(&self, note: Note) {
        Out::note(self, note);
    }
}
