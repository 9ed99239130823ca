//! `glimpse bench`, `glimpse eval` and `glimpse perft`: command-line tools over the library.
//!
//! `bench` is deterministic: a fixed list of positions, the argmax policy (temperature 0), and a
//! signature made of the evaluation count and a hash of the chosen moves, so CI can compare runs
//! and builds. The searchless move is the engine's: with `SuccessorValue` (default 60, `bench
//! --successor-value`) one run of the root and its successors; `--successor-value 0` times the
//! one-row pass alone. It reports median ms per move, positions/s (searchless moves chosen per second),
//! evaluations (network rows)/s, GFLOP per evaluation and achieved GFLOP/s, set against ONNX
//! Runtime's MatMul rate on the same machine ([`matmul`]). An evaluation is one network row: one
//! (position, move) pair for AV and SV, a whole position for BC and the one-pass MAV kind.
//! After the summary it prints a table by rows per run (1, 8, 32, 128: [`batches`]) with the
//! share of the MatMul rate each reaches. `--compare B.onnx` measures a second net back to back
//! with the first, interleaved in one process ([`compare`]).

pub mod batches;
pub mod compare;
pub mod matmul;
pub mod mcts;

use crate::display::eval_table;
use crate::game::Game;
use crate::model::slot::{load_model, LoadKey};
use crate::model::{Backend, Model, ModelError, ModelKind, Precision, RuntimeConfig};
use crate::search::analysis as searchless;
use crate::settings::default_threads;
use clap::Args;
use std::time::Instant;

/// The bench positions: openings, middlegames, endgames, and special moves (castling, en
/// passant, promotion, mate in one).
pub const POSITIONS: [&str; 30] = [
    // Openings.
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
    "rnbqkbnr/pp1ppppp/8/2p5/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
    "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3",
    "rnbqkb1r/ppp2ppp/4pn2/3p4/2PP4/2N5/PP2PPPP/R1BQKBNR w KQkq - 2 4",
    "rnbq1rk1/ppp1ppbp/3p1np1/8/2PPP3/2N2N2/PP3PPP/R1BQKB1R w KQ - 0 6",
    "rnbqkbnr/ppp2ppp/4p3/3p4/3PP3/8/PPP2PPP/RNBQKBNR w KQkq - 0 3",
    "r1bqk1nr/pppp1ppp/2n5/2b1p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "rnbqkbnr/pppp1ppp/8/4p3/2P5/8/PP1PPPPP/RNBQKBNR w KQkq - 0 2",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    // Middlegames.
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R1BQ1RK1 w - - 0 8",
    "2rq1rk1/pp1bppbp/2np1np1/8/3NP3/1BN1BP2/PPPQ2PP/2KR3R b - - 8 11",
    "r2q1rk1/ppp2ppp/2n1bn2/2b1p3/3pP3/3P1NPP/PPP1NPB1/R1BQ1RK1 b - - 0 9",
    "r1b2rk1/2q1bppp/p2ppn2/1p6/3BPP2/2N2B2/PPPQ2PP/2KR3R w - - 0 13",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    // Endgames.
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "1K1k4/1P6/8/8/8/8/r7/2R5 w - - 0 1",
    "4k3/8/4K3/4P3/8/8/8/8 w - - 0 1",
    "8/8/8/8/8/3k4/8/3KQ3 w - - 0 1",
    "8/5pk1/6p1/8/3R4/6P1/5PK1/r7 w - - 0 40",
    "8/5k2/4p1p1/3pP1P1/3P4/2B1K3/8/n7 b - - 0 45",
    "8/p7/8/8/8/8/7P/k6K w - - 0 1",
    "8/8/8/3k4/8/8/2r5/K5Q1 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "8/4P3/8/8/8/2k5/8/4K3 w - - 0 1",
];

/// Which network and runtime settings a command-line tool uses.
#[derive(Args, Debug, Clone)]
pub struct NetArgs {
    /// Network file (default: the embedded net).
    #[arg(long)]
    pub weights: Option<String>,
    /// ONNX Runtime intra-op threads (default: as the UCI option Threads).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Execution provider: cpu, cuda or tensorrt.
    #[arg(long, default_value = "cpu")]
    pub backend: String,
}

