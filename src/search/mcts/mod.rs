//! MCTS with PUCT over the same networks as the searchless policy (`SearchMode mcts`).
//!
//! The search is AlphaZero's (Silver et al., 2018, *Mastering Chess and Shogi by Self-Play*,
//! methods) driven by an action-value network as in *Mastering Board Games by External and
//! Internal Planning with Language Models* (Schultz et al., 2025):
//!
//! - **Evaluation of a node** s: one [`Evaluator`] call gives Q(s, a) ∈ [0, 1] (win probability
//!   for the side to move) for every legal move. The node's value is V(s) = max_a Q(s, a); the
//!   priors are P(s, a) = (1 − ε)·softmax(Q/τ) over the `k` best moves + ε/n over all n moves
//!   ([`priors`]; τ = `PolicyTemperature`, k = `PolicyTopK`, ε = `PolicyUniformMix`). A net with
//!   a policy head (`multi_action_value_policy`) gives the priors itself when `PolicyHead` is on:
//!   P(s, a) = (1 − ε)·p_a^(1/T)/Σ p^(1/T) + ε/n ([`head_priors`]; T = `PolicySoftmaxTemp`).
//! - **Rules, never the network, score terminal positions**: checkmate 0 for the side to move;
//!   stalemate, insufficient material and the 50-move rule 0.5 (proven); a position that occurred
//!   before in the game history or on the search path since the last irreversible move (twofold,
//!   as Lc0) 0.5 (not proven: it depends on the path). Mate in one is found at expansion.
//! - **PUCT**: a* = argmax Q(s,a) + c(s)·P(s,a)·√N(s)/(1 + N(s,a)) with
//!   c(s) = c_init + ln((1 + N(s) + c_base)/c_base) (`CPuct`, `CPuctBase`); Q of an unvisited
//!   child is the parent's Q minus `FpuReduction`·√(policy mass already visited) (Lc0's FPU).
//!   With `QInitVisits` k > 0 the action-value net's own Q(s, a) enters as k visits instead:
//!   Q = (W + k·Q_net)/(N + k), so an unvisited child starts at Q_net and its first visit blends
//!   the successor's value with Q_net as the searchless `SuccessorValue` policy does.
//!   With `LeafWdlWeight` λ > 0 a new leaf's value mixes in the net's WDL head (for a net that
//!   has one): V(s) = λ·(W + D·d) + (1 − λ)·max_a Q(s, a), d the draw's value (½ unless `DrawScore`
//!   moves it; [`leaf_value`]).
//!   Values are stored from the point of view of the player who made the move into the node, so
//!   a backup alternates v ↦ 1 − v.
//! - **Batching**: up to `MinibatchSize` leaves per network call (0: 1 a thread on the CPU, 256
//!   on a GPU, [`MctsParams::for_backend`]), kept apart by virtual loss (a visit in flight counts as a
//!   loss for the mover). A descent that reaches a leaf already in the batch is a collision: its
//!   virtual loss stays until the batch is backed up, steering later descents elsewhere, and the
//!   gathering goes on until the batch is full or [`collision_limit`] collisions happened — one
//!   in a small tree, more as it grows (Lc0's `MaxCollisionEvents` and the tree-size scaling of
//!   its `MaxCollisionVisits`).
//! - **Tablebases**: a child reached by a capture or pawn move with at most `SyzygyProbeLimit`
//!   pieces and no castling rights takes its value from the Syzygy WDL tables as a terminal (no
//!   network call; counted in `tbhits`); at the root, only the moves the tables rank best are
//!   searched (`crate::tablebase::Probe::root`).
//! - **Solver**: proven wins, losses and draws propagate up (MCTS-solver, Winands et al. 2008;
//!   Lc0's certainty propagation) with the distance to mate in plies; the best move prefers the
//!   fastest proven win and the slowest proven loss.
//! - **Reuse and cache**: the subtree after the moves played is kept ([`Tree::reuse`]); network
//!   results are cached by Zobrist hash within a byte budget ([`EvalCache`]).
//!
//! Values are win probabilities in [0, 1] throughout (0.5 = draw).

mod driver;
mod line;
mod playout;
mod tree;

pub use crate::model::cache::EvalCache;
pub use driver::{info_lines, Mcts, INFO_INTERVAL};
pub use line::RootLine;
pub use playout::{search, Limits, Progress, StopReason};
pub use tree::{Tree, MAX_NODES};

use shakmaty::zobrist::Zobrist64;
use shakmaty::{Chess, EnPassantMode, Move, Position};

