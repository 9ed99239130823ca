//! The searchless policy (Ruoss et al., 2024, section 2.2) as a [`Search`](super::Search): score
//! every legal move in one batched forward pass ([`analyse`]) and play the best, or sample with
//! `Temperature`. With `Ponder`, the opponent's best reply comes from one more pass when time
//! allows.
//!
//! Time: one pass normally takes far less than the budget. When the per-row cost measured so far
//! says the pass would overrun the soft deadline, the moves are ordered by a cheap prior (mates,
//! captures, promotions, checks) and scored in batches sized to the time left; moves not reached
//! are left out. A one-row net whose `SuccessorValue` batch (1 + moves rows) would overrun scores
//! the root alone, then the successors of as many of its best moves as fit ([`successor_width`],
//! [`successor_top`]). The hard deadline is the runner's timer.

use super::analysis::{analyse_on, choose, gives_mate, ranked, successor_top, Analysis};
use super::control::Control;
use super::report::{BestMove, Info};
use super::runner::{Algorithm, Outcome, SearchError};
use super::sink::{line_score, SearchSink};
use super::stack::Net;
use super::{SearchMode, SearchRequest};
use crate::game::Game;
use crate::model::cost::RowCost;
use shakmaty::{Move, Position};
use std::time::Instant;

/// The smallest first batch when short of time (the hard-limit timer covers a batch that
/// overruns).
pub const MIN_FIRST_BATCH: usize = 4;

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

/// How far past the soft deadline the `SuccessorValue` batch may run, as a multiple of the time
/// left to it. The batch is the searchless policy's only use of time and is worth about 200 Elo
/// (`weights/README.md`, "Successor value"); under an increment clock the moves that overspend are
/// paid back by the one-row moves the clock then forces.
pub const SUCCESSOR_SOFT_STRETCH: f64 = 2.0;

/// Whether the `SuccessorValue` batch (the root and its successors), estimated at `cost_ms`
/// ([`crate::model::cost::RowCost::estimate_ms`]), fits the clock: within
/// [`SUCCESSOR_SOFT_STRETCH`] times `soft_left` (the soft deadline minus the time used) and, twice
/// over, within `hard_left` (the hard deadline minus the time used: a batch that overran it would
/// forfeit the move to the watchdog's fallback; a loaded machine must not). `None` limits: no
/// clock, always. Under a clock with nothing measured (`cost_ms` `None`) it does not fit: that
/// move scores one row, which measures the cost for the next.
pub fn successors_fit(
    cost_ms: Option<f64>,
    soft_left: Option<f64>,
    hard_left: Option<f64>,
) -> bool {
    if soft_left.is_none() && hard_left.is_none() {
        return true;
    }
    let Some(cost) = cost_ms else {
        return false;
    };
    soft_left.is_none_or(|s| cost <= SUCCESSOR_SOFT_STRETCH * s)
        && hard_left.is_none_or(|h| 2.0 * cost <= h)
}

/// The most moves, 2 to `n`, whose successor batch ([`successor_top`]: one row a move) fits the
/// time left: within `soft_left` (no [`SUCCESSOR_SOFT_STRETCH`]: a narrower batch always fits, so
/// no one-row move would pay an overspent one back, and 1+0.01 clocks ran out) and, twice over,
/// within `hard_left`. A batch of k rows is costed as one row alone plus k − 1 rows at the batched
/// rate (`cost`): small batches pay the fixed cost of a run, which the batched rate of the
/// 21–40-row batches spreads thin. 0 when not even 2 fit, or nothing was measured.
pub fn successor_width(
    cost: &RowCost,
    n: usize,
    soft_left: Option<f64>,
    hard_left: Option<f64>,
) -> usize {
    let (Some(one), Some(per_row)) = (cost.estimate_ms(1), cost.per_row_ms()) else {
        return 0;
    };
    let fits = |k: usize| {
        let ms = one + per_row * (k - 1) as f64;
        soft_left.is_none_or(|s| ms <= s) && hard_left.is_none_or(|h| 2.0 * ms <= h)
    };
    (2..=n).rev().find(|&k| fits(k)).unwrap_or(0)
}

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

/// The searchless policy (`SearchMode searchless`). Stateless between moves.
#[derive(Debug, Default)]
pub struct Searchless;

/// Milliseconds since `go`.
fn elapsed_ms(req: &SearchRequest) -> f64 {
    req.start.elapsed().as_secs_f64() * 1e3
}

/// One analysis (with successor values at `successor_weight`), its time folded into the
/// per-row cost.
fn timed_analyse(
    net: &mut Net<'_>,
    game: &Game,
    moves: &[Move],
    successor_weight: f32,
) -> Result<Analysis, SearchError> {
    let t = Instant::now();
    let a = analyse_on(net.evaluator, net.caps, game, moves, successor_weight)?;
    net.cost.record(t.elapsed().as_secs_f64() * 1e3, a.evals);
    Ok(a)
}

