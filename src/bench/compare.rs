//! `glimpse bench --weights A.onnx --compare B.onnx`: two nets measured back to back in one
//! process, interleaved, so that both see the same machine load (a loaded machine makes separate
//! runs incomparable). Typical use: a float32 net against its int8 twin (`make quantize`).
//!
//! Searchless (default): every position is analysed `--reps` times by A, then by B, the order
//! alternating between positions (A B, B A, …), each block after a pause ([`SWITCH_PAUSE`]) and an
//! untimed run ([`WARM_UP_RUNS`]); then positions/s of both and B/A, how many chosen moves agree, both
//! signatures, and the batch table ([`super::batches`]) with both nets side by side.
//! With `--mcts`: every position gets `--nodes` playouts from A and from B (fresh tree and cache
//! each, order alternating between positions, each after [`SWITCH_PAUSE`]); nodes/s of both and
//! B/A, positions per network run.

use super::mcts::{bench_params, one_position};
use super::POSITIONS;
use super::{batches, matmul};
use super::{
    fnv1a, gflop_per_eval, median, print_batch_table, print_matmul_rate, successor_note, BenchArgs,
    NetArgs,
};
use crate::game::Game;
use crate::model::slot::LoadKey;
use crate::model::{Evaluator, Model, ModelInfo, Network};
use crate::search::analysis::successor_capable;
use std::time::{Duration, Instant};

/// The pause before each block of one net's runs. Each ONNX Runtime session has its own intra-op
/// thread pool, whose threads keep spinning for about 40–45 ms after a run (measured: one-row runs
/// of the c47 int8 twin took 5–14 ms instead of 2.1 for 45 ms after a 32-row run of its float32
/// source, ONNX Runtime's Python API, 2 threads, 2026-11-26). A net timed in that window shares the
/// cores with them: alternating the nets run by run slowed both by 1.3–2.9× and moved B/A by
/// ±40 % between runs.
pub const SWITCH_PAUSE: Duration = Duration::from_millis(100);

/// Untimed runs at the start of each block (after [`SWITCH_PAUSE`]), so that the net's weights are
/// in the caches as they are when the engine runs one net.
pub const WARM_UP_RUNS: usize = 1;

fn describe(tag: &str, i: &ModelInfo) -> String {
    format!("{tag} = {} ({:?}, {})", i.source, i.kind, i.precision)
}

/// What the interleaved searchless comparison measured, per net (A, B).
struct Pair {
    /// Seconds over all timed runs.
    secs: [f64; 2],
    /// Network rows over all timed runs.
    evals: [u64; 2],
    /// ms of every timed run.
    times: [Vec<f64>; 2],
    /// FNV-1a over each position's best move.
    signature: [u64; 2],
    /// Positions where both nets chose the same move.
    agree: usize,
}

/// Analyses every bench position with both nets, interleaved, printing a line per position.
fn measure_pair(
    args: &BenchArgs,
    mut nets: [&mut Model; 2],
    games: &[Game],
    reps: usize,
) -> Result<Pair, String> {
    for m in &mut nets {
        for g in games.iter().take(2) {
            if let Err(e) = args.analyse(m, g) {
                return Err(format!("{}: {e}", m.info().source));
            }
        }
    }
    let mut secs = [0.0f64; 2];
    let mut evals = [0u64; 2];
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut signature = [0xcbf2_9ce4_8422_2325u64; 2];
    let mut agree = 0;
    println!(
        "{:>3} {:>6} {:>9} {:>9} {:<7} {:<7} fen",
        "#", "evals", "A ms", "B ms", "A best", "B best"
    );
    for (i, g) in games.iter().enumerate() {
        let mut best = [String::from("(none)"), String::from("(none)")];
        let mut here: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        let mut rows = 0;
        // A block per net and position, the order alternating between positions (A B, B A, …), each
        // block after a pause and untimed runs: [`SWITCH_PAUSE`], [`WARM_UP_RUNS`].
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let m = &mut *nets[which];
            std::thread::sleep(SWITCH_PAUSE);
            for rep in 0..WARM_UP_RUNS + reps {
                let t = Instant::now();
                let an = args
                    .analyse(m, g)
                    .map_err(|e| format!("{} position {}: {e}", m.info().source, i + 1))?;
                let s = t.elapsed().as_secs_f64();
                if rep < WARM_UP_RUNS {
                    continue;
                }
                secs[which] += s;
                evals[which] += an.evals as u64;
                here[which].push(s * 1e3);
                rows = an.evals;
                if let Some(k) = an.best() {
                    best[which] = an.moves[k].uci.clone();
                }
            }
        }
        for w in 0..2 {
            signature[w] = fnv1a(signature[w], best[w].as_bytes());
            times[w].extend_from_slice(&here[w]);
        }
        agree += usize::from(best[0] == best[1]);
        println!(
            "{:>3} {:>6} {:>9.2} {:>9.2} {:<7} {:<7} {}",
            i + 1,
            rows,
            median(&mut here[0]),
            median(&mut here[1]),
            best[0],
            best[1],
            POSITIONS[i]
        );
    }
    Ok(Pair {
        secs,
        evals,
        times,
        signature,
        agree,
    })
}