/// Search parameters (UCI options of the same names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MctsParams {
    /// `CPuct`: c_init of AlphaZero's c(s) (default [`defaults::C_PUCT`]).
    pub c_puct: f32,
    /// `CPuctBase`: c_base of c(s) (default 19652).
    pub c_puct_base: f32,
    /// `FpuReduction`: an unvisited child's Q is the parent's Q minus this × √(visited policy).
    pub fpu_reduction: f32,
    /// `QInitVisits` k: the network's own Q(s, a) counts as k visits of the child, so its Q in
    /// PUCT is (W + k·Q_net)/(N + k) and an unvisited child starts at Q_net instead of the FPU
    /// value; 0 = off (AlphaZero/Lc0: visited children by W/N alone, unvisited by FPU).
    pub q_init_visits: f32,
    /// `LeafWdlWeight` λ ∈ [0, 1]: a new leaf's value is λ·(W + D·d) from the net's WDL head (d the
    /// draw's value, ½ by default) plus (1 − λ)·max_a Q(s, a) ([`leaf_value`]); 0 = max Q alone,
    /// as without a head.
    pub leaf_wdl_weight: f32,
    /// `PolicyTemperature` τ of the priors' softmax over Q (win-probability scale).
    pub policy_temperature: f32,
    /// `PolicyTopK`: moves that get softmax mass (0 = all).
    pub policy_top_k: usize,
    /// `PolicyUniformMix` ε: share of the prior spread uniformly over all legal moves.
    pub policy_uniform_mix: f32,
    /// `PolicyHead`: priors from the net's policy head when it has one ([`head_priors`]).
    pub policy_head: bool,
    /// `PolicySoftmaxTemp` T of the head's priors: p^(1/T), renormalised (Lc0).
    pub policy_softmax_temp: f32,
    /// `MinibatchSize`: leaves gathered per network call; 0 = by backend
    /// ([`MctsParams::for_backend`]; the playout loop runs an unresolved 0 as the CPU's).
    pub minibatch: usize,
    /// `MaxCollisionEvents`: the most collisions (descents that end on a leaf already in the
    /// batch) one gathering may have before its batch goes to the network; the tree size scales
    /// it down further ([`collision_limit`]). 1 = stop at the first collision.
    pub max_collision_events: u32,
    /// Whether the evaluator runs on a second thread with one batch in flight while the next
    /// is gathered ([`search`]). Not an option: [`MctsParams::for_backend`] sets it on CUDA and
    /// TensorRT, where the tree's work would otherwise leave the GPU idle (37.4 % of an MCTS
    /// search's time on an H200, `tools/device/results/h200-2026-11-26-c30.txt`); on the CPU
    /// the network has the cores.
    pub pipelined: bool,
    /// `DrawScore` / 200: how much more than 0.5 the side to move at the root values a draw
    /// (win-probability units, −0.5…0.5; the opponent's draw value is mirrored). Negative values
    /// are contempt: the engine avoids draws, e.g. repetitions, in positions it sees as level.
    /// Lc0's `DrawScore` convention (−100…100 on its [−1, 1] Q scale).
    pub draw_score: f32,
}

