//! `SearchMode mcts` over pipes with the tiny golden models (`make test-models`): info lines,
//! playout limits, proven mates, infinite/stop, ponder/ponderhit, searchmoves, BC refusal,
//! tree reuse across moves, ucinewgame, quit during a search.

mod uci_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use uci_support::*;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

fn test_model(name: &str) -> PathBuf {
    let p = tiny_av_path().with_file_name(name);
    assert!(
        p.is_file(),
        "{} is missing: run `make test-models`",
        p.display()
    );
    p
}

/// An engine in MCTS mode on `model` (tiny_av.onnx, tiny_mav.onnx, …).
fn mcts_engine(model: &str) -> Engine {
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!(
        "setoption name WeightsFile value {}",
        test_model(model).display()
    ));
    e.send("setoption name SearchMode value mcts");
    let lines = e.ready();
    assert!(
        !lines.iter().any(|l| l.contains("error")),
        "loading {model} failed: {lines:#?}"
    );
    e
}

/// Whether every legal reply in `g` allows a mate in one (i.e. the last move forced mate in 2).
fn mates_next(g: &glimpse::game::Game) -> bool {
    use shakmaty::Position;
    let replies = g.legal_moves();
    !replies.is_empty()
        && replies.iter().all(|r| {
            let mut after = g.clone();
            after.push(*r).unwrap();
            after.legal_moves().iter().any(|m| {
                let mut p = after.position().clone();
                p.play_unchecked(*m);
                p.is_checkmate()
            })
        })
}

fn num(line: &str, key: &str) -> i64 {
    field(line, key)
        .unwrap_or_else(|| panic!("{key} missing in {line}"))
        .parse()
        .unwrap()
}

#[test]
fn go_nodes_reports_a_search() {
    for model in ["tiny_mav.onnx", "tiny_av.onnx", "tiny_sv.onnx"] {
        let mut e = mcts_engine(model);
        e.send("position startpos moves e2e4");
        let lines = e.go("nodes 300");
        let pvs = pv_lines(&lines);
        let last = pvs.last().unwrap_or_else(|| panic!("{model}: {lines:#?}"));
        for key in [
            "depth", "seldepth", "multipv", "score", "nodes", "nps", "hashfull", "time", "pv",
        ] {
            assert!(
                field(last, key).is_some(),
                "{model}: {key} missing in {last}"
            );
        }
        assert!(
            num(last, "nodes") <= 300 && num(last, "nodes") > 10,
            "{last}"
        );
        assert!(num(last, "seldepth") >= num(last, "depth"), "{last}");
        assert!(
            num(last, "depth") >= 2,
            "300 playouts go deeper than one ply: {last}"
        );
        let fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
        let (mv, ponder) = bestmove(&lines);
        let mv = mv.unwrap();
        assert!(legal(fen, &mv, false), "{model}: {mv}");
        // The bestmove is the PV's first move and the ponder move its second.
        let pv: Vec<&str> = last.split(" pv ").nth(1).unwrap().split(' ').collect();
        assert_eq!(pv[0], mv, "{last}");
        assert_eq!(ponder.as_deref(), pv.get(1).copied(), "{last}");
        assert!(e.quit());
    }
}

#[test]
fn proven_mates_are_reported_and_played() {
    let mut e = mcts_engine("tiny_mav.onnx");
    // Mate in one.
    e.send("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1");
    let lines = e.go("nodes 500");
    assert_eq!(bestmove(&lines).0.as_deref(), Some("d1d8"));
    let last = pv_lines(&lines).pop().unwrap();
    assert!(last.contains("score mate 1"), "{last}");
    // Mate in two (Lichess puzzle, Stockfish-checked): the solver proves it.
    e.send("position fen 4r3/1k6/pp3P2/1b5p/3R1p2/P1R2P2/1P4PP/6K1 b - - 0 35");
    let lines = e.go("nodes 20000");
    let last = pv_lines(&lines).pop().unwrap();
    assert!(last.contains("score mate 2"), "{last}");
    let mv = bestmove(&lines).0.unwrap();
    let mut g = glimpse::game::Game::from_fen(
        "4r3/1k6/pp3P2/1b5p/3R1p2/P1R2P2/1P4PP/6K1 b - - 0 35",
        false,
    )
    .unwrap();
    g.push_uci(&mv).unwrap();
    assert!(mates_next(&g), "after {mv} every reply allows mate in one");
    // Being mated: negative mate score.
    e.send("position fen k7/8/1K6/8/8/8/8/7R b - - 0 1");
    let lines = e.go("nodes 2000");
    let last = pv_lines(&lines).pop().unwrap();
    assert!(last.contains("score mate -1"), "{last}");
    assert!(e.quit());
}

#[test]
fn infinite_prints_progress_and_waits_for_stop() {
    let mut e = mcts_engine("tiny_mav.onnx");
    e.send("position startpos");
    e.send("go infinite");
    // The first periodic line comes about a second into the search; a loaded machine may take
    // longer to start the engine and load the net, so wait for it rather than for a fixed time.
    let early = e.until("periodic info", |l| {
        l.starts_with("info depth") || l.starts_with("bestmove")
    });
    assert!(
        early.last().is_some_and(|l| l.starts_with("info depth")),
        "periodic info while searching: {early:#?}"
    );
    assert!(
        !early.iter().any(|l| l.starts_with("bestmove")),
        "{early:#?}"
    );
    let t = Instant::now();
    let r = e.ready();
    assert!(!r.iter().any(|l| l.starts_with("bestmove")));
    assert!(t.elapsed() < Duration::from_secs(5));
    e.send("stop");
    let lines = e.until("bestmove", |l| l.starts_with("bestmove"));
    assert!(legal(START, &bestmove(&lines).0.unwrap(), false));
    e.send("stop");
    let later = e.collect_for(Duration::from_millis(300));
    assert!(
        !later.iter().any(|l| l.starts_with("bestmove")),
        "{later:#?}"
    );
    assert!(e.quit());
}

