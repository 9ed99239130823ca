//! MCTS with PUCT over the same networks as the searchless policy (`SearchMode mcts`).
//!
//! The search is AlphaZero's (Silver et al., 2018, *Mastering Chess and Shogi by Self-Play*,
//! methods) driven by an action-value network as in *Mastering Board Games by External and
//! Internal Planning with Language Models* (Schultz et al., 2025):
//!
//! - **Evaluation of a node** s: one [`Evaluator`] call gives Q(s, a) ∈ [0, 1] (win probability
//!   for the side to move) for every legal move. The node's value is V(s) = max_a Q(s, a); the
//!   priors are P(s, a) = (1 − ε)·softmax(Q/τ) over the `k` best moves + ε/n over all n moves
//!   ([`priors`]; τ = `PolicyTemperature`, k = `PolicyTopK`, ε = `PolicyUniformMix`).
//! - **Rules, never the network, score terminal positions**: checkmate 0 for the side to move;
//!   stalemate, insufficient material and the 50-move rule 0.5 (proven); a position that occurred
//!   before in the game history or on the search path since the last irreversible move (twofold,
//!   as Lc0) 0.5 (not proven: it depends on the path). Mate in one is found at expansion.
//! - **PUCT**: a* = argmax Q(s,a) + c(s)·P(s,a)·√N(s)/(1 + N(s,a)) with
//!   c(s) = c_init + ln((1 + N(s) + c_base)/c_base) (`CPuct`, `CPuctBase`); Q of an unvisited
//!   child is the parent's Q minus `FpuReduction`·√(policy mass already visited) (Lc0's FPU).
//!   Values are stored from the point of view of the player who made the move into the node, so
//!   a backup alternates v ↦ 1 − v.
//! - **Batching**: up to `MinibatchSize` leaves per network call, kept apart by virtual loss
//!   (a visit in flight counts as a loss for the mover); a leaf selected twice ends the gathering.
//! - **Solver**: proven wins, losses and draws propagate up (MCTS-solver, Winands et al. 2008;
//!   Lc0's certainty propagation) with the distance to mate in plies; the best move prefers the
//!   fastest proven win and the slowest proven loss.
//! - **Reuse and cache**: the subtree after the moves played is kept ([`Tree::reuse`]); network
//!   results are cached by Zobrist hash within a byte budget ([`EvalCache`]).
//!
//! Values are win probabilities in [0, 1] throughout (0.5 = draw).

use super::evaluator::{EvalRequest, EvalStats, Evaluator};
use crate::game::{python_fen, Game};
use crate::model::ModelError;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{Chess, EnPassantMode, Move, Position};
use std::collections::HashMap;
use std::time::Instant;

/// Search parameters (UCI options of the same names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MctsParams {
    /// `CPuct`: c_init of AlphaZero's c(s) (default 1.25).
    pub c_puct: f32,
    /// `CPuctBase`: c_base of c(s) (default 19652).
    pub c_puct_base: f32,
    /// `FpuReduction`: an unvisited child's Q is the parent's Q minus this × √(visited policy).
    pub fpu_reduction: f32,
    /// `PolicyTemperature` τ of the priors' softmax over Q (win-probability scale).
    pub policy_temperature: f32,
    /// `PolicyTopK`: moves that get softmax mass (0 = all).
    pub policy_top_k: usize,
    /// `PolicyUniformMix` ε: share of the prior spread uniformly over all legal moves.
    pub policy_uniform_mix: f32,
    /// `MinibatchSize`: leaves gathered per network call.
    pub minibatch: usize,
    /// `DrawScore` / 200: how much more than 0.5 the side to move at the root values a draw
    /// (win-probability units, −0.5…0.5; the opponent's draw value is mirrored). Negative values
    /// are contempt: the engine avoids draws, e.g. repetitions, in positions it sees as level.
    /// Lc0's `DrawScore` convention (−100…100 on its [−1, 1] Q scale).
    pub draw_score: f32,
}

