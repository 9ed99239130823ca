//! Unit tests for UCI parsing, formatting and options.

use super::options::{self, Options, Value};
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

#[test]
fn option_listing() {
    let o = Options::new(4);
    let lines = o.uci_lines();
    let has = |s: &str| lines.iter().any(|l| l == s);
    assert!(
        has("option name WeightsFile type string default <embedded>"),
        "{lines:#?}"
    );
    assert!(has(
        "option name Backend type combo default cpu var cpu var cuda var tensorrt"
    ));
    assert!(has("option name Threads type spin default 2 min 1 max 256"));
    assert!(has("option name MultiPV type spin default 1 min 1 max 256"));
    assert!(has("option name UCI_ShowWDL type check default false"));
    assert!(has("option name UCI_Chess960 type check default false"));
    assert!(has("option name Ponder type check default false"));
    assert!(has(
        "option name Move Overhead type spin default 30 min 0 max 5000"
    ));
    assert!(has("option name Temperature type string default 0"));
    assert!(has(
        "option name TempDecayMoves type spin default 0 min 0 max 1000"
    ));
    assert!(has(
        "option name Seed type spin default 0 min 0 max 2147483647"
    ));
    assert!(has("option name LogFile type string default <empty>"));
    // Stockfish's tablebase options, as Stockfish 15.1 lists them.
    assert!(has("option name SyzygyPath type string default <empty>"));
    assert!(has(
        "option name SyzygyProbeLimit type spin default 7 min 0 max 7"
    ));
    assert!(has("option name Syzygy50MoveRule type check default true"));
    let s = o.settings();
    assert_eq!((s.syzygy_probe_limit, s.syzygy_50_move_rule), (7, true));
    assert_eq!(lines.len(), o.declarations().len());
    assert_eq!(Options::new(1).settings().threads, 1);
}

#[test]
fn option_setting_and_validation() {
    let mut o = Options::new(2);
    assert!(
        o.set("multipv", Some("3")).is_ok(),
        "names are case-insensitive"
    );
    assert_eq!(o.settings().multipv, 3);
    assert!(o.set("MultiPV", Some("0")).is_err());
    assert!(o.set("MultiPV", Some("257")).is_err());
    assert!(o.set("MultiPV", Some("three")).is_err());
    assert!(o.set("MultiPV", None).is_err());
    assert_eq!(
        o.settings().multipv,
        3,
        "a rejected value keeps the old one"
    );

    assert!(o.set("Move Overhead", Some("250")).is_ok());
    assert_eq!(o.settings().move_overhead_ms, 250);
    assert!(o.set("move overhead", Some("-1")).is_err());

    assert!(o.set("UCI_ShowWDL", Some("TRUE")).is_ok());
    assert!(o.settings().show_wdl);
    assert!(o.set("UCI_ShowWDL", Some("yes")).is_err());

    assert!(o.set("Backend", Some("CUDA")).is_ok());
    assert_eq!(o.settings().backend, crate::model::Backend::Cuda);
    assert!(o.set("Backend", Some("opencl")).is_err());

    assert!(o.set("Temperature", Some("0.005")).is_ok());
    assert!((o.settings().temperature - 0.005).abs() < 1e-12);
    for bad in ["-0.1", "1.5", "nan", "inf", "warm"] {
        assert!(o.set("Temperature", Some(bad)).is_err(), "{bad}");
    }
    assert!((o.settings().temperature - 0.005).abs() < 1e-12);

    assert!(o.set("NoSuchOption", Some("1")).is_err(), "unknown option");
    assert!(o.set("SyzygyProbeLimit", Some("8")).is_err());
    assert!(o.set("syzygyprobelimit", Some("5")).is_ok());
    assert_eq!(o.settings().syzygy_probe_limit, 5);
    assert!(o.set("Hash", Some("16")).is_ok());
    assert_eq!(o.settings().hash_mb, 16);
    assert!(o.set("Hash", Some("0")).is_err());

    // MCTS options reach the typed settings.
    assert_eq!(o.settings().search_mode, "searchless");
    assert!(o.set("searchmode", Some("MCTS")).is_ok() || o.set("SearchMode", Some("mcts")).is_ok());
    assert_eq!(o.settings().search_mode, "mcts");
    assert!(o.set("SearchMode", Some("alphabeta")).is_err());
    assert_eq!(o.settings().search_mode, "mcts");
    assert!(o.set("CPuct", Some("2.5")).is_ok());
    assert!(o.set("MinibatchSize", Some("32")).is_ok());
    assert!(o.set("PolicyTopK", Some("0")).is_ok());
    let p = o.settings().mcts_params;
    assert!((p.c_puct - 2.5).abs() < 1e-6);
    assert_eq!((p.minibatch, p.policy_top_k), (32, 0));
    assert!(o.set("PolicyUniformMix", Some("1.5")).is_err());
    assert!(o.settings().mop_up);
    assert!(o.set("MopUp", Some("false")).is_ok());
    assert!(!o.settings().mop_up);
    assert_eq!(o.settings().mcts_params.draw_score, 0.0);
    assert!(o.set("DrawScore", Some("-20")).is_ok());
    assert!((o.settings().mcts_params.draw_score + 0.1).abs() < 1e-6);
    assert!(o.set("DrawScore", Some("101")).is_err());
    assert!((o.settings().mcts_params.draw_score + 0.1).abs() < 1e-6);
    let changed = o.set("Seed", Some("42")).unwrap();
    assert_eq!(changed.name, options::SEED.name);
    assert!(changed.differs);
    assert!(!o.set("Seed", Some("42")).unwrap().differs);
    assert_eq!(o.get("Seed"), Some(&Value::Int(42)));
}

