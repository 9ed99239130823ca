//! Syzygy probing (`src/tablebase.rs`) against python-chess's independent reader, the root filter,
//! bad paths and damaged tables, and the UCI options over a pipe.
//!
//! The tables in `tests/data/syzygy/` (K+Q, K+R, K+P, K+B+N against K; see its README) make these
//! tests run on a clone without `../shared`; the fixture `tests/data/syzygy_cases.jsonl` holds
//! python-chess's answers (`tests/data/gen_syzygy_cases.py`). With `../shared/data/syzygy` present,
//! all 35 tables with up to 4 pieces are checked too (`syzygy_cases_shared.jsonl`).

mod uci_support;

use glimpse::game::Game;
use glimpse::tablebase::{Probe, Tablebases, TB_WIN_CP};
use shakmaty::{Chess, Position};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use uci_support::{bestmove, field, pv_lines, Engine};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn vendored() -> PathBuf {
    data().join("syzygy")
}

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/syzygy")
}

fn open(dir: &Path) -> Arc<Tablebases> {
    let opened = Tablebases::open(dir.to_str().expect("utf-8 path"));
    assert!(opened.problems.is_empty(), "{:?}", opened.problems);
    Arc::new(opened.tables.expect("tables found"))
}

fn probe(tables: Arc<Tablebases>) -> Probe {
    Probe {
        tables,
        limit: 7,
        rule50: true,
    }
}

/// (FEN, python-chess WDL, python-chess DTZ) of a fixture file.
fn cases(file: &str) -> Vec<(String, i32, i32)> {
    std::fs::read_to_string(data().join(file))
        .expect("fixture")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            (
                v["fen"].as_str().expect("fen").to_string(),
                v["wdl"].as_i64().expect("wdl") as i32,
                v["dtz"].as_i64().expect("dtz") as i32,
            )
        })
        .collect()
}

fn position(fen: &str) -> Chess {
    Game::from_fen(fen, false)
        .expect("fixture FEN")
        .position()
        .clone()
}

/// Every fixture position: the engine's WDL equals python-chess's, DTZ has the same sign (and
/// the same value: both read the same rounded tables).
fn agree(tables: &Tablebases, file: &str, at_least: usize) {
    let cases = cases(file);
    assert!(cases.len() >= at_least, "{file}: {} cases", cases.len());
    let mut exact = 0;
    for (fen, wdl, dtz) in &cases {
        let pos = position(fen);
        let ours = tables.wdl_after_zeroing(&pos).expect("a WDL answer");
        assert_eq!(i32::from(ours), *wdl, "WDL of {fen}");
        let ours_dtz = tables.dtz(&pos).expect("a DTZ answer").0;
        assert_eq!(ours_dtz.signum(), dtz.signum(), "DTZ sign of {fen}");
        exact += usize::from(ours_dtz == *dtz);
    }
    assert_eq!(exact, cases.len(), "DTZ values differ from python-chess");
    assert!(!tables.take_error());
}

#[test]
fn probes_agree_with_python_chess_on_the_vendored_tables() {
    let tables = open(&vendored());
    assert_eq!((tables.wdl_files(), tables.dtz_files()), (6, 6));
    assert_eq!(tables.max_pieces(), 4);
    agree(&tables, "syzygy_cases.jsonl", 1000);
}

#[test]
fn probes_agree_with_python_chess_on_the_shared_tables() {
    if !shared().is_dir() {
        eprintln!("skipped: no ../shared/data/syzygy");
        return;
    }
    let tables = open(&shared());
    assert_eq!(tables.wdl_files(), 35);
    agree(&tables, "syzygy_cases_shared.jsonl", 1000);
}

/// What a root move leads to for the root's side to move, by the tables: 1 win within the 50-move
/// rule, 0 draw (or a win or loss the rule turns into a draw), −1 loss.
fn outcome_after(tb: &Probe, game: &Game, mv: shakmaty::Move) -> i32 {
    let mut g = game.clone();
    g.push(mv).unwrap();
    let pos = g.position();
    if pos.is_checkmate() {
        return 1;
    }
    if pos.is_stalemate() || pos.is_insufficient_material() || g.repetition_claimable() {
        return 0;
    }
    let dtz = tb.tables.dtz(pos).expect("covered").0;
    let plies = dtz.abs() + pos.halfmoves() as i32;
    match dtz {
        0 => 0,
        _ if plies > 100 => 0,
        d => -d.signum(),
    }
}

