//! Fault injection over pipes: a broken net swapped in between moves and during `go infinite`,
//! `stop`/`ponderhit`/`ucinewgame`/`quit` at random moments of an MCTS search, stdout closed by
//! the GUI, a 1 MB input line, a `position` with 1,000 moves, and absurd clocks. Each test says
//! what the engine must then do. Needs the tiny models of `make test-models`.

mod uci_support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use uci_support::*;

fn test_model(name: &str) -> PathBuf {
    let p = tiny_av_path().with_file_name(name);
    assert!(
        p.is_file(),
        "{} is missing: run `make test-models`",
        p.display()
    );
    p
}

/// A scratch directory for this test (removed on drop).
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("glimpse-faults-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    /// The first half of `model`'s bytes, as a file (a download cut short).
    fn truncated(&self, model: &Path) -> PathBuf {
        let bytes = std::fs::read(model).expect("read model");
        let p = self.0.join("truncated.onnx");
        std::fs::write(&p, &bytes[..bytes.len() / 2]).expect("write");
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An MCTS engine on tiny_mav.onnx.
/// The fewest root visits a `go nodes 30` search can end with: MCTS stops early once the most
/// visited root move leads the next by more than the playouts left, which takes at least 15 of the
/// 30 (a fallback move reports none).
const EARLY_STOP_FLOOR: i64 = 15;

fn mcts_engine() -> Engine {
    let mut e = Engine::start();
    e.handshake();
    e.send(&format!(
        "setoption name WeightsFile value {}",
        test_model("tiny_mav.onnx").display()
    ));
    e.send("setoption name SearchMode value mcts");
    let lines = e.ready();
    assert!(!lines.iter().any(|l| l.contains("error")), "{lines:#?}");
    e
}

/// The `Model: …` part of the `d` report.
fn model_line(e: &mut Engine) -> String {
    e.send("d");
    let lines = e.until("d's model line", |l| l.starts_with("info string Model: "));
    lines.last().expect("a line").clone()
}

/// The highest `nodes` of the info lines (MCTS playouts; 0 without info lines).
fn max_nodes(lines: &[String]) -> i64 {
    lines
        .iter()
        .filter_map(|l| field(l, "nodes").and_then(|n| n.parse().ok()))
        .max()
        .unwrap_or(0)
}

/// `go` answered with exactly one legal `bestmove` in `fen`.
fn assert_one_legal_bestmove(lines: &[String], fen: &str) {
    let n = lines.iter().filter(|l| l.starts_with("bestmove ")).count();
    assert_eq!(n, 1, "{lines:#?}");
    let mv = bestmove(lines).0.expect("a move");
    assert!(legal(fen, &mv, false), "{mv} is illegal in {fen}");
}

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
const AFTER_E4: &str = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";

#[test]
fn broken_nets_between_moves_keep_the_old_net_playing() {
    let scratch = Scratch::new("between");
    let mut e = mcts_engine();
    let good = model_line(&mut e);
    assert!(good.contains("tiny_mav"), "{good}");
    e.send("position startpos");
    let first = e.go("nodes 30");
    assert_one_legal_bestmove(&first, START);
    let truncated = scratch.truncated(&test_model("tiny_mav.onnx"));
    let wrong_kind = test_model("tiny_mav_reference.json");
    for bad in [&truncated, &wrong_kind] {
        e.send(&format!(
            "setoption name WeightsFile value {}",
            bad.display()
        ));
        e.send("position startpos moves e2e4");
        let lines = e.go("nodes 30");
        let name = bad.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("info string error") && l.contains(&name)),
            "no error naming {name}: {lines:#?}"
        );
        assert_one_legal_bestmove(&lines, AFTER_E4);
        // The old net searched: a real tree, not a fallback move.
        assert!(max_nodes(&lines) >= EARLY_STOP_FLOOR, "{lines:#?}");
        assert_eq!(model_line(&mut e), good, "the model changed after {name}");
    }
    // A good net afterwards is taken.
    e.send(&format!(
        "setoption name WeightsFile value {}",
        test_model("tiny_av.onnx").display()
    ));
    let lines = e.ready();
    assert!(!lines.iter().any(|l| l.contains("error")), "{lines:#?}");
    assert!(model_line(&mut e).contains("tiny_av"));
    assert!(e.quit());
}

