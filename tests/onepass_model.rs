//! The one-pass multi-action-value (MAV) kind: ONNX contract (two inputs, `[batch, moves, K]`
//! output, metadata, errors), masking of padded moves, agreement with the training framework
//! (JAX reference outputs of `target/test-models/tiny_mav_reference.json`, written with
//! `tiny_mav.onnx` by `make test-models`), the searchless policy on it, and the engine over UCI.

mod uci_support;

use glimpse::game::Game;
use glimpse::model::PAD_ACTION;
use glimpse::model::{Backend, Model, RuntimeConfig};
use glimpse::search::analysis::analyse;
use serde_json::Value;
use std::path::PathBuf;
use uci_support::{bestmove, field, pv_lines, test_model, Engine};

const K: usize = 128;
const TOL: f32 = 1e-4;

fn tiny_mav_path() -> PathBuf {
    test_model("tiny_mav.onnx")
}

fn load() -> Model {
    let cfg = RuntimeConfig {
        backend: Backend::Cpu,
        intra_threads: 1,
    };
    let mut warnings = Vec::new();
    let mut m = Model::load_file(&tiny_mav_path(), &cfg, &mut warnings).expect("load tiny_mav");
    assert!(warnings.is_empty(), "{warnings:?}");
    m.warm_up().expect("warm-up");
    m
}

fn reference() -> Vec<Value> {
    let path = test_model("tiny_mav_reference.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {} (make test-models): {e}", path.display()));
    let v: Value = serde_json::from_str(&text).expect("valid JSON");
    v["positions"].as_array().expect("positions").clone()
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn contract_and_metadata() {
    let mut m = load();
    let info = m.info().clone();
    assert_eq!(info.kind.as_str(), "multi_action_value");
    assert_eq!((info.seq_len, info.outputs, info.buckets), (78, K, 128));
    assert!(info.gflop_per_eval.is_some_and(|g| g > 0.0), "{info:?}");
    assert!(info.description.contains("multi_action_value"), "{info:?}");

    let row = m
        .row(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            None,
        )
        .unwrap();
    assert_eq!(row.len(), 78);
    assert_eq!(row[0], 0);
    // Shapes: 2 rows × 3 moves → 2·3·K log-probs, each move's distribution normalised.
    let tokens = [row.clone(), row.clone()].concat();
    let out = m
        .run_moves(&tokens, &[317, 169, 0, 317, 1, 2], 2, 3)
        .expect("run_moves");
    assert_eq!(out.len(), 2 * 3 * K);
    for lp in out.chunks_exact(K) {
        let s: f64 = lp.iter().map(|&x| (x as f64).exp()).sum();
        assert!((s - 1.0).abs() < 1e-4, "{s}");
    }
    // Same position and move in both rows (slot 0): same output; different moves differ.
    assert!(max_diff(&out[..K], &out[3 * K..4 * K]) <= 1e-6);
    assert!(max_diff(&out[..K], &out[K..2 * K]) > 1e-3);
    // Errors, never panics: AV-style run, wrong lengths, ids out of range, no moves.
    assert!(m.run(&row, 1).is_err());
    assert!(m.run_moves(&row, &[317, 169], 1, 3).is_err());
    assert!(m.run_moves(&row[..77], &[317], 1, 1).is_err());
    assert!(m.run_moves(&row, &[1968], 1, 1).is_err());
    assert!(m.run_moves(&row, &[-1], 1, 1).is_err());
    assert!(m.run_moves(&row, &[], 1, 0).is_err());
    assert!(m.run_moves(&[], &[], 0, 4).unwrap().is_empty());
}

