//! Golden tests of the ONNX path against the searchless-chess reference outputs
//! (`tests/data/shared/golden/tiny_{av,sv,bc}_outputs.jsonl`): every golden log-prob within 1e-4 (BC 2e-4)
//! through `Model::run` (all rows of a file in one batch), the rows built by `Model::row`, and
//! `searchless::analyse` + `Analysis::best` picking `engine_chosen_move` in every `position`
//! record (with `history_uci` replayed).
//!
//! Fixtures: `target/test-models/tiny_{av,sv,bc}.onnx` from `make test-models` (directory
//! overridable with `GLIMPSE_TEST_MODELS`). The ONNX Runtime library is found as the engine finds
//! it (`ORT_DYLIB_PATH`, next to the executable, `lib/` after `make ort`).

use glimpse::game::Game;
use glimpse::model::buckets::{bucket_centres, expected_value_f64};
use glimpse::model::{Backend, Model, RuntimeConfig};
use glimpse::search::analysis::analyse;
use serde_json::Value;
use std::path::PathBuf;

fn shared_dir() -> PathBuf {
    std::env::var_os("GLIMPSE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/shared"))
}

fn read_jsonl(name: &str) -> Vec<Value> {
    let path = shared_dir().join("golden").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {} (set GLIMPSE_SHARED): {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

fn load(name: &str) -> Model {
    let dir = std::env::var_os("GLIMPSE_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models"));
    let path = dir.join(format!("{name}.onnx"));
    assert!(
        path.is_file(),
        "test model {} is missing: run `make test-models` (or set GLIMPSE_TEST_MODELS)",
        path.display()
    );
    let cfg = RuntimeConfig {
        backend: Backend::Cpu,
        intra_threads: 1,
    };
    let mut warnings = Vec::new();
    let mut model = Model::load_file(&path, &cfg, &mut warnings)
        .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
    assert!(warnings.is_empty(), "{warnings:?}");
    model.warm_up().expect("warm-up run");
    model
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let worst = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= tol, "{what}: max |Δ| = {worst} > {tol}");
}

fn replay(r: &Value) -> Game {
    let mut game = Game::from_fen(r["start_fen"].as_str().unwrap(), false).unwrap();
    for m in r["history_uci"].as_array().unwrap() {
        game.push_uci(m.as_str().unwrap()).unwrap();
    }
    assert_eq!(game.fen(), r["fen"].as_str().unwrap());
    game
}

/// Runs `rows` (each `seq_len` long) in one batch and checks each against `want` rows.
fn check_batch(model: &mut Model, rows: &[Vec<i64>], want: &[Vec<f32>], tol: f32, what: &str) {
    let flat: Vec<i64> = rows.concat();
    let out = model.run(&flat, rows.len()).expect("run");
    let width = model.info().outputs;
    for (i, (got, w)) in out.chunks_exact(width).zip(want).enumerate() {
        assert_close(got, w, tol, &format!("{what} row {i}"));
    }
}

