//! The search tree: an arena of [`Node`]s rooted at a game position, with selection (PUCT,
//! virtual loss, FPU), expansion (rules and mate in one), backup, the solver, tree reuse and the
//! principal variations.

use super::{
    c_puct, head_priors, leaf_value, position_hash, priors, puct_score, MctsParams, Node, Proven,
    RootLine, NONE,
};
use crate::game::{python_fen, Game};
use crate::search::evaluator::Scores;
use crate::tablebase::Probe;
use shakmaty::{Chess, Move, Position};

/// The search tree: an arena of nodes rooted at a game position.
#[derive(Debug)]
pub struct Tree {
    pub(super) nodes: Vec<Node>,
    pub(super) root_pos: Chess,
    /// Hashes of the game's positions before the root, oldest first (repetition detection).
    pub(super) history: Vec<u64>,
    /// The game the root belongs to: start position (FEN) and moves, for reuse.
    pub(super) start_fen: String,
    pub(super) moves: Vec<Move>,
    pub(super) chess960: bool,
    /// The `MctsParams::draw_score` the statistics were gathered with.
    pub(super) draw_score: f32,
    /// The Syzygy tables probed at expansion (`None`: none).
    pub(super) tablebase: Option<Probe>,
    /// Tablebase probes that answered since [`Tree::use_tablebase`] (UCI `tbhits`).
    pub(super) tb_hits: u64,
    /// The WDL head's `[win, draw, loss]` at the root, side to move, when the root's
    /// evaluation carried one ([`Tree::root_wdl`]).
    pub(super) root_wdl: Option<[f32; 3]>,
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
            tablebase: None,
            tb_hits: 0,
            root_wdl: None,
        }
    }

    /// Probes `tablebase` at expansion from now on and restarts the `tbhits` count. Statistics
    /// gathered with other tables or settings start afresh (same root and game).
    pub fn use_tablebase(&mut self, tablebase: Option<Probe>) {
        let same = match (&self.tablebase, &tablebase) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same_as(b),
            _ => false,
        };
        if !same {
            self.nodes = vec![Node::new(None, NONE)];
        }
        self.tablebase = tablebase;
        self.tb_hits = 0;
    }

    /// Tablebase probes that answered in this search.
    pub fn tb_hits(&self) -> u64 {
        self.tb_hits
    }

    /// The value of a draw for the side to move at a node `depth` plies below the root:
    /// 0.5 + `draw_score` for the root's side, 0.5 − `draw_score` for the opponent.
    pub(super) fn draw_value(&self, depth: usize) -> f32 {
        if depth.is_multiple_of(2) {
            0.5 + self.draw_score
        } else {
            0.5 - self.draw_score
        }
    }

    /// The exact value of a proven node `depth` plies below the root for its side to move (a
    /// draw counts with the draw score); `None` when not proven.
    pub(super) fn proven_value(&self, proven: Proven, depth: usize) -> Option<f32> {
        match proven {
            Proven::Draw => Some(self.draw_value(depth)),
            p => p.value(),
        }
    }

    /// Plies from the root to node `idx`.
    pub(super) fn depth_of(&self, mut idx: u32) -> usize {
        let mut depth = 0;
        while idx != 0 {
            idx = self.nodes[idx as usize].parent;
            depth += 1;
        }
        depth
    }

    /// Starts the statistics afresh (same root and game) when they were gathered with another
    /// draw score.
    pub(super) fn use_draw_score(&mut self, draw_score: f32) {
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
            self.root_wdl = None;
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
        root.tb = None;
        root.n
    }

    /// The subtree at `at` as a new arena with `at` as index 0 (breadth-first, so each parent's
    /// children stay contiguous).
    pub(super) fn copy_subtree(&self, at: u32) -> Vec<Node> {
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

    pub(super) fn child_by_move(&self, idx: u32, mv: &Move) -> Option<u32> {
        self.children(idx)
            .find(|&c| self.nodes[c as usize].mv.as_ref() == Some(mv))
    }

    /// Child indices of `idx`.
    pub(super) fn children(&self, idx: u32) -> impl Iterator<Item = u32> + '_ {
        let n = &self.nodes[idx as usize];
        let first = n.first_child;
        (0..n.num_children).map(move |i| first + i)
    }

    /// The root node.
    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// The WDL head's `[win, draw, loss]` for the side to move at the root, from the root's
    /// evaluation in this tree (`None`: a net without the head, a root answered by the cache or
    /// the rule, or a root reused from an earlier search, whose evaluation the tree did not see).
    pub fn root_wdl(&self) -> Option<[f32; 3]> {
        self.root_wdl
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
    /// children get their rule values (a draw: [`Tree::draw_value`]). Returns the leaf's value
    /// for the side to move: V(s) = max_a Q(s, a), mixed with the WDL head's W + D·d (d the draw's
    /// value) by `LeafWdlWeight` ([`leaf_value`]).
    pub(super) fn expand(
        &mut self,
        idx: u32,
        pos: &Chess,
        stack: &[u64],
        moves: &[Move],
        scores: &Scores,
        params: &MctsParams,
    ) -> f32 {
        debug_assert_eq!(moves.len(), scores.q.len());
        let mut q = scores.q.clone();
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
            } else if let Some(outcome) = self.probe_after_zeroing(&child) {
                // Exact after a capture or pawn move: a terminal for the child's side to move.
                node.tb = Some(outcome);
                q[i] = match outcome {
                    1 => 0.0,
                    -1 => 1.0,
                    _ => draw,
                };
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
        let p = match &scores.policy {
            Some(policy) if params.policy_head && policy.len() == q.len() => head_priors(
                policy,
                params.policy_softmax_temp,
                params.policy_uniform_mix,
            ),
            _ => priors(
                &q,
                params.policy_temperature,
                params.policy_top_k,
                params.policy_uniform_mix,
            ),
        };
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
        if idx == 0 {
            self.root_wdl = scores.wdl;
        }
        leaf_value(&q, scores.wdl, params.leaf_wdl_weight, draw)
    }

    /// The tablebase outcome of `child` (1, 0, −1 for its side to move) when it was reached by a
    /// capture or pawn move and the tables cover it; counts the hit.
    fn probe_after_zeroing(&mut self, child: &Chess) -> Option<i8> {
        if child.halfmoves() != 0 {
            return None;
        }
        let outcome = self.tablebase.as_ref()?.outcome_after_zeroing(child)?;
        self.tb_hits += 1;
        Some(outcome)
    }

    /// The PUCT choice among the children of `idx` (`depth` plies below the root; `filter`:
    /// allowed moves at the root, empty = all). Proven children count with their exact value.
    pub(super) fn select_child(
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
        let k = f64::from(params.q_init_visits.max(0.0));
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
                Proven::Unknown if k > 0.0 => (child.w + k * f64::from(child.net_q)) / (visits + k),
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
    pub(super) fn select_leaf(&mut self, params: &MctsParams, filter: &[Move]) -> Leaf {
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
                if let Some(outcome) = node.tb {
                    let value = match outcome {
                        1 => 1.0,
                        -1 => 0.0,
                        _ => self.draw_value(depth),
                    };
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
    pub(super) fn undo_virtual(&mut self, path: &[u32]) {
        for &i in path {
            let n = &mut self.nodes[i as usize];
            n.vl = n.vl.saturating_sub(1);
        }
    }

    /// Backs up `value` (for the side to move at the leaf, the last node of `path`) and
    /// propagates proofs upwards.
    pub(super) fn backup(&mut self, path: &[u32], value: f32) {
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
    pub(super) fn update_proven(&mut self, idx: u32) -> bool {
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
    pub(super) fn ranked_children(&self, idx: u32, filter: &[Move]) -> Vec<u32> {
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
    pub(super) fn pv_from(&self, mut idx: u32) -> Vec<Move> {
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

/// Where a descent ended.
pub(super) enum Leaf {
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
