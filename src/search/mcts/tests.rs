//! MCTS tests with fake evaluators (no network): PUCT arithmetic, priors, backup signs, terminal
//! scoring, repetition in the tree and solver proofs (mate in 1, 2, 3) here; the playout loop
//! (batching, reuse, cache, stopping) in `tests/playouts.rs`, tablebases in `tests/tablebase.rs`,
//! the WDL head in the info lines in `tests/wdl.rs`.

mod playouts;
mod tablebase;
mod wdl;

use super::*;
use crate::game::Game;
use crate::model::backend::Scores;
use crate::model::cache::Cached;
use crate::model::{EvalRequest, EvalStats, Evaluator, ModelError};
use shakmaty::Role;
use std::time::Instant;

/// The playout loop with the cache layer around `eval`, as the engine stacks them.
fn search(
    tree: &mut Tree,
    cache: &mut EvalCache,
    eval: &mut dyn Evaluator,
    params: &MctsParams,
    limits: &mut Limits,
    poll: &mut dyn FnMut(&Tree, &mut Limits, &Progress) -> bool,
) -> (StopReason, Progress) {
    super::search(tree, &mut Cached::new(cache, eval), params, limits, poll)
}

/// Q(s, a) = 0.5 + material swing of the move (captures, promotions) + a small bonus for checks,
/// for the side to move; counts its calls.
#[derive(Default)]
struct MaterialEval {
    calls: usize,
    max_batch: usize,
    positions: usize,
}

fn value_of(role: Role) -> f32 {
    match role {
        Role::Pawn => 1.0,
        Role::Knight | Role::Bishop => 3.0,
        Role::Rook => 5.0,
        Role::Queen => 9.0,
        Role::King => 0.0,
    }
}

impl Evaluator for MaterialEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.calls += 1;
        self.max_batch = self.max_batch.max(batch.len());
        self.positions += batch.len();
        Ok(batch
            .iter()
            .map(|r| {
                r.moves
                    .iter()
                    .map(|m| {
                        let mut gain = m.capture().map_or(0.0, value_of);
                        gain += m.promotion().map_or(0.0, |p| value_of(p) - 1.0);
                        let mut after = r.pos.clone();
                        after.play_unchecked(*m);
                        let check = if after.is_check() { 0.05 } else { 0.0 };
                        (0.5 + 0.03 * gain + check).clamp(0.0, 0.99)
                    })
                    .collect::<Vec<f32>>()
                    .into()
            })
            .collect())
    }

    fn stats(&self) -> EvalStats {
        EvalStats {
            runs: self.calls as u64,
            rows: self.positions as u64,
            positions: self.positions as u64,
            time: std::time::Duration::ZERO,
        }
    }
}

/// Q = `q` for every move.
struct ConstEval(f32);