/// Runs the comparison (`a` is the net of `--weights`, already loaded with `key`); returns the
/// process exit code.
pub fn bench_compare(args: &BenchArgs, mut a: Model, key: &LoadKey, games: &[Game]) -> i32 {
    let key_b = LoadKey {
        weights: args.compare.clone(),
        ..key.clone()
    };
    let mut b = match NetArgs::load_key(key_b) {
        Ok((m, _)) => m,
        Err(e) => {
            eprintln!("glimpse: bench: --compare: {e}");
            return 1;
        }
    };
    println!(
        "Back to back, interleaved: {}; {} ({:?} backend, {} threads)",
        describe("A", a.info()),
        describe("B", b.info()),
        b.info().backend,
        key.threads
    );
    if args.mcts {
        return compare_mcts(args, &mut a, &mut b, games);
    }
    let reps = args.reps.max(1);
    let Pair {
        secs,
        evals,
        mut times,
        signature,
        agree,
    } = match measure_pair(args, [&mut a, &mut b], games, reps) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("glimpse: bench: {e}");
            return 1;
        }
    };
    let pps = |w: usize| (games.len() * reps) as f64 / secs[w].max(1e-9);
    println!();
    println!("Positions            : {}", games.len());
    println!("Repetitions          : {reps}");
    println!(
        "Searchless move      : {}",
        successor_note(args.successor_value, successor_capable(&a))
    );
    println!(
        "Median ms per move   : A {:.2}, B {:.2}",
        median(&mut times[0]),
        median(&mut times[1])
    );
    println!(
        "Positions/s          : A {:.1}, B {:.1}, B/A {:.2}×",
        pps(0),
        pps(1),
        pps(1) / pps(0).max(1e-9)
    );
    println!("Same best move       : {agree} of {}", games.len());
    println!(
        "Bench signature      : {}-{:016x}",
        evals[0] / reps as u64,
        signature[0]
    );
    println!(
        "Signature of B       : {}-{:016x}",
        evals[1] / reps as u64,
        signature[1]
    );
    if args.no_batches {
        return 0;
    }
    compare_batches(args, [&mut a, &mut b], key, games, reps)
}

/// The batch table of both nets side by side (and ORT's MatMul rate); the process exit code.
fn compare_batches(
    args: &BenchArgs,
    mut nets: [&mut Model; 2],
    key: &LoadKey,
    games: &[Game],
    reps: usize,
) -> i32 {
    let timings = match batches::measure(&mut nets, games, &batches::BATCH_SIZES, reps) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("glimpse: bench: batch table: {e}");
            return 1;
        }
    };
    // Each net's share is of its own precision's rate: one measurement per precision in play.
    let kinds: Vec<matmul::Roofline> = nets
        .iter()
        .map(|m| matmul::Roofline::for_precision(m.info().precision))
        .collect();
    let mut rates: Vec<(matmul::Roofline, Option<f64>)> = Vec::new();
    if !args.no_matmul {
        println!();
        for &kind in &kinds {
            if !rates.iter().any(|(k, _)| *k == kind) {
                rates.push((kind, print_matmul_rate(key, kind)));
            }
        }
    }
    let cols: Vec<batches::Column<'_>> = nets
        .iter()
        .zip(["A", "B"])
        .zip(&timings)
        .zip(&kinds)
        .map(|(((m, label), t), kind)| batches::Column {
            label,
            gflop_per_row: gflop_per_eval(m, key).0,
            row_is_position: m.info().kind.one_row_per_position(),
            timings: t,
            roofline: rates.iter().find(|(k, _)| k == kind).and_then(|(_, r)| *r),
        })
        .collect();
    print_batch_table(&cols, reps);
    0
}

