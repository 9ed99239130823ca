//! Time management, in one place: clock → move budget → a soft and a hard deadline.
//!
//! [`TimeManager`] turns a `go` command into a [`TimeBudget`] and, once the clock runs (at `go`,
//! or at `ponderhit` for a ponder search), into [`Deadlines`]: the *soft* deadline is when a
//! search that uses all its time (MCTS) stops and what the searchless policy plans its batches
//! against; the *hard* deadline is when a move must be on the wire. Searches read the soft
//! deadline and a stop flag (`search::control`); the one timer ([`arm_hard_limit`]) sets the
//! stop flag at the hard deadline and sends a fallback move if the network has not answered by
//! then (model still loading, an overloaded machine), so the game is never lost on time.
//! `Move Overhead` is kept in reserve for GUI and transport lag.

use crate::search::limits::GoParams;
use std::time::{Duration, Instant};

/// How long the engine may take for one move, in milliseconds from the start of the clock
/// (`go`, or `ponderhit` for a ponder search).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeBudget {
    /// Time the move should take at most in normal play; `None` without a limit.
    pub optimum_ms: Option<u64>,
    /// Time after which any legal move must be sent; `None` without a limit.
    pub hard_ms: Option<u64>,
}

/// Milliseconds a search keeps between its own deadline and the hard limit (the final network
/// batch and the output must fit in it).
pub const SEARCH_MARGIN_MS: u64 = 25;

impl TimeBudget {
    /// When a search that uses all its time (MCTS) should stop, in ms from the clock's start:
    /// the optimum, but at least [`SEARCH_MARGIN_MS`] (or a tenth of the hard limit, if less)
    /// before the hard limit so the answer never races the watchdog; `None` without a limit.
    pub fn search_ms(&self) -> Option<u64> {
        match (self.optimum_ms, self.hard_ms) {
            (Some(o), Some(h)) => {
                let margin = SEARCH_MARGIN_MS.min(h / 10);
                Some(o.min(h.saturating_sub(margin)).max(1))
            }
            (o, _) => o,
        }
    }

    /// No limit (`go infinite`, `go depth`, `go nodes`, `go mate`, bare `go`).
    pub const UNLIMITED: TimeBudget = TimeBudget {
        optimum_ms: None,
        hard_ms: None,
    };
}

/// Moves assumed left in the game under sudden death (no `movestogo`).
pub const DEFAULT_MOVES_TO_GO: u64 = 30;
/// `Slow Mover`'s default: percent of the clock's optimum time a move. At 100 the MCTS games
/// of a 10+0.1 match ended with about a fifth of their clock unused; 150 against 100, MCTS both,
/// 10+0.1, `Threads 1`: +130 =75 −95 over 300 games, +41 Elo (95 % +7 … +75)
/// (`tools/results/sprt/mcts-slow-mover-150-vs-100.json`, 2026-11-28).
pub const DEFAULT_SLOW_MOVER: u64 = 150;
/// Hard limit as a multiple of the optimum, before capping by the time on the clock.
pub const HARD_FACTOR: u64 = 4;
/// Without `movestogo` the optimum is at most the clock divided by this (Stockfish's cap of 0.2
/// times the time left, `timeman.cpp`), so that a game played on its increment keeps about five
/// increments in reserve: at the default `Slow Mover` the optimum exceeds the increment, which
/// otherwise drains the clock until only `Move Overhead` is left and a late move loses on time.
pub const CLOCK_SHARE_DIVISOR: u64 = 5;

/// Whether `go` gives a game clock at all: a `go` with only the opponent's time (`go wtime 1000`
/// with Black to move) counts the mover's as 0, as Stockfish does, so that it still ends.
fn clock_given(go: &GoParams) -> bool {
    go.wtime.is_some() || go.btime.is_some()
}

/// The budget for a `go` command with `white` to move and `overhead_ms` reserved per move, at
/// `Slow Mover` 100 ([`scaled_budget`]).
pub fn budget(go: &GoParams, white: bool, overhead_ms: u64) -> TimeBudget {
    scaled_budget(go, white, overhead_ms, 100)
}