/// Scores the candidate moves: one batched pass, or batches sized to the soft deadline when the
/// measured per-row cost says one pass would overrun it. Returns the analysis (ascending action
/// id) and whether it is partial.
pub fn evaluate(
    net: &mut Net<'_>,
    req: &SearchRequest,
    soft_ms: Option<u64>,
    sink: &SearchSink,
) -> Result<(Analysis, bool), SearchError> {
    let one_row = net.caps.one_row_per_position;
    let candidates = if req.searchmoves.is_empty() {
        req.game.legal_moves()
    } else {
        req.searchmoves.clone()
    };
    let n = candidates.len();
    // BC and MAV score every move in one row: splitting the moves would only repeat the pass.
    let plan = match (soft_ms, net.cost.per_row_ms()) {
        (Some(target), Some(row_ms))
            if !one_row && row_ms * n as f64 > target as f64 - elapsed_ms(req) =>
        {
            Some((target as f64, row_ms))
        }
        _ => None,
    };
    let Some((target, mut row_ms)) = plan else {
        let weight = req.settings.successor_weight;
        if weight > 0.0 && one_row {
            let hard_ms = req.time.at_go(req.start).hard_ms;
            let left = |t: Option<u64>| t.map(|t| t as f64 - elapsed_ms(req));
            let cost = net.cost.estimate_ms(n + 1);
            if !successors_fit(cost, left(soft_ms), left(hard_ms)) {
                // The root alone, then successor values for as many of its best moves as the
                // time left allows (at least 2; else one-pass Q only).
                let mut a = timed_analyse(net, &req.game, &req.searchmoves, 0.0)?;
                let width = successor_width(&*net.cost, n, left(soft_ms), left(hard_ms));
                if width >= 2 {
                    let t = Instant::now();
                    let before = a.evals;
                    successor_top(net.evaluator, net.caps, &req.game, &mut a, weight, width)?;
                    net.cost
                        .record(t.elapsed().as_secs_f64() * 1e3, a.evals - before);
                    sink.note(&format!(
                        "short of time: successor values for the {width} best of {n} moves only ({} rows)",
                        a.evals
                    ));
                } else {
                    sink.note(&format!(
                        "short of time: one-pass Q only, no successor values ({} rows, {:.0} ms estimated)",
                        n + 1,
                        cost.unwrap_or(f64::NAN)
                    ));
                }
                return Ok((a, false));
            }
        }
        return Ok((
            timed_analyse(net, &req.game, &req.searchmoves, weight)?,
            false,
        ));
    };
    let mut order = candidates;
    order.sort_by_key(|m| std::cmp::Reverse(prior(&req.game, m)));
    let mut merged = Analysis {
        moves: Vec::with_capacity(n),
        ..Analysis::default()
    };
    let mut done = 0;
    while done < n {
        let k = batch_size(target - elapsed_ms(req), row_ms, done == 0);
        if k == 0 {
            break;
        }
        let batch = &order[done..(done + k).min(n)];
        let a = timed_analyse(net, &req.game, batch, 0.0)?;
        row_ms = net.cost.per_row_ms().unwrap_or(row_ms);
        merged.evals += a.evals;
        merged.wdl = merged.wdl.or(a.wdl);
        merged.moves.extend(a.moves);
        done += batch.len();
    }
    merged.moves.sort_by_key(|m| m.action);
    if done < n {
        sink.note(&format!(
            "warning: short of time: scored {done} of {n} moves ({row_ms:.2} ms per row)"
        ));
    }
    Ok((merged, done < n))
}

impl Algorithm for Searchless {
    fn mode(&self) -> SearchMode {
        SearchMode::Searchless
    }

