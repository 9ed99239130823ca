//! Golden tests against the searchless-chess reference outputs in `tests/data/shared/golden/`:
//! tokenizer (every record of `tokenizer_golden.jsonl` and `tokenizer_errors.jsonl`), the 1968
//! action table (`actions.txt`), the engine FEN (python-chess `board.fen()`), the legal-move
//! action ids, and the repetition rule of the `position` records in `tiny_*_outputs.jsonl`.
//!
//! Shared data is found at `$GLIMPSE_SHARED`, else the in-repo copy `tests/data/shared/`.

use glimpse::game::{standard_uci, Game};
use glimpse::model::actions::{action_to_uci, uci_to_action, NUM_ACTIONS};
use glimpse::model::tokenizer::tokenize;
use serde_json::Value;
use std::path::PathBuf;

fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("GLIMPSE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/shared"));
    assert!(
        dir.join("golden").is_dir(),
        "shared data not found at {} (set GLIMPSE_SHARED)",
        dir.display()
    );
    dir
}

fn read_jsonl(name: &str) -> Vec<Value> {
    let path = shared_dir().join("golden").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

fn tokens_of(v: &Value) -> Vec<u8> {
    v.as_array()
        .expect("token array")
        .iter()
        .map(|x| x.as_u64().expect("token id") as u8)
        .collect()
}

#[test]
fn tokenizer_matches_every_golden_record() {
    let recs = read_jsonl("tokenizer_golden.jsonl");
    assert_eq!(recs.len(), 328);
    for r in &recs {
        let fen = r["fen"].as_str().unwrap();
        let got = tokenize(fen).unwrap_or_else(|e| panic!("id {}: {fen}: {e}", r["id"]));
        assert_eq!(
            got.to_vec(),
            tokens_of(&r["tokens"]),
            "id {} {fen}",
            r["id"]
        );
    }
}

#[test]
fn engine_fen_matches_python_chess_board_fen() {
    for r in read_jsonl("tokenizer_golden.jsonl") {
        let fen = r["fen"].as_str().unwrap();
        let game = Game::from_fen(fen, false).unwrap_or_else(|e| panic!("id {}: {e}", r["id"]));
        let engine_fen = game.fen();
        assert_eq!(
            engine_fen,
            r["board_fen"].as_str().unwrap(),
            "id {}",
            r["id"]
        );
        let expected = if r["fen_is_board_fen"].as_bool().unwrap() {
            tokens_of(&r["tokens"])
        } else {
            tokens_of(&r["tokens_of_board_fen"])
        };
        assert_eq!(
            tokenize(&engine_fen).unwrap().to_vec(),
            expected,
            "id {}",
            r["id"]
        );
    }
}

#[test]
fn legal_move_action_ids_match() {
    for r in read_jsonl("tokenizer_golden.jsonl") {
        let fen = r["fen"].as_str().unwrap();
        let game = Game::from_fen(fen, false).unwrap();
        let mut got: Vec<(u16, String)> = game
            .legal_moves()
            .iter()
            .map(|m| {
                let uci = standard_uci(m);
                let id = uci_to_action(&uci).unwrap_or_else(|| panic!("{uci} not in table"));
                (id, uci)
            })
            .collect();
        got.sort();
        let expected: Vec<(u16, String)> = r["moves"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (v.as_u64().unwrap() as u16, k.clone()))
            .collect();
        // The golden key order is the engine order: ascending action id.
        assert_eq!(got, expected, "id {} {fen}", r["id"]);
        assert_eq!(got.len() as u64, r["num_legal_moves"].as_u64().unwrap());
    }
}

#[test]
fn tokenizer_rejects_golden_errors() {
    let recs = read_jsonl("tokenizer_errors.jsonl");
    assert_eq!(recs.len(), 5);
    for r in recs {
        let fen = r["fen"].as_str().unwrap();
        assert!(
            tokenize(fen).is_err(),
            "{fen} should be rejected ({})",
            r["note"]
        );
    }
}

#[test]
fn action_table_matches_actions_txt() {
    let path = shared_dir().join("golden/actions.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), NUM_ACTIONS);
    for (i, uci) in lines.iter().enumerate() {
        assert_eq!(action_to_uci(i), Some(*uci), "action {i}");
        assert_eq!(uci_to_action(uci), Some(i as u16), "{uci}");
    }
}

#[test]
fn repetition_rule_matches_golden_positions() {
    for file in ["tiny_av_outputs.jsonl", "tiny_sv_outputs.jsonl"] {
        for r in read_jsonl(file) {
            if r["kind"] != "position" {
                continue;
            }
            let mut game = Game::from_fen(r["start_fen"].as_str().unwrap(), false).unwrap();
            for m in r["history_uci"].as_array().unwrap() {
                game.push_uci(m.as_str().unwrap()).unwrap();
            }
            assert_eq!(game.fen(), r["fen"].as_str().unwrap());
            let mut overridden = 0;
            for pm in r["per_move"].as_array().unwrap() {
                let mv = game.parse_uci(pm["move"].as_str().unwrap()).unwrap();
                let raw = pm["win_prob"].as_f64().unwrap();
                let after = pm["win_prob_after_repetition_rule"].as_f64().unwrap();
                let golden_rep = after == 0.5 && raw != 0.5;
                assert_eq!(
                    game.move_allows_repetition(&mv),
                    golden_rep,
                    "{file} {} move {}",
                    r["name"],
                    pm["move"]
                );
                overridden += golden_rep as usize;
            }
            if r["name"] == "repetition_history" {
                assert_eq!(overridden, 1, "{file}: exactly f6g8 is overridden");
            }
        }
    }
}