impl NetArgs {
    fn key(&self) -> Result<LoadKey, String> {
        let backend = match self.backend.to_ascii_lowercase().as_str() {
            "cpu" => Backend::Cpu,
            "cuda" => Backend::Cuda,
            "tensorrt" => Backend::TensorRt,
            other => return Err(format!("unknown backend '{other}' (cpu, cuda, tensorrt)")),
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = self
            .threads
            .unwrap_or(default_threads(cores) as usize)
            .max(1);
        Ok(LoadKey {
            weights: self.weights.clone(),
            backend,
            threads,
        })
    }

    fn load(&self) -> Result<(Model, LoadKey), String> {
        Self::load_key(self.key()?)
    }

    pub(crate) fn load_key(key: LoadKey) -> Result<(Model, LoadKey), String> {
        let mut warnings = Vec::new();
        let model = load_model(&key, &mut warnings);
        for w in warnings {
            eprintln!("glimpse: {w}");
        }
        Ok((model.map_err(|e| e.to_string())?, key))
    }
}

/// Options of `glimpse bench`.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Network and runtime.
    #[command(flatten)]
    pub net: NetArgs,
    /// Timed repetitions per position (the median is over all of them).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Skip the MatMul reference measurement.
    #[arg(long)]
    pub no_matmul: bool,
    /// Bench MCTS instead of the searchless policy: `--nodes` playouts from each position.
    #[arg(long)]
    pub mcts: bool,
    /// MCTS playouts per position (with `--mcts`).
    #[arg(long, default_value_t = 400)]
    pub nodes: u64,
    /// MCTS leaves per network run (with `--mcts`; the UCI option MinibatchSize): 0 = as the
    /// engine (1 a thread on the CPU, 256 on a GPU).
    #[arg(long, default_value_t = 0)]
    pub minibatch: usize,
    /// MCTS with the network on a second thread and one batch in flight while the next is
    /// gathered, `true` or `false` (with `--mcts`; default: as the engine on the backend, on
    /// for `cuda` and `tensorrt`).
    #[arg(long, value_name = "BOOL")]
    pub pipelined: Option<bool>,
    /// A second network (B) measured back to back with `--weights` (A), interleaved in this
    /// process, with the same backend and threads: positions/s (or MCTS nodes/s) of both and B/A.
    #[arg(long, value_name = "B.onnx")]
    pub compare: Option<String>,
    /// Skip the table by rows per run (1, 8, 32, 128).
    #[arg(long)]
    pub no_batches: bool,
    /// The searchless move's `SuccessorValue` (0–100, default the engine's): above 0 each
    /// position is one run of the root and its successors, as the engine plays; 0 times the
    /// one-row pass (the network alone).
    #[arg(long, default_value_t = searchless::SUCCESSOR_VALUE_DEFAULT,
          value_parser = clap::value_parser!(i64).range(0..=100))]
    pub successor_value: i64,
}

impl BenchArgs {
    /// The searchless move as the engine plays it at `--successor-value`
    /// ([`searchless::analyse_with`]).
    ///
    /// # Errors
    /// Tokenizer or ORT failure.
    pub fn analyse(
        &self,
        model: &mut Model,
        game: &Game,
    ) -> Result<searchless::Analysis, ModelError> {
        searchless::analyse_with(
            model,
            game,
            &[],
            searchless::successor_weight(self.successor_value),
        )
    }
}

/// Options of `glimpse eval`.
#[derive(Args, Debug, Clone)]
pub struct EvalArgs {
    /// FEN words, or "startpos".
    #[arg(required = true)]
    pub fen: Vec<String>,
    /// Network and runtime.
    #[command(flatten)]
    pub net: NetArgs,
}