    fn think(
        &mut self,
        net: &mut Net<'_>,
        req: &SearchRequest,
        ctl: &Control,
        sink: &SearchSink,
    ) -> Result<Outcome, SearchError> {
        let _ = ctl;
        let soft_ms = req.time.at_go(req.start).soft_ms;
        // Tablebase root: the net chooses among the moves that keep the best WDL (and DTZ
        // progress), as Stockfish's search does among its root moves.
        let root_tb = crate::search::tablebase_root(req, sink);
        let filtered;
        let req = match &root_tb {
            Some(tb) => {
                filtered = SearchRequest {
                    searchmoves: tb.keep(),
                    ..req.clone()
                };
                &filtered
            }
            None => req,
        };
        let tbhits = req
            .tablebase
            .as_ref()
            .map(|_| root_tb.as_ref().map_or(0, |tb| tb.hits));
        let (mut analysis, partial) = evaluate(net, req, soft_ms, sink)?;
        analysis.choice = req.settings.move_choice;
        analysis.draw_shift = req.settings.mcts_params.draw_score;
        let first_pass = req.start.elapsed();
        let Some(chosen) = choose(&analysis, req.temperature, req.u) else {
            return Ok(Outcome {
                infos: Vec::new(),
                best: BestMove {
                    mv: None,
                    ponder: None,
                },
            });
        };
        let best_uci = analysis.moves[chosen].uci.clone();
        let mut nodes = analysis.evals as u64;

        // Ponder move: the opponent's best reply, one more pass, only when time allows.
        let mut ponder = None;
        let time_ok = !partial && soft_ms.is_none_or(|o| first_pass.as_millis() as u64 * 2 < o);
        if req.settings.ponder && time_ok {
            let mut next = req.game.clone();
            if next.push(analysis.moves[chosen].mv).is_ok() && !next.legal_moves().is_empty() {
                if let Ok(mut a) = analyse_on(net.evaluator, net.caps, &next, &[], 0.0) {
                    a.choice = req.settings.move_choice;
                    a.draw_shift = -req.settings.mcts_params.draw_score;
                    nodes += a.evals as u64;
                    ponder = a.best().map(|i| a.moves[i].uci.clone());
                }
            }
        }

        let elapsed_ms = req.start.elapsed().as_millis() as u64;
        let nps = nodes * 1000 / elapsed_ms.max(1);
        let infos = ranked(&analysis)
            .into_iter()
            .take(req.settings.multipv)
            .enumerate()
            .map(|(rank, idx)| {
                let m = &analysis.moves[idx];
                let mate = gives_mate(&req.game, &m.mv);
                // The WDL head (when the net has one) speaks for the position, so for the
                // move played; other lines split their Q.
                let head = analysis.wdl.filter(|_| idx == chosen && !mate);
                let (score, wdl) = line_score(
                    &m.mv,
                    mate.then_some(1),
                    if mate { 1.0 } else { f64::from(m.win_prob) },
                    root_tb.as_ref(),
                    head,
                    req.settings.show_wdl,
                );
                let mut pv = vec![m.uci.clone()];
                if idx == chosen {
                    pv.extend(ponder.clone());
                }
                Info {
                    depth: 1,
                    seldepth: 1,
                    multipv: rank as u32 + 1,
                    score,
                    wdl,
                    nodes,
                    nps,
                    time_ms: elapsed_ms,
                    hashfull: None,
                    tbhits,
                    pv,
                }
            })
            .collect();
        Ok(Outcome {
            infos,
            best: BestMove {
                mv: Some(best_uci),
                ponder,
            },
        })
    }
}

#[cfg(test)]
#[path = "searchless_tests.rs"]
mod net_tests;

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
    fn successor_batches_only_when_they_fit() {
        // A 128 ms batch.
        assert!(successors_fit(Some(128.0), Some(200.0), Some(800.0)));
        assert!(
            successors_fit(Some(128.0), Some(100.0), Some(800.0)),
            "within the stretch of the soft deadline"
        );
        assert!(
            !successors_fit(Some(128.0), Some(60.0), Some(800.0)),
            "beyond the stretch"
        );
        assert!(!successors_fit(Some(128.0), Some(-5.0), Some(800.0)));
        assert!(
            !successors_fit(Some(128.0), Some(190.0), Some(190.0)),
            "movetime 200: half the hard limit is too little"
        );
        assert!(
            !successors_fit(None, Some(1000.0), Some(4000.0)),
            "nothing measured yet under a clock: one row first"
        );
        assert!(successors_fit(Some(128.0), None, None), "no clock");
        assert!(
            successors_fit(None, None, None),
            "no clock, nothing measured"
        );
    }

    #[test]
    fn successor_width_is_the_widest_batch_within_the_soft_deadline() {
        let mut cost = RowCost::default();
        assert_eq!(successor_width(&cost, 20, Some(100.0), Some(400.0)), 0);
        // One row alone: 9 ms; 4.5 ms a row in a batch; so k rows: 9 + 4.5 · (k − 1) ms.
        cost.record(9.0, 1);
        cost.record(45.0, 10);
        assert_eq!(successor_width(&cost, 20, Some(30.0), Some(400.0)), 5);
        assert_eq!(
            successor_width(&cost, 20, Some(30.0), Some(27.0)),
            2,
            "twice within the hard limit: 13.5 ms for two rows"
        );
        assert_eq!(successor_width(&cost, 20, Some(13.0), Some(400.0)), 0);
        assert_eq!(successor_width(&cost, 3, Some(1000.0), None), 3, "all");
        assert_eq!(successor_width(&cost, 20, None, None), 20, "no clock");
        assert_eq!(successor_width(&cost, 1, None, None), 0, "one move");
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
}
