//! The `multi_action_value_policy` kind (one-pass net with policy and WDL heads, the campaign's
//! architecture): the contract at load, agreement of Q, priors and WDL with the training
//! framework's float64 reference (`target/test-models/tiny_mavp_reference.json`, written with
//! `tiny_mavp.onnx` by `make test-models`), the searchless `MoveChoice policy`, MCTS over it, and
//! the engine over UCI.

mod uci_support;

use glimpse::game::Game;
use glimpse::model::{Backend, EvalRequest, Evaluator, Model, Network, RuntimeConfig};
use glimpse::search::analysis::{analyse, analyse_with, MoveChoice, SUCCESSOR_VALUE_DEFAULT};
use serde_json::Value;
use std::path::PathBuf;
use uci_support::{bestmove, field, pv_lines, test_model, Engine};

const TOL: f32 = 1e-4;

fn tiny_mavp_path() -> PathBuf {
    test_model("tiny_mavp.onnx")
}

fn load() -> Model {
    let cfg = RuntimeConfig {
        backend: Backend::Cpu,
        intra_threads: 1,
    };
    let mut warnings = Vec::new();
    let m = Model::load_file(&tiny_mavp_path(), &cfg, &mut warnings).expect("load tiny_mavp");
    assert!(warnings.is_empty(), "{warnings:?}");
    m
}

fn reference() -> Vec<Value> {
    let path = test_model("tiny_mavp_reference.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {} (make test-models): {e}", path.display()));
    let v: Value = serde_json::from_str(&text).expect("valid JSON");
    v["positions"].as_array().expect("positions").clone()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn loads_as_the_policy_kind() {
    let m = load();
    let info = m.info();
    assert_eq!(info.kind.as_str(), "multi_action_value_policy");
    assert_eq!(format!("{:?}", info.kind), "MultiActionValuePolicy");
    assert!(info.kind.one_row_per_position());
    assert_eq!((info.seq_len, info.outputs), (78, 128));
}

#[test]
fn q_priors_and_wdl_agree_with_the_training_framework() {
    let mut m = load();
    for r in reference() {
        let fen = r["fen"].as_str().unwrap();
        let game = Game::from_fen(fen, false).unwrap();
        let a = analyse(&mut m, &game, &[]).unwrap();
        assert_eq!(a.evals, 1, "one network row per position");
        let (ev, prior) = (floats(&r["expected_win_prob"]), floats(&r["prior"]));
        assert_eq!(a.moves.len(), ev.len(), "{fen}");
        for (i, s) in a.moves.iter().enumerate() {
            assert_eq!(s.uci, r["moves"][i].as_str().unwrap());
            assert!((s.raw_win_prob - ev[i]).abs() <= TOL, "{fen} {}: Q", s.uci);
            let p = s.policy.expect("the kind gives every move a prior");
            assert!((p - prior[i]).abs() <= TOL, "{fen} {}: prior", s.uci);
        }
        let total: f32 = a.moves.iter().filter_map(|s| s.policy).sum();
        assert!((total - 1.0).abs() < 1e-4, "{fen}: priors sum to {total}");
        let wdl = a.wdl.expect("the kind gives the position's WDL");
        for (got, want) in wdl.iter().zip(floats(&r["wdl"])) {
            assert!((got - want).abs() <= TOL, "{fen}: WDL {wdl:?}");
        }
    }
}

#[test]
fn move_choice_policy_plays_the_policy_heads_favourite() {
    let mut m = load();
    let mut differs = 0;
    for r in reference() {
        let fen = r["fen"].as_str().unwrap();
        let game = Game::from_fen(fen, false).unwrap();
        let mut a = analyse(&mut m, &game, &[]).unwrap();
        let by_q = a.best().unwrap();
        a.choice = MoveChoice::Policy;
        let by_policy = a.best().unwrap();
        let mate = a.moves.iter().any(|s| s.win_prob >= 1.0);
        if !mate {
            assert_eq!(
                a.moves[by_policy].uci,
                r["policy_best"].as_str().unwrap(),
                "{fen}"
            );
        }
        assert_eq!(
            a.ranking()[0],
            by_policy,
            "{fen}: MultiPV 1 is the move played"
        );
        differs += usize::from(by_q != by_policy);
    }
    assert!(
        differs > 0,
        "the two choices never differ: the test shows nothing"
    );
}

/// 1 − the highest raw Q of the position after `uci` (the successor value computed on its own).
fn successor_value(m: &mut Model, game: &Game, uci: &str) -> f32 {
    let mut next = game.clone();
    next.push(game.parse_uci(uci).unwrap()).unwrap();
    let a = analyse(m, &next, &[]).unwrap();
    1.0 - a
        .moves
        .iter()
        .map(|s| s.raw_win_prob)
        .fold(f32::MIN, f32::max)
}

