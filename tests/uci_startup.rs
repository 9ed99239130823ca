//! A user's first minutes over pipes: the version in `id name`, the start-up note naming the net,
//! and a `go` sent right after `uci` (no `isready`, as Arena and many scripts do) that plays the
//! network's move — the same move as after `isready` — never a fallback move.

mod uci_support;

use uci_support::*;

/// Sends `lines` without waiting for any answer, then reads to `bestmove`.
fn cold_go(e: &mut Engine, lines: &[&str]) -> Vec<String> {
    for l in lines {
        e.send(l);
    }
    e.until("bestmove", |l| l.starts_with("bestmove "))
}

fn assert_no_fallback(lines: &[String]) {
    assert!(
        !lines.iter().any(|l| l.contains("fallback")),
        "a fallback move was played: {lines:#?}"
    );
}

#[test]
fn id_name_carries_the_crate_version_and_the_net_is_named() {
    let mut e = Engine::start();
    let lines = e.handshake();
    assert_eq!(
        lines[0],
        format!("id name Glimpse {}", env!("CARGO_PKG_VERSION"))
    );
    e.ready();
    let note = e
        .transcript
        .iter()
        .find(|l| l.starts_with("info string Glimpse "))
        .cloned()
        .unwrap_or_else(|| panic!("no start-up note: {:#?}", e.transcript));
    assert!(
        note.contains(env!("CARGO_PKG_VERSION")),
        "start-up note without the version: {note}"
    );
    assert!(
        note.contains(glimpse::weights::embedded_name()) || note.contains("no embedded network"),
        "start-up note does not name the net: {note}"
    );
    assert!(e.quit());
}

#[test]
fn a_go_right_after_uci_plays_the_embedded_nets_move() {
    // 200 ms leaves the one-pass Q search (about 30 ms) several times its time on a loaded machine,
    // and its successor values (about 300 ms) never fit; 5 s always fits them. A movetime near the
    // successor values' estimate would let a busy moment choose the mode, and so the move.
    for movetime in [200, 5000] {
        let mut cold = Engine::start();
        let go = format!("go movetime {movetime}");
        let lines = cold_go(&mut cold, &["uci", "position startpos moves e2e4", &go]);
        assert_no_fallback(&lines);
        if lines.iter().any(|l| l.contains("no embedded network")) {
            return; // a build without the embedded net: nothing to compare
        }
        let (mv, _) = bestmove(&lines);

        let mut warm = Engine::start();
        warm.handshake();
        warm.ready();
        warm.send("position startpos moves e2e4");
        let after_isready = warm.go(&format!("movetime {movetime}"));
        assert_no_fallback(&after_isready);
        assert_eq!(
            mv,
            bestmove(&after_isready).0,
            "movetime {movetime}: the cold move differs from the move after isready"
        );
        assert!(cold.quit() && warm.quit());
    }
}

#[test]
fn a_go_right_after_a_weights_change_plays_the_new_nets_move() {
    let tiny = tiny_av();
    let set = format!("setoption name WeightsFile value {}", tiny.display());
    let fen = "position fen r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3";
    let mut cold = Engine::start();
    // The tiny AV net scores one row per move: a generous move time keeps a loaded machine from
    // cutting its pass short, which would make the two moves differ for another reason.
    let lines = cold_go(&mut cold, &["uci", &set, fen, "go movetime 3000"]);
    assert_no_fallback(&lines);
    let mut warm = Engine::with_tiny_model();
    warm.send(fen);
    let after_isready = warm.go("movetime 3000");
    assert_eq!(bestmove(&lines).0, bestmove(&after_isready).0);
    // The note of the load names the new file, not the embedded net.
    assert!(
        cold.transcript
            .iter()
            .any(|l| l.starts_with("info string loaded ") && l.contains("tiny_av.onnx")),
        "{:#?}",
        cold.transcript
    );
    assert!(cold.quit() && warm.quit());
}

#[test]
fn a_clock_too_short_to_wait_for_the_load_says_so() {
    // 20 ms on the clock cannot cover loading the net: the fallback move comes with a note that
    // names the reason, and it is still exactly one legal bestmove.
    let mut e = Engine::start();
    let lines = cold_go(
        &mut e,
        &["uci", "position startpos", "go wtime 20 btime 20"],
    );
    let (mv, _) = bestmove(&lines);
    let mv = mv.expect("a move");
    assert!(legal(
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        &mv,
        false
    ));
    if lines.iter().any(|l| l.contains("fallback")) {
        assert!(
            lines.iter().any(|l| l.contains("still loading")),
            "a fallback without the reason: {lines:#?}"
        );
    }
    e.ready();
    assert_eq!(
        e.transcript
            .iter()
            .filter(|l| l.starts_with("bestmove "))
            .count(),
        1
    );
    assert!(e.quit());
}
