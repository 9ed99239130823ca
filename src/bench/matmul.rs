//! The machine's matrix-multiply rate as ONNX Runtime achieves it, for `glimpse bench`.
//!
//! Builds, in memory, a tiny ONNX model that honours the Glimpse model contract (input `tokens`
//! int64 `[batch, 79]`, output `log_probs` float32 `[batch, 128]`, action-value metadata) but whose
//! work is almost all square float32 MatMuls: `Cast → MatMul[79×D] → L × MatMul[D×D] →
//! MatMul[D×128] → LogSoftmax`. It is loaded through [`Model::load_bytes`], so it runs with the same
//! ORT session options, execution provider and thread count as the real net; the rate is the
//! reference the net's achieved GFLOP/s is compared with. For an int8 net the L square MatMuls are
//! ONNX Runtime's `com.microsoft.DynamicQuantizeMatMul` with int8 weights (activations quantised at
//! run time), the node ORT fuses a dynamically quantised net's MatMuls into: the int8 roofline
//! ([`Roofline::Int8`]); int8 multiply-adds count as two operations like float ones.
//!
//! The ONNX protobuf is written by hand (field numbers from `onnx.proto`): a handful of messages,
//! no protobuf dependency.

use crate::model::{Model, Precision, RuntimeConfig};
use std::time::Instant;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn int_field(out: &mut Vec<u8>, field: u32, v: i64) {
    key(out, field, 0);
    varint(out, v as u64);
}

fn bytes_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn msg<F: FnOnce(&mut Vec<u8>)>(out: &mut Vec<u8>, field: u32, f: F) {
    let mut inner = Vec::new();
    f(&mut inner);
    bytes_field(out, field, &inner);
}

const FLOAT: i64 = 1;
const INT8: i64 = 3;
const INT64: i64 = 7;
const ATTR_INT: i64 = 2;

/// `ValueInfoProto` for a 2-D tensor with a symbolic batch and a fixed second dimension.
fn value_info(out: &mut Vec<u8>, field: u32, name: &str, elem: i64, cols: i64) {
    msg(out, field, |v| {
        bytes_field(v, 1, name.as_bytes());
        msg(v, 2, |t| {
            msg(t, 1, |tt| {
                int_field(tt, 1, elem);
                msg(tt, 2, |shape| {
                    msg(shape, 1, |d| bytes_field(d, 2, b"batch"));
                    msg(shape, 1, |d| int_field(d, 1, cols));
                });
            });
        });
    });
}

fn node(out: &mut Vec<u8>, op: &str, inputs: &[&str], output: &str, attr: Option<(&str, i64)>) {
    node_in(out, "", op, inputs, output, attr);
}

/// A `NodeProto` of operator `op` in `domain` ("" for the ONNX domain).
fn node_in(
    out: &mut Vec<u8>,
    domain: &str,
    op: &str,
    inputs: &[&str],
    output: &str,
    attr: Option<(&str, i64)>,
) {
    msg(out, 1, |n| {
        for i in inputs {
            bytes_field(n, 1, i.as_bytes());
        }
        bytes_field(n, 2, output.as_bytes());
        bytes_field(n, 4, op.as_bytes());
        if !domain.is_empty() {
            bytes_field(n, 7, domain.as_bytes());
        }
        if let Some((name, v)) = attr {
            msg(n, 5, |a| {
                bytes_field(a, 1, name.as_bytes());
                int_field(a, 3, v);
                int_field(a, 20, ATTR_INT);
            });
        }
    });
}

/// The next 24 random bits of a linear congruential generator (Knuth's MMIX constants).
fn next_bits(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *seed >> 40
}

/// A `[rows, cols]` `TensorProto` of element type `elem` named `name` with `raw` data.
fn tensor(out: &mut Vec<u8>, name: &str, rows: usize, cols: usize, elem: i64, raw: &[u8]) {
    msg(out, 5, |t| {
        int_field(t, 1, rows as i64);
        int_field(t, 1, cols as i64);
        int_field(t, 2, elem);
        bytes_field(t, 8, name.as_bytes());
        bytes_field(t, 9, raw);
    });
}

fn initializer(out: &mut Vec<u8>, name: &str, rows: usize, cols: usize, seed: &mut u64) {
    let scale = 1.0 / (rows as f32).sqrt();
    let mut raw = Vec::with_capacity(rows * cols * 4);
    for _ in 0..rows * cols {
        let u = (next_bits(seed) as f32 / (1u64 << 24) as f32 - 0.5) * scale;
        raw.extend_from_slice(&u.to_le_bytes());
    }
    tensor(out, name, rows, cols, FLOAT, &raw);
}

/// An int8 `[rows, cols]` initializer of uniform random weights in -127..=127 (scale `1/(127·√rows)`
/// in `<name>_scale`, a float scalar, so the dequantised weights match [`initializer`]'s range).
fn initializer_int8(out: &mut Vec<u8>, name: &str, rows: usize, cols: usize, seed: &mut u64) {
    let raw: Vec<u8> = (0..rows * cols)
        .map(|_| ((next_bits(seed) % 255) as i16 - 127) as i8 as u8)
        .collect();
    tensor(out, name, rows, cols, INT8, &raw);
    msg(out, 5, |t| {
        int_field(t, 2, FLOAT);
        bytes_field(t, 8, format!("{name}_scale").as_bytes());
        let scale = 1.0 / (127.0 * (rows as f32).sqrt());
        bytes_field(t, 9, &scale.to_le_bytes());
    });
}

/// Which matrix multiply a [`matmul_model`] times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roofline {
    /// float32 `MatMul`.
    Float,
    /// `com.microsoft.DynamicQuantizeMatMul`: int8 weights, activations quantised to uint8 per run.
    Int8,
}