#[test]
fn ponderhit_switches_to_the_clock() {
    let mut e = mcts_engine("tiny_mav.onnx");
    e.send("setoption name Ponder value true");
    e.send("position startpos moves e2e4 e7e5");
    e.send("go ponder wtime 2000 btime 2000");
    let early = e.collect_for(Duration::from_millis(500));
    assert!(
        !early.iter().any(|l| l.starts_with("bestmove")),
        "{early:#?}"
    );
    let t = Instant::now();
    e.send("ponderhit");
    let lines = e.until("bestmove", |l| l.starts_with("bestmove"));
    assert!(bestmove(&lines).0.is_some());
    // 2 s on the clock: the move takes about 2000/30 ms, well under the 2 s.
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    // A ponder search ended by stop answers at once.
    e.send("go ponder wtime 2000 btime 2000");
    e.collect_for(Duration::from_millis(300));
    e.send("stop");
    e.until("bestmove", |l| l.starts_with("bestmove"));
    assert!(e.quit());
}

#[test]
fn searchmoves_restrict_the_choice() {
    let mut e = mcts_engine("tiny_mav.onnx");
    e.send("setoption name MultiPV value 3");
    e.send("position startpos");
    let lines = e.go("nodes 200 searchmoves a2a3 h2h4");
    let mv = bestmove(&lines).0.unwrap();
    assert!(mv == "a2a3" || mv == "h2h4", "{mv}");
    for l in pv_lines(&lines) {
        let first = field(&l, "pv").unwrap();
        assert!(first == "a2a3" || first == "h2h4", "{l}");
    }
    assert!(e.quit());
}

#[test]
fn a_clock_is_respected_and_the_tree_is_reused() {
    let mut e = mcts_engine("tiny_mav.onnx");
    // As GUIs do: `isready` after `ucinewgame` waits while MCTS takes its `Hash` memory.
    e.send("ucinewgame");
    e.ready();
    e.send("position startpos");
    let t = Instant::now();
    let lines = e.go("wtime 3000 btime 3000 winc 0 binc 0");
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );
    let first = pv_lines(&lines).pop().unwrap();
    let pv: Vec<String> = first
        .split(" pv ")
        .nth(1)
        .unwrap()
        .split(' ')
        .map(String::from)
        .collect();
    assert!(pv.len() >= 2, "{first}");
    // Play the expected line: the next search starts from the kept subtree, so its node count
    // (root visits) exceeds the playouts of a fresh search with the same limit.
    e.send(&format!("position startpos moves {} {}", pv[0], pv[1]));
    let lines = e.go("nodes 1");
    let last = pv_lines(&lines).pop().unwrap();
    assert!(num(&last, "nodes") > 1, "tree reuse keeps visits: {last}");
    // After ucinewgame the same search starts from scratch.
    e.send("ucinewgame");
    e.send(&format!("position startpos moves {} {}", pv[0], pv[1]));
    let lines = e.go("nodes 1");
    let last = pv_lines(&lines).pop().unwrap();
    assert_eq!(num(&last, "nodes"), 1, "{last}");
    assert!(e.quit());
}

#[test]
fn behavioural_cloning_is_refused_with_a_message() {
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!(
        "setoption name WeightsFile value {}",
        test_model("tiny_bc.onnx").display()
    ));
    e.send("setoption name SearchMode value mcts");
    e.ready();
    e.send("position startpos");
    let lines = e.go("nodes 100");
    assert!(
        lines.iter().any(|l| l.starts_with("info string")
            && l.contains("mcts")
            && l.contains("behavioral_cloning")),
        "{lines:#?}"
    );
    assert!(legal(START, &bestmove(&lines).0.unwrap(), false));
    assert!(e.quit());
}

#[test]
fn bad_mcts_option_values_keep_the_previous_value() {
    let mut e = mcts_engine("tiny_mav.onnx");
    for bad in [
        "setoption name SearchMode value alphabeta",
        "setoption name CPuct value -3",
        "setoption name CPuct value abc",
        "setoption name MinibatchSize value -1",
        "setoption name MaxCollisionEvents value 0",
        "setoption name PolicyUniformMix value 2",
        "setoption name Hash value 0",
    ] {
        e.send(bad);
    }
    let lines = e.ready();
    assert!(
        lines.iter().filter(|l| l.contains("error")).count() >= 7,
        "{lines:#?}"
    );
    e.send("position startpos");
    let lines = e.go("nodes 50");
    assert!(
        field(&pv_lines(&lines).pop().unwrap(), "hashfull").is_some(),
        "still MCTS"
    );
    assert!(e.quit());
}

#[test]
fn quit_during_an_mcts_search_exits() {
    let mut e = mcts_engine("tiny_mav.onnx");
    e.send("position startpos");
    e.send("go infinite");
    e.collect_for(Duration::from_millis(300));
    assert!(e.quit(), "quit ends the process while searching");
}