/// Totals of one net over the MCTS comparison.
#[derive(Default)]
struct MctsTotals {
    time: Duration,
    playouts: u64,
    signature: u64,
}

fn compare_mcts(args: &BenchArgs, a: &mut Model, b: &mut Model, games: &[Game]) -> i32 {
    let params = bench_params(args, a);
    let mut evals = match (Network::for_values(a), Network::for_values(b)) {
        (Ok(x), Ok(y)) => [x, y],
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("glimpse: bench: {e}");
            return 1;
        }
    };
    println!(
        "MCTS: {} playouts per position and net, minibatch {}",
        args.nodes, params.minibatch
    );
    println!(
        "{:>3} {:>9} {:>9} {:>9} {:>9} {:<7} {:<7} fen",
        "#", "A ms", "B ms", "A nodes/s", "B nodes/s", "A best", "B best"
    );
    let before = [evals[0].stats(), evals[1].stats()];
    let mut tot = [
        MctsTotals {
            signature: 0xcbf2_9ce4_8422_2325,
            ..MctsTotals::default()
        },
        MctsTotals {
            signature: 0xcbf2_9ce4_8422_2325,
            ..MctsTotals::default()
        },
    ];
    for (i, g) in games.iter().enumerate() {
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut row: [(Duration, u64, String); 2] = Default::default();
        for w in order {
            std::thread::sleep(SWITCH_PAUSE);
            match one_position(&mut evals[w], g, &params, args.nodes) {
                Ok((dt, progress, best)) => row[w] = (dt, progress.playouts, best),
                Err(e) => {
                    eprintln!("glimpse: bench: position {}: {e}", i + 1);
                    return 1;
                }
            }
        }
        for w in 0..2 {
            tot[w].time += row[w].0;
            tot[w].playouts += row[w].1;
            tot[w].signature = fnv1a(tot[w].signature, row[w].2.as_bytes());
        }
        let rate = |w: usize| row[w].1 as f64 / row[w].0.as_secs_f64().max(1e-9);
        println!(
            "{:>3} {:>9.1} {:>9.1} {:>9.0} {:>9.0} {:<7} {:<7} {}",
            i + 1,
            row[0].0.as_secs_f64() * 1e3,
            row[1].0.as_secs_f64() * 1e3,
            rate(0),
            rate(1),
            row[0].2,
            row[1].2,
            POSITIONS[i]
        );
    }
    let nps = |w: usize| tot[w].playouts as f64 / tot[w].time.as_secs_f64().max(1e-9);
    println!();
    println!("Positions            : {}", games.len());
    println!(
        "Playouts (nodes)     : A {}, B {}",
        tot[0].playouts, tot[1].playouts
    );
    println!(
        "Nodes/s              : A {:.1}, B {:.1}, B/A {:.2}×",
        nps(0),
        nps(1),
        nps(1) / nps(0).max(1e-9)
    );
    for (w, tag) in [(0, "A"), (1, "B")] {
        let s = evals[w].stats();
        let (runs, positions, net) = (
            s.runs - before[w].runs,
            s.positions - before[w].positions,
            s.time.saturating_sub(before[w].time),
        );
        println!(
            "Network runs ({tag})     : {runs}, positions per run {:.2}, network time {:.1} %",
            positions as f64 / runs.max(1) as f64,
            100.0 * net.as_secs_f64() / tot[w].time.as_secs_f64().max(1e-9)
        );
    }
    println!(
        "Bench signature      : mcts{}-{:016x}",
        args.nodes, tot[0].signature
    );
    println!(
        "Signature of B       : mcts{}-{:016x}",
        args.nodes, tot[1].signature
    );
    0
}