/// FNV-1a 64-bit, for the bench signature.
pub(crate) fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// GFLOP per evaluation: the model's metadata, else `2 · params · seq_len` with params estimated
/// from the file size (4 bytes each; this over-counts the embedding tables, which cost no
/// multiply-adds). The flag says whether it was estimated.
pub(crate) fn gflop_per_eval(model: &Model, key: &LoadKey) -> (f64, bool) {
    if let Some(g) = model.info().gflop_per_eval {
        return (g, false);
    }
    let bytes = match &key.weights {
        None => crate::weights::embedded().map_or(0, <[u8]>::len) as u64,
        Some(p) => std::fs::metadata(p).map_or(0, |m| m.len()),
    };
    (
        2.0 * (bytes as f64 / 4.0) * model.info().seq_len as f64 / 1e9,
        true,
    )
}

/// What the searchless bench measured over its positions.
struct Measured {
    /// ms of every analysis.
    times: Vec<f64>,
    /// Network rows over all repetitions.
    evals: u64,
    /// Seconds over all repetitions.
    total_s: f64,
    /// FNV-1a over each position's best move.
    signature: u64,
}

/// Analyses every bench position `reps` times after a warm-up, printing a line per position.
fn measure_positions(
    args: &BenchArgs,
    model: &mut Model,
    games: &[Game],
    reps: usize,
) -> Result<Measured, String> {
    // Warm-up: the first runs allocate buffers and pick kernels.
    for g in games.iter().take(2) {
        args.analyse(model, g).map_err(|e| e.to_string())?;
    }
    let mut m = Measured {
        times: Vec::new(),
        evals: 0,
        total_s: 0.0,
        signature: 0xcbf2_9ce4_8422_2325,
    };
    println!("{:>3} {:>6} {:>9} {:<7} fen", "#", "evals", "ms", "best");
    for (i, g) in games.iter().enumerate() {
        let mut best = String::from("(none)");
        let mut ms_here = Vec::new();
        let mut rows = 0;
        for _ in 0..reps {
            let t = Instant::now();
            let a = args
                .analyse(model, g)
                .map_err(|e| format!("position {}: {e}", i + 1))?;
            let s = t.elapsed().as_secs_f64();
            m.total_s += s;
            m.evals += a.evals as u64;
            ms_here.push(s * 1e3);
            rows = a.evals;
            if let Some(b) = a.best() {
                best = a.moves[b].uci.clone();
            }
        }
        m.signature = fnv1a(m.signature, best.as_bytes());
        let med = median(&mut ms_here.clone());
        m.times.extend(ms_here);
        println!(
            "{:>3} {:>6} {:>9.2} {:<7} {}",
            i + 1,
            rows,
            med,
            best,
            POSITIONS[i]
        );
    }
    Ok(m)
}

/// Measures and prints ORT's MatMul rate of the net's precision (its roofline) and the bench's
/// share of it; the rate, if measured.
fn print_matmul(key: &LoadKey, precision: Precision, achieved: f64) -> Option<f64> {
    let rate = print_matmul_rate(key, matmul::Roofline::for_precision(precision))?;
    println!(
        "Fraction of MatMul   : {:.0} %",
        100.0 * achieved / rate.max(1e-9)
    );
    Some(rate)
}

/// Measures and prints ORT's MatMul rate of `kind` (`MatMul GFLOP/s` line); the rate, if measured.
pub(crate) fn print_matmul_rate(key: &LoadKey, kind: matmul::Roofline) -> Option<f64> {
    match matmul_rate(key, kind) {
        Ok(r) => {
            println!(
                "MatMul GFLOP/s       : {:.1} ({}, ORT, [{}×{}]·[{}×{}])",
                r.gflops,
                r.kind.as_str(),
                r.rows,
                r.d,
                r.d,
                r.d
            );
            Some(r.gflops)
        }
        Err(e) => {
            println!(
                "MatMul GFLOP/s       : {} not measured ({e})",
                kind.as_str()
            );
            None
        }
    }
}