/// The budget for a `go` command with `white` to move, `overhead_ms` reserved per move and the
/// clock's optimum scaled by `slow_mover` percent (UCI `Slow Mover`, as in Stockfish up to 15).
///
/// - `movetime M`: `M − overhead` (at least half of `M`, at least 1 ms). `movetime 0` (also what
///   an unreadable `movetime` counts as) asks for an answer at once: optimum 0, so the search
///   stops after its first network pass, and no hard limit of its own (a 1 ms one always fired
///   before the net answered and played the fallback move; without a clock nothing is lost).
/// - clock: `avail = own time − overhead` (≥ 1 ms), `optimum = (avail / movestogo +
///   ¾·increment) · slow_mover / 100` capped by `avail` and, without `movestogo`, by a fifth of
///   the own time ([`CLOCK_SHARE_DIVISOR`]); `hard = min(avail, 4·optimum)`.
/// - both: the smaller result. Neither: [`TimeBudget::UNLIMITED`].
///
/// `ponder` and `infinite` do not change the budget; the engine applies it from `ponderhit` and
/// ignores it under `infinite`.
pub fn scaled_budget(go: &GoParams, white: bool, overhead_ms: u64, slow_mover: u64) -> TimeBudget {
    let from_movetime = go.movetime.map(|m| {
        if m == 0 {
            return (0, None);
        }
        let t = m.saturating_sub(overhead_ms).max(m / 2).max(1);
        (t, Some(t))
    });
    let (time, inc) = if white {
        (go.wtime, go.winc)
    } else {
        (go.btime, go.binc)
    };
    let time = time.or_else(|| clock_given(go).then_some(0));
    let from_clock = time.map(|t| {
        let t = t.max(0) as u64;
        let inc = inc.unwrap_or(0).max(0) as u64;
        let avail = t.saturating_sub(overhead_ms).max(1);
        let mtg = go
            .movestogo
            .map_or(DEFAULT_MOVES_TO_GO, |m| u64::from(m).clamp(1, 100));
        // Saturating: clocks near 2^63 ms must not wrap (a wrapped hard limit fell below the
        // optimum; the property tests found it).
        let optimum = (avail / mtg)
            .saturating_add(inc.saturating_mul(3) / 4)
            .saturating_mul(slow_mover)
            / 100;
        let optimum = match go.movestogo {
            Some(_) => optimum,
            None => optimum.min(t / CLOCK_SHARE_DIVISOR),
        };
        let optimum = optimum.clamp(1, avail);
        let hard = optimum.saturating_mul(HARD_FACTOR).min(avail);
        (optimum, Some(hard))
    });
    match (from_movetime, from_clock) {
        (None, None) => TimeBudget::UNLIMITED,
        (Some((o, h)), None) | (None, Some((o, h))) => TimeBudget {
            optimum_ms: Some(o),
            hard_ms: h,
        },
        (Some((o1, h1)), Some((o2, h2))) => TimeBudget {
            optimum_ms: Some(o1.min(o2)),
            hard_ms: match (h1, h2) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        },
    }
}

/// A search's deadlines, from the instant its clock started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// When the clock started (`go`, or `ponderhit`).
    pub start: Instant,
    /// Soft deadline in ms from `start` ([`TimeBudget::search_ms`]); `None` without a limit.
    pub soft_ms: Option<u64>,
    /// Hard deadline in ms from `start` ([`TimeBudget::hard_ms`]); `None` without a limit.
    pub hard_ms: Option<u64>,
}

impl Deadlines {
    /// No limit (infinite, pondering before `ponderhit`, node or depth limits only).
    pub fn none(start: Instant) -> Deadlines {
        Deadlines {
            start,
            soft_ms: None,
            hard_ms: None,
        }
    }

