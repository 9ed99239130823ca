//! The option table: every UCI option declared once (name, type, default, range, where it is
//! applied, help). MCTS defaults come from `crate::search::mcts::defaults`, their one place.

use super::*;
use crate::search::mcts::defaults as mcts;

pub use crate::settings::default_threads;

/// Every option, in listing order. `cores` bounds `Threads`.
pub fn declarations(cores: usize) -> Vec<OptionDecl> {
    let mut all = general(cores);
    all.extend(searchless());
    all.extend(mcts());
    all.extend(tablebases_and_log());
    all
}

/// The network, the game, time and randomness, and `SearchMode`.
fn general(cores: usize) -> Vec<OptionDecl> {
    let cores = cores.max(1) as i64;
    vec![
        OptionDecl {
            name: WEIGHTS_FILE.name,
            applies: Applies::Network,
            kind: OptionKind::Text { default: EMBEDDED },
            help: "ONNX network file; <embedded> is the net built into the binary",
        },
        OptionDecl {
            name: BACKEND.name,
            applies: Applies::Network,
            kind: OptionKind::Combo { default: "cpu", vars: &["cpu", "cuda", "tensorrt"] },
            help: "ONNX Runtime execution provider; a GPU provider that cannot start falls back to cpu",
        },
        OptionDecl {
            name: THREADS.name,
            applies: Applies::Network,
            kind: OptionKind::Spin { default: default_threads(cores as usize), min: 1, max: 256 },
            help: "ONNX Runtime intra-op threads used by one forward pass",
        },
        OptionDecl {
            name: MULTI_PV.name,
            applies: Applies::Search,
            kind: OptionKind::Spin { default: 1, min: 1, max: 256 },
            help: "number of best moves reported with an info line each",
        },
        OptionDecl {
            name: SHOW_WDL.name,
            applies: Applies::Search,
            kind: OptionKind::Check { default: false },
            help: "add 'wdl W D L' (per mille, draws 0: the net predicts an expected score) to info lines",
        },
        OptionDecl {
            name: CHESS960.name,
            applies: Applies::Position,
            kind: OptionKind::Check { default: false },
            help: "Chess960: castling is written king-takes-rook (e1h1)",
        },
        OptionDecl {
            name: PONDER.name,
            applies: Applies::Search,
            kind: OptionKind::Check { default: false },
            help: "the GUI may ponder; bestmove then carries a ponder move (one extra forward pass)",
        },
        OptionDecl {
            name: MOVE_OVERHEAD.name,
            applies: Applies::Search,
            kind: OptionKind::Spin { default: 30, min: 0, max: 5000 },
            help: "milliseconds kept in reserve per move for GUI and network lag",
        },
        OptionDecl {
            name: SLOW_MOVER.name,
            applies: Applies::Search,
            kind: OptionKind::Spin {
                default: crate::time::DEFAULT_SLOW_MOVER as i64,
                min: 10,
                max: 1000,
            },
            help: "percent of the clock's optimum time a move (Stockfish's name); above 100 spends more",
        },
        OptionDecl {
            name: TEMPERATURE.name,
            applies: Applies::Search,
            kind: OptionKind::Float { default: 0.0, min: 0.0, max: 1.0 },
            help: "sample moves from softmax(win probability / T); 0 plays the best move (paper: 0.005)",
        },
        OptionDecl {
            name: TEMP_DECAY_MOVES.name,
            applies: Applies::Search,
            kind: OptionKind::Spin { default: 0, min: 0, max: 1000 },
            help: "Temperature applies while the full-move number is at most this; 0 means in every move",
        },
        OptionDecl {
            name: SEED.name,
            applies: Applies::Random,
            kind: OptionKind::Spin { default: 0, min: 0, max: i64::from(i32::MAX) },
            help: "random seed for Temperature; 0 draws a fresh seed, other values repeat at each ucinewgame",
        },
        OptionDecl {
            name: SEARCH_MODE.name,
            applies: Applies::Search,
            kind: OptionKind::Combo { default: crate::search::SearchMode::Searchless.as_str(), vars: crate::search::MODES },
            help: "searchless: one batched pass, play the best move (the paper); mcts: PUCT tree search on the same net",
        },
    ]
}

/// The searchless policy's move choice.
fn searchless() -> Vec<OptionDecl> {
    vec![
        OptionDecl {
            name: MOVE_CHOICE.name,
            applies: Applies::Search,
            kind: OptionKind::Combo { default: crate::search::analysis::MOVE_CHOICE_DEFAULT, vars: crate::search::analysis::MOVE_CHOICES },
            help: "searchless: q plays the move of highest Q (the paper); policy the policy head's favourite; blend Q + 0.05 ln P (nets with a policy head; others use Q)",
        },
        OptionDecl {
            name: SUCCESSOR_VALUE.name,
            applies: Applies::Search,
            kind: OptionKind::Spin { default: crate::search::analysis::SUCCESSOR_VALUE_DEFAULT, min: 0, max: 100 },
            help: "searchless, one-pass nets: percent of each move's Q taken from the net's value of the position after it (the paper's state-value policy), all in one batched pass of 1 + moves rows; 0 = one row",
        },
    ]
}