/// The net (after the header line naming it) and the bench positions.
fn load_bench(args: &BenchArgs) -> Result<(Model, LoadKey, Vec<Game>), String> {
    let (model, key) = args.net.load()?;
    let info = model.info();
    println!(
        "Glimpse bench: {} ({:?}, {:?} backend, {} threads)",
        info.source, info.kind, info.backend, key.threads
    );
    let games = POSITIONS
        .iter()
        .map(|f| Game::from_fen(f, false))
        .collect::<Result<Vec<Game>, _>>()
        .map_err(|e| format!("bad built-in position: {e}"))?;
    Ok((model, key, games))
}

/// What one evaluation (row) of the bench is.
fn rows_note(successors: bool, kind: ModelKind) -> &'static str {
    if successors {
        " (one row per position, the root and each successor, all legal moves of each scored)"
    } else if kind.one_row_per_position() {
        " (one row per position: all legal moves scored in one pass)"
    } else {
        " (one row per legal move)"
    }
}

/// Runs the bench; returns the process exit code.
pub fn bench(args: &BenchArgs) -> i32 {
    let (mut model, key, games) = match load_bench(args) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("glimpse: bench: {e}");
            return 1;
        }
    };
    let info = model.info().clone();
    if args.compare.is_some() {
        return compare::bench_compare(args, model, &key, &games);
    }
    if args.mcts {
        return mcts::bench_mcts(args, &mut model, &games);
    }
    let capable = searchless::successor_capable(&model);
    let reps = args.reps.max(1);
    let Measured {
        mut times,
        evals,
        total_s,
        signature,
    } = match measure_positions(args, &mut model, &games, reps) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("glimpse: bench: {e}");
            return 1;
        }
    };
    let median_ms = median(&mut times);
    let evals_per_s = evals as f64 / total_s.max(1e-9);
    let positions_per_s = (POSITIONS.len() * reps) as f64 / total_s.max(1e-9);
    let (gflop, estimated) = gflop_per_eval(&model, &key);
    let achieved = gflop * evals_per_s;
    let batch_timings = if args.no_batches {
        None
    } else {
        Some(batches::measure(
            &mut [&mut model],
            &games,
            &batches::BATCH_SIZES,
            reps,
        ))
    };
    drop(model);
    println!();
    println!("Positions            : {}", POSITIONS.len());
    println!("Repetitions          : {reps}");
    println!(
        "Evaluations (rows)   : {evals}{}",
        rows_note(capable && args.successor_value > 0, info.kind)
    );
    println!(
        "Searchless move      : {}",
        successor_note(args.successor_value, capable)
    );
    println!("Median ms per move   : {median_ms:.2}");
    println!("Positions/s          : {positions_per_s:.1}");
    println!("Evaluations/s        : {evals_per_s:.0}");
    println!(
        "GFLOP per evaluation : {gflop:.4}{}",
        if estimated {
            " (estimated from the file size)"
        } else {
            ""
        }
    );
    println!("Achieved GFLOP/s     : {achieved:.1}");
    let roofline = if args.no_matmul {
        None
    } else {
        print_matmul(&key, info.precision, achieved)
    };
    println!(
        "Bench signature      : {}-{:016x}",
        evals / reps as u64,
        signature
    );
    println!();
    println!("Total time (ms) : {:.0}", total_s * 1e3);
    println!("Nodes searched  : {evals}");
    println!("Nodes/second    : {evals_per_s:.0}");
    match batch_timings {
        None => {}
        Some(Ok(t)) => {
            let col = batches::Column {
                label: "",
                gflop_per_row: gflop,
                row_is_position: info.kind.one_row_per_position(),
                timings: &t[0],
                roofline,
            };
            print_batch_table(&[col], reps);
        }
        Some(Err(e)) => {
            eprintln!("glimpse: bench: batch table: {e}");
            return 1;
        }
    }
    0
}

