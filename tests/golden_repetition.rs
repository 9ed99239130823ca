//! Differential test of the repetition rule against python-chess 1.11.2 verdicts recorded in
//! `tests/data/repetition_cases.jsonl` (generator: `tests/data/gen_repetition_cases.py`): for the
//! final position of 240 random back-and-forth games, every legal move's
//! `is_fivefold_repetition() or can_claim_threefold_repetition()` after the move, and the verdict
//! for the position itself.

use glimpse::game::Game;
use serde_json::Value;

#[test]
fn repetition_verdicts_match_python_chess() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/repetition_cases.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("fixture present");
    let (mut checked, mut positive) = (0, 0);
    for (i, line) in text.lines().enumerate() {
        let r: Value = serde_json::from_str(line).unwrap();
        let mut game = Game::from_fen(r["start_fen"].as_str().unwrap(), false).unwrap();
        for m in r["history_uci"].as_array().unwrap() {
            game.push_uci(m.as_str().unwrap()).unwrap();
        }
        assert_eq!(game.fen(), r["fen"].as_str().unwrap(), "case {i}");
        assert_eq!(
            game.repetition_claimable(),
            r["current"].as_bool().unwrap(),
            "case {i}: current position {}",
            r["fen"]
        );
        let moves = r["moves"].as_object().unwrap();
        assert_eq!(moves.len(), game.legal_moves().len(), "case {i}");
        for (uci, verdict) in moves {
            let mv = game.parse_uci(uci).unwrap();
            let expected = verdict.as_bool().unwrap();
            assert_eq!(
                game.move_allows_repetition(&mv),
                expected,
                "case {i}: {uci} after {:?}",
                r["history_uci"]
            );
            checked += 1;
            positive += expected as usize;
        }
    }
    assert!(
        checked > 5000 && positive > 100,
        "fixture too small: {checked}/{positive}"
    );
}