#[test]
fn padded_moves_do_not_change_the_real_ones() {
    let mut m = load();
    let recs = reference();
    // Alone, then padded with PAD_ACTION (M + 5), then padded with other legal-looking ids.
    for r in &recs {
        let tokens = ints(&r["tokens"]);
        let acts = ints(&r["actions"]);
        let n = acts.len();
        let alone = m.run_moves(&tokens, &acts, 1, n).unwrap();
        let mut padded = acts.clone();
        padded.extend(std::iter::repeat_n(PAD_ACTION, 5));
        let out = m.run_moves(&tokens, &padded, 1, n + 5).unwrap();
        assert!(max_diff(&out[..n * K], &alone) <= 1e-6, "{}", r["fen"]);
        let mut other = acts.clone();
        other.extend([1967, 1880, 317, 5, 1000]);
        let out = m.run_moves(&tokens, &other, 1, n + 5).unwrap();
        assert!(max_diff(&out[..n * K], &alone) <= 1e-6, "{}", r["fen"]);
    }
    // A batch of positions with different move counts, padded to the longest.
    let width = recs
        .iter()
        .map(|r| r["actions"].as_array().unwrap().len())
        .max()
        .unwrap();
    let (mut tokens, mut actions) = (Vec::new(), Vec::new());
    for r in &recs {
        tokens.extend(ints(&r["tokens"]));
        let mut a = ints(&r["actions"]);
        a.resize(width, PAD_ACTION);
        actions.extend(a);
    }
    let out = m
        .run_moves(&tokens, &actions, recs.len(), width)
        .expect("batch");
    for (i, r) in recs.iter().enumerate() {
        let acts = ints(&r["actions"]);
        let alone = m
            .run_moves(&ints(&r["tokens"]), &acts, 1, acts.len())
            .unwrap();
        let row = &out[i * width * K..(i * width + acts.len()) * K];
        assert!(max_diff(row, &alone) <= 1e-5, "{}", r["fen"]);
    }
}