/// MCTS defaults, in one place: [`MctsParams::default`] and the UCI option table read them.
/// AlphaZero's c_base and a c_init chosen by SPRT ([`C_PUCT`]); seed 004's τ = 0.1, k = 5, ε = 0.05; an FPU
/// reduction chosen by SPRT ([`FPU_REDUCTION`]).
pub mod defaults {
    /// `CPuct`: 0.6 on Q in [0, 1] (AlphaZero's 1.25 is for Q in [−1, 1]; taken as is it explored
    /// twice as much). Chosen by SPRT(0, 10) at 10+0.1, `Threads 1`: 0.6 over 0.8 at `FpuReduction`
    /// 0.15 (2026-12-06, CHANGELOG.md), 0.8 over 1.25 before
    /// (`tools/results/sprt/mcts-cpuct-0.8-vs-1.25.json`, 2026-11-28).
    pub const C_PUCT: f64 = 0.6;
    /// `CPuctBase`.
    pub const C_PUCT_BASE: f64 = 19652.0;
    /// `FpuReduction`: 0.15, about Lc0's 0.33 scaled to Q in [0, 1]. 0.15 against 0.3 at 10+0.1,
    /// `Threads 1`, MCTS both: SPRT(0, 10) H1 after 1,989 games over nine runs, +20 Elo (CHANGELOG.md).
    pub const FPU_REDUCTION: f64 = 0.15;
    /// `QInitVisits`.
    pub const Q_INIT_VISITS: f64 = 0.0;
    /// `LeafWdlWeight`.
    pub const LEAF_WDL_WEIGHT: f64 = 0.0;
    /// `PolicyTemperature`.
    pub const POLICY_TEMPERATURE: f64 = 0.1;
    /// `PolicyTopK`.
    pub const POLICY_TOP_K: i64 = 5;
    /// `PolicyUniformMix`.
    pub const POLICY_UNIFORM_MIX: f64 = 0.05;
    /// `PolicyHead`.
    pub const POLICY_HEAD: bool = true;
    /// `PolicySoftmaxTemp`: chosen over 1 by SPRT at 10+0.1 (CHANGELOG.md); Lc0 uses a similar value.
    pub const POLICY_SOFTMAX_TEMP: f64 = 1.4;
    /// `MinibatchSize` (0: by backend, [`MINIBATCH_CPU_PER_THREAD`] × `Threads` or
    /// [`MINIBATCH_GPU`]).
    pub const MINIBATCH: i64 = 0;
    /// The minibatch on the CPU per `Threads`: with one thread MCTS makes as many nodes a second
    /// at 1, 2 and 4 leaves a run (`glimpse bench --mcts --nodes 200 --threads 1 --minibatch N`:
    /// 400, 382, 392), and every leaf gathered blind under virtual loss costs strength at the
    /// 150-odd playouts a move of a 10+0.1 game: 4 against 16, +506 Elo
    /// (`tools/results/sprt/mcts-minibatch-4-vs-16.json`); 1 against 4, +64 Elo (95 % +31 … +99, 300 games)
    /// (`tools/results/sprt/mcts-minibatch-1-vs-4.json`), both at 10+0.1, `Threads 1`, 2026-11-28.
    pub const MINIBATCH_CPU_PER_THREAD: usize = 1;
    /// The minibatch on CUDA and TensorRT: Lc0's default (`MinibatchSize 256`); at 16 an H200
    /// ran 13 positions a run, far from full (`tools/device/results/h200-2026-11-26-c30.txt`).
    pub const MINIBATCH_GPU: usize = 256;
    /// `MaxCollisionEvents` (Lc0's default).
    pub const MAX_COLLISION_EVENTS: i64 = 917;
    /// Lc0's `MaxCollisionVisits`: the collision limit once the tree is
    /// [`COLLISION_SCALING_END`] visits large.
    pub const MAX_COLLISION_VISITS: f64 = 80_000.0;
    /// Lc0's `MaxCollisionVisitsScalingStart`: up to this many root visits one collision ends
    /// the gathering.
    pub const COLLISION_SCALING_START: f64 = 28.0;
    /// Lc0's `MaxCollisionVisitsScalingEnd`.
    pub const COLLISION_SCALING_END: f64 = 145_000.0;
    /// Lc0's `MaxCollisionVisitsScalingPower`.
    pub const COLLISION_SCALING_POWER: f64 = 1.25;
    /// `DrawScore` (Lc0 scale, −100…100).
    pub const DRAW_SCORE: i64 = 0;
    /// `MopUp`.
    pub const MOP_UP: bool = true;
    /// `Hash` (MB).
    pub const HASH_MB: i64 = 64;
}

impl Default for MctsParams {
    /// The values of [`defaults`].
    fn default() -> MctsParams {
        MctsParams {
            c_puct: defaults::C_PUCT as f32,
            c_puct_base: defaults::C_PUCT_BASE as f32,
            fpu_reduction: defaults::FPU_REDUCTION as f32,
            q_init_visits: defaults::Q_INIT_VISITS as f32,
            leaf_wdl_weight: defaults::LEAF_WDL_WEIGHT as f32,
            policy_temperature: defaults::POLICY_TEMPERATURE as f32,
            policy_top_k: defaults::POLICY_TOP_K as usize,
            policy_uniform_mix: defaults::POLICY_UNIFORM_MIX as f32,
            policy_head: defaults::POLICY_HEAD,
            policy_softmax_temp: defaults::POLICY_SOFTMAX_TEMP as f32,
            minibatch: defaults::MINIBATCH as usize,
            max_collision_events: defaults::MAX_COLLISION_EVENTS as u32,
            pipelined: false,
            draw_score: defaults::DRAW_SCORE as f32 / 200.0,
        }
    }
}