impl Default for MctsParams {
    /// AlphaZero's c_init/c_base; seed 004's τ = 0.1, k = 5, ε = 0.05; FPU reduction 0.3 as Lc0's
    /// default scaled to [0, 1] values (Lc0 uses 0.33 on [−1, 1]: ≈ 0.16; a stronger reduction
    /// suits the sharp priors here).
    fn default() -> MctsParams {
        MctsParams {
            c_puct: 1.25,
            c_puct_base: 19652.0,
            fpu_reduction: 0.3,
            policy_temperature: 0.1,
            policy_top_k: 5,
            policy_uniform_mix: 0.05,
            minibatch: 16,
            draw_score: 0.0,
        }
    }
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

const NONE: u32 = u32::MAX;

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
    /// Solver state, from the point of view of the side to move at this node.
    pub proven: Proven,
}

impl Node {
    fn new(mv: Option<Move>, parent: u32) -> Node {
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

/// Network results by position hash, within a byte budget (`Hash`, MB). When full it is
/// cleared (the tree keeps what the current search needs).
#[derive(Debug, Default)]
pub struct EvalCache {
    map: HashMap<u64, Box<[f32]>>,
    bytes: usize,
    budget: usize,
    /// Lookups that found an entry.
    pub hits: u64,
    /// Lookups.
    pub lookups: u64,
}

/// Approximate bytes one cache entry with `n` values takes.
fn entry_bytes(n: usize) -> usize {
    48 + 4 * n
}

impl EvalCache {
    /// An empty cache of at most `budget_bytes`.
    pub fn new(budget_bytes: usize) -> EvalCache {
        EvalCache {
            budget: budget_bytes,
            ..EvalCache::default()
        }
    }

    /// Changes the budget (clears if the content no longer fits).
    pub fn set_budget(&mut self, budget_bytes: usize) {
        self.budget = budget_bytes;
        if self.bytes > self.budget {
            self.clear();
        }
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }

    /// The Q values stored for `hash` if they have `n` entries.
    pub fn get(&mut self, hash: u64, n: usize) -> Option<&[f32]> {
        self.lookups += 1;
        let found = self.map.get(&hash).filter(|v| v.len() == n);
        if found.is_some() {
            self.hits += 1;
        }
        found.map(|v| &v[..])
    }

    /// Stores `q` for `hash` (clears first when the budget would be exceeded).
    pub fn insert(&mut self, hash: u64, q: &[f32]) {
        let cost = entry_bytes(q.len());
        if cost > self.budget {
            return;
        }
        if self.bytes + cost > self.budget {
            self.clear();
        }
        if self.map.insert(hash, q.into()).is_none() {
            self.bytes += cost;
        }
    }

    /// Fill in per mille (UCI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        if self.budget == 0 {
            return 0;
        }
        ((self.bytes as u128 * 1000) / self.budget as u128).min(1000) as u32
    }

    /// Entries stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// The search tree: an arena of nodes rooted at a game position.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    root_pos: Chess,
    /// Hashes of the game's positions before the root, oldest first (repetition detection).
    history: Vec<u64>,
    /// The game the root belongs to: start position (FEN) and moves, for reuse.
    start_fen: String,
    moves: Vec<Move>,
    chess960: bool,
    /// The `MctsParams::draw_score` the statistics were gathered with.
    draw_score: f32,
}

/// Most nodes a tree may hold (56 bytes each, so about 560 MB; a child is a node, so this is
/// reached after roughly 300,000 expansions, minutes of `go infinite` on a CPU). The search
/// stops there (Lc0's RAM limit plays the same role).
pub const MAX_NODES: usize = 10_000_000;

impl Tree {
    /// A fresh tree at the game's current position.
    pub fn new(game: &Game) -> Tree {
        let positions = game.positions();
        let history = positions[..positions.len() - 1]
            .iter()
            .map(position_hash)
            .collect();
        Tree {
            nodes: vec![Node::new(None, NONE)],
            root_pos: game.position().clone(),
            history,
            start_fen: python_fen(game.start_position()),
            moves: game.moves().to_vec(),
            chess960: game.chess960(),
            draw_score: 0.0,
        }
    }

    /// The value of a draw for the side to move at a node `depth` plies below the root:
    /// 0.5 + `draw_score` for the root's side, 0.5 − `draw_score` for the opponent.
    fn draw_value(&self, depth: usize) -> f32 {
        if depth.is_multiple_of(2) {
            0.5 + self.draw_score
        } else {
            0.5 - self.draw_score
        }
    }

