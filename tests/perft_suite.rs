//! Perft suites from `$GLIMPSE_SHARED/data/perft/*.epd` (default: the in-repo slice
//! `tests/data/shared/`; `GLIMPSE_SHARED=../shared` runs the full suites) (lines
//! `FEN ;D1 20 ;D2 400 …` or `FEN; D1 5; …`, some ending in NUL + CRLF). Every listed count at depth ≤ 3 with at most 2M nodes is checked;
//! entries that list only deeper counts are checked at their shallowest depth when that has at
//! most 2M nodes. Castling letters other than `KQkq` select Chess960 castling. Positions with an
//! unreachable check (two aligned sliders) are suite material, so they are accepted here although
//! the engine's `parse_fen` rejects them.

use glimpse::perft::perft;
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, PositionError};
use std::path::PathBuf;

const MAX_DEPTH: u32 = 3;
const MAX_NODES: u64 = 2_000_000;

fn perft_dir() -> PathBuf {
    let shared = std::env::var_os("GLIMPSE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/shared"));
    let dir = shared.join("data/perft");
    assert!(
        dir.is_dir(),
        "perft suites not found at {} (set GLIMPSE_SHARED)",
        dir.display()
    );
    dir
}

/// Parses one EPD line into (FEN, [(depth, nodes)]); `None` for blank lines.
fn parse_line(line: &str) -> Option<(String, Vec<(u32, u64)>)> {
    let line = line.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    if line.is_empty() {
        return None;
    }
    let mut parts = line.split(';');
    let fen = parts.next()?.trim().to_string();
    let mut counts = Vec::new();
    for p in parts {
        let p = p.trim();
        if let Some(rest) = p.strip_prefix('D') {
            let mut it = rest.split_whitespace();
            if let (Some(d), Some(n)) = (it.next(), it.next()) {
                if let (Ok(d), Ok(n)) = (d.parse(), n.parse()) {
                    counts.push((d, n));
                }
            }
        }
    }
    Some((fen, counts))
}

#[test]
fn perft_suites_match() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(perft_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "epd"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let (mut checked, mut positions) = (0usize, 0usize);
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for (lineno, line) in text.lines().enumerate() {
            let Some((fen, counts)) = parse_line(line) else {
                continue;
            };
            let castling = fen.split_whitespace().nth(2).unwrap_or("-");
            let chess960 = castling != "-" && !castling.chars().all(|c| "KQkq".contains(c));
            let mode = if chess960 {
                CastlingMode::Chess960
            } else {
                CastlingMode::Standard
            };
            let pos: Chess = Fen::from_ascii(fen.as_bytes())
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), lineno + 1))
                .into_position(mode)
                .or_else(PositionError::ignore_impossible_check)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), lineno + 1));
            let mut todo: Vec<(u32, u64)> = counts
                .iter()
                .copied()
                .filter(|&(d, n)| d <= MAX_DEPTH && n <= MAX_NODES)
                .collect();
            if todo.is_empty() {
                if let Some(&(d, n)) = counts.iter().min() {
                    if n <= MAX_NODES {
                        todo.push((d, n));
                    }
                }
            }
            positions += !todo.is_empty() as usize;
            for (d, n) in todo {
                assert_eq!(
                    perft(&pos, d),
                    n,
                    "{}:{}: {fen} depth {d}",
                    file.display(),
                    lineno + 1
                );
                checked += 1;
            }
        }
    }
    assert!(positions > 7000, "only {positions} positions checked");
    eprintln!("perft: {checked} counts over {positions} positions");
}

#[test]
fn parses_both_line_styles() {
    let (fen, c) = parse_line("4k3/8/8/8/8/8/8/4K2R w K - 0 1 ;D1 15 ;D2 66 ;id \"x\"").unwrap();
    assert_eq!(fen, "4k3/8/8/8/8/8/8/4K2R w K - 0 1");
    assert_eq!(c, vec![(1, 15), (2, 66)]);
    let (fen, c) = parse_line("k7/6p1/8/8/8/8/7P/K7 b - - 0 1; D1 5; D6 55338\0\r").unwrap();
    assert_eq!(fen, "k7/6p1/8/8/8/8/7P/K7 b - - 0 1");
    assert_eq!(c, vec![(1, 5), (6, 55338)]);
    assert!(parse_line("\0\r").is_none());
}

/// Chess960 cases recorded with python-chess 1.11.2 (`tests/data/chess960_cases.jsonl`, generator
/// `tests/data/gen_chess960_cases.py`): perft 1–3 of seven start positions, and for a random game
/// from each (king-takes-rook castling), the engine's FEN and legal moves after every ply.
#[test]
fn chess960_cases_match_python_chess() {
    use glimpse::game::Game;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/chess960_cases.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("fixture present");
    let mut castles = 0;
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let start = r["start_fen"].as_str().unwrap();
        let mut game = Game::from_fen(start, true).unwrap();
        assert_eq!(game.fen(), start);
        for (d, n) in r["perft"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                perft(game.position(), d as u32 + 1),
                n.as_u64().unwrap(),
                "{start} depth {}",
                d + 1
            );
        }
        for ply in r["plies"].as_array().unwrap() {
            let uci = ply["move"].as_str().unwrap();
            let mv = game.parse_uci(uci).unwrap_or_else(|e| panic!("{e}"));
            castles += mv.is_castle() as usize;
            assert_eq!(game.move_to_uci(&mv), uci);
            game.push(mv).unwrap();
            assert_eq!(game.fen(), ply["fen"].as_str().unwrap(), "after {uci}");
            let mut legal: Vec<String> = game
                .legal_moves()
                .iter()
                .map(|m| game.move_to_uci(m))
                .collect();
            legal.sort();
            let want: Vec<String> = ply["legal"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            assert_eq!(legal, want, "legal moves after {uci} in {}", game.fen());
        }
    }
    assert!(castles >= 3, "fixture should exercise castling ({castles})");
}
