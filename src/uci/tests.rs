//! Unit tests for UCI parsing and formatting (the options' tests are in `options/tests.rs`).

use super::output::{self, BestMove, Info, Score, Wdl};
use super::protocol::{parse, Command, GoParams, StartPosition};

fn cmd(line: &str) -> Command {
    parse(line).expect("parses").expect("not blank").command
}

fn warnings(line: &str) -> Vec<String> {
    parse(line).expect("parses").expect("not blank").warnings
}

#[test]
fn simple_commands() {
    assert_eq!(cmd("uci"), Command::Uci);
    assert_eq!(cmd("isready"), Command::IsReady);
    assert_eq!(cmd("ucinewgame"), Command::UciNewGame);
    assert_eq!(cmd("stop"), Command::Stop);
    assert_eq!(cmd("ponderhit"), Command::PonderHit);
    assert_eq!(cmd("quit"), Command::Quit);
    assert_eq!(cmd("d"), Command::Display);
    assert_eq!(cmd("eval"), Command::Eval);
    assert_eq!(cmd("  \t isready \r"), Command::IsReady);
    assert_eq!(cmd("debug on"), Command::Debug(true));
    assert_eq!(cmd("debug off"), Command::Debug(false));
    assert_eq!(cmd("register later"), Command::Register("later".into()));
    assert_eq!(
        cmd("register name Foo code 42"),
        Command::Register("name Foo code 42".into())
    );
}

#[test]
fn blank_and_unknown() {
    assert_eq!(parse(""), Ok(None));
    assert_eq!(parse("   \t "), Ok(None));
    let e = parse("hello world").unwrap_err();
    assert!(e.0.contains("unknown command 'hello world'"), "{}", e.0);
    assert!(parse("UCI").is_err(), "commands are case-sensitive");
    assert!(parse("debug").is_err());
    assert!(parse("debug maybe").is_err());
    // UCI: skip unknown leading tokens and parse the rest, with a warning.
    let p = parse("joho debug on").unwrap().unwrap();
    assert_eq!(p.command, Command::Debug(true));
    assert_eq!(p.warnings.len(), 1);
    assert!(p.warnings[0].contains("joho"));
    assert_eq!(warnings("isready now").len(), 1);
}

#[test]
fn long_garbage_is_clipped() {
    let junk = "x".repeat(10_000);
    let e = parse(&junk).unwrap_err();
    assert!(
        e.0.len() < 200,
        "error message is clipped: {} bytes",
        e.0.len()
    );
}

#[test]
fn setoption_names_and_values_with_spaces() {
    assert_eq!(
        cmd("setoption name Move Overhead value 100"),
        Command::SetOption {
            name: "Move Overhead".into(),
            value: Some("100".into())
        }
    );
    assert_eq!(
        cmd("setoption name WeightsFile value /tmp/my nets/a.onnx"),
        Command::SetOption {
            name: "WeightsFile".into(),
            value: Some("/tmp/my nets/a.onnx".into())
        }
    );
    assert_eq!(
        cmd("setoption name Clear Hash"),
        Command::SetOption {
            name: "Clear Hash".into(),
            value: None
        }
    );
    assert_eq!(
        cmd("setoption name LogFile value"),
        Command::SetOption {
            name: "LogFile".into(),
            value: Some(String::new())
        }
    );
    assert!(parse("setoption").is_err());
    assert!(parse("setoption Threads value 2").is_err());
    assert!(parse("setoption name").is_err());
    assert!(parse("setoption name value 3").is_err());
}