    /// The exact value of a proven node `depth` plies below the root for its side to move (a
    /// draw counts with the draw score); `None` when not proven.
    fn proven_value(&self, proven: Proven, depth: usize) -> Option<f32> {
        match proven {
            Proven::Draw => Some(self.draw_value(depth)),
            p => p.value(),
        }
    }

    /// Plies from the root to node `idx`.
    fn depth_of(&self, mut idx: u32) -> usize {
        let mut depth = 0;
        while idx != 0 {
            idx = self.nodes[idx as usize].parent;
            depth += 1;
        }
        depth
    }

    /// Starts the statistics afresh (same root and game) when they were gathered with another
    /// draw score.
    fn use_draw_score(&mut self, draw_score: f32) {
        if self.draw_score != draw_score {
            self.nodes = vec![Node::new(None, NONE)];
            self.draw_score = draw_score;
        }
    }

    /// Re-roots the tree at the game's current position if it lies below the current root (the
    /// moves played since are edges of the tree), keeping that subtree; otherwise starts a fresh
    /// tree. Returns the number of visits kept.
    pub fn reuse(&mut self, game: &Game) -> u32 {
        let same_game = game.chess960() == self.chess960
            && game.moves().len() >= self.moves.len()
            && game.moves()[..self.moves.len()] == self.moves[..]
            && python_fen(game.start_position()) == self.start_fen;
        let mut at = 0u32;
        if same_game {
            for mv in &game.moves()[self.moves.len()..] {
                match self.child_by_move(at, mv) {
                    Some(c) => at = c,
                    None => {
                        at = NONE;
                        break;
                    }
                }
            }
        } else {
            at = NONE;
        }
        // Draw values are relative to the root's side: with a draw score, a new root whose
        // other side is to move cannot keep them.
        let flipped = self.draw_score != 0.0 && game.position().turn() != self.root_pos.turn();
        if at == NONE || flipped || (at != 0 && !self.nodes[at as usize].expanded) {
            *self = Tree::new(game);
            return 0;
        }
        if at != 0 {
            self.nodes = self.copy_subtree(at);
        }
        let fresh = Tree::new(game);
        self.root_pos = fresh.root_pos;
        self.history = fresh.history;
        self.moves = fresh.moves;
        // The root's repetition flag and proof were relative to the old path; recompute lazily.
        let root = &mut self.nodes[0];
        root.mv = None;
        root.parent = NONE;
        root.repetition = false;
        root.n
    }

    /// The subtree at `at` as a new arena with `at` as index 0 (breadth-first, so each parent's
    /// children stay contiguous).
    fn copy_subtree(&self, at: u32) -> Vec<Node> {
        let mut out: Vec<Node> = vec![self.nodes[at as usize].clone()];
        out[0].parent = NONE;
        let mut queue = vec![(at, 0u32)];
        let mut head = 0;
        while head < queue.len() {
            let (old, new) = queue[head];
            head += 1;
            let (first, count) = {
                let n = &self.nodes[old as usize];
                (n.first_child, n.num_children)
            };
            if first == NONE {
                continue;
            }
            let new_first = out.len() as u32;
            for i in 0..count {
                let mut c = self.nodes[(first + i) as usize].clone();
                c.parent = new;
                if c.first_child != NONE {
                    queue.push((first + i, new_first + i));
                }
                c.first_child = NONE;
                c.num_children = 0;
                out.push(c);
            }
            let p = &mut out[new as usize];
            p.first_child = new_first;
            p.num_children = count;
        }
        out
    }

    fn child_by_move(&self, idx: u32, mv: &Move) -> Option<u32> {
        self.children(idx)
            .find(|&c| self.nodes[c as usize].mv.as_ref() == Some(mv))
    }

