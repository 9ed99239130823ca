//! Time management: clock → move budget.
//!
//! The searchless policy spends one batched forward pass per move (plus one for a ponder move), so
//! the budget does not decide how long to think; it bounds how long the engine may take before it
//! must answer. The engine arms a watchdog with [`TimeBudget::hard_ms`]: if the network has not
//! answered by then (model still loading, an overloaded machine), a fallback move is played so the
//! game is never lost on time. `Move Overhead` is kept in reserve for GUI and transport lag.

use crate::uci::GoParams;

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
/// Hard limit as a multiple of the optimum, before capping by the time on the clock.
pub const HARD_FACTOR: u64 = 4;

/// The budget for a `go` command with `white` to move and `overhead_ms` reserved per move.
///
/// - `movetime M`: `M − overhead` (at least half of `M`, at least 1 ms).
/// - clock: `avail = own time − overhead` (≥ 1 ms), `optimum = avail / movestogo + ¾·increment`
///   capped by `avail`, `hard = min(avail, 4·optimum)`.
/// - both: the smaller result. Neither: [`TimeBudget::UNLIMITED`].
///
/// `ponder` and `infinite` do not change the budget; the engine applies it from `ponderhit` and
/// ignores it under `infinite`.
pub fn budget(go: &GoParams, white: bool, overhead_ms: u64) -> TimeBudget {
    let from_movetime = go.movetime.map(|m| {
        let t = m.saturating_sub(overhead_ms).max(m / 2).max(1);
        (t, t)
    });
    let (time, inc) = if white {
        (go.wtime, go.winc)
    } else {
        (go.btime, go.binc)
    };
    let from_clock = time.map(|t| {
        let t = t.max(0) as u64;
        let inc = inc.unwrap_or(0).max(0) as u64;
        let avail = t.saturating_sub(overhead_ms).max(1);
        let mtg = go
            .movestogo
            .map_or(DEFAULT_MOVES_TO_GO, |m| u64::from(m).clamp(1, 100));
        let optimum = (avail / mtg + inc * 3 / 4).clamp(1, avail);
        let hard = (optimum * HARD_FACTOR).min(avail);
        (optimum, hard)
    });
    match (from_movetime, from_clock) {
        (None, None) => TimeBudget::UNLIMITED,
        (Some((o, h)), None) | (None, Some((o, h))) => TimeBudget {
            optimum_ms: Some(o),
            hard_ms: Some(h),
        },
        (Some((o1, h1)), Some((o2, h2))) => TimeBudget {
            optimum_ms: Some(o1.min(o2)),
            hard_ms: Some(h1.min(h2)),
        },
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
        let g = GoParams {
            movetime: Some(0),
            ..go()
        };
        assert_eq!(budget(&g, true, 30).hard_ms, Some(1));
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
    fn movetime_and_clock_take_the_smaller() {
        let g = GoParams {
            movetime: Some(5_000),
            wtime: Some(2_000),
            movestogo: Some(1),
            ..go()
        };
        assert_eq!(budget(&g, true, 0).hard_ms, Some(2_000));
    }
}
