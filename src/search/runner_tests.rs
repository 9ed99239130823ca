//! The search contract without a network: `start` returns at once, `go infinite` answers only
//! after `stop`, `wait` blocks until the answer, and the answer is printed exactly once.

use super::*;
use crate::game::Game;
use crate::model::{Backend, LoadKey};
use crate::search::report::{BestMove, Info, Listener};
use crate::search::searchless::Searchless;
use crate::search::GoParams;
use parking_lot::Mutex;

/// Records the reports as the lines a GUI would read them (`info`, `info string`, `bestmove`),
/// without the UCI formatter: the search layer is tested on its own.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<String>>);

impl Listener for Buf {
    fn report(&self, infos: &[Info], best: Option<&BestMove>) {
        let mut text = self.0.lock();
        for _ in infos {
            text.push_str("info\n");
        }
        if let Some(b) = best {
            text.push_str(&format!(
                "bestmove {}\n",
                b.mv.as_deref().unwrap_or("(none)")
            ));
        }
    }

    fn note(&self, note: Note) {
        let msg = match note {
            Note::Info(m) => m,
            Note::Error(m) => format!("error: {m}"),
        };
        self.0.lock().push_str(&format!("info string {msg}\n"));
    }
}

/// `secs` seconds of wall time, times `GLIMPSE_TEST_TIME_SCALE` (default 1; `make valgrind` sets 20,
/// as valgrind runs the threads one at a time and tens of times slower).
fn wall(secs: u64) -> Duration {
    let scale = std::env::var("GLIMPSE_TEST_TIME_SCALE")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1);
    Duration::from_secs(secs * scale)
}

impl Buf {
    fn text(&self) -> String {
        self.0.lock().clone()
    }
}

/// A request in a checkmated position: the runner answers without touching the network.
fn mated(go: GoParams) -> SearchRequest {
    let game = Game::from_fen("R5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1", false).unwrap();
    let settings = Settings::default();
    SearchRequest {
        key: LoadKey {
            weights: Some("/nonexistent.onnx".into()),
            backend: Backend::Cpu,
            threads: 1,
        },
        game,
        searchmoves: Vec::new(),
        time: TimeManager::new(&go, false, 0),
        go,
        settings,
        temperature: 0.0,
        u: 0.0,
        start: Instant::now(),
        tablebase: None,
        net_ready: true,
    }
}

#[test]
fn infinite_answers_only_after_stop_and_once() {
    let buf = Buf::default();
    let out: Arc<dyn Listener> = Arc::new(buf.clone());
    let mut search = Runner::spawn(Searchless, NetworkSlot::shared(), out);
    search.start(mated(GoParams {
        infinite: true,
        ..GoParams::default()
    }));
    std::thread::sleep(Duration::from_millis(50));
    assert!(search.searching(), "no bestmove before stop");
    assert!(!buf.text().contains("bestmove"));
    search.stop();
    search.wait();
    assert!(!search.searching());
    search.shutdown(Duration::from_secs(2));
    assert!(!search.busy());
    assert_eq!(buf.text(), "bestmove (none)\n");
}

#[test]
fn a_timed_search_answers_by_itself() {
    let buf = Buf::default();
    let out: Arc<dyn Listener> = Arc::new(buf.clone());
    let mut search = Runner::spawn(Searchless, NetworkSlot::shared(), out);
    search.start(mated(GoParams {
        movetime: Some(1000),
        ..GoParams::default()
    }));
    search.wait();
    search.stop(); // after the answer: nothing more is printed
    search.shutdown(Duration::from_secs(2));
    assert_eq!(buf.text(), "bestmove (none)\n");
    assert!(!search.ponderhit(), "no ponder search to hit");
}

#[test]
fn the_fallback_move_keeps_a_tablebase_win() {
    // K+B+N vs K, Black to move: without tables the fallback is the first legal move, Nd1, which
    // the white king takes (a draw); with the tables it is one of the winning moves.
    let mut req = mated(GoParams::default());
    req.game = Game::from_fen("8/8/8/5b2/8/8/kn6/2K5 b - - 0 1", false).unwrap();
    let blunder = crate::search::request_fallback(&req).mv.unwrap();
    assert_eq!(blunder, "b2d1");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/syzygy");
    let probe = crate::tablebase::Probe {
        tables: Arc::new(crate::tablebase::Tablebases::open(dir).tables.unwrap()),
        limit: 7,
        rule50: true,
    };
    let keep = probe.root(&req.game).unwrap().keep();
    req.tablebase = Some(probe);
    let mv = crate::search::request_fallback(&req).mv.unwrap();
    assert_ne!(mv, blunder);
    assert!(keep.iter().any(|m| req.game.move_to_uci(m) == mv), "{mv}");
}

/// `mated` as if the network were still loading at `go`.
fn mated_loading(go: GoParams) -> SearchRequest {
    SearchRequest {
        net_ready: false,
        ..mated(go)
    }
}