impl MctsParams {
    /// These parameters with `MinibatchSize 0` resolved for the backend the net runs on and its
    /// `threads`: [`defaults::MINIBATCH_CPU_PER_THREAD`] × `threads` on the CPU,
    /// [`defaults::MINIBATCH_GPU`] on CUDA and TensorRT (Lc0's `MinibatchSize 0`, the backend's
    /// choice; a set minibatch stays), and [`MctsParams::pipelined`] on for a GPU.
    pub fn for_backend(mut self, backend: crate::model::Backend, threads: usize) -> MctsParams {
        self.pipelined = backend != crate::model::Backend::Cpu;
        if self.minibatch == 0 {
            self.minibatch = match backend {
                crate::model::Backend::Cpu => defaults::MINIBATCH_CPU_PER_THREAD * threads.max(1),
                crate::model::Backend::Cuda | crate::model::Backend::TensorRt => {
                    defaults::MINIBATCH_GPU
                }
            };
        }
        self
    }
}

/// The most collisions one gathering may have when the root has `root_visits` visits:
/// 1 up to [`defaults::COLLISION_SCALING_START`] visits, then
/// 1 + (V − 1)·r^p with r = (N − start)/(end − start) clamped to [0, 1], V =
/// [`defaults::MAX_COLLISION_VISITS`] and p = [`defaults::COLLISION_SCALING_POWER`] (Lc0's
/// collision-visit scaling, each collision here being one visit), and never more than
/// `max_events` (`MaxCollisionEvents`, at least 1). About 3 at 64 visits, 47 at 400, 280 at
/// 1,600: a young tree, where collisions crowd on few lines, sends small batches; a grown one
/// fills large GPU batches.
pub fn collision_limit(root_visits: u32, max_events: u32) -> u32 {
    use defaults::*;
    let r = ((f64::from(root_visits) - COLLISION_SCALING_START)
        / (COLLISION_SCALING_END - COLLISION_SCALING_START))
        .clamp(0.0, 1.0);
    let scaled = 1.0 + (MAX_COLLISION_VISITS - 1.0) * r.powf(COLLISION_SCALING_POWER);
    (scaled.floor() as u32).clamp(1, max_events.max(1))
}

/// A game-theoretic value proven by the rules, from the point of view of the side to move at the
/// node; the number is the distance to the end in plies (a checkmated node is `Loss(0)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proven {
    /// Not proven.
    Unknown,
    /// The side to move wins (mates in this many plies).
    Win(u16),
    /// The side to move loses (is mated after this many plies).
    Loss(u16),
    /// A draw whatever is played.
    Draw,
}

impl Proven {
    /// The value of a proven node for its side to move.
    pub fn value(self) -> Option<f32> {
        match self {
            Proven::Unknown => None,
            Proven::Win(_) => Some(1.0),
            Proven::Loss(_) => Some(0.0),
            Proven::Draw => Some(0.5),
        }
    }
}

pub(crate) const NONE: u32 = u32::MAX;

/// One node of the tree (an edge and its child, Lc0 style): the move into it and its statistics.
#[derive(Debug, Clone)]
pub struct Node {
    /// Move from the parent (`None` at the root).
    pub mv: Option<Move>,
    parent: u32,
    first_child: u32,
    num_children: u32,
    expanded: bool,
    /// P(parent, mv).
    pub prior: f32,
    /// Q(parent, mv) from the network (or the rules), parent's side to move.
    pub net_q: f32,
    /// Completed visits.
    pub n: u32,
    /// Visits in flight (virtual loss).
    vl: u32,
    /// Sum of backed-up values from the point of view of the player who moved into this node.
    w: f64,
    /// Draw by repetition against the path and game history (value 0.5, not proven).
    repetition: bool,
    /// Tablebase outcome for the side to move, probed after a capture or pawn move (1 win,
    /// 0 draw, −1 loss): a terminal that is never expanded (not proven: no mate distance).
    tb: Option<i8>,
    /// Solver state, from the point of view of the side to move at this node.
    pub proven: Proven,
}

impl Node {
    pub(crate) fn new(mv: Option<Move>, parent: u32) -> Node {
        Node {
            mv,
            parent,
            first_child: NONE,
            num_children: 0,
            expanded: false,
            prior: 0.0,
            net_q: 0.5,
            n: 0,
            vl: 0,
            w: 0.0,
            repetition: false,
            tb: None,
            proven: Proven::Unknown,
        }
    }

