//! Searches over pipes with the tiny golden action-value model (`make test-models`): info lines,
//! MultiPV, WDL, infinite/stop, ponder/ponderhit, isready during a search, Chess960 notation,
//! mate in one, temperature reproducibility, clocks.

mod uci_support;

use std::time::{Duration, Instant};
use uci_support::*;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

#[test]
fn go_prints_info_then_a_legal_bestmove() {
    let mut e = Engine::with_tiny_model();
    e.send("position startpos moves e2e4 c7c5");
    let lines = e.go("wtime 60000 btime 60000 winc 1000 binc 1000");
    let pvs = pv_lines(&lines);
    assert_eq!(pvs.len(), 1, "{lines:#?}");
    let info = &pvs[0];
    for key in [
        "depth", "seldepth", "multipv", "score", "nodes", "nps", "time", "pv",
    ] {
        assert!(field(info, key).is_some(), "{key} missing in {info}");
    }
    assert_eq!(field(info, "depth"), Some("1"));
    assert_eq!(field(info, "score"), Some("cp"));
    assert!(!info.contains(" wdl "), "WDL is off by default");
    // nodes = network rows = legal moves here (one AV row per move).
    let fen = "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
    let n_legal = glimpse::game::Game::from_fen(fen, false)
        .unwrap()
        .legal_moves()
        .len();
    assert_eq!(field(info, "nodes"), Some(n_legal.to_string().as_str()));
    let (mv, ponder) = bestmove(&lines);
    let mv = mv.expect("a move");
    assert!(legal(fen, &mv, false), "{mv}");
    assert_eq!(
        field(info, "pv"),
        Some(mv.as_str()),
        "temperature 0 plays the first PV"
    );
    assert_eq!(ponder, None, "Ponder is off by default");
    assert!(e.quit());
}

#[test]
fn multipv_lines_are_ranked() {
    let mut e = Engine::with_tiny_model();
    e.send("setoption name MultiPV value 5");
    e.send("setoption name UCI_ShowWDL value true");
    e.send("position startpos");
    let lines = e.go("depth 1");
    let pvs = pv_lines(&lines);
    assert_eq!(pvs.len(), 5, "{lines:#?}");
    let mut last_cp = i32::MAX;
    let mut moves = Vec::new();
    for (i, l) in pvs.iter().enumerate() {
        assert_eq!(field(l, "multipv"), Some((i + 1).to_string().as_str()));
        let cp: i32 = l
            .split_whitespace()
            .skip_while(|t| *t != "cp")
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(cp <= last_cp, "not ranked: {pvs:#?}");
        last_cp = cp;
        let w: Vec<u32> = l
            .split_whitespace()
            .skip_while(|t| *t != "wdl")
            .skip(1)
            .take(3)
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(w.len(), 3, "{l}");
        assert_eq!(w.iter().sum::<u32>(), 1000, "{l}");
        let m = field(l, "pv").unwrap().to_string();
        assert!(legal(START, &m, false));
        moves.push(m);
    }
    moves.sort();
    moves.dedup();
    assert_eq!(moves.len(), 5, "distinct moves");
    assert_eq!(bestmove(&lines).0.as_deref(), field(&pvs[0], "pv"));

    // More lines than legal moves: one line per legal move.
    e.send("setoption name MultiPV value 256");
    e.send("position fen 7k/8/8/8/8/8/8/K7 w - - 0 1");
    let lines = e.go("depth 1");
    assert_eq!(pv_lines(&lines).len(), 3, "{lines:#?}");
    assert!(e.quit());
}

