//! int8 twins (`make quantize`): the engine loads them like any net, the model contract
//! reports their precision, and their Q values stay close to the float32 source's. Uses the tiny
//! twin `target/test-models/tiny_mavp_int8.onnx` (`make test-models-int8`, part of `make test`;
//! unsigned int8 weights, see mk/quantize.mk) and the shipped twin of the default net in
//! `weights/` (made by `make quantize` with its defaults).

mod uci_support;

use glimpse::bench::POSITIONS;
use glimpse::game::Game;
use glimpse::model::{Backend, Model, Precision, RuntimeConfig};
use glimpse::search::analysis::analyse;
use std::path::{Path, PathBuf};
use uci_support::{bestmove, Engine};

fn models_dir() -> PathBuf {
    std::env::var_os("GLIMPSE_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models"))
}

fn test_model(name: &str) -> PathBuf {
    let p = models_dir().join(name);
    assert!(
        p.is_file(),
        "{} is missing: run `make test-models-int8` (or set GLIMPSE_TEST_MODELS)",
        p.display()
    );
    p
}

fn weights(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("weights")
        .join(name)
}

fn load(path: &Path) -> Model {
    let cfg = RuntimeConfig {
        backend: Backend::Cpu,
        intra_threads: 1,
    };
    let mut warnings = Vec::new();
    let m = Model::load_file(path, &cfg, &mut warnings)
        .unwrap_or_else(|e| panic!("load {}: {e}", path.display()));
    assert!(warnings.is_empty(), "{warnings:?}");
    m
}

/// How far the twin's Q values are from the source's over `fens`: mean and largest |ΔQ| over
/// every legal move, the mean spread (standard deviation) of the source's Q over a position's
/// moves, and in how many positions the two nets' best moves agree.
struct Closeness {
    mean_dq: f32,
    max_dq: f32,
    mean_spread: f32,
    agree: usize,
    positions: usize,
}

fn closeness(source: &mut Model, twin: &mut Model, fens: &[&str]) -> Closeness {
    let (mut sum, mut max, mut n, mut spread, mut agree) = (0.0f32, 0.0f32, 0usize, 0.0f32, 0);
    for fen in fens {
        let g = Game::from_fen(fen, false).unwrap();
        let (a, b) = (
            analyse(source, &g, &[]).unwrap(),
            analyse(twin, &g, &[]).unwrap(),
        );
        assert_eq!(a.moves.len(), b.moves.len(), "{fen}");
        let qa: Vec<f32> = a.moves.iter().map(|m| m.raw_win_prob).collect();
        for (x, y) in qa.iter().zip(b.moves.iter().map(|m| m.raw_win_prob)) {
            assert!(y.is_finite() && (0.0..=1.0).contains(&y), "{fen}: Q {y}");
            sum += (x - y).abs();
            max = max.max((x - y).abs());
            n += 1;
        }
        let mean = qa.iter().sum::<f32>() / qa.len() as f32;
        spread += (qa.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / qa.len() as f32).sqrt();
        agree += usize::from(a.best() == b.best());
    }
    Closeness {
        mean_dq: sum / n.max(1) as f32,
        max_dq: max,
        mean_spread: spread / fens.len() as f32,
        agree,
        positions: fens.len(),
    }
}

#[test]
fn the_tiny_twin_loads_as_its_source_with_precision_int8() {
    let (src, twin) = (
        load(&test_model("tiny_mavp.onnx")),
        load(&test_model("tiny_mavp_int8.onnx")),
    );
    let (a, b) = (src.info(), twin.info());
    assert_eq!(
        a.precision,
        Precision::Fp32,
        "no glimpse.precision means fp32"
    );
    assert_eq!(b.precision, Precision::Int8);
    assert_eq!(
        (a.kind, a.buckets, a.seq_len, a.outputs),
        (b.kind, b.buckets, b.seq_len, b.outputs)
    );
}

#[test]
fn the_tiny_twins_q_stays_close_to_its_source() {
    let mut src = load(&test_model("tiny_mavp.onnx"));
    let mut twin = load(&test_model("tiny_mavp_int8.onnx"));
    let c = closeness(&mut src, &mut twin, &POSITIONS);
    // The twin is really quantised: float32 runs of one net agree to ~1e-6, so a larger difference
    // can only come from the int8 arithmetic.
    assert!(c.max_dq > 1e-4, "the twin computes exactly as its source");
    // Close means: the typical change is small next to the differences between moves that the net
    // expresses (a quarter of the spread of Q over a position's moves), and the chosen move mostly
    // survives. The bounds are relative to the net's own outputs, not to recorded values.
    assert!(
        c.mean_dq < 0.25 * c.mean_spread,
        "mean |dQ| {} against a spread of {}",
        c.mean_dq,
        c.mean_spread
    );
    assert!(
        2 * c.agree >= c.positions,
        "best move agrees in {} of {}",
        c.agree,
        c.positions
    );
}