#[test]
fn weights_and_log_settings() {
    let mut o = Options::new(2);
    assert_eq!(o.settings().weights_file, None);
    o.set("WeightsFile", Some("/tmp/x.onnx")).unwrap();
    assert_eq!(o.settings().weights_file.as_deref(), Some("/tmp/x.onnx"));
    for embedded in ["<embedded>", "<default>", "", "<empty>"] {
        o.set("WeightsFile", Some(embedded)).unwrap();
        assert_eq!(o.settings().weights_file, None, "{embedded}");
    }
    assert_eq!(o.settings().log_file, None);
    o.set("LogFile", Some("uci.log")).unwrap();
    assert_eq!(o.settings().log_file.as_deref(), Some("uci.log"));
}

#[test]
fn every_typed_key_matches_its_declaration() {
    use crate::uci::options::*;
    let o = Options::new(4);
    // A key of the wrong type would read as the fallback; each declared default must come back.
    let check = |name: &str, ok: bool| assert!(ok, "key {name} does not match its declaration");
    for k in [
        SHOW_WDL,
        CHESS960,
        PONDER,
        MOP_UP,
        POLICY_HEAD,
        SYZYGY_50_MOVE_RULE,
    ] {
        check(k.name, matches!(o.get(k.name), Some(Value::Bool(_))));
    }
    for k in [
        THREADS,
        MULTI_PV,
        MOVE_OVERHEAD,
        TEMP_DECAY_MOVES,
        SEED,
        HASH,
        POLICY_TOP_K,
        MINIBATCH_SIZE,
        DRAW_SCORE,
        SYZYGY_PROBE_LIMIT,
        SUCCESSOR_VALUE,
    ] {
        check(k.name, matches!(o.get(k.name), Some(Value::Int(_))));
    }
    for k in [
        TEMPERATURE,
        CPUCT,
        CPUCT_BASE,
        FPU_REDUCTION,
        Q_INIT_VISITS,
        POLICY_TEMPERATURE,
        POLICY_UNIFORM_MIX,
        POLICY_SOFTMAX_TEMP,
    ] {
        check(k.name, matches!(o.get(k.name), Some(Value::Float(_))));
    }
    for k in [
        WEIGHTS_FILE,
        BACKEND,
        LOG_FILE,
        SEARCH_MODE,
        MOVE_CHOICE,
        SYZYGY_PATH,
    ] {
        check(k.name, matches!(o.get(k.name), Some(Value::Text(_))));
    }
    assert_eq!(
        o.declarations().len(),
        31,
        "every declared option has a key above"
    );
    // MCTS defaults come from one place.
    assert_eq!(
        o.settings().mcts_params,
        crate::search::mcts::MctsParams::default()
    );
    // An undeclared key reads as the fallback instead of panicking.
    assert_eq!(o.value(Key::<i64>::new("NoSuchOption")), 0);
    assert!(
        !o.value(Key::<bool>::new("Threads")),
        "type mismatch → fallback"
    );
}

#[test]
fn bad_option_values_are_typed_errors_not_panics() {
    use crate::uci::options::*;
    let mut o = Options::new(2);
    let before = o.settings();
    let cases: [(&str, Option<&str>); 10] = [
        ("Threads", Some("many")),
        ("Threads", Some("0")),
        ("Threads", None),
        ("UCI_ShowWDL", Some("yes")),
        ("Backend", Some("gpu")),
        ("CPuct", Some("nan")),
        ("CPuct", Some("-1")),
        ("Temperature", Some("")),
        ("LogFile", Some("a\u{7}b")),
        ("NoSuchOption", Some("1")),
    ];
    for (name, value) in cases {
        let e = o.set(name, value).unwrap_err();
        assert!(!e.to_string().is_empty());
    }
    assert_eq!(o.settings(), before, "rejected values change nothing");
    assert!(matches!(
        o.set("Threads", Some("0")),
        Err(OptionError::IntOutOfRange { value: 0, .. })
    ));
    assert_eq!(
        o.set("Backend", Some("gpu")).unwrap_err().to_string(),
        "option Backend: value must be one of cpu, cuda, tensorrt, got 'gpu'"
    );
    assert!(matches!(
        o.set("Nope", None),
        Err(OptionError::Unknown(n)) if n == "Nope"
    ));
}