#[test]
fn infinite_waits_for_stop_and_isready_is_answered_meanwhile() {
    let mut e = Engine::with_tiny_model();
    e.send("position startpos");
    e.send("go infinite");
    // Wait for the analysis line itself: a loaded machine may take longer than any fixed window.
    let early = e.until("the analysis", |l| {
        l.starts_with("info depth") || l.starts_with("bestmove")
    });
    assert!(
        early.last().is_some_and(|l| l.starts_with("info depth")),
        "the analysis is shown: {early:#?}"
    );
    assert!(
        !early.iter().any(|l| l.starts_with("bestmove")),
        "no bestmove before stop: {early:#?}"
    );
    let t = Instant::now();
    let lines = e.ready();
    assert!(!lines.iter().any(|l| l.starts_with("bestmove")));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "isready during a search is answered at once"
    );
    e.send("stop");
    let lines = e.until("bestmove", |l| l.starts_with("bestmove"));
    assert!(legal(START, &bestmove(&lines).0.unwrap(), false));
    // Exactly one bestmove, and a second stop does nothing.
    e.send("stop");
    let later = e.collect_for(Duration::from_millis(300));
    assert!(
        !later.iter().any(|l| l.starts_with("bestmove")),
        "{later:#?}"
    );
    assert!(e.quit());
}

#[test]
fn ponder_then_ponderhit_or_stop() {
    let mut e = Engine::with_tiny_model();
    e.send("setoption name Ponder value true");
    e.send("position startpos moves e2e4");
    let lines = e.go("wtime 30000 btime 30000");
    let (mv, ponder) = bestmove(&lines);
    let mv = mv.unwrap();
    let ponder = ponder.expect("a ponder move when Ponder is on");
    let after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
    let mut g = glimpse::game::Game::from_fen(after_e4, false).unwrap();
    g.push_uci(&mv).unwrap();
    assert!(
        g.clone().push_uci(&ponder).is_ok(),
        "ponder move {ponder} is legal after {mv}"
    );

    // ponder, then ponderhit: bestmove only after ponderhit.
    e.send(&format!("position startpos moves e2e4 {mv} {ponder}"));
    e.send("go ponder wtime 30000 btime 30000");
    let early = e.collect_for(Duration::from_millis(400));
    assert!(
        !early.iter().any(|l| l.starts_with("bestmove")),
        "{early:#?}"
    );
    e.send("ponderhit");
    let lines = e.until("bestmove", |l| l.starts_with("bestmove"));
    assert!(bestmove(&lines).0.is_some());

    // ponder, then stop (the opponent played something else): bestmove after stop.
    e.send("go ponder wtime 30000 btime 30000");
    let early = e.collect_for(Duration::from_millis(400));
    assert!(
        !early.iter().any(|l| l.starts_with("bestmove")),
        "{early:#?}"
    );
    e.send("stop");
    e.until("bestmove", |l| l.starts_with("bestmove"));
    assert!(e.quit());
}

#[test]
fn chess960_castling_is_king_takes_rook() {
    // King on d1, rooks on a1 and h1: O-O is d1h1, O-O-O is d1a1 in Chess960 notation.
    let fen = "r2k3r/pppppppp/8/8/8/8/PPPPPPPP/R2K3R w HAha - 0 1";
    let mut e = Engine::with_tiny_model();
    e.send("setoption name UCI_Chess960 value true");
    e.send(&format!("position fen {fen}"));
    assert!(
        e.fen()
            .starts_with("r2k3r/pppppppp/8/8/8/8/PPPPPPPP/R2K3R w "),
        "accepted"
    );
    for castle in ["d1h1", "d1a1"] {
        let lines = e.go(&format!("searchmoves {castle} movetime 1000"));
        assert_eq!(bestmove(&lines).0.as_deref(), Some(castle), "{lines:#?}");
        assert_eq!(field(&pv_lines(&lines)[0], "pv"), Some(castle));
    }
    e.send(&format!("position fen {fen} moves d1h1"));
    assert!(
        e.fen().contains("/R4RK1 b "),
        "king g1, rook f1: {}",
        e.fen()
    );

    // A standard setup in Chess960 mode: castling is e1h1, not e1g1.
    let std_fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
    e.send(&format!("position fen {std_fen}"));
    let lines = e.go("searchmoves e1h1 movetime 1000");
    assert_eq!(bestmove(&lines).0.as_deref(), Some("e1h1"), "{lines:#?}");

    // Standard chess: e1g1 notation, and a GUI's e1h1 is accepted as castling too.
    e.send("setoption name UCI_Chess960 value false");
    e.send(&format!("position fen {std_fen}"));
    let lines = e.go("searchmoves e1g1 movetime 1000");
    assert_eq!(bestmove(&lines).0.as_deref(), Some("e1g1"), "{lines:#?}");
    e.send(&format!("position fen {std_fen} moves e1h1"));
    assert!(
        e.fen().starts_with("r3k2r/8/8/8/8/8/8/R4RK1 b kq"),
        "e1h1 accepted as castling"
    );
    assert!(e.quit());
}