    /// Child indices of `idx`.
    fn children(&self, idx: u32) -> impl Iterator<Item = u32> + '_ {
        let n = &self.nodes[idx as usize];
        let first = n.first_child;
        (0..n.num_children).map(move |i| first + i)
    }

    /// The root node.
    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// The root position.
    pub fn root_position(&self) -> &Chess {
        &self.root_pos
    }

    /// Nodes in the arena.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree has only its root, unexpanded.
    pub fn is_empty(&self) -> bool {
        !self.nodes[0].expanded
    }

    /// The root's children (node references), in move-generation order.
    pub fn root_children(&self) -> Vec<&Node> {
        self.children(0).map(|c| &self.nodes[c as usize]).collect()
    }

    /// Creates the children of `idx` (position `pos`, `stack` = hashes of the positions before it
    /// and of `pos` itself, oldest first) from the network's Q values for `moves`; terminal
    /// children get their rule values (a draw: [`Tree::draw_value`]). Returns
    /// V(s) = max_a Q(s, a) for the side to move.
    fn expand(
        &mut self,
        idx: u32,
        pos: &Chess,
        stack: &[u64],
        moves: &[Move],
        q: &[f32],
        params: &MctsParams,
    ) -> f32 {
        debug_assert_eq!(moves.len(), q.len());
        let mut q = q.to_vec();
        let draw = self.draw_value(self.depth_of(idx));
        let mut children = Vec::with_capacity(moves.len());
        for (i, mv) in moves.iter().enumerate() {
            let mut child = pos.clone();
            child.play_unchecked(*mv);
            let mut node = Node::new(Some(*mv), idx);
            if child.is_checkmate() {
                node.proven = Proven::Loss(0);
                q[i] = 1.0;
            } else if child.halfmoves() >= 100
                || child.is_insufficient_material()
                || child.is_stalemate()
            {
                node.proven = Proven::Draw;
                q[i] = draw;
            } else {
                let h = position_hash(&child);
                let window = (child.halfmoves() as usize).min(stack.len());
                if stack[stack.len() - window..].contains(&h) {
                    node.repetition = true;
                    q[i] = draw;
                }
            }
            node.net_q = q[i];
            children.push(node);
        }
        let p = priors(
            &q,
            params.policy_temperature,
            params.policy_top_k,
            params.policy_uniform_mix,
        );
        for (node, prior) in children.iter_mut().zip(p) {
            node.prior = prior;
        }
        let first = self.nodes.len() as u32;
        let count = children.len() as u32;
        self.nodes.extend(children);
        let n = &mut self.nodes[idx as usize];
        n.first_child = first;
        n.num_children = count;
        n.expanded = true;
        q.iter().copied().fold(0.0, f32::max)
    }

    /// The PUCT choice among the children of `idx` (`depth` plies below the root; `filter`:
    /// allowed moves at the root, empty = all). Proven children count with their exact value.
    fn select_child(
        &self,
        idx: u32,
        depth: usize,
        params: &MctsParams,
        filter: &[Move],
    ) -> Option<u32> {
        let node = &self.nodes[idx as usize];
        let parent_visits = f64::from(node.n + node.vl);
        // The parent's value for its side to move (its own w is from the other side's view).
        let parent_q = node.q().map_or(0.5, |q| 1.0 - q);
        let visited_policy: f64 = self
            .children(idx)
            .map(|c| &self.nodes[c as usize])
            .filter(|c| c.n + c.vl > 0)
            .map(|c| f64::from(c.prior))
            .sum();
        let fpu = parent_q - f64::from(params.fpu_reduction) * visited_policy.sqrt();
        let c = c_puct(params, parent_visits);
        let mut best: Option<(f64, u32)> = None;
        for ci in self.children(idx) {
            let child = &self.nodes[ci as usize];
            if !filter.is_empty() && child.mv.is_some_and(|m| !filter.contains(&m)) {
                continue;
            }
            let visits = f64::from(child.n + child.vl);
            let q = match child.proven {
                // The child's side to move is mated: a win for the chooser.
                Proven::Loss(_) => 1.0,
                Proven::Win(_) => 0.0,
                Proven::Draw => f64::from(self.draw_value(depth)),
                Proven::Unknown if visits > 0.0 => child.w / visits,
                Proven::Unknown => fpu,
            };
            let score = puct_score(q, child.prior, c, parent_visits, visits);
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, ci));
            }
        }
        best.map(|(_, i)| i)
    }

    /// Descends from the root by PUCT, adding a virtual visit to every node on the way.
    fn select_leaf(&mut self, params: &MctsParams, filter: &[Move]) -> Leaf {
        let mut path = vec![0u32];
        let mut pos = self.root_pos.clone();
        let mut stack = self.history.clone();
        stack.push(position_hash(&pos));
        self.nodes[0].vl += 1;
        let mut idx = 0u32;
        loop {
            let node = &self.nodes[idx as usize];
            let depth = path.len() - 1;
            if idx != 0 {
                if node.repetition {
                    let value = self.draw_value(depth);
                    return Leaf::Value { path, value };
                }
                if let Some(value) = self.proven_value(node.proven, depth) {
                    return Leaf::Value { path, value };
                }
            }
            if !node.expanded {
                if node.vl > 1 {
                    return Leaf::Collision { path };
                }
                return Leaf::Eval { path, pos, stack };
            }
            let filter = if idx == 0 { filter } else { &[] };
            let Some(child) = self.select_child(idx, depth, params, filter) else {
                // An expanded node without children is a terminal the rules scored.
                let value = self
                    .proven_value(node.proven, depth)
                    .unwrap_or_else(|| self.draw_value(depth));
                return Leaf::Value { path, value };
            };
            let mv = self.nodes[child as usize].mv.expect("children have moves");
            pos.play_unchecked(mv);
            stack.push(position_hash(&pos));
            self.nodes[child as usize].vl += 1;
            path.push(child);
            idx = child;
        }
    }

    /// Removes the virtual visits of a playout that was abandoned.
    fn undo_virtual(&mut self, path: &[u32]) {
        for &i in path {
            let n = &mut self.nodes[i as usize];
            n.vl = n.vl.saturating_sub(1);
        }
    }

    /// Backs up `value` (for the side to move at the leaf, the last node of `path`) and
    /// propagates proofs upwards.
    fn backup(&mut self, path: &[u32], value: f32) {
        let mut v = f64::from(value);
        for &i in path.iter().rev() {
            let n = &mut self.nodes[i as usize];
            n.vl = n.vl.saturating_sub(1);
            n.n += 1;
            n.w += 1.0 - v;
            v = 1.0 - v;
        }
        for &i in path.iter().rev() {
            if !self.update_proven(i) {
                break;
            }
        }
    }

    /// MCTS-solver rule at `idx`: a child lost for its side to move proves a win (shortest
    /// mate); all children proven and none lost proves a draw if one is drawn, else a loss
    /// (longest resistance). Returns whether the node's proof changed.
    fn update_proven(&mut self, idx: u32) -> bool {
        let node = &self.nodes[idx as usize];
        if node.proven != Proven::Unknown || !node.expanded || node.num_children == 0 {
            return false;
        }
        let mut win: Option<u16> = None;
        let mut all_proven = true;
        let mut any_draw = false;
        let mut longest_loss = 0u16;
        for c in self.children(idx) {
            match self.nodes[c as usize].proven {
                Proven::Loss(p) => win = Some(win.map_or(p + 1, |w| w.min(p + 1))),
                Proven::Win(p) => longest_loss = longest_loss.max(p + 1),
                Proven::Draw => any_draw = true,
                Proven::Unknown => all_proven = false,
            }
        }
        let proven = match win {
            Some(p) => Proven::Win(p),
            None if all_proven && any_draw => Proven::Draw,
            None if all_proven => Proven::Loss(longest_loss),
            None => return false,
        };
        self.nodes[idx as usize].proven = proven;
        true
    }

    /// Orders the children of `idx` best first for play and the PV: proven wins for the chooser
    /// (fastest first), then unproven and drawn moves by visits and Q, then proven losses (slowest
    /// first).
    fn ranked_children(&self, idx: u32, filter: &[Move]) -> Vec<u32> {
        let mut c: Vec<u32> = self
            .children(idx)
            .filter(|&ci| {
                filter.is_empty()
                    || self.nodes[ci as usize]
                        .mv
                        .is_some_and(|m| filter.contains(&m))
            })
            .collect();
        let key = |i: u32| {
            let n = &self.nodes[i as usize];
            let q = n.q().unwrap_or(f64::from(n.net_q));
            match n.proven {
                Proven::Loss(p) => (2, -f64::from(p), 0.0),
                Proven::Win(p) => (0, f64::from(p), 0.0),
                _ => (1, f64::from(n.n), q),
            }
        };
        c.sort_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            kb.0.cmp(&ka.0)
                .then(kb.1.total_cmp(&ka.1))
                .then(kb.2.total_cmp(&ka.2))
                .then(a.cmp(&b))
        });
        c
    }

    /// The principal variation from child `idx` on: its move, then the best child of each
    /// visited node.
    fn pv_from(&self, mut idx: u32) -> Vec<Move> {
        let mut pv = Vec::new();
        loop {
            let node = &self.nodes[idx as usize];
            pv.push(node.mv.expect("children have moves"));
            if pv.len() >= 64 {
                break;
            }
            match self.ranked_children(idx, &[]).first() {
                Some(&c)
                    if self.nodes[c as usize].n > 0
                        || self.nodes[c as usize].proven != Proven::Unknown =>
                {
                    idx = c
                }
                _ => break,
            }
        }
        pv
    }

    /// The root's moves best first (at most `count`; `filter` as for `go searchmoves`), each with
    /// its statistics and PV.
    pub fn lines(&self, filter: &[Move], count: usize) -> Vec<RootLine> {
        self.ranked_children(0, filter)
            .into_iter()
            .take(count)
            .map(|i| {
                let n = &self.nodes[i as usize];
                RootLine {
                    mv: n.mv.expect("children have moves"),
                    visits: n.n,
                    q: n.q().unwrap_or(f64::from(n.net_q)),
                    proven: n.proven,
                    pv: self.pv_from(i),
                }
            })
            .collect()
    }
}