#[test]
fn agrees_with_the_training_framework() {
    let mut m = load();
    for r in reference() {
        let fen = r["fen"].as_str().unwrap();
        let tokens = ints(&r["tokens"]);
        assert_eq!(m.row(fen, None).unwrap(), tokens, "tokens of {fen}");
        let acts = ints(&r["actions"]);
        let want: Vec<f32> = r["log_probs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap().iter())
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let got = m.run_moves(&tokens, &acts, 1, acts.len()).unwrap();
        let d = max_diff(&got, &want);
        assert!(d <= TOL, "{fen}: max |ORT - JAX| = {d}");

        // The searchless policy: one row for the position, moves in ascending action id, the
        // expected win probabilities of the reference, and its chosen move.
        let game = Game::from_fen(fen, false).unwrap();
        let a = analyse(&mut m, &game, &[]).unwrap();
        assert_eq!(a.evals, 1, "one network row per position");
        let ids: Vec<i64> = a.moves.iter().map(|s| i64::from(s.action)).collect();
        assert_eq!(ids, acts, "{fen}");
        let names: Vec<&str> = r["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        for ((s, ev), name) in a
            .moves
            .iter()
            .zip(r["expected_win_prob"].as_array().unwrap())
            .zip(&names)
        {
            assert_eq!(s.uci, *name);
            let ev = ev.as_f64().unwrap() as f32;
            assert!((s.raw_win_prob - ev).abs() <= TOL, "{fen} {name}");
        }
        let best = a.best().expect("a move");
        assert_eq!(
            a.moves[best].uci,
            r["chosen_move"].as_str().unwrap(),
            "{fen}"
        );
    }
}

#[test]
fn engine_plays_it_over_uci() {
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!(
        "setoption name WeightsFile value {}",
        tiny_mav_path().display()
    ));
    let lines = e.ready();
    assert!(
        !lines.iter().any(|l| l.contains("error")),
        "loading tiny_mav failed: {lines:#?}"
    );
    let recs = reference();
    let start = &recs[0];
    e.send("setoption name MultiPV value 3");
    // The reference's chosen move is the one-row policy's: no successor values here (under a
    // short clock they run or not depending on the machine's speed).
    e.send("setoption name SuccessorValue value 0");
    e.send("position startpos");
    let lines = e.go("wtime 200 btime 200");
    let pvs = pv_lines(&lines);
    assert_eq!(pvs.len(), 3, "{lines:#?}");
    for l in &pvs {
        // One network row per position: nodes counts positions, also under a short clock
        // (the moves are never split into batches for this kind).
        assert_eq!(field(l, "nodes"), Some("1"), "{l}");
    }
    assert_eq!(
        bestmove(&lines).0.as_deref(),
        start["chosen_move"].as_str(),
        "{lines:#?}"
    );
    e.send("setoption name SuccessorValue value 60");
    // Mate in one is played (the rule, not the random net).
    e.send("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1");
    let lines = e.go("depth 1");
    assert_eq!(bestmove(&lines).0.as_deref(), Some("d1d8"), "{lines:#?}");
    // `eval` lists every legal move, scored as the searchless policy scores them: the root and its
    // 20 successors (`SuccessorValue`), or the root alone with `SuccessorValue 0`.
    e.send("position startpos");
    e.send("eval");
    let lines = e.until("the eval summary", |l| l.contains("evaluations in"));
    assert!(lines.iter().any(|l| l.contains("e2e4")), "{lines:#?}");
    assert!(
        lines.last().unwrap().contains(" 21 evaluations in"),
        "{lines:#?}"
    );
    e.send("setoption name SuccessorValue value 0");
    e.send("eval");
    let lines = e.until("the eval summary", |l| l.contains("evaluations in"));
    assert!(
        lines.last().unwrap().contains(" 1 evaluations in"),
        "{lines:#?}"
    );
    assert!(e.quit());
}

/// `glimpse bench` on the tiny net: stdout of a run with `extra` arguments.
fn bench_stdout(extra: &[&str]) -> String {
    let path = tiny_mav_path();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_glimpse"))
        .args(["bench", "--weights", path.to_str().expect("utf-8 path")])
        .args([
            "--reps",
            "1",
            "--no-matmul",
            "--no-batches",
            "--threads",
            "1",
        ])
        .args(extra)
        .output()
        .expect("run glimpse bench");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The number after `label :` in bench's summary.
fn bench_number(out: &str, label: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line in\n{out}"));
    let v = line.split(':').nth(1).expect("a value").split_whitespace();
    v.into_iter().next().unwrap().parse().expect("a number")
}

#[test]
fn bench_times_the_move_the_engine_plays() {
    // Default: each of the 30 positions is one run of the root and its successors (as `go`).
    let played = bench_stdout(&[]);
    assert!(
        played.contains("SuccessorValue 60: the root and its successors"),
        "{played}"
    );
    let rows = bench_number(&played, "Evaluations (rows)");
    // `--successor-value 0`: one row per position, the network alone.
    let alone = bench_stdout(&["--successor-value", "0"]);
    assert!(
        alone.contains("SuccessorValue 0: one pass of the root"),
        "{alone}"
    );
    assert_eq!(bench_number(&alone, "Evaluations (rows)"), 30, "{alone}");
    // The 30 positions have 20–48 legal moves but mates, stalemates and dead draws are not run.
    assert!(rows > 30 * 10, "{rows} rows\n{played}");
    // Out of range: a clear error, no bench.
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_glimpse"))
        .args(["bench", "--successor-value", "101"])
        .output()
        .expect("run glimpse bench");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("successor-value"));
}

#[test]
fn bench_compare_of_a_net_with_itself_agrees_and_times_both_in_blocks() {
    let path = tiny_mav_path();
    let p = path.to_str().expect("utf-8 path");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_glimpse"))
        .args(["bench", "--weights", p, "--compare", p])
        .args(["--reps", "1", "--no-matmul", "--threads", "1"])
        .output()
        .expect("run glimpse bench --compare");
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8(out.stdout).expect("utf-8");
    assert!(out.contains("Same best move       : 30 of 30"), "{out}");
    let signature = |label: &str| {
        let line = out.lines().find(|l| l.starts_with(label));
        line.unwrap_or_else(|| panic!("no {label} line in\n{out}"))
            .split(':')
            .nth(1)
            .expect("a value")
            .trim()
            .to_string()
    };
    assert_eq!(signature("Bench signature"), signature("Signature of B"));
    // The batch table: both nets, two blocks each (A B, B A), one row per size with B/A.
    let head = out.lines().position(|l| l.starts_with("Batch table"));
    let head = head.unwrap_or_else(|| panic!("no batch table in\n{out}"));
    assert!(
        out.lines()
            .nth(head)
            .unwrap()
            .contains("median of 2 runs in blocks A B, B A"),
        "{out}"
    );
    let rows: Vec<&str> = out.lines().skip(head + 2).take(4).collect();
    for (line, size) in rows.iter().zip(["1", "8", "32", "128"]) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols.first(), Some(&size), "{out}");
        assert!(cols.last().is_some_and(|c| c.ends_with('×')), "{out}");
    }
}