impl Roofline {
    /// The rate a net of `precision` is measured against: int8 nets against the int8 rate, float32
    /// and float16 nets against the float32 rate.
    pub fn for_precision(precision: Precision) -> Roofline {
        match precision {
            Precision::Int8 => Roofline::Int8,
            Precision::Fp32 | Precision::Fp16 => Roofline::Float,
        }
    }

    /// Label in the bench's output.
    pub fn as_str(self) -> &'static str {
        match self {
            Roofline::Float => "float32",
            Roofline::Int8 => "int8",
        }
    }
}

/// The bytes of the MatMul model with width `d` and `layers` square MatMuls of kind `kind`.
pub fn matmul_model(d: usize, layers: usize, kind: Roofline) -> Vec<u8> {
    let mut seed = 0x5EED_u64;
    let mut m = Vec::new();
    int_field(&mut m, 1, 8); // ir_version
    bytes_field(&mut m, 2, b"glimpse-bench");
    msg(&mut m, 7, |g| {
        node(g, "Cast", &["tokens"], "x", Some(("to", FLOAT)));
        node(g, "MatMul", &["x", "w_in"], "h0", None);
        for l in 0..layers {
            let (a, b, w) = (format!("h{l}"), format!("h{}", l + 1), format!("w{l}"));
            match kind {
                Roofline::Float => node(g, "MatMul", &[&a, &w], &b, None),
                Roofline::Int8 => {
                    let scale = format!("{w}_scale");
                    node_in(
                        g,
                        "com.microsoft",
                        "DynamicQuantizeMatMul",
                        &[&a, &w, &scale],
                        &b,
                        None,
                    );
                }
            }
        }
        node(g, "MatMul", &[&format!("h{layers}"), "w_out"], "z", None);
        node(g, "LogSoftmax", &["z"], "log_probs", Some(("axis", -1)));
        bytes_field(g, 2, b"matmul_rate");
        initializer(g, "w_in", 79, d, &mut seed);
        for l in 0..layers {
            match kind {
                Roofline::Float => initializer(g, &format!("w{l}"), d, d, &mut seed),
                Roofline::Int8 => initializer_int8(g, &format!("w{l}"), d, d, &mut seed),
            }
        }
        initializer(g, "w_out", d, 128, &mut seed);
        value_info(g, 11, "tokens", INT64, 79);
        value_info(g, 12, "log_probs", FLOAT, 128);
    });
    msg(&mut m, 8, |o| {
        bytes_field(o, 1, b"");
        int_field(o, 2, 17);
    });
    if kind == Roofline::Int8 {
        msg(&mut m, 8, |o| {
            bytes_field(o, 1, b"com.microsoft");
            int_field(o, 2, 1);
        });
    }
    for (k, v) in [("glimpse.kind", "action_value"), ("glimpse.buckets", "128")] {
        msg(&mut m, 14, |e| {
            bytes_field(e, 1, k.as_bytes());
            bytes_field(e, 2, v.as_bytes());
        });
    }
    m
}

/// Floating-point operations of one row of [`matmul_model`].
pub fn flop_per_row(d: usize, layers: usize) -> f64 {
    2.0 * (79 * d + layers * d * d + d * 128) as f64
}

/// A measured rate.
#[derive(Debug, Clone, Copy)]
pub struct MatmulRate {
    /// GFLOP/s of the best run (int8: giga-operations, a multiply-add counted as two).
    pub gflops: f64,
    /// Which multiply was timed.
    pub kind: Roofline,
    /// Width D of the square MatMuls.
    pub d: usize,
    /// Rows per run (the M dimension).
    pub rows: usize,
}

/// Measures ORT's MatMul rate of `kind` with `cfg` (best of `runs` after one warm-up run).
///
/// # Errors
/// The runtime or the synthetic model cannot be loaded or run.
pub fn measure(cfg: &RuntimeConfig, runs: usize, kind: Roofline) -> Result<MatmulRate, String> {
    let (d, layers, rows) = (512, 8, 1024);
    let bytes = matmul_model(d, layers, kind);
    let mut warnings = Vec::new();
    let mut model = Model::load_bytes(&bytes, "<matmul benchmark>", cfg, &mut warnings)
        .map_err(|e| e.to_string())?;
    let tokens = vec![0i64; rows * 79];
    model.run(&tokens, rows).map_err(|e| e.to_string())?;
    let mut best = f64::INFINITY;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        model.run(&tokens, rows).map_err(|e| e.to_string())?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    let gflops = flop_per_row(d, layers) * rows as f64 / best.max(1e-9) / 1e9;
    Ok(MatmulRate {
        gflops,
        kind,
        d,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_protobuf() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xAC, 0x02]);
        v.clear();
        varint(&mut v, (-1i64) as u64);
        assert_eq!(v.len(), 10);
    }

    #[test]
    fn model_bytes_are_sized_by_the_weights() {
        let b = matmul_model(16, 2, Roofline::Float);
        let weights = 4 * (79 * 16 + 2 * 16 * 16 + 16 * 128);
        assert!(b.len() > weights && b.len() < weights + 2000, "{}", b.len());
        // int8: the square weights take one byte each.
        let b = matmul_model(16, 2, Roofline::Int8);
        let weights = 4 * (79 * 16 + 16 * 128) + 2 * 16 * 16;
        assert!(b.len() > weights && b.len() < weights + 2000, "{}", b.len());
        assert!(b.windows(21).any(|w| w == b"DynamicQuantizeMatMul"));
        assert_eq!(flop_per_row(16, 2), 2.0 * (79.0 * 16.0 + 512.0 + 2048.0));
    }
}