#[test]
fn position_commands() {
    assert_eq!(
        cmd("position startpos"),
        Command::Position {
            start: StartPosition::StartPos,
            moves: vec![]
        }
    );
    assert_eq!(
        cmd("position startpos moves e2e4 e7e5"),
        Command::Position {
            start: StartPosition::StartPos,
            moves: vec!["e2e4".into(), "e7e5".into()]
        }
    );
    assert_eq!(
        cmd("position fen 8/8/8/8/8/8/8/K6k w - - 0 1 moves a1a2"),
        Command::Position {
            start: StartPosition::Fen("8/8/8/8/8/8/8/K6k w - - 0 1".into()),
            moves: vec!["a1a2".into()]
        }
    );
    // Four-field FENs are passed on; the game decides.
    assert_eq!(
        cmd("position fen 8/8/8/8/8/8/8/K6k b -  -"),
        Command::Position {
            start: StartPosition::Fen("8/8/8/8/8/8/8/K6k b - -".into()),
            moves: vec![]
        }
    );
    assert_eq!(
        cmd("position startpos moves"),
        Command::Position {
            start: StartPosition::StartPos,
            moves: vec![]
        }
    );
    assert!(parse("position").is_err());
    assert!(parse("position fen").is_err());
    assert!(parse("position fen moves e2e4").is_err());
    assert!(parse("position somewhere").is_err());
    assert!(parse("position startpos e2e4").is_err());
    assert!(parse("position moves e2e4").is_err());
}

#[test]
fn go_full() {
    let g = cmd("go wtime 300000 btime 299000 winc 2000 binc 1000 movestogo 40 depth 7 nodes 5000 mate 3 movetime 1500");
    assert_eq!(
        g,
        Command::Go(GoParams {
            wtime: Some(300_000),
            btime: Some(299_000),
            winc: Some(2000),
            binc: Some(1000),
            movestogo: Some(40),
            depth: Some(7),
            nodes: Some(5000),
            mate: Some(3),
            movetime: Some(1500),
            ..GoParams::default()
        })
    );
    assert_eq!(cmd("go"), Command::Go(GoParams::default()));
    assert_eq!(
        cmd("go infinite"),
        Command::Go(GoParams {
            infinite: true,
            ..GoParams::default()
        })
    );
    assert_eq!(
        cmd("go ponder wtime 1000 btime 1000"),
        Command::Go(GoParams {
            ponder: true,
            wtime: Some(1000),
            btime: Some(1000),
            ..GoParams::default()
        })
    );
    assert_eq!(
        cmd("go searchmoves e2e4 d2d4 infinite"),
        Command::Go(GoParams {
            searchmoves: vec!["e2e4".into(), "d2d4".into()],
            infinite: true,
            ..GoParams::default()
        })
    );
    // Negative clock values some GUIs send are kept.
    assert_eq!(
        cmd("go wtime -20 btime 5"),
        Command::Go(GoParams {
            wtime: Some(-20),
            btime: Some(5),
            ..GoParams::default()
        })
    );
}

