//! Win-probability buckets and conversions (Lichess formula), as in the reference.
//!
//! K uniform buckets on [0, 1]: edges k/K (k = 1..K−1), centres (k + 0.5)/K. A network's K
//! log-probabilities give the expected win probability Σ softmax(log_probs) · centres.

/// Lichess logistic constant: `p = 1 / (1 + exp(-K · cp))`.
pub const LICHESS_K: f64 = 0.00368208;

/// Largest centipawn magnitude [`win_prob_to_cp`] returns.
pub const MAX_CP: i32 = 10_000;

/// Centres `(k + 0.5) / K` of `num_buckets` uniform buckets on [0, 1].
pub fn bucket_centres(num_buckets: usize) -> Vec<f32> {
    (0..num_buckets)
        .map(|k| ((k as f64 + 0.5) / num_buckets as f64) as f32)
        .collect()
}

/// Expected win probability Σ softmax(log_probs)·centres for one row of log-probs, computed in
/// f64 with a stable softmax (the row need not be normalised). Returns 0.5 for an empty row or a
/// length mismatch, and ignores non-finite inputs by clamping to the row's maximum.
pub fn expected_value(log_probs: &[f32], centres: &[f32]) -> f32 {
    expected_value_f64(log_probs, centres) as f32
}

/// As [`expected_value`] but returns the f64 accumulation (for comparisons with the reference,
/// which sums in float64).
pub fn expected_value_f64(log_probs: &[f32], centres: &[f32]) -> f64 {
    if log_probs.is_empty() || log_probs.len() != centres.len() {
        return 0.5;
    }
    let max = log_probs
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return 0.5;
    }
    let max = max as f64;
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&lp, &c) in log_probs.iter().zip(centres) {
        let w = if lp.is_nan() {
            0.0
        } else {
            ((lp as f64) - max).exp()
        };
        num += w * c as f64;
        den += w;
    }
    if den > 0.0 {
        num / den
    } else {
        0.5
    }
}

/// Index of the largest log-prob (the most likely bucket); first maximum on ties, 0 when empty.
pub fn bucket_mode(log_probs: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in log_probs.iter().enumerate() {
        if v > log_probs[best] {
            best = i;
        }
    }
    best
}

/// Bucket label of a win probability: `searchsorted(edges, p, side='left')` with edges k/K.
pub fn win_prob_to_bucket(p: f64, num_buckets: usize) -> usize {
    // Number of edges k/K (k = 1..K-1) strictly less than p.
    (1..num_buckets)
        .take_while(|&k| (k as f64 / num_buckets as f64) < p)
        .count()
}

/// Centipawns → win probability (Lichess formula).
pub fn cp_to_win_prob(cp: f64) -> f64 {
    1.0 / (1.0 + (-LICHESS_K * cp).exp())
}

/// Win probability → centipawns (inverse Lichess formula), rounded and clamped to ±[`MAX_CP`];
/// NaN gives 0.
pub fn win_prob_to_cp(p: f64) -> i32 {
    if p.is_nan() {
        return 0;
    }
    if p <= 0.0 {
        return -MAX_CP;
    }
    if p >= 1.0 {
        return MAX_CP;
    }
    let cp = (p / (1.0 - p)).ln() / LICHESS_K;
    cp.round().clamp(-(MAX_CP as f64), MAX_CP as f64) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centres_and_expectation() {
        let c = bucket_centres(128);
        assert_eq!(c.len(), 128);
        assert!((c[0] - 0.5 / 128.0).abs() < 1e-9);
        assert!((c[127] - 127.5 / 128.0).abs() < 1e-9);
        // A one-hot distribution (up to normalisation) yields its centre.
        let mut lp = vec![-1e4f32; 128];
        lp[64] = 0.0;
        assert!((expected_value(&lp, &c) - c[64]).abs() < 1e-6);
        // Uniform gives 0.5; large offsets do not overflow.
        let u = vec![1000.0f32; 128];
        assert!((expected_value(&u, &c) - 0.5).abs() < 1e-6);
        assert_eq!(bucket_mode(&lp), 64);
    }

    #[test]
    fn cp_round_trip() {
        assert!((cp_to_win_prob(0.0) - 0.5).abs() < 1e-12);
        for cp in [-900, -150, -1, 0, 1, 35, 400, 1200] {
            assert_eq!(win_prob_to_cp(cp_to_win_prob(cp as f64)), cp);
        }
        assert_eq!(win_prob_to_cp(1.0), MAX_CP);
        assert_eq!(win_prob_to_cp(0.0), -MAX_CP);
        assert_eq!(win_prob_to_cp(f64::NAN), 0);
    }

    #[test]
    fn bucket_labels() {
        assert_eq!(win_prob_to_bucket(0.0, 128), 0);
        assert_eq!(win_prob_to_bucket(1.0 / 128.0, 128), 0);
        assert_eq!(win_prob_to_bucket(1.0 / 128.0 + 1e-9, 128), 1);
        assert_eq!(win_prob_to_bucket(1.0, 128), 127);
    }
}