/// One root move as reported: visits, Q for the side to move at the root, proof of the child
/// position (its side to move's view) and the principal variation starting with the move.
#[derive(Debug, Clone)]
pub struct RootLine {
    /// The root move.
    pub mv: Move,
    /// Completed visits N(root, mv).
    pub visits: u32,
    /// Q(root, mv) ∈ [0, 1] for the side to move at the root (the network's Q before a visit).
    pub q: f64,
    /// Proof of the position after the move, from the opponent's point of view.
    pub proven: Proven,
    /// Moves from the root, starting with `mv`.
    pub pv: Vec<Move>,
}

impl RootLine {
    /// `score mate N` moves for the side to move at the root (positive: it mates), when proven.
    pub fn mate(&self) -> Option<i32> {
        match self.proven {
            Proven::Loss(p) => Some((i32::from(p) + 2) / 2),
            Proven::Win(p) => Some(-((i32::from(p) + 1) / 2)),
            _ => None,
        }
    }

    /// Value for the side to move at the root (exact when proven).
    pub fn value(&self) -> f64 {
        match self.proven {
            Proven::Loss(_) => 1.0,
            Proven::Win(_) => 0.0,
            Proven::Draw => 0.5,
            Proven::Unknown => self.q,
        }
    }
}

/// Where a descent ended.
enum Leaf {
    /// An unexpanded node to evaluate with the network.
    Eval {
        path: Vec<u32>,
        pos: Chess,
        stack: Vec<u64>,
    },
    /// A node with a known value (terminal, proven or repetition).
    Value { path: Vec<u32>, value: f32 },
    /// An unexpanded node already waiting for the network in this minibatch.
    Collision { path: Vec<u32> },
}

