//! Win-probability buckets and conversions (Lichess formula), as in the reference.

/// Lichess logistic constant: `p = 1 / (1 + exp(-K · cp))`.
pub const LICHESS_K: f64 = 0.00368208;

/// Centres `(k + 0.5) / K` of `num_buckets` uniform buckets on [0, 1].
pub fn bucket_centres(num_buckets: usize) -> Vec<f32> {
    let _ = num_buckets;
    todo!("issue 2")
}

/// Expected win probability Σ softmax(log_probs)·centres for one row of log-probs.
pub fn expected_value(log_probs: &[f32], centres: &[f32]) -> f32 {
    let _ = (log_probs, centres);
    todo!("issue 2")
}

/// Centipawns → win probability (Lichess formula).
pub fn cp_to_win_prob(cp: f64) -> f64 {
    let _ = cp;
    todo!("issue 2")
}

/// Win probability → centipawns (inverse Lichess formula), clamped to a finite range.
pub fn win_prob_to_cp(p: f64) -> i32 {
    let _ = p;
    todo!("issue 2")
}