/// How the bench's searchless move was scored, for its summary.
pub(crate) fn successor_note(successor_value: i64, capable: bool) -> String {
    match (successor_value, capable) {
        (0, _) => "SuccessorValue 0: one pass of the root (the network alone)".into(),
        (w, true) => format!(
            "SuccessorValue {w}: the root and its successors in one run, as the engine plays"
        ),
        (w, false) => {
            format!("SuccessorValue {w} does not apply to this kind: one pass of the root")
        }
    }
}

/// ORT's MatMul rate of `kind` with the runtime settings of `key` (best of 5 runs).
fn matmul_rate(key: &LoadKey, kind: matmul::Roofline) -> Result<matmul::MatmulRate, String> {
    let cfg = RuntimeConfig {
        backend: key.backend,
        intra_threads: key.threads,
    };
    matmul::measure(&cfg, 5, kind)
}

/// Prints the batch table with its title.
fn print_batch_table(columns: &[batches::Column<'_>], reps: usize) {
    println!();
    println!(
        "Batch table (rows per network run; median of {} runs{}, each block after a warm-up; GFLOP/s from glimpse.gflop_per_eval{}):",
        batches::samples(columns.len(), reps),
        if columns.len() > 1 { " in blocks A B, B A after a pause" } else { "" },
        if columns.iter().any(|c| c.roofline.is_some()) {
            "; %MatMul = share of the MatMul rate of the net's precision above"
        } else {
            ""
        }
    );
    for l in batches::table(columns) {
        println!("{l}");
    }
}

/// Runs `eval`; returns the process exit code.
pub fn eval(args: &EvalArgs) -> i32 {
    let text = args.fen.join(" ");
    let game = if text.trim() == "startpos" {
        Ok(Game::startpos())
    } else {
        Game::from_fen(&text, false)
    };
    let game = match game {
        Ok(g) => g,
        Err(e) => {
            eprintln!("glimpse: eval: {e}");
            return 1;
        }
    };
    let (mut model, _) = match args.net.load() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("glimpse: eval: {e}");
            return 1;
        }
    };
    let t = Instant::now();
    match searchless::analyse(&mut model, &game, &[]) {
        Ok(a) => {
            let ms = t.elapsed().as_secs_f64() * 1e3;
            println!("{}", game.fen());
            for l in eval_table(&game, &a, a.best()) {
                println!("{l}");
            }
            println!(
                "{} evaluations in {ms:.1} ms ({})",
                a.evals,
                model.info().source
            );
            0
        }
        Err(e) => {
            eprintln!("glimpse: eval: {e}");
            1
        }
    }
}

/// Runs `perft` (per root move, then the total); returns the process exit code.
pub fn perft_cli(depth: u32, fen: &str, chess960: bool) -> i32 {
    let game = if fen.trim().is_empty() || fen.trim() == "startpos" {
        Game::from_fen(crate::engine::STARTPOS_FEN, chess960)
    } else {
        Game::from_fen(fen, chess960)
    };
    let game = match game {
        Ok(g) => g,
        Err(e) => {
            eprintln!("glimpse: perft: {e}");
            return 1;
        }
    };
    let mode = if chess960 {
        shakmaty::CastlingMode::Chess960
    } else {
        shakmaty::CastlingMode::Standard
    };
    let t = Instant::now();
    let mut total = 0;
    for (m, n) in crate::perft::divide(game.position(), depth, mode) {
        println!("{m}: {n}");
        total += n;
    }
    if depth == 0 {
        total = 1;
    }
    let ms = t.elapsed().as_secs_f64() * 1e3;
    println!("\nNodes searched: {total}");
    println!("Time (ms): {ms:.0}");
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_positions_are_legal_and_varied() {
        let mut total_moves = 0;
        for f in POSITIONS {
            let g = Game::from_fen(f, false).unwrap_or_else(|e| panic!("{f}: {e}"));
            let n = g.legal_moves().len();
            assert!(n > 0, "{f} has no legal moves");
            total_moves += n;
        }
        assert!(total_moves > 500, "{total_moves}");
    }

    #[test]
    fn median_and_hash() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
        assert_ne!(fnv1a(1, b"e2e4"), fnv1a(1, b"e2e3"));
    }
}