#[test]
fn action_value_matches_reference() {
    let mut model = load("tiny_av");
    assert_eq!(model.info().kind.as_str(), "action_value");
    assert_eq!((model.info().seq_len, model.info().outputs), (79, 128));
    let centres = bucket_centres(128);
    let recs = read_jsonl("tiny_av_outputs.jsonl");
    let (mut rows, mut want) = (Vec::new(), Vec::new());
    for r in recs.iter().filter(|r| r["kind"] == "pair") {
        let row = ints(&r["embedding_input"]);
        let built = model
            .row(
                r["fen"].as_str().unwrap(),
                Some(r["action"].as_u64().unwrap() as u16),
            )
            .unwrap();
        assert_eq!(built, row, "row for {}", r["fen"]);
        let lp = floats(&r["log_probs"]);
        let ev = expected_value_f64(&lp, &centres);
        assert!((ev - r["expected_value"].as_f64().unwrap()).abs() < 1e-6);
        rows.push(row);
        want.push(lp);
    }
    assert_eq!(rows.len(), 64);
    check_batch(&mut model, &rows, &want, 1e-4, "AV pairs");

    let positions: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "position").collect();
    assert_eq!(positions.len(), 5);
    for r in positions {
        let name = r["name"].as_str().unwrap();
        let per_move = r["per_move"].as_array().unwrap();
        let rows: Vec<Vec<i64>> = per_move
            .iter()
            .map(|m| ints(&m["embedding_input"]))
            .collect();
        let want: Vec<Vec<f32>> = per_move.iter().map(|m| floats(&m["log_probs"])).collect();
        check_batch(&mut model, &rows, &want, 1e-4, name);

        let game = replay(r);
        let analysis = analyse(&mut model, &game, &[]).expect("analyse");
        assert_eq!(analysis.evals, per_move.len());
        assert_eq!(analysis.moves.len(), per_move.len());
        for (s, m) in analysis.moves.iter().zip(per_move) {
            assert_eq!(s.uci, m["move"].as_str().unwrap(), "{name}: engine order");
            assert_eq!(s.action as u64, m["action"].as_u64().unwrap());
            let raw = m["win_prob"].as_f64().unwrap() as f32;
            let adjusted = m["win_prob_after_repetition_rule"].as_f64().unwrap() as f32;
            assert!((s.raw_win_prob - raw).abs() < 1e-4, "{name} {}", s.uci);
            assert!((s.win_prob - adjusted).abs() < 1e-4, "{name} {}", s.uci);
        }
        let best = analysis.best().unwrap();
        assert_eq!(
            analysis.moves[best].uci,
            r["engine_chosen_move"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(best as u64, r["engine_chosen_index"].as_u64().unwrap());
    }
}

#[test]
fn state_value_matches_reference() {
    let mut model = load("tiny_sv");
    assert_eq!(model.info().kind.as_str(), "state_value");
    assert_eq!((model.info().seq_len, model.info().outputs), (78, 128));
    let recs = read_jsonl("tiny_sv_outputs.jsonl");
    let (mut rows, mut want) = (Vec::new(), Vec::new());
    for r in recs.iter().filter(|r| r["kind"] == "single") {
        let row = ints(&r["embedding_input"]);
        assert_eq!(model.row(r["fen"].as_str().unwrap(), None).unwrap(), row);
        rows.push(row);
        want.push(floats(&r["log_probs"]));
    }
    assert_eq!(rows.len(), 64);
    check_batch(&mut model, &rows, &want, 1e-4, "SV singles");

    for r in recs.iter().filter(|r| r["kind"] == "position") {
        let name = r["name"].as_str().unwrap();
        let per_move = r["per_move"].as_array().unwrap();
        let mut rows: Vec<Vec<i64>> = per_move
            .iter()
            .map(|m| ints(&m["embedding_input"]))
            .collect();
        let mut want: Vec<Vec<f32>> = per_move
            .iter()
            .map(|m| floats(&m["next_log_probs_raw"]))
            .collect();
        let mut current = vec![0i64];
        current.extend(ints(&r["current"]["predict_input"]).into_iter().take(77));
        rows.push(current);
        want.push(floats(&r["current"]["log_probs"]));
        check_batch(&mut model, &rows, &want, 1e-4, name);

        let game = replay(r);
        let analysis = analyse(&mut model, &game, &[]).expect("analyse");
        assert_eq!(analysis.evals, per_move.len());
        for (s, m) in analysis.moves.iter().zip(per_move) {
            assert_eq!(s.uci, m["move"].as_str().unwrap(), "{name}: engine order");
            let raw = m["win_prob"].as_f64().unwrap() as f32;
            let adjusted = m["win_prob_after_repetition_rule"].as_f64().unwrap() as f32;
            assert!((s.raw_win_prob - raw).abs() < 1e-4, "{name} {}", s.uci);
            assert!((s.win_prob - adjusted).abs() < 1e-4, "{name} {}", s.uci);
        }
        let best = analysis.best().unwrap();
        assert_eq!(
            analysis.moves[best].uci,
            r["engine_chosen_move"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn behavioral_cloning_matches_reference() {
    let mut model = load("tiny_bc");
    assert_eq!(model.info().kind.as_str(), "behavioral_cloning");
    assert_eq!((model.info().seq_len, model.info().outputs), (78, 1968));
    let recs = read_jsonl("tiny_bc_outputs.jsonl");
    let (mut rows, mut want) = (Vec::new(), Vec::new());
    for r in recs.iter().filter(|r| r["kind"] == "single") {
        let row = ints(&r["embedding_input"]);
        assert_eq!(model.row(r["fen"].as_str().unwrap(), None).unwrap(), row);
        rows.push(row);
        want.push(floats(&r["log_probs"]));
    }
    assert_eq!(rows.len(), 64);
    check_batch(&mut model, &rows, &want, 2e-4, "BC singles");

    for r in recs.iter().filter(|r| r["kind"] == "position") {
        let name = r["name"].as_str().unwrap();
        check_batch(
            &mut model,
            &[ints(&r["embedding_input"])],
            &[floats(&r["log_probs_all_actions"])],
            2e-4,
            name,
        );
        let game = replay(r);
        let analysis = analyse(&mut model, &game, &[]).expect("analyse");
        assert_eq!(analysis.evals, 1);
        let per_move = r["per_move"].as_array().unwrap();
        assert_eq!(analysis.moves.len(), per_move.len());
        for (s, m) in analysis.moves.iter().zip(per_move) {
            assert_eq!(s.uci, m["move"].as_str().unwrap(), "{name}: engine order");
            let lp = m["renormalized_log_prob"].as_f64().unwrap();
            assert!(
                ((s.win_prob as f64).ln() - lp).abs() < 2e-4,
                "{name} {}: {} vs {lp}",
                s.uci,
                (s.win_prob as f64).ln()
            );
        }
        let best = analysis.best().unwrap();
        assert_eq!(
            analysis.moves[best].uci,
            r["engine_chosen_move"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn bad_model_files_are_errors() {
    let cfg = RuntimeConfig {
        backend: Backend::Cpu,
        intra_threads: 1,
    };
    let mut warnings = Vec::new();
    let missing = Model::load_file(
        std::path::Path::new("/nonexistent/x.onnx"),
        &cfg,
        &mut warnings,
    );
    assert!(missing.unwrap_err().to_string().contains("not found"));
    let corrupt = Model::load_bytes(
        b"definitely not an onnx model",
        "<corrupt>",
        &cfg,
        &mut warnings,
    );
    assert!(corrupt.is_err());
    // A wrong row length is an error, not a panic.
    let mut model = load("tiny_sv");
    assert!(model.run(&[0; 77], 1).is_err());
    assert!(model.run(&[5000; 78], 1).is_err());
    assert_eq!(model.run(&[], 0).unwrap().len(), 0);
}

#[test]
fn unavailable_gpu_backend_falls_back_to_cpu() {
    // The CPU-only runtime from `make ort` has no CUDA/TensorRT provider: loading must fall back
    // to CPU with warnings. On a machine with a working GPU runtime the backend may differ.
    let dir = std::env::var_os("GLIMPSE_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models"));
    let path = dir.join("tiny_av.onnx");
    assert!(path.is_file(), "run `make test-models`");
    let cfg = RuntimeConfig {
        backend: Backend::TensorRt,
        intra_threads: 1,
    };
    let mut warnings = Vec::new();
    let mut model = Model::load_file(&path, &cfg, &mut warnings).expect("loads with fallback");
    if model.info().backend == Backend::Cpu {
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        eprintln!("fallback warnings: {warnings:#?}");
    }
    model.warm_up().unwrap();
}

#[test]
fn mate_in_one_and_searchmoves() {
    // Back-rank mate: a1a8 mates; every kind must play it (score exactly 1.0).
    let game = Game::from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", false).unwrap();
    for name in ["tiny_av", "tiny_sv", "tiny_bc"] {
        let mut model = load(name);
        let analysis = analyse(&mut model, &game, &[]).unwrap();
        let best = analysis.best().unwrap();
        assert_eq!(analysis.moves[best].uci, "a1a8", "{name}");
        assert_eq!(analysis.moves[best].win_prob, 1.0);
        assert!(analysis.moves[best].raw_win_prob < 1.0);
        let chosen = glimpse::search::analysis::choose(&analysis, 1.0, 0.0).unwrap();
        assert_eq!(analysis.moves[chosen].uci, "a1a8", "{name}");

        // searchmoves restricts the scored moves; illegal entries are ignored.
        let only = vec![
            game.parse_uci("g1f1").unwrap(),
            game.parse_uci("a1a2").unwrap(),
        ];
        let restricted = analyse(&mut model, &game, &only).unwrap();
        let ucis: Vec<&str> = restricted.moves.iter().map(|m| m.uci.as_str()).collect();
        assert_eq!(ucis, vec!["a1a2", "g1f1"], "{name}: ascending action order");
    }
    // No legal moves: an empty analysis, no evaluation.
    let mated = Game::from_fen("R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1", false).unwrap();
    let mut model = load("tiny_av");
    let analysis = analyse(&mut model, &mated, &[]).unwrap();
    assert!(analysis.moves.is_empty() && analysis.best().is_none());
    assert_eq!(analysis.evals, 0);
}
