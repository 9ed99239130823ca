//! The one way a search answers: typed [`Info`] lines and exactly one [`BestMove`] per search,
//! handed to a [`Listener`] (the UCI layer formats and writes them).
//!
//! Threading: a [`SearchSink`] is cloned into the search thread, the hard-limit timer and the
//! engine; whoever answers first prints `bestmove`, every later answer is dropped, and info lines
//! after the answer are dropped too.

use crate::model::buckets::win_prob_to_cp;
use crate::model::Note;
use crate::search::report::{BestMove, Info, Listener, Score, Wdl};
use crate::tablebase::RootProbe;
use parking_lot::{Condvar, Mutex};
use shakmaty::Move;
use std::sync::Arc;
use std::time::Instant;

/// The score and WDL of one root move, the rule both searches report by: a mate is `mate N`
/// (`mate`); else a move the tablebase root probe scores (`root_tb`) gets the tables' cp and
/// their win probability; else cp from `value`, the move's win probability for the side to move.
/// With `show_wdl` the WDL comes from `head` (a WDL head's win/draw/loss) when given, else from
/// that win probability.
pub fn line_score(
    mv: &Move,
    mate: Option<i32>,
    value: f64,
    root_tb: Option<&RootProbe>,
    head: Option<[f32; 3]>,
    show_wdl: bool,
) -> (Score, Option<Wdl>) {
    let tb_cp = root_tb.and_then(|tb| tb.cp_of(mv));
    let p = match (mate, root_tb) {
        (None, Some(tb)) if tb_cp.is_some() => tb.win_prob(),
        _ => value,
    };
    let score = match (mate, tb_cp) {
        (Some(m), _) => Score::Mate(m),
        (None, Some(cp)) => Score::Cp(cp),
        (None, None) => Score::Cp(win_prob_to_cp(p)),
    };
    let wdl = show_wdl.then(|| match head {
        Some(w) => Wdl::from_probs(w),
        None => Wdl::from_win_prob(p),
    });
    (score, wdl)
}

struct Answer {
    answered: Mutex<bool>,
    cv: Condvar,
    /// The search's best move so far ([`SearchSink::provisional`]).
    known: Mutex<Option<BestMove>>,
}

/// The once-only answer of one search, and its diagnostics channel.
#[derive(Clone)]
pub struct SearchSink {
    answer: Arc<Answer>,
    listener: Arc<dyn Listener>,
}

impl SearchSink {
    /// A sink for a search not yet answered, reporting to `listener`.
    pub fn new(listener: Arc<dyn Listener>) -> SearchSink {
        SearchSink {
            answer: Arc::new(Answer {
                answered: Mutex::new(false),
                cv: Condvar::new(),
                known: Mutex::new(None),
            }),
            listener,
        }
    }

    /// Prints `infos` then `bestmove` unless already answered; returns whether it printed.
    pub fn bestmove(&self, infos: &[Info], best: &BestMove) -> bool {
        let mut answered = self.answer.answered.lock();
        if *answered {
            return false;
        }
        self.listener.report(infos, Some(best));
        *answered = true;
        self.answer.cv.notify_all();
        true
    }

    /// Records `best` as the search's best move so far: what a `stop` or the hard limit that
    /// cannot wait for the search's own answer plays instead of the fallback move (MCTS records
    /// its tree's choice after every minibatch).
    pub fn provisional(&self, best: BestMove) {
        *self.answer.known.lock() = Some(best);
    }

    /// Answers for a search that cannot answer in time: its best move so far
    /// ([`SearchSink::provisional`]) or else `fallback`, after an `info string` saying which and
    /// why (`why`: "stopped", "no network answer within the time budget", …). Returns whether
    /// it printed (false when the search had answered).
    pub fn answer_for(&self, why: &str, fallback: &BestMove) -> bool {
        if self.is_answered() {
            return false;
        }
        let known = self.answer.known.lock().clone();
        match known {
            Some(best) => {
                self.note(&format!("{why}; playing the best move so far"));
                self.bestmove(&[], &best)
            }
            None => {
                self.note(&format!("{why}; playing a fallback move"));
                self.bestmove(&[], fallback)
            }
        }
    }

    /// Prints `infos` (progress, or the final lines of a search that waits for `stop`) unless
    /// the search has been answered.
    pub fn info(&self, infos: &[Info]) {
        let answered = self.answer.answered.lock();
        if !*answered {
            self.listener.report(infos, None);
        }
    }

    /// A remark as `info string` (always printed).
    pub fn note(&self, msg: &str) {
        self.listener.note(Note::Info(msg.to_string()));
    }

    /// An error as `info string error: …` and on stderr (always printed).
    pub fn error(&self, msg: &str) {
        self.listener.note(Note::Error(msg.to_string()));
    }

    /// A diagnostic of the network slot.
    pub fn report(&self, note: Note) {
        self.listener.note(note);
    }

    /// Whether `bestmove` has been printed.
    pub fn is_answered(&self) -> bool {
        *self.answer.answered.lock()
    }

    /// Waits until answered or `deadline` (`None`: no limit); returns whether it was answered.
    pub fn wait_until(&self, deadline: Option<Instant>) -> bool {
        let mut answered = self.answer.answered.lock();
        while !*answered {
            match deadline {
                Some(d) => {
                    if self.answer.cv.wait_until(&mut answered, d).timed_out() {
                        return *answered;
                    }
                }
                None => self.answer.cv.wait(&mut answered),
            }
        }
        true
    }
}