impl Evaluator for ConstEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        Ok(batch
            .iter()
            .map(|r| vec![self.0; r.moves.len()].into())
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

fn params(minibatch: usize) -> MctsParams {
    MctsParams {
        minibatch,
        ..MctsParams::default()
    }
}

fn run(
    game: &Game,
    eval: &mut dyn Evaluator,
    playouts: u64,
    minibatch: usize,
) -> (Tree, StopReason) {
    run_with(game, eval, playouts, &params(minibatch))
}

/// A fresh search of `playouts` playouts with `params` and a 1 MB cache.
fn run_with(
    game: &Game,
    eval: &mut dyn Evaluator,
    playouts: u64,
    params: &MctsParams,
) -> (Tree, StopReason) {
    let mut tree = Tree::new(game);
    let mut cache = EvalCache::new(1 << 20);
    let reason = playouts_on(&mut tree, &mut cache, eval, params, playouts);
    (tree, reason)
}

/// `playouts` more playouts on an existing tree and cache, never stopped by the poll.
fn playouts_on(
    tree: &mut Tree,
    cache: &mut EvalCache,
    eval: &mut dyn Evaluator,
    params: &MctsParams,
    playouts: u64,
) -> StopReason {
    let mut limits = Limits {
        playouts: Some(playouts),
        ..Limits::default()
    };
    search(tree, cache, eval, params, &mut limits, &mut |_, _, _| false).0
}

fn no_virtual_loss_left(tree: &Tree) -> bool {
    tree.nodes.iter().all(|n| n.vl == 0)
}

fn fen(f: &str) -> Game {
    Game::from_fen(f, false).unwrap()
}

#[test]
fn puct_arithmetic() {
    let p = MctsParams::default();
    // c(s) = c_init + ln((1 + N + 19652) / 19652).
    let c_init = f64::from(defaults::C_PUCT as f32);
    assert!((c_puct(&p, 0.0) - (c_init + (19653.0f64 / 19652.0).ln())).abs() < 1e-12);
    assert!((c_puct(&p, 19652.0) - (c_init + (39305.0f64 / 19652.0).ln())).abs() < 1e-12);
    // Q + c·P·√N/(1 + n).
    let s = puct_score(0.4, 0.5, 2.0, 16.0, 3.0);
    assert!((s - (0.4 + 2.0 * 0.5 * 4.0 / 4.0)).abs() < 1e-6);
    // More visits to the child lower its exploration term.
    assert!(puct_score(0.4, 0.5, 2.0, 16.0, 1.0) > puct_score(0.4, 0.5, 2.0, 16.0, 2.0));
}

#[test]
fn head_priors_follow_the_formula() {
    let p = head_priors(&[0.6, 0.3, 0.1], 1.0, 0.0);
    assert!((p[0] - 0.6).abs() < 1e-6 && (p[2] - 0.1).abs() < 1e-6);
    // T = 2: p^(1/2) renormalised (flatter); ε = 0.1 spread over the 3 moves.
    let p = head_priors(&[0.64, 0.36, 0.0], 2.0, 0.1);
    let (a, b) = (0.8 / 1.4, 0.6 / 1.4);
    assert!((p[0] - (0.9 * a + 0.1 / 3.0)).abs() < 1e-6);
    assert!((p[1] - (0.9 * b + 0.1 / 3.0)).abs() < 1e-6);
    assert!((p[2] - 0.1 / 3.0).abs() < 1e-6);
    assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    assert_eq!(head_priors(&[0.0, f32::NAN], 1.0, 0.0), vec![0.5, 0.5]);
    assert!(head_priors(&[], 1.0, 0.05).is_empty());
}

/// Q = 0.5 for every move and a policy with all its mass on the last legal move.
struct PolicyEval;

impl Evaluator for PolicyEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        Ok(batch
            .iter()
            .map(|r| {
                let n = r.moves.len();
                let mut policy = vec![0.0; n];
                policy[n - 1] = 1.0;
                Scores {
                    q: vec![0.5; n],
                    policy: Some(policy),
                    ..Scores::default()
                }
            })
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

#[test]
fn a_policy_head_gives_the_priors_unless_switched_off() {
    let g = Game::startpos();
    let last = g.legal_moves().len() - 1;
    let p = MctsParams {
        policy_uniform_mix: 0.0,
        ..params(1)
    };
    let (tree, _) = run_with(&g, &mut PolicyEval, 40, &p);
    let children = tree.root_children();
    assert!((children[last].prior - 1.0).abs() < 1e-6);
    let most = children.iter().map(|c| c.n).max().unwrap();
    assert_eq!(children[last].n, most, "the search follows the prior");
    // PolicyHead off: priors from Q (all Q equal: the top-k softmax shares the mass among the
    // first PolicyTopK moves in order, the last gets none).
    let off = MctsParams {
        policy_head: false,
        ..p
    };
    let (tree, _) = run_with(&g, &mut PolicyEval, 40, &off);
    let children = tree.root_children();
    assert!(children[last].prior < 1e-6, "{}", children[last].prior);
    assert!((children[0].prior - 1.0 / off.policy_top_k as f32).abs() < 1e-6);
}

/// A policy with all its mass on the first legal move and Q = 0.9 for the last one (0.5 for the
/// rest): the prior and the action values disagree.
struct PriorAgainstQ;

impl Evaluator for PriorAgainstQ {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        Ok(batch
            .iter()
            .map(|r| {
                let n = r.moves.len();
                let (mut policy, mut q) = (vec![0.0; n], vec![0.5; n]);
                policy[0] = 1.0;
                q[n - 1] = 0.9;
                Scores {
                    q,
                    policy: Some(policy),
                    ..Scores::default()
                }
            })
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

#[test]
fn q_init_visits_let_the_net_q_steer_the_search() {
    let g = Game::startpos();
    let last = (g.legal_moves().len() - 1) as u32;
    // The root expanded: every child unvisited, PUCT at N = 1.
    let (tree, _) = run_with(&g, &mut PriorAgainstQ, 1, &params(1));
    let first = tree.children(0).next().unwrap();
    let pick = |p: &MctsParams| tree.select_child(0, 0, p, &[]).unwrap() - first;
    // Off: unvisited children share the FPU value, so the prior decides.
    let narrow = MctsParams {
        c_puct: 0.25,
        ..params(1)
    };
    assert_eq!(pick(&narrow), 0);
    // QInitVisits 2: an unvisited child is worth its Q_net; 0.9 + 0.25·c·P beats 0.5 + 0.25·c·0.95.
    let on = MctsParams {
        q_init_visits: 2.0,
        ..narrow
    };
    assert_eq!(pick(&on), last);
    // At the default c_puct the prior's exploration term (0.6·0.95) still outweighs 0.4 of Q.
    let on_default = MctsParams {
        q_init_visits: 2.0,
        ..params(1)
    };
    assert_eq!(pick(&on_default), 0);
    // A search with it spends its first playout below the root on that move.
    let (tree, _) = run_with(&g, &mut PriorAgainstQ, 2, &on);
    let visits: Vec<u32> = tree.root_children().iter().map(|c| c.n).collect();
    assert_eq!(visits.iter().sum::<u32>(), 1);
    assert_eq!(visits[last as usize], 1, "{visits:?}");
    assert!(no_virtual_loss_left(&tree));
}

#[test]
fn priors_follow_the_formula() {
    let q = [0.5, 0.6, 0.4, 0.6, 0.1, 0.2, 0.3];
    let p = priors(&q, 0.1, 2, 0.05);
    let s: f32 = p.iter().sum();
    assert!((s - 1.0).abs() < 1e-5);
    // Two tied best moves share 0.95, every move gets 0.05 / 7.
    let u = 0.05 / 7.0;
    assert!((p[1] - (0.475 + u)).abs() < 1e-5 && (p[3] - p[1]).abs() < 1e-7);
    for i in [0, 2, 4, 5, 6] {
        assert!((p[i] - u).abs() < 1e-6, "{i}: {}", p[i]);
    }
    // All moves, τ = 0.1: softmax weights e^(Δq/τ).
    let p = priors(&[0.5, 0.6], 0.1, 0, 0.0);
    let e = (1.0f32).exp();
    assert!((p[1] - e / (1.0 + e)).abs() < 1e-5);
    assert!(priors(&[], 0.1, 5, 0.05).is_empty());
}

#[test]
fn backup_alternates_signs() {
    let game = Game::startpos();
    let mut tree = Tree::new(&game);
    let mut cache = EvalCache::new(1 << 20);
    let mut eval = ConstEval(0.7);
    let p = params(1);
    playouts_on(&mut tree, &mut cache, &mut eval, &p, 1);
    // Root evaluated: V = max Q = 0.7 for White; stored from Black's side.
    let root = tree.root();
    assert_eq!(root.n, 1);
    assert!((root.w - 0.3).abs() < 1e-6);
    assert_eq!(tree.root_children().len(), 20);
    playouts_on(&mut tree, &mut cache, &mut eval, &p, 1);
    // One child evaluated: 0.7 for Black to move there, i.e. 0.3 for White who moved into it.
    let visited: Vec<&Node> = tree
        .root_children()
        .into_iter()
        .filter(|c| c.n > 0)
        .collect();
    assert_eq!(visited.len(), 1);
    assert!((visited[0].w - 0.3).abs() < 1e-6);
    assert!((tree.root().w - (0.3 + 0.7)).abs() < 1e-6);
    assert!(no_virtual_loss_left(&tree));
}

#[test]
fn mate_in_one_is_proven_at_expansion() {
    let game = fen("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1");
    let mut eval = ConstEval(0.5);
    let (tree, reason) = run(&game, &mut eval, 100, 4);
    assert_eq!(reason, StopReason::Proven);
    assert_eq!(tree.root().proven, Proven::Win(1));
    let best = &tree.lines(&[], 1)[0];
    assert_eq!(crate::game::standard_uci(&best.mv), "d1d8");
    assert_eq!(best.mate(), Some(1));
    assert_eq!(best.value(), 1.0);
}

#[test]
fn terminal_children_are_scored_by_the_rules() {
    // Qb6 stalemates (black king a8, white king c7... here: Kc7 and Qb6 leaves a8 no move).
    let game = fen("k7/2K5/8/1Q6/8/8/8/8 w - - 0 1");
    let mut eval = ConstEval(0.9);
    let (tree, _) = run(&game, &mut eval, 1, 1);
    let stalemate = tree
        .root_children()
        .into_iter()
        .find(|c| crate::game::standard_uci(&c.mv.unwrap()) == "b5b6")
        .unwrap();
    assert_eq!(stalemate.proven, Proven::Draw);
    assert_eq!(stalemate.net_q, 0.5);
    // 50-move rule: with 99 halfmoves a quiet move draws.
    let game = fen("k7/8/8/8/8/8/8/K6R w - - 99 80");
    let (tree, _) = run(&game, &mut eval, 1, 1);
    for c in tree.root_children() {
        assert_eq!(c.proven, Proven::Draw, "{:?}", c.mv);
    }
    // ... and the root is then a proven draw.
    assert_eq!(tree.root().proven, Proven::Draw);
    // Insufficient material: Kxc2 leaves K v K.
    let game = fen("8/8/8/8/8/4k3/2n5/3K4 w - - 0 1");
    let (tree, _) = run(&game, &mut eval, 1, 1);
    let take = tree
        .root_children()
        .into_iter()
        .find(|c| crate::game::standard_uci(&c.mv.unwrap()) == "d1c2")
        .unwrap();
    assert_eq!(take.proven, Proven::Draw);
}

#[test]
fn repetition_against_history_and_path() {
    // After 1.Nf3 Nf6 2.Ng1 Ng8 the start position has occurred twice; 3.Nf3 repeats the position
    // after 1.Nf3: a draw (0.5) in the tree, not a proof.
    let mut game = Game::startpos();
    for m in ["g1f3", "g8f6", "f3g1", "f6g8"] {
        game.push_uci(m).unwrap();
    }
    let mut eval = ConstEval(0.9);
    let (tree, _) = run(&game, &mut eval, 1, 1);
    for c in tree.root_children() {
        let uci = crate::game::standard_uci(&c.mv.unwrap());
        let rep = uci == "g1f3";
        assert_eq!(c.repetition, rep, "{uci}");
        assert_eq!(c.proven, Proven::Unknown);
        assert_eq!(c.net_q, if rep { 0.5 } else { 0.9 }, "{uci}");
    }
    // Within the path: from the start position, Nf3 Nf6 Ng1 Ng8 returns to the root.
    let game = Game::startpos();
    let (tree, _) = run(&game, &mut ConstEval(0.6), 3000, 8);
    let mut at = 0u32;
    for m in ["g1f3", "g8f6", "f3g1", "f6g8"] {
        match tree
            .children(at)
            .find(|&c| crate::game::standard_uci(&tree.nodes[c as usize].mv.unwrap()) == m)
        {
            Some(c) if tree.nodes[c as usize].expanded || m == "f6g8" => at = c,
            _ => return, // not reached by this search: nothing to check
        }
    }
    assert!(tree.nodes[at as usize].repetition);
}

#[test]
fn solver_proves_mates_in_two_and_three() {
    for (f, plies) in [
        ("4r3/1k6/pp3P2/1b5p/3R1p2/P1R2P2/1P4PP/6K1 b - - 0 35", 3),
        ("5r1k/pp4pp/5p2/1BbQp1r1/7K/7P/1PP3P1/3R3R b - - 3 26", 3),
        ("1rb3k1/q4rP1/4p2p/3p3p/3P1P2/2P5/2QK3P/3R2R1 w - - 1 30", 3),
        ("4rr1k/p1Qn2pp/3p1q2/8/8/2P5/PP3PPP/RN3RK1 b - - 0 16", 5),
        ("3R4/1pp1r1kp/4r1p1/p1P5/5Q2/P4PPq/1P5P/3R2K1 b - - 3 32", 5),
    ] {
        let game = fen(f);
        let mut eval = MaterialEval::default();
        let (tree, reason) = run(&game, &mut eval, 200_000, 16);
        assert_eq!(reason, StopReason::Proven, "{f}");
        assert_eq!(tree.root().proven, Proven::Win(plies), "{f}");
        let best = &tree.lines(&[], 1)[0];
        assert_eq!(best.mate(), Some((i32::from(plies) + 1) / 2), "{f}");
        assert!(no_virtual_loss_left(&tree));
    }
}

#[test]
fn proven_loss_reports_negative_mate() {
    // Black to move is mated next move whatever it does (king h8, white Qg7 protected... ):
    // K h8, pawn h7; White Rg1-g8 threat: after ...h6/h5 Rg8#? Use a forced mate: black king a8
    // boxed by Kc7? Simplest: 1...Ka7 / any, 2.Ra1# or similar.
    let game = fen("k7/8/1K6/8/8/8/8/7R b - - 0 1");
    let mut eval = MaterialEval::default();
    let (tree, reason) = run(&game, &mut eval, 50_000, 8);
    assert_eq!(reason, StopReason::Proven);
    assert_eq!(tree.root().proven, Proven::Loss(2));
    let best = &tree.lines(&[], 1)[0];
    assert_eq!(best.mate(), Some(-1));
}

#[test]
fn leaf_value_mixes_the_wdl_head_with_max_q() {
    let q = [0.2, 0.6, 0.4];
    let wdl = Some([0.5, 0.4, 0.1]); // W + D/2 = 0.7
    assert_eq!(leaf_value(&q, wdl, 0.0, 0.5), 0.6);
    assert!((leaf_value(&q, wdl, 0.5, 0.5) - 0.65).abs() < 1e-6);
    assert!((leaf_value(&q, wdl, 1.0, 0.5) - 0.7).abs() < 1e-6);
    assert!(
        (leaf_value(&q, wdl, 7.0, 0.5) - 0.7).abs() < 1e-6,
        "λ is clamped to 1"
    );
    // DrawScore moves the draw's value: W + D·0.25 = 0.6.
    assert!((leaf_value(&q, wdl, 1.0, 0.25) - 0.6).abs() < 1e-6);
    assert_eq!(leaf_value(&q, None, 1.0, 0.5), 0.6, "no head: max Q");
    // A mate in one (Q 1 by the rules) is a win whatever the head says.
    assert_eq!(leaf_value(&[0.3, 1.0], wdl, 1.0, 0.5), 1.0);
    assert_eq!(leaf_value(&q, Some([f32::NAN, 0.0, 0.0]), 1.0, 0.5), 0.6);
    assert_eq!(leaf_value(&[], wdl, 0.0, 0.5), 0.0);
}
