//! What a network run costs, for time planning: the time of a one-row run and the time per row
//! of a batched run, kept apart.
//!
//! On a CPU a row costs about twice as much alone as inside a batch (the c35 int8 twin on the
//! 2-core VM: about 9 ms for one row, 4.5 ms a row in the 40-row successor batch of
//! `SuccessorValue`): the fixed cost of a run (graph dispatch, small MatMuls far below the
//! roofline) is shared by its rows. One moving average over both kinds of run mixed them: after a
//! few one-row moves (a short clock, a loaded machine) it read a batch as twice its real cost,
//! which kept the next moves on one row in turn.

/// Weight of a new measurement in the moving averages.
const SMOOTHING: f64 = 0.3;

/// Measured cost of network runs (milliseconds), as moving averages.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RowCost {
    /// A run of one row, ms.
    one_ms: Option<f64>,
    /// A run of two or more rows, ms per row.
    batch_row_ms: Option<f64>,
}

fn fold(avg: Option<f64>, x: f64) -> Option<f64> {
    Some(avg.map_or(x, |a| (1.0 - SMOOTHING) * a + SMOOTHING * x))
}

impl RowCost {
    /// Folds in one run: `ms` milliseconds for `rows` rows. Runs of no rows and times that are
    /// not finite and non-negative are ignored.
    pub fn record(&mut self, ms: f64, rows: usize) {
        if rows == 0 || !ms.is_finite() || ms < 0.0 {
            return;
        }
        if rows == 1 {
            self.one_ms = fold(self.one_ms, ms);
        } else {
            self.batch_row_ms = fold(self.batch_row_ms, ms / rows as f64);
        }
    }

    /// Milliseconds per row for sizing batches: the batched rate when one was measured, else the
    /// one-row time (an upper bound); `None` before any run.
    pub fn per_row_ms(&self) -> Option<f64> {
        self.batch_row_ms.or(self.one_ms)
    }

    /// Estimated milliseconds for one run of `rows` rows: the one-row time for one row; for more,
    /// the batched rate times `rows`, never less than one row alone (a small batch pays the fixed
    /// cost too), or `rows` one-row times when no batch was measured yet (an upper bound). `None`
    /// before any run; `Some(0.0)` for no rows.
    pub fn estimate_ms(&self, rows: usize) -> Option<f64> {
        match (rows, self.one_ms, self.batch_row_ms) {
            (0, _, _) => Some(0.0),
            (1, Some(one), _) => Some(one),
            (1, None, batch) => batch,
            (n, one, Some(per_row)) => Some((per_row * n as f64).max(one.unwrap_or(0.0))),
            (n, Some(one), None) => Some(one * n as f64),
            (_, None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_measured() {
        let c = RowCost::default();
        assert_eq!(c.estimate_ms(1), None);
        assert_eq!(c.estimate_ms(40), None);
        assert_eq!(c.estimate_ms(0), Some(0.0));
        assert_eq!(c.per_row_ms(), None);
    }

    #[test]
    fn one_row_runs_do_not_inflate_the_batch_rate() {
        let mut c = RowCost::default();
        c.record(180.0, 40); // 4.5 ms a row
        for _ in 0..20 {
            c.record(9.0, 1);
        }
        let batch = c.estimate_ms(40).unwrap();
        assert!((batch - 180.0).abs() < 1e-9, "{batch}");
        assert!((c.estimate_ms(1).unwrap() - 9.0).abs() < 1e-9);
        assert!((c.per_row_ms().unwrap() - 4.5).abs() < 1e-9);
    }

    #[test]
    fn upper_bound_before_a_batch_and_floor_for_small_batches() {
        let mut c = RowCost::default();
        c.record(9.0, 1);
        assert_eq!(
            c.estimate_ms(10),
            Some(90.0),
            "no batch yet: rows × one row"
        );
        c.record(45.0, 10);
        assert_eq!(
            c.estimate_ms(2),
            Some(9.0),
            "a small batch costs at least one row"
        );
        assert_eq!(c.estimate_ms(20), Some(90.0));
    }

    #[test]
    fn moving_average_and_bad_input() {
        let mut c = RowCost::default();
        c.record(100.0, 20); // 5 ms a row
        c.record(60.0, 20); // 3 ms a row
        let r = c.per_row_ms().unwrap();
        assert!((r - (0.7 * 5.0 + 0.3 * 3.0)).abs() < 1e-9, "{r}");
        let before = c;
        c.record(f64::NAN, 20);
        c.record(-1.0, 20);
        c.record(f64::INFINITY, 1);
        c.record(10.0, 0);
        assert_eq!(c, before);
    }
}
