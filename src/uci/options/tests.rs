//! Unit tests for the option table, `setoption` validation and the typed keys.

use super::*;
use crate::model::Backend;
use crate::search::SearchMode;
use crate::uci::options;

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
fn the_table_defaults_are_the_settings_defaults() {
    for cores in [1, 2, 4, 64] {
        assert_eq!(
            Options::new(cores).settings(),
            crate::settings::Settings::defaults(cores),
            "{cores} cores"
        );
    }
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

    assert_eq!(o.settings().slow_mover, crate::time::DEFAULT_SLOW_MOVER);
    assert!(o.set("Slow Mover", Some("120")).is_ok());
    assert_eq!(o.settings().slow_mover, 120);
    assert!(o.set("Slow Mover", Some("5")).is_err());
    assert_eq!(
        o.settings().slow_mover,
        120,
        "a value out of range keeps the old one"
    );

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
    assert_eq!(o.settings().search_mode, SearchMode::Searchless);
    assert!(o.set("searchmode", Some("MCTS")).is_ok() || o.set("SearchMode", Some("mcts")).is_ok());
    assert_eq!(o.settings().search_mode, SearchMode::Mcts);
    assert!(o.set("SearchMode", Some("alphabeta")).is_err());
    assert_eq!(o.settings().search_mode, SearchMode::Mcts);
    assert!(o.set("CPuct", Some("2.5")).is_ok());
    assert!(o.set("MinibatchSize", Some("32")).is_ok());
    assert!(o.set("PolicyTopK", Some("0")).is_ok());
    let p = o.settings().mcts_params;
    assert!((p.c_puct - 2.5).abs() < 1e-6);
    assert_eq!((p.minibatch, p.policy_top_k), (32, 0));
    assert_eq!(p.max_collision_events, 917, "Lc0's default");
    assert!(o.set("MinibatchSize", Some("0")).is_ok());
    assert!(o.set("MaxCollisionEvents", Some("1")).is_ok());
    assert!(o.set("MaxCollisionEvents", Some("0")).is_err());
    let p = o.settings().mcts_params;
    assert_eq!((p.minibatch, p.max_collision_events), (0, 1));
    assert_eq!(p.for_backend(Backend::Cpu, 1).minibatch, 1);
    assert_eq!(p.for_backend(Backend::Cpu, 2).minibatch, 2);
    assert_eq!(p.for_backend(Backend::Cuda, 2).minibatch, 256);
    assert_eq!(p.for_backend(Backend::TensorRt, 1).minibatch, 256);
    assert!(!p.for_backend(Backend::Cpu, 2).pipelined);
    assert!(p.for_backend(Backend::Cuda, 1).pipelined);
    assert_eq!(
        crate::search::mcts::MctsParams { minibatch: 32, ..p }
            .for_backend(Backend::Cuda, 1)
            .minibatch,
        32,
        "a set minibatch stays"
    );
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
        SLOW_MOVER,
        TEMP_DECAY_MOVES,
        SEED,
        HASH,
        POLICY_TOP_K,
        MINIBATCH_SIZE,
        MAX_COLLISION_EVENTS,
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
        LEAF_WDL_WEIGHT,
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
        34,
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