#[test]
fn broken_net_during_go_infinite_keeps_the_search_and_the_old_net() {
    let scratch = Scratch::new("infinite");
    let mut e = mcts_engine();
    let good = model_line(&mut e);
    e.send("position startpos");
    e.send("go infinite");
    e.collect_for(Duration::from_millis(200));
    let truncated = scratch.truncated(&test_model("tiny_mav.onnx"));
    e.send(&format!(
        "setoption name WeightsFile value {}",
        truncated.display()
    ));
    // isready during the search is answered at once and leaves the network alone.
    let ready = e.ready();
    assert!(
        !ready.iter().any(|l| l.starts_with("bestmove")),
        "{ready:#?}"
    );
    e.collect_for(Duration::from_millis(100));
    e.send("stop");
    let stopped = e.until("bestmove", |l| l.starts_with("bestmove "));
    assert_one_legal_bestmove(&stopped, START);
    // Once the search lets go of the net, the background loader tries the new file and says why it
    // cannot (that line may come just before or after the stopped search's bestmove); the next
    // search plays on with the old net.
    e.send("position startpos moves e2e4");
    let lines = e.go("nodes 30");
    assert!(
        stopped
            .iter()
            .chain(&lines)
            .any(|l| l.starts_with("info string error") && l.contains("truncated.onnx")),
        "{stopped:#?} {lines:#?}"
    );
    assert_one_legal_bestmove(&lines, AFTER_E4);
    assert!(max_nodes(&lines) >= EARLY_STOP_FLOOR, "{lines:#?}");
    assert_eq!(model_line(&mut e), good);
    assert!(e.quit());
}

/// A small deterministic generator (SplitMix64) for the random moments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn stop_ponderhit_and_ucinewgame_at_random_moments_of_mcts() {
    let mut rng = Rng(0x5eed_0016);
    let mut e = mcts_engine();
    let mut moves: Vec<String> = Vec::new();
    for round in 0..24 {
        let mut game = glimpse::game::Game::startpos();
        for m in &moves {
            game.push_uci(m).expect("legal");
        }
        if game.legal_moves().is_empty() || moves.len() > 40 {
            moves.clear();
            game = glimpse::game::Game::startpos();
            e.send("ucinewgame");
        }
        let fen = game.fen();
        e.send(format!("position startpos moves {}", moves.join(" ")).trim_end());
        let ponder = rng.below(2) == 0;
        e.send(if ponder {
            "go ponder wtime 2000 btime 2000 winc 10 binc 10"
        } else {
            "go infinite"
        });
        std::thread::sleep(Duration::from_millis(rng.below(60)));
        let mut new_game = false;
        match rng.below(4) {
            0 if ponder => e.send("ponderhit"),
            1 => {
                // ucinewgame during a search (a GUI that then stops it): the search goes on until
                // the stop and answers for the old position; the new game starts empty.
                e.send("ucinewgame");
                e.send("stop");
                new_game = true;
            }
            _ => e.send("stop"),
        }
        if rng.below(3) == 0 {
            e.send("stop"); // a second stop is harmless
        }
        let lines = e.until("bestmove", |l| l.starts_with("bestmove "));
        assert_one_legal_bestmove(&lines, &fen);
        // Nothing more for this go: no second bestmove.
        let ready = e.ready();
        assert!(
            !ready.iter().any(|l| l.starts_with("bestmove")),
            "round {round}: a second bestmove {ready:#?}"
        );
        if new_game {
            moves.clear();
        } else {
            moves.push(bestmove(&lines).0.expect("a move"));
        }
    }
    assert!(e.alive());
    assert!(e.quit());
}

#[test]
fn quit_at_random_moments_of_mcts_exits() {
    let mut rng = Rng(0x0916);
    for _ in 0..4 {
        let mut e = mcts_engine();
        e.send("position startpos moves e2e4 e7e5");
        e.send(if rng.below(2) == 0 {
            "go infinite"
        } else {
            "go ponder wtime 1000 btime 1000"
        });
        std::thread::sleep(Duration::from_millis(rng.below(80)));
        let t = Instant::now();
        assert!(e.quit(), "quit ends the process while searching");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }
}

/// Starts the engine with the reading end of its stdout closed (the GUI went away) and stderr captured;
/// `input` is written to stdin, then stdin is closed. Returns the exit status and stderr.
fn run_with_stdout_closed(input: &str) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_glimpse"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start glimpse");
    drop(child.stdout.take()); // the reading end is gone: every write fails with EPIPE
    let mut stdin = child.stdin.take().expect("stdin");
    // The engine may exit before all input is written: a broken pipe here is fine.
    let _ = stdin.write_all(input.as_bytes());
    let _ = stdin.flush();
    // The GUI closed its reading end but still talks (`quit` at the end): stdin stays open until
    // the engine has exited; otherwise stdin closes now (end of input).
    let keep_open = input.ends_with("quit\n").then_some(stdin);
    let mut stderr = child.stderr.take().expect("stderr");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the engine did not exit after its stdout was closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(keep_open);
    let mut err = String::new();
    let _ = stderr.read_to_string(&mut err);
    (status, err)
}

