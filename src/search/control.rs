//! What the engine tells a running search: `stop`, `ponderhit`, and the deadlines of the time
//! manager. Searches read these flags; nothing else interrupts them.
//!
//! Threading: shared (`Arc`) by the engine thread (which sets the flags), the hard-limit timer
//! (which sets `stop` at the hard deadline) and the search thread (which polls, or waits on it).

use crate::time::Deadlines;
use parking_lot::{Condvar, Mutex};
use std::time::Instant;

#[derive(Debug, Clone, Copy)]
struct State {
    stop: bool,
    ponderhit: bool,
    deadlines: Deadlines,
}

/// Stop and ponderhit flags plus the current deadlines of one search.
pub struct Control {
    state: Mutex<State>,
    cv: Condvar,
}

impl Control {
    /// A running search with `deadlines`.
    pub fn new(deadlines: Deadlines) -> Control {
        Control {
            state: Mutex::new(State {
                stop: false,
                ponderhit: false,
                deadlines,
            }),
            cv: Condvar::new(),
        }
    }

    /// Asks the search to answer now (`stop`, the hard limit, `quit`).
    pub fn stop(&self) {
        self.state.lock().stop = true;
        self.cv.notify_all();
    }

    /// `ponderhit`: the ponder move was played; the clock now runs with `deadlines`.
    pub fn ponderhit(&self, deadlines: Deadlines) {
        let mut s = self.state.lock();
        s.ponderhit = true;
        s.deadlines = deadlines;
        self.cv.notify_all();
    }

    /// The clock starts again with `deadlines` (a search that waited for its network to load).
    pub fn restart(&self, deadlines: Deadlines) {
        self.state.lock().deadlines = deadlines;
        self.cv.notify_all();
    }

    /// Whether `stop` was asked.
    pub fn stopped(&self) -> bool {
        self.state.lock().stop
    }

    /// Whether `ponderhit` arrived.
    pub fn ponderhit_seen(&self) -> bool {
        self.state.lock().ponderhit
    }

    /// The current soft deadline (when a search that uses all its time should stop).
    pub fn soft_deadline(&self) -> Option<Instant> {
        self.state.lock().deadlines.soft()
    }

    /// Blocks until `stop`, or until `ponderhit` when `ponderhit_ends` is set.
    pub fn wait_for_signal(&self, ponderhit_ends: bool) {
        let mut s = self.state.lock();
        while !(s.stop || (ponderhit_ends && s.ponderhit)) {
            self.cv.wait(&mut s);
        }
    }
}