/// A leaf waiting for the network: path, hash stack and its hash (its position and moves are
/// in the matching [`EvalRequest`]).
type PendingLeaf = (Vec<u32>, Vec<u64>, u64);

/// Limits of one search; the poll callback may change them (e.g. `ponderhit` sets a deadline).
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// `go nodes N`: playouts in this search.
    pub playouts: Option<u64>,
    /// `go depth D`: stop when the mean playout depth reaches D (as Lc0).
    pub depth: Option<u32>,
    /// Stop at this instant (the move's optimum time).
    pub deadline: Option<Instant>,
    /// `go infinite` or pondering: no early stop, no one-move shortcut.
    pub infinite: bool,
    /// `go searchmoves`: root moves allowed (empty: all).
    pub searchmoves: Vec<Move>,
}

/// What a search did so far.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// When the search started.
    pub start: Instant,
    /// Playouts completed in this search (UCI `nodes` counts the root's visits, reused ones too).
    pub playouts: u64,
    /// Sum of playout depths (plies below the root).
    pub depth_sum: u64,
    /// Deepest playout.
    pub seldepth: u32,
    /// Descents that hit a leaf already in flight.
    pub collisions: u64,
    /// Network counters of this search.
    pub eval: EvalStats,
    /// The evaluation cache's fill, per mille (UCI `hashfull`).
    pub hashfull: u32,
    /// Wall time of the last minibatch (gather, network, backup): a deadline is not started
    /// on when less than this is left.
    pub last_batch: std::time::Duration,
}