#[test]
fn successor_values_mix_each_moves_q_with_the_position_after_it() {
    let mut m = load();
    for r in reference().iter().take(3) {
        let game = Game::from_fen(r["fen"].as_str().unwrap(), false).unwrap();
        let plain = analyse(&mut m, &game, &[]).unwrap();
        let zero = analyse_with(&mut m, &game, &[], 0.0).unwrap();
        assert_eq!(zero.evals, 1);
        for w in [0.6f32, 1.0] {
            let a = analyse_with(&mut m, &game, &[], w).unwrap();
            assert_eq!(
                a.evals,
                1 + a.moves.len(),
                "one run: the root and every successor"
            );
            for (s, p) in a.moves.iter().zip(&plain.moves) {
                assert_eq!(
                    zero.moves.iter().find(|z| z.uci == s.uci).unwrap().win_prob,
                    p.win_prob
                );
                assert!(
                    (s.raw_win_prob - p.raw_win_prob).abs() <= TOL,
                    "raw Q is the root's own"
                );
                let v = successor_value(&mut m, &game, &s.uci);
                let want = (1.0 - w) * p.raw_win_prob + w * v;
                assert!(
                    (s.win_prob - want).abs() <= 2.0 * TOL,
                    "{} w {w}: {} vs {want}",
                    s.uci,
                    s.win_prob
                );
            }
        }
    }
}

#[test]
fn successor_rules_mate_and_stalemate_need_no_row() {
    // Qe8 (and other queen moves) mate, Qf7 stalemates; the other moves have successors to run.
    let mut m = load();
    let game = Game::from_fen("7k/4Q3/6K1/8/8/8/8/8 w - - 0 1", false).unwrap();
    let plain = analyse(&mut m, &game, &[]).unwrap();
    let a = analyse_with(&mut m, &game, &[], 0.6).unwrap();
    let ends = a
        .moves
        .iter()
        .filter(|s| {
            let mut next = game.clone();
            next.push(s.mv).unwrap();
            next.legal_moves().is_empty()
        })
        .count();
    assert!(ends >= 2, "mates and a stalemate: {ends}");
    assert_eq!(
        a.evals,
        1 + a.moves.len() - ends,
        "no rows for mates and stalemates"
    );
    let by = |a: &glimpse::search::analysis::Analysis, u: &str| {
        a.moves.iter().find(|s| s.uci == u).unwrap().clone()
    };
    assert_eq!(by(&a, "e7e8").win_prob, 1.0);
    let stale = by(&plain, "e7f7").raw_win_prob;
    assert!((by(&a, "e7f7").win_prob - (0.4 * stale + 0.6 * 0.5)).abs() < 1e-6);
    assert_eq!(a.moves[a.best().unwrap()].win_prob, 1.0, "a mate is played");
}

#[test]
fn the_evaluator_hands_mcts_the_priors() {
    let mut m = load();
    let game = Game::from_fen(reference()[0]["fen"].as_str().unwrap(), false).unwrap();
    let pos = game.position().clone();
    let moves = game.legal_moves();
    let mut net = Network::new(&mut m);
    let out = net
        .evaluate(&[EvalRequest {
            pos,
            moves: moves.clone(),
            hash: 1,
        }])
        .unwrap();
    let policy = out[0].policy.as_ref().expect("priors");
    assert_eq!((out[0].q.len(), policy.len()), (moves.len(), moves.len()));
    assert!((policy.iter().sum::<f32>() - 1.0).abs() < 1e-4);
}

/// With `Threads` 2 on the CPU a run's rows are split between two single-threaded copies of the
/// net; every position's Q, priors and WDL are those of the unsplit run (float32 net: to rounding).
#[test]
fn rows_split_between_two_threads_give_the_unsplit_results() {
    let load_with = |threads: usize| {
        let cfg = RuntimeConfig {
            backend: Backend::Cpu,
            intra_threads: threads,
        };
        let mut warnings = Vec::new();
        let m = Model::load_file(&tiny_mavp_path(), &cfg, &mut warnings).expect("load tiny_mavp");
        assert!(warnings.is_empty(), "{warnings:?}");
        m
    };
    let (mut one, mut two) = (load_with(1), load_with(2));
    assert_eq!((one.row_shards(), two.row_shards()), (0, 2));
    let batch: Vec<EvalRequest> = reference()
        .iter()
        .take(5)
        .enumerate()
        .map(|(i, r)| {
            let game = Game::from_fen(r["fen"].as_str().unwrap(), false).unwrap();
            EvalRequest {
                pos: game.position().clone(),
                moves: game.legal_moves(),
                hash: i as u64,
            }
        })
        .collect();
    assert!(batch.len() >= 3, "an odd batch of several positions");
    let a = Network::new(&mut one).evaluate(&batch).unwrap();
    let b = Network::new(&mut two).evaluate(&batch).unwrap();
    assert_eq!(a.len(), batch.len());
    assert_eq!(b.len(), batch.len());
    let close = |x: &[f32], y: &[f32]| {
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| (p - q).abs() <= 1e-5)
    };
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x.q.len(), batch[i].moves.len());
        assert!(close(&x.q, &y.q), "position {i}: Q {:?} vs {:?}", x.q, y.q);
        assert!(
            close(x.policy.as_ref().unwrap(), y.policy.as_ref().unwrap()),
            "position {i}: priors"
        );
        assert!(close(&x.wdl.unwrap(), &y.wdl.unwrap()), "position {i}: WDL");
    }
}