#[test]
fn closed_stdout_ends_the_engine_without_a_panic() {
    let model = test_model("tiny_mav.onnx");
    // The GUI went away (stdin closes too), or closed stdout but still sends `quit`.
    for (mode, go) in [
        ("searchless", "go movetime 50\n"),
        ("mcts", "go infinite\n"),
        ("mcts", "go nodes 50\n"),
        ("searchless", "go movetime 50\nisready\nquit\n"),
        ("mcts", "go infinite\nisready\nquit\n"),
    ] {
        let input = format!(
            "uci\nsetoption name WeightsFile value {}\nsetoption name SearchMode value {mode}\n\
             isready\nposition startpos\n{go}",
            model.display()
        );
        let (status, err) = run_with_stdout_closed(&input);
        assert!(!err.contains("panicked"), "{mode} {go}: {err}");
        assert!(!err.contains("RUST_BACKTRACE"), "{mode} {go}: {err}");
        // Killed by SIGPIPE or an exit code are both clean ends; a panic exits with 101.
        assert_ne!(status.code(), Some(101), "{mode} {go}: {err}");
    }
}

#[test]
fn a_one_megabyte_line_is_refused_and_the_engine_goes_on() {
    let mut e = Engine::with_tiny_model();
    let mut line = String::from("position startpos moves");
    while line.len() < 1 << 20 {
        line.push_str(" e2e4 e7e5");
    }
    e.send(&line);
    let mut garbage = vec![b'x'; 1 << 20];
    garbage.push(b'\n');
    e.send_bytes(&garbage);
    let lines = e.ready();
    assert!(
        lines.iter().any(|l| l.starts_with("info string error")),
        "{lines:#?}"
    );
    // The refused position left the start position in place, and play goes on.
    assert_eq!(e.fen(), START);
    let lines = e.go("movetime 50");
    assert_one_legal_bestmove(&lines, START);
    assert!(e.quit());
}

#[test]
fn a_position_with_a_thousand_moves_is_played_from() {
    // Knights out and back 250 times: 1,000 legal plies (a long repetition, as a GUI may send).
    let cycle = ["g1f3", "g8f6", "f3g1", "f6g8"];
    let moves: Vec<&str> = cycle.iter().cycle().take(1000).copied().collect();
    let mut game = glimpse::game::Game::startpos();
    for m in &moves {
        game.push_uci(m).expect("legal");
    }
    for mode in ["searchless", "mcts"] {
        let mut e = Engine::start();
        e.handshake();
        e.send(&format!(
            "setoption name WeightsFile value {}",
            test_model("tiny_mav.onnx").display()
        ));
        e.send(&format!("setoption name SearchMode value {mode}"));
        e.ready();
        let t = Instant::now();
        e.send(&format!("position startpos moves {}", moves.join(" ")));
        assert_eq!(e.fen(), game.fen());
        let lines = e.go("nodes 20");
        assert_one_legal_bestmove(&lines, &game.fen());
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{mode}: {:?}",
            t.elapsed()
        );
        assert!(e.quit());
    }
}

#[test]
fn absurd_clocks_still_give_a_legal_move_in_time() {
    for mode in ["searchless", "mcts"] {
        let mut e = Engine::start();
        e.handshake();
        e.send(&format!(
            "setoption name WeightsFile value {}",
            test_model("tiny_mav.onnx").display()
        ));
        e.send(&format!("setoption name SearchMode value {mode}"));
        e.ready();
        e.send("position startpos");
        // No time, or less than none: a move at once.
        for go in [
            "wtime 0 btime 0",
            "wtime 0 btime 0 winc 0 binc 0 movestogo 0",
            "wtime -5000 btime -5000",
            "wtime -9223372036854775808 btime 1000 winc -100",
            "movetime 0",
            "wtime 1 btime 1 movetime 0",
        ] {
            let t = Instant::now();
            let lines = e.go(go);
            assert_one_legal_bestmove(&lines, START);
            assert!(
                t.elapsed() < Duration::from_secs(3),
                "{mode} go {go}: {:?}",
                t.elapsed()
            );
        }
        // Out-of-range numbers (2^63 and more) are dropped with a warning; the engine answers.
        for go in [
            "wtime 9223372036854775808 btime 9223372036854775808",
            "movetime 99999999999999999999999",
        ] {
            let lines = e.go(&format!("{go} nodes 10"));
            let number = go.split_whitespace().nth(1).unwrap();
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with("info string warning") && l.contains(number)),
                "{mode} go {go}: {lines:#?}"
            );
            assert_one_legal_bestmove(&lines, START);
        }
        // 2^63 − 1 ms on the clock with an increment of as much: a normal, bounded move.
        let t = Instant::now();
        let lines = e.go("wtime 9223372036854775807 btime 9223372036854775807 \
             winc 9223372036854775807 binc 9223372036854775807 nodes 30");
        assert_one_legal_bestmove(&lines, START);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{mode}: {:?}",
            t.elapsed()
        );
        assert!(e.alive());
        assert!(e.quit());
    }
}