    /// Mean value for the player who moved into this node (`None` before the first visit).
    pub fn q(&self) -> Option<f64> {
        (self.n > 0).then(|| self.w / f64::from(self.n))
    }
}

/// Zobrist hash of a position (legal en-passant squares only, as the repetition rule).
pub fn position_hash(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

/// P(s, a) = (1 − ε)·softmax(Q/τ) over the `top_k` largest Q + ε/n (Schultz et al. 2025's prior
/// from an action-value model). `top_k` 0 means all moves; τ ≤ 0 puts the softmax mass on the
/// best move(s). Returns n priors summing to 1.
pub fn priors(q: &[f32], temperature: f32, top_k: usize, uniform_mix: f32) -> Vec<f32> {
    let n = q.len();
    if n == 0 {
        return Vec::new();
    }
    let eps = uniform_mix.clamp(0.0, 1.0);
    let k = if top_k == 0 { n } else { top_k.min(n) };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| q[b].total_cmp(&q[a]).then(a.cmp(&b)));
    let top = &order[..k];
    let max = q[top[0]];
    let weights: Vec<f64> = top
        .iter()
        .map(|&i| {
            if temperature > 0.0 {
                (f64::from(q[i] - max) / f64::from(temperature)).exp()
            } else if q[i] == max {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let total: f64 = weights.iter().sum();
    let mut p = vec![eps / n as f32; n];
    for (&i, w) in top.iter().zip(weights) {
        p[i] += ((1.0 - f64::from(eps)) * w / total) as f32;
    }
    p
}

/// P(s, a) from a policy head: (1 − ε)·p_a^(1/T) / Σ_b p_b^(1/T) + ε/n (Lc0's policy softmax
/// temperature T; ε = `PolicyUniformMix`). `policy` holds probabilities; a non-finite or
/// all-zero input gives the uniform prior. Returns n priors summing to 1.
pub fn head_priors(policy: &[f32], softmax_temp: f32, uniform_mix: f32) -> Vec<f32> {
    let n = policy.len();
    if n == 0 {
        return Vec::new();
    }
    let eps = f64::from(uniform_mix.clamp(0.0, 1.0));
    let inv_t = 1.0 / f64::from(softmax_temp.max(1e-3));
    let weights: Vec<f64> = policy
        .iter()
        .map(|&p| f64::from(p.max(0.0)).powf(inv_t))
        .collect();
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return vec![1.0 / n as f32; n];
    }
    weights
        .iter()
        .map(|w| ((1.0 - eps) * w / total + eps / n as f64) as f32)
        .collect()
}

/// A new leaf's value for its side to move, in [0, 1]: λ·(W + D·d) + (1 − λ)·max_a Q(s, a), with
/// `q` the children's values (rule values included), `wdl` the WDL head's `[win, draw, loss]`,
/// d = `draw` the side to move's value of a draw (0.5, or moved by `DrawScore`) and λ = `weight`
/// clamped to [0, 1]. Max Q alone when λ is 0, without a head (`None`) or when a child is a win
/// for the mover (Q 1: mate in one, a won tablebase ending), which the rules prove. AlphaZero and
/// Lc0 back up their value head's V(s); the action-value net's max Q ([`Tree`]'s default)
/// answers the same question from the moves.
pub fn leaf_value(q: &[f32], wdl: Option<[f32; 3]>, weight: f32, draw: f32) -> f32 {
    let max_q = q.iter().copied().fold(0.0, f32::max);
    let weight = weight.clamp(0.0, 1.0);
    match wdl {
        Some([w, d, _]) if weight > 0.0 && max_q < 1.0 && (w + draw * d).is_finite() => {
            weight * (w + draw * d).clamp(0.0, 1.0) + (1.0 - weight) * max_q
        }
        _ => max_q,
    }
}

/// AlphaZero's exploration rate c(s) = c_init + ln((1 + N(s) + c_base)/c_base).
pub fn c_puct(params: &MctsParams, parent_visits: f64) -> f64 {
    f64::from(params.c_puct)
        + ((1.0 + parent_visits + f64::from(params.c_puct_base)) / f64::from(params.c_puct_base))
            .ln()
}

/// The PUCT score Q + c(s)·P·√N(s)/(1 + N(s, a)).
pub fn puct_score(q: f64, prior: f32, c: f64, parent_visits: f64, child_visits: f64) -> f64 {
    q + c * f64::from(prior) * parent_visits.sqrt() / (1.0 + child_visits)
}

#[cfg(test)]
mod tests;
