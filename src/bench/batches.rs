//! The batch table of `glimpse bench`: time per network run at 1, 8, 32 and 128 rows, positions
//! (or rows) per second, achieved GFLOP/s, and the share of ONNX Runtime's MatMul rate
//! ([`super::matmul`]) it reaches. Rows are built from the bench positions, cycled: for a kind
//! with one row per position (BC, MAV) each row is a whole position with all its legal moves; for
//! a kind with one row per move (AV, SV) each row is one move of a position, so that every run
//! has exactly the stated number of rows. Several models are measured interleaved (A B A B …) so
//! that a compared pair sees the same machine load.

use super::compare::{SWITCH_PAUSE, WARM_UP_RUNS};
use crate::game::Game;
use crate::model::{EvalRequest, Model};
use std::time::Instant;

/// Rows per network run in the table.
pub const BATCH_SIZES: [usize; 4] = [1, 8, 32, 128];

/// Timing of one batch size for one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchTiming {
    /// Rows per run (requested).
    pub rows: usize,
    /// Median wall time of one run, milliseconds.
    pub ms: f64,
}

impl BatchTiming {
    /// Rows per second at this batch size.
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / (self.ms / 1e3).max(1e-12)
    }
}

/// The requests of one run with `rows` network rows for `model`'s kind, cycling over `games`.
///
/// # Errors
/// `games` is empty or a position has no legal move.
pub fn requests(model: &Model, games: &[Game], rows: usize) -> Result<Vec<EvalRequest>, String> {
    if games.is_empty() {
        return Err("no positions".into());
    }
    let whole = model.info().kind.one_row_per_position();
    (0..rows)
        .map(|i| {
            let g = &games[i % games.len()];
            let mut moves = g.legal_moves();
            if moves.is_empty() {
                return Err(format!("{} has no legal move", g.fen()));
            }
            if !whole {
                // One row per move: pick a different move on each pass over the positions.
                let m = moves[(i / games.len()) % moves.len()];
                moves = vec![m];
            }
            Ok(EvalRequest {
                pos: g.position().clone(),
                moves,
                hash: 0,
            })
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Measures every model at every size in `sizes`. With one model: one untimed warm-up run, then
/// `reps` timed runs. With several: two blocks per model and size, in order and then in reverse
/// (A B, B A), each after [`SWITCH_PAUSE`] and [`WARM_UP_RUNS`] untimed runs, then `reps` timed
/// ones, so that every model has `2 × reps` samples and none is timed while another model's ONNX
/// Runtime threads still spin. Returns one `Vec` per
/// model, one entry per size (the median).
///
/// # Errors
/// A request cannot be built, or a run fails (the message names the model and size).
pub fn measure(
    models: &mut [&mut Model],
    games: &[Game],
    sizes: &[usize],
    reps: usize,
) -> Result<Vec<Vec<BatchTiming>>, String> {
    let n = models.len();
    let mut out = vec![Vec::with_capacity(sizes.len()); n];
    let blocks: Vec<Vec<usize>> = if n == 1 {
        vec![vec![0]]
    } else {
        vec![(0..n).collect(), (0..n).rev().collect()]
    };
    for &rows in sizes {
        let batches = models
            .iter()
            .map(|m| requests(m, games, rows))
            .collect::<Result<Vec<_>, _>>()?;
        let mut times = vec![Vec::with_capacity(2 * reps); n];
        for order in &blocks {
            for &i in order {
                let m = &mut models[i];
                if n > 1 {
                    std::thread::sleep(SWITCH_PAUSE);
                }
                for rep in 0..WARM_UP_RUNS + reps.max(1) {
                    let t = Instant::now();
                    let done = m
                        .evaluate(&batches[i])
                        .map_err(|e| format!("{} at {rows} rows per run: {e}", m.info().source))?;
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    if done.rows != rows {
                        return Err(format!(
                            "{}: {} rows run, {rows} expected",
                            m.info().source,
                            done.rows
                        ));
                    }
                    if rep >= WARM_UP_RUNS {
                        times[i].push(ms);
                    }
                }
            }
        }
        for (i, t) in times.into_iter().enumerate() {
            out[i].push(BatchTiming {
                rows,
                ms: median(t),
            });
        }
    }
    Ok(out)
}

/// Timed runs per model and size that [`measure`] takes for `models` models and `reps`.
pub fn samples(models: usize, reps: usize) -> usize {
    reps.max(1) * if models > 1 { 2 } else { 1 }
}

/// One model's column set in the printed table.
pub struct Column<'a> {
    /// Name printed above the model's columns (`A`, `B`, or empty for a single model).
    pub label: &'a str,
    /// GFLOP per row (the model's `glimpse.gflop_per_eval`).
    pub gflop_per_row: f64,
    /// Whether a row is a whole position (else one move).
    pub row_is_position: bool,
    /// The model's timings, one per size.
    pub timings: &'a [BatchTiming],
    /// ORT's MatMul GFLOP/s of the model's precision ([`super::matmul::Roofline::for_precision`]),
    /// if measured.
    pub roofline: Option<f64>,
}

/// The table's lines: one header, one line per size; a `%MatMul` column gives each model's share of
/// its own roofline (left out when no column has one). With two columns a last column gives B's rows
/// per second over A's.
pub fn table(columns: &[Column<'_>]) -> Vec<String> {
    let shares = columns.iter().any(|c| c.roofline.is_some());
    let mut lines = Vec::new();
    let mut head = format!("{:>5}", "rows");
    for c in columns {
        let unit = if c.row_is_position { "pos/s" } else { "rows/s" };
        let tag = if c.label.is_empty() {
            String::new()
        } else {
            format!("{} ", c.label)
        };
        head.push_str(&format!(
            " {:>10} {:>9} {:>9}",
            format!("{tag}ms"),
            format!("{tag}{unit}"),
            format!("{tag}GFLOP/s")
        ));
        if shares {
            head.push_str(&format!(" {:>9}", format!("{tag}%MatMul")));
        }
    }
    if columns.len() == 2 {
        head.push_str(&format!(" {:>6}", "B/A"));
    }
    lines.push(head);
    let n = columns.iter().map(|c| c.timings.len()).min().unwrap_or(0);
    for r in 0..n {
        let mut line = format!("{:>5}", columns[0].timings[r].rows);
        for c in columns {
            let t = c.timings[r];
            let gflops = c.gflop_per_row * t.rows_per_s();
            line.push_str(&format!(
                " {:>10.2} {:>9.1} {:>9.1}",
                t.ms,
                t.rows_per_s(),
                gflops
            ));
            match (shares, c.roofline) {
                (_, Some(peak)) => {
                    line.push_str(&format!(" {:>8.0}%", 100.0 * gflops / peak.max(1e-9)));
                }
                (true, None) => line.push_str(&format!(" {:>9}", "-")),
                (false, None) => {}
            }
        }
        if let [a, b] = columns {
            line.push_str(&format!(
                " {:>5.2}×",
                b.timings[r].rows_per_s() / a.timings[r].rows_per_s().max(1e-12)
            ));
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_from_the_timings() {
        let t = BatchTiming { rows: 32, ms: 16.0 };
        assert!((t.rows_per_s() - 2000.0).abs() < 1e-9);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
    }

    #[test]
    fn table_has_a_line_per_size_and_the_ratio() {
        let a = [
            BatchTiming { rows: 1, ms: 10.0 },
            BatchTiming { rows: 8, ms: 40.0 },
        ];
        let b = [
            BatchTiming { rows: 1, ms: 5.0 },
            BatchTiming { rows: 8, ms: 40.0 },
        ];
        let cols = [
            Column {
                label: "A",
                gflop_per_row: 0.5,
                row_is_position: true,
                timings: &a,
                roofline: Some(100.0),
            },
            Column {
                label: "B",
                gflop_per_row: 0.5,
                row_is_position: true,
                timings: &b,
                roofline: Some(400.0),
            },
        ];
        let lines = table(&cols);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("A pos/s") && lines[0].contains("B/A"));
        // Row 1: A 100 pos/s = 50 GFLOP/s = 50 % of its roofline 100; B twice as fast, 100 GFLOP/s
        // = 25 % of its own roofline 400 (an int8 net against the int8 rate).
        assert!(
            lines[1].contains("100.0") && lines[1].contains(" 50%") && lines[1].contains(" 25%"),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with("2.00×"), "{}", lines[1]);
        assert!(lines[2].ends_with("1.00×"), "{}", lines[2]);
        let mut single = table(&cols[..1]);
        assert!(single[0].contains("MatMul") && !single[0].contains("B/A"));
        let bare = Column {
            roofline: None,
            ..cols.into_iter().next().unwrap()
        };
        single = table(std::slice::from_ref(&bare));
        assert!(!single[0].contains("MatMul"), "{}", single[0]);
    }
}