#[test]
fn engine_plays_it_over_uci_with_both_choices_and_mcts() {
    let recs = reference();
    let start = &recs[0];
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!(
        "setoption name WeightsFile value {}",
        tiny_mavp_path().display()
    ));
    let lines = e.ready();
    assert!(
        !lines.iter().any(|l| l.contains("error")),
        "loading tiny_mavp failed: {lines:#?}"
    );
    e.send("setoption name UCI_ShowWDL value true");
    e.send("setoption name MoveChoice value policy");
    e.send("position startpos");
    let lines = e.go("depth 1");
    assert_eq!(
        bestmove(&lines).0.as_deref(),
        start["policy_best"].as_str(),
        "{lines:#?}"
    );
    // The WDL head speaks for the position on the line of the move played.
    let pv = &pv_lines(&lines)[0];
    let want: Vec<u32> = floats(&start["wdl"])
        .iter()
        .map(|p| (p * 1000.0).round() as u32)
        .collect();
    let head_wdl = |pv: &str| {
        let got: Vec<u32> = pv
            .split_whitespace()
            .skip_while(|t| *t != "wdl")
            .skip(1)
            .take(3)
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(got.iter().sum::<u32>(), 1000, "{pv}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.abs_diff(*w) <= 1, "{pv}: want {want:?}");
        }
    };
    head_wdl(pv);
    // The blend of both heads, as `analyse` ranks it with `MoveChoice::Blend` (successor values at
    // the default weight).
    let mut m = load();
    let w = SUCCESSOR_VALUE_DEFAULT as f32 / 100.0;
    let mut a = analyse_with(&mut m, &Game::startpos(), &[], w).unwrap();
    a.choice = MoveChoice::Blend;
    let want = a.moves[a.best().unwrap()].uci.clone();
    e.send("setoption name MoveChoice value blend");
    e.send("position startpos");
    let lines = e.go("depth 1");
    assert_eq!(
        bestmove(&lines).0.as_deref(),
        Some(want.as_str()),
        "{lines:#?}"
    );
    // A bad value is refused and the old one kept.
    e.send("setoption name MoveChoice value sideways");
    e.send("setoption name MoveChoice value q");
    e.send("position startpos");
    let lines = e.go("depth 1");
    let q_best = bestmove(&lines).0;
    assert!(q_best.is_some(), "{lines:#?}");
    // SuccessorValue (default on): the root and its 20 successors in one run; 0 turns it off; a
    // bad value is refused and the old one kept.
    let nodes =
        |lines: &[String]| field(&pv_lines(lines)[0], "nodes").map(|n| n.parse::<u32>().unwrap());
    assert_eq!(nodes(&lines), Some(21), "{lines:#?}");
    e.send("setoption name SuccessorValue value 0");
    e.send("setoption name SuccessorValue value lots");
    e.send("position startpos");
    let lines = e.go("depth 1");
    assert_eq!(nodes(&lines), Some(1), "{lines:#?}");
    // MCTS on the priors: a legal move and a search that went beyond the root.
    e.send("setoption name SearchMode value mcts");
    e.send("position startpos");
    let lines = e.go("nodes 64");
    let (mv, _) = bestmove(&lines);
    assert!(
        mv.is_some_and(|m| Game::startpos().parse_uci(&m).is_ok()),
        "{lines:#?}"
    );
    assert!(
        pv_lines(&lines)
            .iter()
            .any(|l| field(l, "depth").is_some_and(|d| d.parse::<u32>().unwrap() >= 2)),
        "{lines:#?}"
    );
    // MCTS with UCI_ShowWDL: the line of the move played reports the WDL head of the root, as
    // the searchless policy does (not a split of Q, which has no draws).
    let firsts: Vec<String> = pv_lines(&lines)
        .into_iter()
        .filter(|l| field(l, "multipv") == Some("1"))
        .collect();
    assert!(!firsts.is_empty(), "{lines:#?}");
    firsts.iter().for_each(|l| head_wdl(l));
    assert!(e.quit());
}
