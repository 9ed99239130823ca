//! `glimpse bench --mcts`: MCTS speed on the bench positions.
//!
//! From each of the 30 positions (fresh tree and cache each time) it runs `--nodes` playouts
//! with `--minibatch` leaves per network run and reports playouts (nodes) per second, network
//! rows and positions per run, and the share of the time spent outside the network (tokenizing
//! inside the evaluator counts as network time; selection, expansion with the rules, backup and
//! the cache count as search overhead). The target on the 2-core CPU with the one-pass net:
//! ≥ 100 nodes/s on 2 threads and an overhead ≤ 20 %.

use super::{fnv1a, BenchArgs, POSITIONS};
use crate::game::Game;
use crate::model::cache::EvalCache;
use crate::model::{Model, Network};
use crate::search::evaluator::{with_stack, Evaluator, Layers};
use crate::search::mcts::{self, Limits, MctsParams, Progress, Tree};
use std::time::{Duration, Instant};

/// The MCTS settings of the bench for `model`: the engine's defaults with `--minibatch` leaves
/// per run (0: the engine's for the model's backend and threads), pipelined as `--pipelined`
/// says or else as the engine is on that backend.
pub(crate) fn bench_params(args: &BenchArgs, model: &Model) -> MctsParams {
    let mut params = MctsParams {
        minibatch: args.minibatch,
        ..MctsParams::default()
    }
    .for_backend(model.info().backend, model.row_shards().max(1));
    params.pipelined = args.pipelined.unwrap_or(params.pipelined);
    params
}

/// `nodes` playouts from `game` with a fresh tree and the engine's evaluator stack over
/// `network` ([`with_stack`]: a fresh 64 MiB cache, the bare-king rule as `MopUp` is by
/// default): wall time, the search's progress and the best move (UCI text, `(none)` without one).
///
/// # Errors
/// The search stopped on an evaluator error.
pub(crate) fn one_position(
    network: &mut dyn Evaluator,
    game: &Game,
    params: &MctsParams,
    nodes: u64,
) -> Result<(Duration, Progress, String), String> {
    let mut tree = Tree::new(game);
    let mut cache = EvalCache::new(64 << 20);
    let mut limits = Limits {
        playouts: Some(nodes.max(1)),
        infinite: true, // every position runs all its playouts (no early stop)
        ..Limits::default()
    };
    let t = Instant::now();
    let layers = Layers {
        cache: Some(&mut cache),
        mop_up: mcts::defaults::MOP_UP,
    };
    let (reason, progress) = with_stack(network, layers, |evaluator| {
        mcts::search(&mut tree, evaluator, params, &mut limits, &mut |_, _, _| {
            false
        })
    });
    let dt = t.elapsed();
    if let mcts::StopReason::Error(e) = reason {
        return Err(e.to_string());
    }
    let best = tree
        .lines(&[], 1)
        .first()
        .map_or("(none)".to_string(), |l| game.move_to_uci(&l.mv));
    Ok((dt, progress, best))
}

/// Runs the MCTS bench; returns the process exit code.
pub fn bench_mcts(args: &BenchArgs, model: &mut Model, games: &[Game]) -> i32 {
    let params = bench_params(args, model);
    let mut net = match Network::for_values(model) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("glimpse: bench: {e}");
            return 1;
        }
    };
    println!(
        "MCTS: {} playouts per position, minibatch {}{}, c_puct {}, FPU reduction {}, priors τ {} top-{} ε {}",
        args.nodes,
        params.minibatch,
        if params.pipelined { " (pipelined: one batch in flight)" } else { "" },
        params.c_puct,
        params.fpu_reduction,
        params.policy_temperature,
        params.policy_top_k,
        params.policy_uniform_mix
    );
    println!(
        "{:>3} {:>7} {:>9} {:>8} {:>6} {:<7} fen",
        "#", "nodes", "ms", "nodes/s", "depth", "best"
    );
    let (mut playouts, mut total, mut signature) = (0u64, Duration::ZERO, 0xcbf2_9ce4_8422_2325u64);
    let before = net.stats();
    for (i, g) in games.iter().enumerate() {
        let (dt, progress, best) = match one_position(&mut net, g, &params, args.nodes) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("glimpse: bench: position {}: {e}", i + 1);
                return 1;
            }
        };
        total += dt;
        playouts += progress.playouts;
        signature = fnv1a(signature, best.as_bytes());
        println!(
            "{:>3} {:>7} {:>9.1} {:>8.0} {:>6} {:<7} {}",
            i + 1,
            progress.playouts,
            dt.as_secs_f64() * 1e3,
            progress.playouts as f64 / dt.as_secs_f64().max(1e-9),
            progress.mean_depth(),
            best,
            POSITIONS[i]
        );
    }
    let after = net.stats();
    let runs = after.runs - before.runs;
    let rows = after.rows - before.rows;
    let positions = after.positions - before.positions;
    let net = after.time.saturating_sub(before.time);
    let secs = total.as_secs_f64().max(1e-9);
    println!();
    println!("Positions            : {}", games.len());
    println!("Playouts (nodes)     : {playouts}");
    println!("Nodes/s              : {:.1}", playouts as f64 / secs);
    println!("Network runs         : {runs}");
    println!(
        "Positions per run    : {:.2}",
        positions as f64 / runs.max(1) as f64
    );
    println!(
        "Rows per run         : {:.2}",
        rows as f64 / runs.max(1) as f64
    );
    println!(
        "Network time         : {:.0} ms ({:.1} %)",
        net.as_secs_f64() * 1e3,
        100.0 * net.as_secs_f64() / secs
    );
    println!(
        "Search overhead      : {:.1} % (time outside the evaluator)",
        100.0 * (1.0 - net.as_secs_f64() / secs)
    );
    println!("Bench signature      : mcts{}-{signature:016x}", args.nodes);
    println!();
    println!("Total time (ms) : {:.0}", secs * 1e3);
    println!("Nodes searched  : {playouts}");
    println!("Nodes/second    : {:.0}", playouts as f64 / secs);
    0
}