#[test]
fn go_limits_that_cannot_be_read_count_as_zero_with_warnings() {
    // A limit (a clock, movetime, depth, nodes, mate) that cannot be read counts as 0, so the `go`
    // still ends (as Stockfish answers `go movetime -5` at once).
    let p = parse("go wtime abc btime 1000").unwrap().unwrap();
    assert_eq!(
        p.command,
        Command::Go(GoParams {
            wtime: Some(0),
            btime: Some(1000),
            ..GoParams::default()
        })
    );
    assert_eq!(p.warnings.len(), 1);
    assert!(p.warnings[0].contains("wtime abc"), "{:?}", p.warnings);
    assert!(
        p.warnings[0].contains("counts as wtime 0"),
        "{:?}",
        p.warnings
    );

    let p = parse("go depth -3 movetime 1e3 nodes").unwrap().unwrap();
    assert_eq!(
        p.command,
        Command::Go(GoParams {
            depth: Some(0),
            movetime: Some(0),
            nodes: Some(0),
            ..GoParams::default()
        })
    );
    assert_eq!(p.warnings.len(), 3, "{:?}", p.warnings);

    for (text, expect) in [
        (
            "go movetime -5",
            GoParams {
                movetime: Some(0),
                ..GoParams::default()
            },
        ),
        (
            "go movetime",
            GoParams {
                movetime: Some(0),
                ..GoParams::default()
            },
        ),
        (
            "go mate -2",
            GoParams {
                mate: Some(0),
                ..GoParams::default()
            },
        ),
        (
            "go nodes -1",
            GoParams {
                nodes: Some(0),
                ..GoParams::default()
            },
        ),
    ] {
        let p = parse(text).unwrap().unwrap();
        assert_eq!(p.command, Command::Go(expect), "{text}");
        assert_eq!(p.warnings.len(), 1, "{text}");
    }

    // A keyword where a value should be: the value is missing (counts as 0), the keyword counts.
    let p = parse("go movetime infinite").unwrap().unwrap();
    assert_eq!(
        p.command,
        Command::Go(GoParams {
            movetime: Some(0),
            infinite: true,
            ..GoParams::default()
        })
    );
    assert_eq!(p.warnings.len(), 1);

    let p = parse("go fast please").unwrap().unwrap();
    assert_eq!(p.command, Command::Go(GoParams::default()));
    assert_eq!(p.warnings.len(), 2);

    // Not a limit by itself: an unreadable `movestogo` or increment is dropped.
    let p = parse("go movestogo 99999999999 winc x").unwrap().unwrap();
    assert_eq!(p.command, Command::Go(GoParams::default()));
    assert_eq!(p.warnings.len(), 2);
    assert!(
        p.warnings.iter().all(|w| w.ends_with("ignored")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn info_formatting() {
    let mut info = Info {
        depth: 1,
        seldepth: 1,
        multipv: 2,
        score: Score::Cp(-35),
        wdl: None,
        nodes: 20,
        nps: 1000,
        time_ms: 20,
        hashfull: None,
        tbhits: None,
        pv: vec!["e2e4".into()],
    };
    assert_eq!(
        output::format_info(&info),
        "info depth 1 seldepth 1 multipv 2 score cp -35 nodes 20 nps 1000 time 20 pv e2e4"
    );
    info.score = Score::Mate(1);
    info.wdl = Some(Wdl {
        win: 1000,
        draw: 0,
        loss: 0,
    });
    info.pv.push("e7e5".into());
    assert_eq!(
        output::format_info(&info),
        "info depth 1 seldepth 1 multipv 2 score mate 1 wdl 1000 0 0 nodes 20 nps 1000 time 20 pv e2e4 e7e5"
    );
    info.hashfull = Some(3);
    info.tbhits = Some(17);
    assert_eq!(
        output::format_info(&info),
        "info depth 1 seldepth 1 multipv 2 score mate 1 wdl 1000 0 0 nodes 20 nps 1000 hashfull 3 tbhits 17 time 20 pv e2e4 e7e5"
    );
}

#[test]
fn bestmove_formatting() {
    assert_eq!(
        output::format_bestmove(&BestMove {
            mv: Some("e2e4".into()),
            ponder: None
        }),
        "bestmove e2e4"
    );
    assert_eq!(
        output::format_bestmove(&BestMove {
            mv: Some("e2e4".into()),
            ponder: Some("e7e5".into())
        }),
        "bestmove e2e4 ponder e7e5"
    );
    assert_eq!(
        output::format_bestmove(&BestMove {
            mv: None,
            ponder: None
        }),
        "bestmove (none)"
    );
}

#[test]
fn info_string_is_one_protocol_line_per_line() {
    assert_eq!(
        output::format_info_string("hello"),
        vec!["info string hello"]
    );
    assert_eq!(
        output::format_info_string("a\nb\r\n"),
        vec!["info string a", "info string b"]
    );
    assert_eq!(
        output::format_info_string("tab\there\u{7}"),
        vec!["info string tab here"]
    );
    assert_eq!(output::format_info_string(""), vec!["info string"]);
}

#[test]
fn wdl_from_a_wdl_head() {
    let w = Wdl::from_probs([0.5, 0.3, 0.2]);
    assert_eq!((w.win, w.draw, w.loss), (500, 300, 200));
    // Renormalised, and rounding lands in the draws: always 1000 in all.
    let w = Wdl::from_probs([1.0, 1.0, 1.0]);
    assert_eq!((w.win, w.draw, w.loss), (333, 334, 333));
    let w = Wdl::from_probs([f32::NAN, 0.0, 0.0]);
    assert_eq!((w.win, w.draw, w.loss), (0, 1000, 0));
}

#[test]
fn wdl_sums_to_1000() {
    for p in [0.0, 0.0004, 0.3333, 0.5, 0.9996, 1.0, -1.0, 2.0, f64::NAN] {
        let w = Wdl::from_win_prob(p);
        assert_eq!(w.win + w.draw + w.loss, 1000, "p={p}");
    }
    assert_eq!(
        Wdl::from_win_prob(0.75),
        Wdl {
            win: 750,
            draw: 0,
            loss: 250
        }
    );
}