    /// The soft deadline as an instant.
    pub fn soft(&self) -> Option<Instant> {
        self.soft_ms
            .map(|ms| self.start + Duration::from_millis(ms))
    }

    /// The hard deadline as an instant.
    pub fn hard(&self) -> Option<Instant> {
        self.hard_ms
            .map(|ms| self.start + Duration::from_millis(ms))
    }
}

/// The time manager of one `go`: its budget, and the deadlines once the clock runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeManager {
    budget: TimeBudget,
    infinite: bool,
    ponder: bool,
    clock: bool,
}

impl TimeManager {
    /// The manager for `go` with `white` to move and `overhead_ms` (UCI `Move Overhead`)
    /// reserved, at `Slow Mover` 100.
    pub fn new(go: &GoParams, white: bool, overhead_ms: u64) -> TimeManager {
        TimeManager::scaled(go, white, overhead_ms, 100)
    }

    /// The manager for `go` with `white` to move, `overhead_ms` reserved and the clock's optimum
    /// scaled by `slow_mover` percent ([`scaled_budget`]).
    pub fn scaled(go: &GoParams, white: bool, overhead_ms: u64, slow_mover: u64) -> TimeManager {
        TimeManager {
            budget: scaled_budget(go, white, overhead_ms, slow_mover),
            infinite: go.infinite,
            ponder: go.ponder,
            clock: clock_given(go),
        }
    }

    /// Whether the mover has a game clock (`wtime`/`btime`). Without one (`movetime`, `depth`,
    /// `nodes`, `infinite`, bare `go`) nothing is lost by waiting for the network to load: the
    /// limit then counts from the moment it is ready. With one, the clock runs from `go`.
    pub fn clocked(&self) -> bool {
        self.clock
    }

    /// The move's budget (ms from the clock's start).
    pub fn budget(&self) -> TimeBudget {
        self.budget
    }

    /// Deadlines at `go` time: none under `infinite` or while pondering, else the budget from
    /// `start`.
    pub fn at_go(&self, start: Instant) -> Deadlines {
        if self.infinite || self.ponder {
            return Deadlines::none(start);
        }
        self.from(start)
    }

    /// Deadlines at `ponderhit` (`now`): the same budget measured from now, none under
    /// `infinite`.
    pub fn at_ponderhit(&self, now: Instant) -> Deadlines {
        if self.infinite {
            return Deadlines::none(now);
        }
        self.from(now)
    }

    fn from(&self, start: Instant) -> Deadlines {
        Deadlines {
            start,
            soft_ms: self.budget.search_ms(),
            hard_ms: self.budget.hard_ms,
        }
    }
}