#[test]
fn the_shipped_twin_of_the_default_net_is_close_to_it() {
    // The default net (the line of weights/DEFAULT): when it is an int8 twin `<stem>-int8.onnx`, its
    // float32 source `<stem>.onnx` lies beside it; when it is float32, its twin does.
    let default = glimpse::weights::embedded_name();
    let (src_name, twin_name) = match default.strip_suffix("-int8.onnx") {
        Some(stem) => (format!("{stem}.onnx"), default.to_string()),
        None => (
            default.to_string(),
            format!("{}-int8.onnx", default.trim_end_matches(".onnx")),
        ),
    };
    let twin_path = weights(&twin_name);
    let mut twin = load(&twin_path);
    assert_eq!(twin.info().precision, Precision::Int8);
    let mut src = load(&weights(&src_name));
    assert_eq!(src.info().precision, Precision::Fp32);
    assert_eq!(twin.info().kind, src.info().kind);
    let c = closeness(&mut src, &mut twin, &POSITIONS);
    assert!(c.max_dq > 1e-4, "the twin computes exactly as its source");
    // The trained net is smoother than the random tiny one: the measured mean |dQ| on random-play
    // positions is about 5 % of the spread (weights/README.md); a quarter still leaves room for
    // other CPUs' int8 kernels, and 80 % of the best moves must survive (measured: 95-98 %).
    assert!(
        c.mean_dq < 0.25 * c.mean_spread,
        "mean |dQ| {} against a spread of {}",
        c.mean_dq,
        c.mean_spread
    );
    assert!(
        5 * c.agree >= 4 * c.positions,
        "best move agrees in {} of {}",
        c.agree,
        c.positions
    );
}

#[test]
fn the_engine_reports_the_precision_of_the_loaded_net() {
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!(
        "setoption name WeightsFile value {}",
        test_model("tiny_mavp_int8.onnx").display()
    ));
    let mut lines = e.ready();
    e.send("d");
    lines.extend(e.until("Model line of d", |l| l.contains("Model: ")));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string loaded") && l.contains(", int8,")),
        "{lines:#?}"
    );
    let model = lines.iter().find(|l| l.contains("Model: ")).unwrap();
    assert!(model.contains("| int8 |"), "{model}");
    e.send("position startpos");
    let lines = e.go("depth 1");
    assert!(bestmove(&lines).0.is_some(), "{lines:#?}");
    // The float32 source says fp32.
    e.send(&format!(
        "setoption name WeightsFile value {}",
        test_model("tiny_mavp.onnx").display()
    ));
    let lines = e.ready();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string loaded") && l.contains(", fp32,")),
        "{lines:#?}"
    );
    assert!(e.quit());
}

/// The embedded net follows the backend: the int8 default on the CPU; on `cuda` and `tensorrt` its
/// embedded float32 source when the provider runs, and where it does not (a CPU-only ONNX Runtime,
/// as in `make test`) the int8 default on the CPU again, with a note that names it.
#[test]
fn embedded_net_follows_the_backend() {
    use glimpse::model::slot::{load_model, LoadKey};
    use glimpse::weights;
    let (_, cpu_name) = weights::embedded_for(false).expect("this build embeds the default net");
    assert_eq!(cpu_name, weights::embedded_name());
    let (gpu_bytes, gpu_name) = weights::embedded_for(true).unwrap();
    let stem = cpu_name
        .strip_suffix("-int8.onnx")
        .expect("the default is an int8 twin");
    assert_eq!(gpu_name, format!("{stem}.onnx"));
    assert_eq!(gpu_name, weights::embedded_float_name());
    let file = std::fs::read(weights(gpu_name)).expect("the float32 source is in weights/");
    assert!(
        gpu_bytes == file.as_slice(),
        "embedded float net differs from weights/{gpu_name}"
    );
    for backend in [Backend::Cpu, Backend::Cuda, Backend::TensorRt] {
        let key = LoadKey {
            weights: None,
            backend,
            threads: 1,
        };
        let mut warnings = Vec::new();
        let m = load_model(&key, &mut warnings).unwrap_or_else(|e| panic!("{backend:?}: {e}"));
        let info = m.info();
        if info.backend == Backend::Cpu {
            assert_eq!(info.precision, Precision::Int8, "{backend:?}: {warnings:?}");
            if backend == Backend::Cpu {
                assert!(warnings.is_empty(), "{warnings:?}");
            } else {
                assert!(
                    warnings
                        .iter()
                        .any(|w| w.contains("using cpu") && w.contains(cpu_name)),
                    "{backend:?}: {warnings:?}"
                );
            }
        } else {
            assert_eq!(info.precision, Precision::Fp32, "{backend:?}: {warnings:?}");
            assert!(
                warnings.iter().any(|w| w.contains(gpu_name)),
                "{backend:?}: {warnings:?}"
            );
        }
    }
}

/// The bench's int8 roofline model (`DynamicQuantizeMatMul` with int8 weights) loads and runs on the
/// CPU backend like the float32 one, and each reports the multiply it timed.
#[test]
fn int8_roofline_model_runs() {
    use glimpse::bench::matmul::{measure, Roofline};
    let cfg = RuntimeConfig {
        backend: Backend::Cpu,
        intra_threads: 1,
    };
    for kind in [Roofline::Float, Roofline::Int8] {
        let rate = measure(&cfg, 1, kind).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(rate.kind, kind);
        assert!(rate.gflops.is_finite() && rate.gflops > 0.0, "{rate:?}");
    }
    assert_eq!(Roofline::for_precision(Precision::Int8), Roofline::Int8);
    assert_eq!(Roofline::for_precision(Precision::Fp16), Roofline::Float);
}