#[test]
fn the_root_filter_never_gives_away_a_win_or_a_draw() {
    let tb = probe(open(&vendored()));
    let mut checked = [0usize; 3];
    for (fen, wdl, _) in cases("syzygy_cases.jsonl") {
        let game = Game::from_fen(&fen, false).unwrap();
        let root = tb.root(&game).expect("covered root");
        let keep = root.keep();
        assert!(!keep.is_empty(), "{fen}");
        // The root's value under the 50-move rule (half-move clock 0: WDL ±2 is a real win/loss).
        let best = match wdl {
            2 => 1,
            -2 => -1,
            _ => 0,
        };
        for mv in &keep {
            assert!(game.legal_moves().contains(mv));
            assert_eq!(
                outcome_after(&tb, &game, *mv),
                best,
                "{fen}: kept {mv} does not keep the value {best}"
            );
        }
        let expected_cp = [-TB_WIN_CP, 0, TB_WIN_CP][(best + 1) as usize];
        if wdl.abs() != 1 {
            assert_eq!(root.cp(), expected_cp, "{fen}");
        }
        checked[(best + 1) as usize] += 1;
    }
    assert!(checked.iter().all(|&n| n >= 50), "{checked:?}");
}

/// Tiny deterministic generator for the conversion test.
struct Lcg(u64);
impl Lcg {
    fn pick(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

#[test]
fn every_won_root_converts_within_the_fifty_move_rule() {
    // The winner plays any kept move (at random), the loser the kept move that resists longest:
    // the game must end in mate with no 50-move draw and no threefold repetition.
    let tb = probe(open(&vendored()));
    let mut rng = Lcg(18);
    let won: Vec<String> = cases("syzygy_cases.jsonl")
        .into_iter()
        .filter(|(_, wdl, _)| *wdl == 2)
        .map(|(fen, ..)| fen)
        .step_by(7)
        .collect();
    assert!(won.len() >= 40, "{}", won.len());
    for fen in &won {
        let mut game = Game::from_fen(fen, false).unwrap();
        let winner = game.position().turn();
        let mut plies = 0;
        while !game.position().is_checkmate() {
            let pos = game.position();
            assert!(
                pos.halfmoves() < 100,
                "{fen}: 50-move draw in {}",
                game.fen()
            );
            assert!(game.repetition_count() < 3, "{fen}: threefold");
            assert!(
                !pos.is_stalemate() && !pos.is_insufficient_material(),
                "{fen}"
            );
            let root = tb.root(&game).expect("covered");
            let keep = root.keep();
            let mv = if pos.turn() == winner {
                keep[rng.pick(keep.len())]
            } else {
                *root
                    .moves
                    .iter()
                    .filter(|m| keep.contains(&m.mv))
                    .min_by_key(|m| m.dtz)
                    .map(|m| &m.mv)
                    .unwrap()
            };
            game.push(mv).unwrap();
            plies += 1;
            assert!(plies < 400, "{fen}: no mate");
        }
        assert_ne!(
            game.position().turn(),
            winner,
            "{fen}: the winner was mated"
        );
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glimpse-syzygy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_bad_path_is_reported_and_good_directories_still_count() {
    let missing = Tablebases::open("/nonexistent/glimpse-tables");
    assert!(missing.tables.is_none());
    assert_eq!(missing.problems.len(), 1, "{:?}", missing.problems);
    let both = format!("/nonexistent/glimpse-tables:{}", vendored().display());
    let opened = Tablebases::open(&both);
    assert_eq!(opened.problems.len(), 1);
    assert_eq!(opened.tables.expect("vendored tables").wdl_files(), 6);
    assert!(Tablebases::open("<empty>").tables.is_none());
    assert!(Tablebases::open("").problems.is_empty());
}

#[test]
fn truncated_tables_are_left_out_or_fail_softly() {
    let dir = temp_dir("truncated");
    let bytes = std::fs::read(vendored().join("KRvK.rtbz")).unwrap();
    // A file cut at a size the reader rejects at once: left out, with a message.
    std::fs::write(dir.join("KRvK.rtbz"), &bytes[..1000]).unwrap();
    // A file with the right magic and a plausible size but cut short: found only when probed.
    let wdl = std::fs::read(vendored().join("KQvK.rtbw")).unwrap();
    std::fs::write(dir.join("KQvK.rtbw"), &wdl[..80]).unwrap();
    // Not a table at all, under a table's name.
    std::fs::write(dir.join("KPvK.rtbw"), [0u8; 80]).unwrap();
    std::fs::write(dir.join("README.txt"), "not a table").unwrap();
    let opened = Tablebases::open(dir.to_str().unwrap());
    assert_eq!(opened.problems.len(), 2, "{:?}", opened.problems);
    let tables = Arc::new(opened.tables.expect("the cut KQvK.rtbw is still listed"));
    assert_eq!((tables.wdl_files(), tables.dtz_files()), (1, 0));
    let pos = position("8/8/8/4k3/8/8/8/KQ6 w - - 0 1");
    assert_eq!(tables.wdl_after_zeroing(&pos), None);
    assert!(tables.take_error(), "the failed probe is reported");
    let tb = probe(Arc::clone(&tables));
    assert!(tb
        .root(&Game::from_fen("8/8/8/4k3/8/8/8/KQ6 w - - 0 1", false).unwrap())
        .is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn probe_limit_and_castling_rights_keep_positions_out() {
    let tables = open(&vendored());
    let pos = position("8/8/8/4k3/8/8/8/KQ6 w - - 0 1");
    let mut tb = probe(tables);
    assert!(tb.covers(&pos));
    tb.limit = 2;
    assert!(!tb.covers(&pos));
    let castling = position("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1");
    tb.limit = 7;
    assert!(!tb.covers(&castling));
}

#[test]
fn uci_options_open_tables_and_searches_report_them() {
    let mut e = Engine::with_tiny_model();
    e.send("setoption name SyzygyPath value /nonexistent/glimpse-tables");
    let lines = e.ready();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string error: option SyzygyPath")),
        "{lines:#?}"
    );
    e.send(&format!(
        "setoption name SyzygyPath value {}",
        vendored().display()
    ));
    let lines = e.ready();
    assert!(
        lines
            .iter()
            .any(|l| l == "info string Syzygy: found 6 WDL and 6 DTZ tables, up to 4 pieces"),
        "{lines:#?}"
    );
    // K+R vs K, won: every mode keeps to winning moves and says so.
    let fen = "8/8/8/4k3/8/8/8/KR6 w - - 0 1";
    let game = Game::from_fen(fen, false).unwrap();
    let keep = probe(open(&vendored())).root(&game).unwrap().keep();
    for mode in ["searchless", "mcts"] {
        e.send(&format!("setoption name SearchMode value {mode}"));
        e.send(&format!("position fen {fen}"));
        let lines = e.go("nodes 64");
        let info = pv_lines(&lines).pop().expect("an info line");
        assert_eq!(field(&info, "score"), Some("cp"), "{info}");
        assert!(info.contains(&format!("cp {TB_WIN_CP} ")), "{info}");
        assert!(field(&info, "tbhits").is_some_and(|t| t != "0"), "{info}");
        let mv = bestmove(&lines).0.expect("a move");
        assert!(
            keep.iter().any(|m| game.move_to_uci(m) == mv),
            "{mode}: {mv}"
        );
    }
    // SyzygyProbeLimit 0 switches probing off: no tbhits field, no tablebase score.
    e.send("setoption name SyzygyProbeLimit value 0");
    e.send("setoption name SearchMode value searchless");
    let lines = e.go("nodes 1");
    let info = pv_lines(&lines).pop().unwrap();
    assert!(!info.contains("tbhits"), "{info}");
    assert!(e.quit());
}