/// The hard-limit timer: a thread that sleeps until `deadline` and then, unless `answered()`
/// returned true in the meantime (it waits on it), runs `expire`. Returns at once.
pub fn arm_hard_limit(
    deadline: Instant,
    wait_answered: impl FnOnce(Instant) -> bool + Send + 'static,
    expire: impl FnOnce() + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name("glimpse-hard-limit".into())
        .spawn(move || {
            if !wait_answered(deadline) {
                expire();
            }
        });
    if spawned.is_err() {
        eprintln!("glimpse: warning: could not start the time watchdog");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go() -> GoParams {
        GoParams::default()
    }

    #[test]
    fn no_clock_is_unlimited() {
        assert_eq!(budget(&go(), true, 30), TimeBudget::UNLIMITED);
        let g = GoParams {
            depth: Some(5),
            nodes: Some(100),
            infinite: true,
            ..go()
        };
        assert_eq!(budget(&g, false, 30), TimeBudget::UNLIMITED);
    }

    #[test]
    fn search_deadline_stays_before_the_hard_limit() {
        let b = TimeBudget {
            optimum_ms: Some(1000),
            hard_ms: Some(1000),
        };
        assert_eq!(b.search_ms(), Some(975));
        let b = TimeBudget {
            optimum_ms: Some(300),
            hard_ms: Some(1200),
        };
        assert_eq!(b.search_ms(), Some(300));
        let b = TimeBudget {
            optimum_ms: Some(100),
            hard_ms: Some(100),
        };
        assert_eq!(b.search_ms(), Some(90));
        assert_eq!(TimeBudget::UNLIMITED.search_ms(), None);
    }

    #[test]
    fn movetime_subtracts_overhead() {
        let g = GoParams {
            movetime: Some(1000),
            ..go()
        };
        assert_eq!(
            budget(&g, true, 30),
            TimeBudget {
                optimum_ms: Some(970),
                hard_ms: Some(970)
            }
        );
        // Overhead larger than the movetime: keep half of it rather than nothing.
        let g = GoParams {
            movetime: Some(40),
            ..go()
        };
        assert_eq!(budget(&g, true, 30).hard_ms, Some(20));
        // `movetime 0`: answer after the first network pass, with no hard limit of its own ...
        let g = GoParams {
            movetime: Some(0),
            ..go()
        };
        let b = budget(&g, true, 30);
        assert_eq!(
            (b.optimum_ms, b.hard_ms, b.search_ms()),
            (Some(0), None, Some(0))
        );
        // ... but a clock beside it still bounds the move.
        let g = GoParams {
            movetime: Some(0),
            wtime: Some(10_000),
            ..go()
        };
        let b = budget(&g, true, 0);
        assert_eq!((b.optimum_ms, b.hard_ms), (Some(0), Some(1_332)));
    }

    #[test]
    fn only_the_opponents_clock_still_ends_the_search() {
        let g = GoParams {
            wtime: Some(60_000),
            ..go()
        };
        let b = budget(&g, false, 0);
        assert_eq!((b.optimum_ms, b.hard_ms), (Some(1), Some(1)));
        assert!(TimeManager::new(&g, false, 0).clocked());
    }

    #[test]
    fn clock_uses_own_side() {
        let g = GoParams {
            wtime: Some(60_000),
            btime: Some(3_000),
            ..go()
        };
        let w = budget(&g, true, 0);
        let b = budget(&g, false, 0);
        assert_eq!(w.optimum_ms, Some(2_000));
        assert_eq!(w.hard_ms, Some(8_000));
        assert_eq!(b.optimum_ms, Some(100));
        assert_eq!(b.hard_ms, Some(400));
    }

    #[test]
    fn increment_and_movestogo() {
        let g = GoParams {
            wtime: Some(10_000),
            winc: Some(100),
            ..go()
        };
        // avail 9970, 9970/30 = 332, + 75.
        assert_eq!(
            budget(&g, true, 30),
            TimeBudget {
                optimum_ms: Some(407),
                hard_ms: Some(1628)
            }
        );
        let g = GoParams {
            btime: Some(1_000),
            movestogo: Some(1),
            ..go()
        };
        assert_eq!(
            budget(&g, false, 30),
            TimeBudget {
                optimum_ms: Some(970),
                hard_ms: Some(970)
            }
        );
    }

    #[test]
    fn never_beyond_the_clock() {
        for t in [-50i64, 0, 1, 10, 31, 100, 1_000, 100_000] {
            for inc in [0i64, 100, 5_000] {
                let g = GoParams {
                    wtime: Some(t),
                    winc: Some(inc),
                    ..go()
                };
                let b = budget(&g, true, 30);
                let hard = b.hard_ms.expect("clock gives a limit");
                let optimum = b.optimum_ms.expect("clock gives an optimum");
                assert!(hard >= 1 && optimum >= 1 && optimum <= hard);
                assert!(
                    hard <= (t.max(0) as u64).saturating_sub(30).max(1),
                    "t={t} inc={inc} hard={hard}"
                );
            }
        }
    }

    #[test]
    fn slow_mover_scales_the_clocks_optimum_and_not_movetime() {
        let g = GoParams {
            wtime: Some(10_000),
            winc: Some(100),
            ..go()
        };
        // (9970/30 + 75) · 1.5 = 610; hard 4 × that.
        assert_eq!(
            scaled_budget(&g, true, 30, 150),
            TimeBudget {
                optimum_ms: Some(610),
                hard_ms: Some(2440)
            }
        );
        assert_eq!(scaled_budget(&g, true, 30, 100), budget(&g, true, 30));
        assert_eq!(scaled_budget(&g, true, 30, 50).optimum_ms, Some(203));
        // Never beyond a fifth of the clock, however slow: (9970/30 + 75) · 10 = 4070 → 2000.
        let b = scaled_budget(&g, true, 30, 1000);
        assert_eq!((b.optimum_ms, b.hard_ms), (Some(2000), Some(8000)));
        let m = GoParams {
            movetime: Some(1000),
            ..go()
        };
        assert_eq!(scaled_budget(&m, true, 30, 300), budget(&m, true, 30));
    }

    #[test]
    fn movetime_and_clock_take_the_smaller() {
        let g = GoParams {
            movetime: Some(5_000),
            wtime: Some(2_000),
            movestogo: Some(1),
            ..go()
        };
        assert_eq!(budget(&g, true, 0).hard_ms, Some(2_000));
    }

    #[test]
    fn a_game_on_its_increment_keeps_a_reserve() {
        // 10+0.1 at the default `Slow Mover`, every move taking its whole optimum plus a 40 ms
        // stall (GUI lag, a busy machine): the clock settles near three increments, never at 0.
        let (inc, stall) = (100i64, 40i64);
        let mut clock = 10_000i64;
        let mut lowest = clock;
        for n in 0..400 {
            let g = GoParams {
                wtime: Some(clock),
                winc: Some(inc),
                ..go()
            };
            let optimum = scaled_budget(&g, true, 30, DEFAULT_SLOW_MOVER)
                .optimum_ms
                .unwrap();
            clock -= optimum as i64 + stall;
            assert!(clock > 0, "lost on time at move {n}: {clock} ms");
            lowest = lowest.min(clock);
            clock += inc;
        }
        assert!(lowest >= inc, "the reserve fell to {lowest} ms");
    }

    #[test]
    fn never_a_budget_beyond_the_clock() {
        for time in [0i64, 1, 5, 29, 30, 31, 100, 1000, 60_000, 3_600_000] {
            for inc in [None, Some(0i64), Some(100), Some(10_000)] {
                for mtg in [None, Some(1u32), Some(2), Some(40), Some(500)] {
                    for overhead in [0u64, 30, 5000] {
                        let g = GoParams {
                            wtime: Some(time),
                            winc: inc,
                            movestogo: mtg,
                            ..go()
                        };
                        let b = budget(&g, true, overhead);
                        let avail = (time as u64).saturating_sub(overhead).max(1);
                        let (o, h) = (b.optimum_ms.unwrap(), b.hard_ms.unwrap());
                        assert!(h <= avail, "hard {h} > clock {avail} for {g:?}");
                        assert!(o <= h, "optimum {o} > hard {h} for {g:?}");
                        let soft = b.search_ms().unwrap();
                        assert!(soft <= h.max(1), "soft {soft} > hard {h}");
                    }
                }
            }
        }
    }

    #[test]
    fn deadlines_start_with_the_clock() {
        let g = GoParams {
            movetime: Some(1000),
            ponder: true,
            ..go()
        };
        let tm = TimeManager::new(&g, true, 0);
        let t0 = Instant::now();
        assert_eq!(
            tm.at_go(t0),
            Deadlines::none(t0),
            "no clock while pondering"
        );
        let hit = tm.at_ponderhit(t0);
        assert_eq!(hit.hard(), Some(t0 + Duration::from_millis(1000)));
        assert_eq!(hit.soft(), Some(t0 + Duration::from_millis(975)));
        let inf = TimeManager::new(
            &GoParams {
                infinite: true,
                ..g
            },
            true,
            0,
        );
        assert_eq!(inf.at_ponderhit(t0), Deadlines::none(t0));
    }
}