impl Progress {
    /// Mean playout depth, at least 1 once a playout is done.
    pub fn mean_depth(&self) -> u32 {
        if self.playouts == 0 {
            0
        } else {
            ((self.depth_sum as f64 / self.playouts as f64).round() as u32).max(1)
        }
    }

    /// Playouts per second.
    pub fn nps(&self) -> u64 {
        let s = self.start.elapsed().as_secs_f64();
        if s > 0.0 {
            (self.playouts as f64 / s) as u64
        } else {
            0
        }
    }
}

/// Why a search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// Playout, depth or time limit.
    Limit,
    /// The best move cannot change within the remaining budget.
    Decided,
    /// The root is proven.
    Proven,
    /// The poll callback asked to stop (`stop`, `quit`).
    Signal,
    /// Only one legal move (timed search).
    OnlyMove,
    /// [`MAX_NODES`] reached.
    TreeFull,
    /// The network failed; the tree so far stands.
    Error(String),
}

/// Runs playouts from the tree's root until a limit, a proof or the poll callback stops it.
/// `poll` runs after every minibatch with the tree, the limits (mutable) and the progress, and
/// returns `true` to stop. The root must have legal moves.
pub fn search(
    tree: &mut Tree,
    cache: &mut EvalCache,
    evaluator: &mut dyn Evaluator,
    params: &MctsParams,
    limits: &mut Limits,
    poll: &mut dyn FnMut(&Tree, &mut Limits, &Progress) -> bool,
) -> (StopReason, Progress) {
    let base = evaluator.stats();
    let mut progress = Progress {
        start: Instant::now(),
        playouts: 0,
        depth_sum: 0,
        seldepth: 0,
        collisions: 0,
        eval: EvalStats::default(),
        hashfull: cache.hashfull(),
        last_batch: std::time::Duration::ZERO,
    };
    let minibatch = params.minibatch.max(1);
    tree.use_draw_score(params.draw_score.clamp(-0.5, 0.5));
    let legal_root = tree.root_pos.legal_moves();
    limits.searchmoves.retain(|m| legal_root.contains(m));
    let root_moves = if limits.searchmoves.is_empty() {
        legal_root.len()
    } else {
        limits.searchmoves.len()
    };
    let reason = loop {
        if tree.nodes[0].expanded {
            if tree.nodes[0].proven != Proven::Unknown && limits.searchmoves.is_empty() {
                break StopReason::Proven;
            }
            if root_moves == 1 && !limits.infinite && limits.deadline.is_some() {
                break StopReason::OnlyMove;
            }
        }
        if let Some(r) = limit_reached(tree, limits, &progress) {
            break r;
        }
        if tree.nodes.len() + minibatch * 256 > MAX_NODES {
            break StopReason::TreeFull;
        }
        // Gather a minibatch.
        let batch_start = Instant::now();
        let mut pending: Vec<PendingLeaf> = Vec::new();
        let mut requests: Vec<EvalRequest> = Vec::new();
        for _ in 0..minibatch {
            if let Some(cap) = limits.playouts {
                if progress.playouts + pending.len() as u64 >= cap {
                    break;
                }
            }
            match tree.select_leaf(params, &limits.searchmoves) {
                Leaf::Value { path, value } => {
                    record_depth(&mut progress, path.len());
                    tree.backup(&path, value);
                }
                Leaf::Collision { path } => {
                    progress.collisions += 1;
                    tree.undo_virtual(&path);
                    break;
                }
                Leaf::Eval { path, pos, stack } => {
                    let hash = *stack.last().expect("the stack holds the leaf");
                    let moves: Vec<Move> = pos.legal_moves().into_iter().collect();
                    let leaf = *path.last().expect("paths are non-empty");
                    if let Some(q) = cache.get(hash, moves.len()).map(<[f32]>::to_vec) {
                        let v = tree.expand(leaf, &pos, &stack, &moves, &q, params);
                        record_depth(&mut progress, path.len());
                        tree.backup(&path, v);
                    } else {
                        requests.push(EvalRequest { pos, moves });
                        pending.push((path, stack, hash));
                    }
                }
            }
        }
        if !pending.is_empty() {
            match evaluator.evaluate(&requests) {
                Ok(qs) => {
                    for (((path, stack, hash), req), q) in
                        pending.into_iter().zip(&requests).zip(qs)
                    {
                        cache.insert(hash, &q);
                        let leaf = *path.last().expect("paths are non-empty");
                        let v = tree.expand(leaf, &req.pos, &stack, &req.moves, &q, params);
                        record_depth(&mut progress, path.len());
                        tree.backup(&path, v);
                    }
                }
                Err(ModelError(e)) => {
                    for (path, ..) in &pending {
                        tree.undo_virtual(path);
                    }
                    progress.eval = delta(evaluator.stats(), base);
                    break StopReason::Error(e);
                }
            }
        }
        progress.eval = delta(evaluator.stats(), base);
        progress.hashfull = cache.hashfull();
        progress.last_batch = batch_start.elapsed();
        if poll(tree, limits, &progress) {
            break StopReason::Signal;
        }
    };
    progress.eval = delta(evaluator.stats(), base);
    progress.hashfull = cache.hashfull();
    (reason, progress)
}

