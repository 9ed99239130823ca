//! UCI protocol over pipes: handshake, options, positions and bad input (no network needed
//! except where a test says so).

mod uci_support;

use std::time::Duration;
use uci_support::*;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

#[test]
fn handshake_lists_every_option() {
    let mut e = Engine::start();
    let lines = e.handshake();
    assert!(lines[0].starts_with("id name Glimpse"), "{lines:#?}");
    assert!(lines[1].starts_with("id author "));
    for name in [
        "WeightsFile",
        "Backend",
        "Threads",
        "MultiPV",
        "UCI_ShowWDL",
        "UCI_Chess960",
        "Ponder",
        "Move Overhead",
        "Temperature",
        "TempDecayMoves",
        "Seed",
    ] {
        let head = format!("option name {name} type ");
        assert!(
            lines.iter().any(|l| l.starts_with(&head)),
            "missing {name}: {lines:#?}"
        );
    }
    assert_eq!(lines.last().map(String::as_str), Some("uciok"));
    e.ready();
    assert!(e.quit(), "engine did not exit on quit");
}

#[test]
fn positions_and_rejected_commands_keep_the_previous_position() {
    let mut e = Engine::start();
    e.handshake();
    assert_eq!(e.fen(), START);
    e.send("position startpos moves e2e4 e7e5 g1f3");
    let after = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2";
    assert_eq!(e.fen(), after);

    let bad = [
        "position startpos moves e2e4 e7e5 e1e3",
        "position startpos moves e2e4 e2e4",
        "position startpos moves e2e4 zz99",
        "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - zero 1",
        "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
        "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
        "position fen rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "position fen k7/8/8/8/8/8/8/KQ6 w - - 0 1 moves b1b8 a8a7",
        "position fen 4k3/8/8/8/8/8/8/4K2R b K - 0 1 extra",
        "position fen 4k3/4R3/8/8/8/8/8/4K3 w - - 0 1",
        "position",
        "position fen",
        "position startpos e2e4",
    ];
    for cmd in bad {
        e.send(cmd);
        let lines = e.until("an error", |l| l.starts_with("info string error"));
        assert!(lines.last().unwrap().contains("error"), "{cmd}: {lines:#?}");
        let fen = e.fen();
        // A position that the engine can accept (e.g. one with white in check while black is
        // to move) is refused by the game; either way the previous one must survive.
        assert_eq!(fen, after, "after {cmd:?}");
    }
    assert!(e.alive());
}

#[test]
fn garbage_is_reported_and_survived() {
    let mut e = Engine::start();
    e.handshake();
    let garbage: [&[u8]; 12] = [
        b"hello\n",
        b"\n",
        b"   \t  \n",
        b"UCI\n",
        b"\xff\xfe\xfd garbage \x00 bytes\n",
        b"debug maybe\n",
        b"setoption\n",
        b"setoption name\n",
        b"setoption name NoSuchOption value 3\n",
        b"setoption name Threads value lots\n",
        b"setoption name MultiPV value 0\n",
        b"setoption name Temperature value -1\n",
    ];
    for g in garbage {
        e.send_bytes(g);
    }
    e.send_bytes(&vec![b'x'; 100_000]);
    e.send("");
    e.send("setoption name Move Overhead value 99999");
    e.send("setoption name Backend value opencl");
    e.send("setoption name UCI_ShowWDL value maybe");
    e.send("setoption name WeightsFile value /no/such/file.onnx");
    e.send("register later");
    e.send("ucinewgame");
    let lines = e.ready();
    // Blank lines, `register` and `ucinewgame` are fine; everything else is an error. (A build
    // without an embedded net also reports that at isready; that one is not counted.)
    let errors = lines
        .iter()
        .filter(|l| l.starts_with("info string error") && !l.contains("'<embedded>'"))
        .count();
    assert_eq!(errors, 15, "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("NoSuchOption")));
    assert!(lines.iter().any(|l| l.contains("/no/such/file.onnx")));
    assert_eq!(e.fen(), START);
    assert!(e.quit());
}

#[test]
fn go_with_bad_values_still_answers() {
    // Without a loadable network the engine still answers `go` with a legal fallback move.
    let mut e = Engine::start();
    e.handshake();
    e.send("setoption name WeightsFile value /no/such/file.onnx");
    e.send("position startpos moves e2e4");
    let lines = e.go("wtime abc btime -5 movestogo x depth 2.5 nodes many movetime");
    let warnings = lines
        .iter()
        .filter(|l| l.starts_with("info string warning: go"))
        .count();
    assert_eq!(warnings, 5, "{lines:#?}");
    let (mv, _) = bestmove(&lines);
    let fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
    assert!(
        legal(fen, mv.as_deref().expect("a move"), false),
        "{lines:#?}"
    );
    assert!(e.alive());
}

#[test]
fn no_legal_moves_answers_none() {
    let mut e = Engine::start();
    e.handshake();
    // Checkmate (fool's mate) and stalemate.
    e.send("position startpos moves f2f3 e7e5 g2g4 d8h4");
    let lines = e.go("movetime 100");
    assert_eq!(bestmove(&lines), (None, None));
    assert_eq!(lines.last().unwrap(), "bestmove (none)");
    e.send("position fen k7/8/1Q6/8/8/8/8/7K b - - 0 1");
    e.send("go infinite");
    // Even without moves, `go infinite` prints bestmove only after stop.
    let early = e.collect_for(Duration::from_millis(300));
    assert!(
        !early.iter().any(|l| l.starts_with("bestmove")),
        "{early:#?}"
    );
    e.send("stop");
    let lines = e.until("bestmove", |l| l.starts_with("bestmove"));
    assert_eq!(lines.last().unwrap(), "bestmove (none)");
}

#[test]
fn corrupt_model_file_is_an_error_and_the_engine_lives() {
    let dir = std::env::temp_dir().join(format!("glimpse-uci-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("corrupt.onnx");
    std::fs::write(&bad, b"this is not an onnx model").unwrap();
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!(
        "setoption name WeightsFile value {}",
        bad.display()
    ));
    let lines = e.ready();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string error") && l.contains("corrupt.onnx")),
        "{lines:#?}"
    );
    let lines = e.go("movetime 50");
    assert!(bestmove(&lines).0.is_some());
    // Switching to a good model afterwards works.
    if tiny_av_path().is_file() {
        e.send(&format!(
            "setoption name WeightsFile value {}",
            tiny_av().display()
        ));
        let lines = e.ready();
        assert!(!lines.iter().any(|l| l.contains("error")), "{lines:#?}");
    }
    assert!(e.quit());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eof_ends_the_engine() {
    let mut e = Engine::start();
    e.handshake();
    e.send("position startpos moves e2e4");
    // Closing stdin is like quit.
    assert!(e.close_input(), "the engine exits at end of input");
}

#[test]
fn log_file_records_both_directions() {
    let path = std::env::temp_dir().join(format!("glimpse-uci-log-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!("setoption name LogFile value {}", path.display()));
    e.send("position startpos moves e2e4");
    e.send("bogus");
    e.ready();
    e.send("setoption name LogFile value");
    e.ready();
    assert!(e.quit());
    let log = std::fs::read_to_string(&path).expect("log file written");
    assert!(log.contains(">> position startpos moves e2e4\n"), "{log}");
    assert!(
        log.contains("<< info string error: unknown command 'bogus'"),
        "{log}"
    );
    assert!(log.contains("<< readyok\n"), "{log}");
    assert_eq!(
        log.matches("<< readyok").count(),
        1,
        "logging stopped: {log}"
    );
    let _ = std::fs::remove_file(&path);
}