#[test]
fn without_a_clock_a_search_waits_for_the_loading_network_and_times_from_then() {
    let buf = Buf::default();
    let out: Arc<dyn Listener> = Arc::new(buf.clone());
    let net = NetworkSlot::shared();
    let loading = net.lock(); // the background loader holds the network
    let mut search = Runner::spawn(Searchless, Arc::clone(&net), out);
    search.start(mated_loading(GoParams {
        movetime: Some(30),
        ..GoParams::default()
    }));
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !buf.text().contains("bestmove"),
        "answered before the network was ready (movetime 30, waited 200 ms): {}",
        buf.text()
    );
    assert!(search.busy());
    drop(loading);
    search.wait();
    search.shutdown(Duration::from_secs(2));
    let text = buf.text();
    assert!(text.ends_with("bestmove (none)\n"), "{text}");
    assert!(!text.contains("fallback"), "{text}");
    assert!(text.contains("for the network to load"), "{text}");
}

#[test]
fn with_a_clock_too_short_to_wait_the_fallback_says_the_network_was_loading() {
    let buf = Buf::default();
    let out: Arc<dyn Listener> = Arc::new(buf.clone());
    let net = NetworkSlot::shared();
    let loading = net.lock();
    let mut search = Runner::spawn(Searchless, Arc::clone(&net), out);
    let t0 = Instant::now();
    search.start(mated_loading(GoParams {
        btime: Some(60),
        ..GoParams::default()
    }));
    search.wait();
    assert!(t0.elapsed() < wall(5), "{:?}", t0.elapsed());
    let text = buf.text();
    assert!(text.contains("still loading"), "{text}");
    assert_eq!(text.matches("bestmove").count(), 1, "{text}");
    drop(loading);
    search.shutdown(Duration::from_secs(2));
    assert_eq!(
        buf.text().matches("bestmove").count(),
        1,
        "exactly one answer"
    );
}

#[test]
fn stop_while_the_network_loads_answers_at_once() {
    let buf = Buf::default();
    let out: Arc<dyn Listener> = Arc::new(buf.clone());
    let net = NetworkSlot::shared();
    let loading = net.lock();
    let mut search = Runner::spawn(Searchless, Arc::clone(&net), out);
    search.start(mated_loading(GoParams {
        infinite: true,
        ..GoParams::default()
    }));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!buf.text().contains("bestmove"));
    search.stop();
    search.wait();
    let text = buf.text();
    assert!(
        text.contains("stopped while the network was loading"),
        "{text}"
    );
    assert!(text.ends_with("bestmove (none)\n"), "{text}");
    drop(loading);
    search.shutdown(Duration::from_secs(2));
    assert_eq!(buf.text().matches("bestmove").count(), 1);
}

/// A searchless runner writing to a buffer, on a network slot the test can lock (as a long run or
/// a load would hold it).
fn runner_on_a_shared_net() -> (Buf, SharedNetwork, Runner) {
    let buf = Buf::default();
    let net = NetworkSlot::shared();
    let search = Runner::spawn(Searchless, Arc::clone(&net), Arc::new(buf.clone()));
    (buf, net, search)
}

#[test]
fn stop_during_a_network_run_is_answered_within_stop_answer() {
    // The network is busy (its lock held, as by a long run): the worker cannot start. `stop`
    // answers for it after STOP_ANSWER with the fallback move, and the worker's own answer, once
    // it gets the network, is dropped: exactly one `bestmove`, before `stop` returns.
    let (buf, net, mut search) = runner_on_a_shared_net();
    let busy = net.lock();
    search.start(mated(GoParams {
        infinite: true,
        ..GoParams::default()
    }));
    std::thread::sleep(Duration::from_millis(30));
    let t0 = Instant::now();
    search.stop();
    let took = t0.elapsed();
    assert!(
        took >= STOP_ANSWER && took < STOP_ANSWER + wall(1),
        "{took:?}"
    );
    let text = buf.text();
    assert!(
        text.contains("stopped during a network run; playing a fallback move"),
        "{text}"
    );
    assert!(text.ends_with("bestmove (none)\n"), "{text}");
    assert!(search.busy(), "the worker is still waiting for the network");
    drop(busy);
    search.shutdown(Duration::from_secs(2));
    assert!(!search.busy());
    assert_eq!(buf.text().matches("bestmove").count(), 1);
}

#[test]
fn shutdown_answers_a_search_that_cannot_finish() {
    let (buf, net, mut search) = runner_on_a_shared_net();
    let busy = net.lock();
    search.start(mated(GoParams {
        nodes: Some(10),
        ..GoParams::default()
    }));
    search.shutdown(Duration::from_millis(100));
    let text = buf.text();
    assert!(
        text.contains("exiting before the search answered"),
        "{text}"
    );
    assert_eq!(text.matches("bestmove").count(), 1, "{text}");
    drop(busy);
}