fn record_depth(progress: &mut Progress, path_len: usize) {
    let depth = (path_len - 1) as u32;
    progress.playouts += 1;
    progress.depth_sum += u64::from(depth);
    progress.seldepth = progress.seldepth.max(depth);
}

fn delta(now: EvalStats, base: EvalStats) -> EvalStats {
    EvalStats {
        runs: now.runs - base.runs,
        rows: now.rows - base.rows,
        positions: now.positions - base.positions,
        time: now.time.saturating_sub(base.time),
    }
}

/// Playout, depth and time limits, and the early stop when the most visited root move cannot be
/// overtaken by the playouts the remaining budget allows.
fn limit_reached(tree: &Tree, limits: &Limits, progress: &Progress) -> Option<StopReason> {
    if let Some(cap) = limits.playouts {
        if progress.playouts >= cap {
            return Some(StopReason::Limit);
        }
    }
    if let Some(d) = limits.depth {
        if progress.playouts > 0 && progress.mean_depth() >= d {
            return Some(StopReason::Limit);
        }
    }
    let now = Instant::now();
    if let Some(deadline) = limits.deadline {
        if now + progress.last_batch >= deadline {
            return Some(StopReason::Limit);
        }
    }
    if limits.infinite || progress.playouts < 2 {
        return None;
    }
    let by_nodes = limits.playouts.map(|cap| cap - progress.playouts);
    let by_time = limits.deadline.map(|d| {
        let rate = progress.playouts as f64 / progress.start.elapsed().as_secs_f64().max(1e-3);
        (rate * (d - now).as_secs_f64()).ceil() as u64
    });
    let remaining = match (by_nodes, by_time) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return None,
    };
    let mut visits: Vec<u32> = tree
        .children(0)
        .map(|c| &tree.nodes[c as usize])
        .filter(|c| {
            limits.searchmoves.is_empty() || c.mv.is_some_and(|m| limits.searchmoves.contains(&m))
        })
        .map(|c| c.n)
        .collect();
    visits.sort_unstable_by(|a, b| b.cmp(a));
    match visits.as_slice() {
        [best, second, ..] if u64::from(best - second) > remaining => Some(StopReason::Decided),
        _ => None,
    }
}

#[cfg(test)]
#[path = "mcts_tests.rs"]
mod tests;