/// MCTS (and `DrawScore`, which both searches read).
fn mcts() -> Vec<OptionDecl> {
    vec![
        OptionDecl {
            name: HASH.name,
            applies: Applies::Mcts,
            kind: OptionKind::Spin { default: mcts::HASH_MB, min: 1, max: 65536 },
            help: "MCTS: MB for the cache of network results by position",
        },
        OptionDecl {
            name: CPUCT.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::C_PUCT, min: 0.0, max: 100.0 },
            help: "MCTS: c_init of c(s) = c_init + ln((1 + N + c_base)/c_base) (AlphaZero)",
        },
        OptionDecl {
            name: CPUCT_BASE.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::C_PUCT_BASE, min: 1.0, max: 1e9 },
            help: "MCTS: c_base of c(s) (AlphaZero)",
        },
        OptionDecl {
            name: FPU_REDUCTION.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::FPU_REDUCTION, min: -1.0, max: 1.0 },
            help: "MCTS: unvisited move's Q = parent Q minus this times sqrt(visited prior mass) (Lc0 FPU)",
        },
        OptionDecl {
            name: Q_INIT_VISITS.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::Q_INIT_VISITS, min: 0.0, max: 1000.0 },
            help: "MCTS: the net's Q(s, a) counts as this many visits of the move: Q = (W + k Q_net)/(N + k); 0 = off (FPU for unvisited moves)",
        },
        OptionDecl {
            name: LEAF_WDL_WEIGHT.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::LEAF_WDL_WEIGHT, min: 0.0, max: 1.0 },
            help: "MCTS: a new leaf's value = this times the WDL head's W + D/2 plus the rest times max Q; 0 = max Q alone",
        },
        OptionDecl {
            name: POLICY_TEMPERATURE.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::POLICY_TEMPERATURE, min: 0.0, max: 10.0 },
            help: "MCTS: priors = softmax(Q / this) over the top PolicyTopK moves, Q in win probability",
        },
        OptionDecl {
            name: POLICY_TOP_K.name,
            applies: Applies::Mcts,
            kind: OptionKind::Spin { default: mcts::POLICY_TOP_K, min: 0, max: 256 },
            help: "MCTS: moves that share the softmax prior (0 = all)",
        },
        OptionDecl {
            name: POLICY_UNIFORM_MIX.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::POLICY_UNIFORM_MIX, min: 0.0, max: 1.0 },
            help: "MCTS: share of the prior spread uniformly over all legal moves",
        },
        OptionDecl {
            name: POLICY_HEAD.name,
            applies: Applies::Mcts,
            kind: OptionKind::Check { default: mcts::POLICY_HEAD },
            help: "MCTS: priors from the net's policy head when it has one (multi_action_value_policy), else from Q as above",
        },
        OptionDecl {
            name: POLICY_SOFTMAX_TEMP.name,
            applies: Applies::Mcts,
            kind: OptionKind::Float { default: mcts::POLICY_SOFTMAX_TEMP, min: 0.1, max: 10.0 },
            help: "MCTS: policy-head priors = p^(1/this), renormalised (Lc0); above 1 flattens them",
        },
        OptionDecl {
            name: MOP_UP.name,
            applies: Applies::Mcts,
            kind: OptionKind::Check { default: mcts::MOP_UP },
            help: "MCTS: in K+Q/R vs K the value comes from a mop-up rule (lone king to the edge, kings together) instead of the net",
        },
        OptionDecl {
            name: DRAW_SCORE.name,
            applies: Applies::Search,
            kind: OptionKind::Spin { default: mcts::DRAW_SCORE, min: -100, max: 100 },
            help: "A draw's value for the engine, -100 (a loss) .. 100 (a win) as Lc0; negative avoids draws such as repetitions (contempt), in both search modes",
        },
        OptionDecl {
            name: MINIBATCH_SIZE.name,
            applies: Applies::Mcts,
            kind: OptionKind::Spin { default: mcts::MINIBATCH, min: 0, max: crate::model::trt_profile::MAX_ROWS },
            help: "MCTS: leaves gathered (with virtual loss) per network run; 0 = by backend (1 × Threads on the CPU, 256 on CUDA/TensorRT)",
        },
        OptionDecl {
            name: MAX_COLLISION_EVENTS.name,
            applies: Applies::Mcts,
            kind: OptionKind::Spin { default: mcts::MAX_COLLISION_EVENTS, min: 1, max: 65_536 },
            help: "MCTS: most descents onto a leaf already in the batch before the batch is sent (Lc0's); the tree size scales it down (1 in a tree under 28 visits)",
        },
    ]
}

/// Syzygy tablebases and the log file.
fn tablebases_and_log() -> Vec<OptionDecl> {
    vec![
        OptionDecl {
            name: SYZYGY_PATH.name,
            applies: Applies::Tablebases,
            kind: OptionKind::Text { default: "" },
            help:
                "Syzygy tablebase directories, separated by ':' (';' on Windows); opened when set",
        },
        OptionDecl {
            name: SYZYGY_PROBE_LIMIT.name,
            applies: Applies::Search,
            kind: OptionKind::Spin {
                default: 7,
                min: 0,
                max: 7,
            },
            help: "probe the tablebases only in positions with at most this many pieces (0: never)",
        },
        OptionDecl {
            name: SYZYGY_50_MOVE_RULE.name,
            applies: Applies::Search,
            kind: OptionKind::Check { default: true },
            help:
                "a tablebase win or loss that the 50-move rule turns into a draw counts as a draw",
        },
        OptionDecl {
            name: LOG_FILE.name,
            applies: Applies::Output,
            kind: OptionKind::Text { default: "" },
            help: "append every UCI line in (>>) and out (<<) to this file; empty disables",
        },
    ]
}