#[test]
fn mate_in_one_is_played_and_scored_as_mate() {
    let mut e = Engine::with_tiny_model();
    e.send("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1");
    let lines = e.go("depth 3");
    assert_eq!(bestmove(&lines).0.as_deref(), Some("d1d8"), "{lines:#?}");
    assert_eq!(field(&pv_lines(&lines)[0], "mate"), Some("1"));
    assert!(e.quit());
}

#[test]
fn temperature_with_a_seed_is_reproducible() {
    let play = |seed: u32| {
        let mut e = Engine::with_tiny_model();
        e.send("setoption name Temperature value 1");
        e.send(&format!("setoption name Seed value {seed}"));
        e.send("ucinewgame");
        let mut moves: Vec<String> = Vec::new();
        for _ in 0..6 {
            e.send(&format!("position startpos moves {}", moves.join(" ")));
            let lines = e.go("nodes 1000");
            moves.push(bestmove(&lines).0.unwrap());
        }
        e.quit();
        moves
    };
    let a = play(7);
    assert_eq!(a, play(7), "same seed, same moves");
    // Temperature 0 (the default) is the argmax; with temperature 1 some move differs across
    // seeds with overwhelming probability over 6 plies of a near-uniform tiny model.
    let others: Vec<Vec<String>> = (1..=3).map(play).collect();
    assert!(others.iter().any(|o| *o != a), "{a:?} {others:?}");
}

#[test]
fn a_short_clock_is_respected() {
    let mut e = Engine::with_tiny_model();
    e.send("position startpos moves d2d4");
    let t = Instant::now();
    let lines = e.go("wtime 200 btime 200 winc 0 binc 0");
    let took = t.elapsed();
    assert!(bestmove(&lines).0.is_some());
    // The budget is about 200/30 ms; allow a loaded machine a wide margin but far below a hang.
    assert!(took < Duration::from_millis(2000), "took {took:?}");
    assert!(e.quit());
}

#[test]
fn quit_during_infinite_exits() {
    let mut e = Engine::with_tiny_model();
    e.send("position startpos");
    e.send("go infinite");
    e.collect_for(Duration::from_millis(200));
    assert!(e.quit(), "quit during a search ends the process");
}

#[test]
fn eval_and_d_are_info_strings() {
    let mut e = Engine::with_tiny_model();
    e.send("position startpos moves g1f3");
    e.send("eval");
    let lines = e.until("the eval summary", |l| l.contains("evaluations in"));
    // Header, 20 moves, summary.
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("info string "))
            .count(),
        22,
        "{lines:#?}"
    );
    e.send("d");
    let lines = e.until("model line", |l| l.starts_with("info string Model:"));
    assert!(lines.last().unwrap().contains("tiny_av.onnx"));
    assert!(e.quit());
}

#[test]
fn draw_score_decides_whether_searchless_takes_a_repetition() {
    // After 1.Nf3 Nf6 2.Ng1, Black's 2...Ng8 repeats the start position a third time: a draw by the
    // repetition rule. DrawScore +100 makes a draw a win for the engine (the draw's key is 1.0, above
    // every network value); −100 makes it a loss (0.0, below every move). The tiny net's values do
    // not matter: only the rule's ranking does.
    let moves = "position startpos moves g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1";
    let mut e = Engine::with_tiny_model();
    for (score, takes) in [(100, true), (-100, false), (100, true)] {
        e.send(&format!("setoption name DrawScore value {score}"));
        e.send(moves);
        let (mv, _) = bestmove(&e.go("depth 1"));
        let mv = mv.expect("a move");
        assert_eq!(mv == "f6g8", takes, "DrawScore {score}: played {mv}");
    }
    assert!(e.quit());
}
