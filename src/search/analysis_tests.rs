//! Tests of the move choice over an analysis, and of the analysis on a fake evaluator (no
//! network).

use super::*;
use shakmaty::{Role, Square};

fn score(action: u16, win_prob: f32) -> MoveScore {
    MoveScore {
        mv: Move::Normal {
            role: Role::Knight,
            from: Square::G1,
            capture: None,
            to: Square::F3,
            promotion: None,
        },
        uci: "g1f3".into(),
        action,
        win_prob,
        raw_win_prob: win_prob,
        bucket_mode: 0,
        policy: None,
        repetition: false,
    }
}

#[test]
fn best_takes_first_maximum() {
    let a = Analysis {
        moves: vec![score(1, 0.2), score(5, 0.7), score(9, 0.7), score(10, 0.1)],
        evals: 4,
        ..Analysis::default()
    };
    assert_eq!(a.best(), Some(1));
    assert_eq!(a.ranking(), vec![1, 2, 0, 3]);
    assert_eq!(choose(&a, 0.0, 0.99), Some(1));
    let empty = Analysis {
        moves: vec![],
        evals: 0,
        ..Analysis::default()
    };
    assert_eq!(empty.best(), None);
    assert_eq!(choose(&empty, 1.0, 0.5), None);
}

#[test]
fn sampling_follows_the_softmax() {
    let a = Analysis {
        moves: vec![score(1, 0.5), score(2, 0.5)],
        evals: 2,
        ..Analysis::default()
    };
    assert_eq!(choose(&a, 1.0, 0.0), Some(0));
    assert_eq!(choose(&a, 1.0, 0.49), Some(0));
    assert_eq!(choose(&a, 1.0, 0.51), Some(1));
    assert_eq!(choose(&a, 1.0, 0.999), Some(1));
    // A very low temperature is (numerically) the argmax.
    let b = Analysis {
        moves: vec![score(1, 0.40), score(2, 0.60)],
        evals: 2,
        ..Analysis::default()
    };
    assert_eq!(choose(&b, 0.005, 0.5), Some(1));
    // Mate in one wins regardless of the draw.
    let c = Analysis {
        moves: vec![score(1, 0.9), score(2, 1.0)],
        evals: 2,
        ..Analysis::default()
    };
    assert_eq!(choose(&c, 10.0, 0.0), Some(1));
}

#[test]
fn ranking_is_by_value_then_action() {
    let g = Game::startpos();
    let mk = |uci: &str, action: u16, p: f32| MoveScore {
        mv: g.parse_uci(uci).unwrap(),
        uci: uci.into(),
        action,
        win_prob: p,
        raw_win_prob: p,
        bucket_mode: 0,
        policy: None,
        repetition: false,
    };
    let a = Analysis {
        moves: vec![
            mk("a2a3", 10, 0.4),
            mk("e2e4", 20, 0.6),
            mk("d2d4", 30, 0.6),
        ],
        evals: 3,
        ..Analysis::default()
    };
    assert_eq!(ranked(&a), vec![1, 2, 0]);
}

/// A move with a policy value; a repetition gets the rule's 0.5 as its reported value.
fn with(action: u16, q: f32, p: f32, rep: bool) -> MoveScore {
    MoveScore {
        policy: Some(p),
        repetition: rep,
        win_prob: if rep { REPETITION_VALUE } else { q },
        raw_win_prob: q,
        ..score(action, q)
    }
}

#[test]
fn move_choice_policy_ranks_by_the_policy_with_the_rules() {
    let mut a = Analysis {
        moves: vec![
            with(1, 0.7, 0.2, false),
            with(2, 0.6, 0.5, false),
            with(3, 0.4, 0.3, false),
        ],
        ..Analysis::default()
    };
    assert_eq!(a.best(), Some(0), "Q unless asked");
    a.choice = MoveChoice::Policy;
    assert_eq!(a.best(), Some(1));
    assert_eq!(a.ranking(), vec![1, 2, 0]);
    assert_eq!(ranked(&a), vec![1, 2, 0]);
    assert_eq!(choose(&a, 0.0, 0.5), Some(1));
    // A repetition draw is not the policy's pick while another move wins (Q > 0.5)...
    a.moves[1] = with(2, 0.6, 0.5, true);
    assert_eq!(a.best(), Some(2));
    // ...but is when every other move loses.
    a.moves[0] = with(1, 0.3, 0.2, false);
    assert_eq!(a.best(), Some(1));
    // A mate in one comes first whatever the policy says.
    a.moves[0].win_prob = 1.0;
    assert_eq!(a.best(), Some(0));
    // A move without a policy value (another kind) falls back to Q for all.
    a.moves[2].policy = None;
    assert_eq!(a.key(2), a.moves[2].win_prob);
    assert_eq!(MoveChoice::parse(" Policy "), Some(MoveChoice::Policy));
    assert_eq!(MoveChoice::parse("q"), Some(MoveChoice::Q));
    assert_eq!(MoveChoice::parse("value"), None);
}

#[test]
fn move_choice_blend_adds_the_weighted_log_policy_to_q() {
    // Q prefers move 0 by 0.02; the policy finds move 1 twice as likely: 0.05 · ln 2 = 0.035 > 0.02.
    let mut a = Analysis {
        moves: vec![
            with(1, 0.62, 0.3, false),
            with(2, 0.60, 0.6, false),
            with(3, 0.30, 0.1, false),
        ],
        choice: MoveChoice::Blend,
        ..Analysis::default()
    };
    assert_eq!(a.best(), Some(1));
    let want = 0.60 + BLEND_WEIGHT * 0.6f32.ln();
    assert!((a.key(1) - want).abs() < 1e-6, "{} vs {want}", a.key(1));
    // A Q lead larger than the policy's ln-ratio term wins: Q 0.70 against 0.60 + 0.035.
    a.moves[0].win_prob = 0.70;
    assert_eq!(a.best(), Some(0));
    assert_eq!(a.ranking(), vec![0, 1, 2]);
    // A zero policy is floored, not −∞.
    a.moves[2].policy = Some(0.0);
    assert!(a.key(2).is_finite() && a.key(2) < a.key(1));
    // A mate in one comes first whatever the policy says.
    a.moves[2].win_prob = 1.0;
    assert_eq!(a.best(), Some(2));
    // The repetition rule's value enters as under Q: with DrawScore −20 a repeating move is worth
    // 0.4 + the policy term.
    a.moves[2] = with(3, 0.5, 0.1, true);
    a.draw_shift = -0.1;
    assert!((a.key(2) - (0.4 + BLEND_WEIGHT * 0.1f32.ln())).abs() < 1e-6);
    // Without a policy value anywhere the blend is Q.
    a.moves[1].policy = None;
    assert_eq!(a.key(0), a.moves[0].win_prob);
    assert_eq!(MoveChoice::parse("BLEND"), Some(MoveChoice::Blend));
    assert!(MOVE_CHOICES.contains(&"blend"));
}

#[test]
fn draw_score_steers_repetitions_in_both_move_choices() {
    // The side to move sees every move as a little worse than level (Q 0.45, 0.40) but one repeats
    // the position: a draw, 0.5 at DrawScore 0.
    let mut a = Analysis {
        moves: vec![
            with(1, 0.45, 0.3, false),
            with(2, 0.40, 0.6, true),
            with(3, 0.40, 0.1, false),
        ],
        ..Analysis::default()
    };
    // DrawScore 0: the draw (0.5) beats 0.45 under Q; the policy's favourite stands because no
    // other move is above the draw.
    assert_eq!(a.best(), Some(1));
    a.choice = MoveChoice::Policy;
    assert_eq!(a.best(), Some(1));
    // DrawScore −20 (a draw is worth 0.4 to the engine): both choices avoid it.
    a.draw_shift = -0.1;
    assert_eq!(a.best(), Some(0));
    a.choice = MoveChoice::Q;
    assert_eq!(a.best(), Some(0));
    assert_eq!(a.key(1), REPETITION_VALUE - 0.1);
    // The reported value of the repetition stays the rule's 0.5.
    assert_eq!(a.moves[1].win_prob, REPETITION_VALUE);
    // DrawScore +20: under Q the draw (0.6) now beats every move.
    a.draw_shift = 0.1;
    assert_eq!(a.best(), Some(1));
}

/// A one-pass net without a network: Q = 0.4 for every move of the root (0.9 for its last move)
/// and 0.8 for every reply in a successor position, bucket mode = the move's index, a uniform
/// policy and a WDL head; one row per position. Records the batch sizes.
#[derive(Default)]
struct OnePass(Vec<usize>);

impl Evaluator for OnePass {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.0.push(batch.len());
        Ok(batch
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let n = r.moves.len();
                let mut q = vec![if i == 0 { 0.4 } else { 0.8 }; n];
                if i == 0 {
                    q[n - 1] = 0.9;
                }
                Scores {
                    q,
                    policy: Some(vec![1.0 / n as f32; n]),
                    wdl: Some([0.5, 0.25, 0.25]),
                    modes: (0..n).collect(),
                    rows: 1,
                }
            })
            .collect())
    }
    fn stats(&self) -> crate::model::EvalStats {
        crate::model::EvalStats::default()
    }
}

fn one_pass() -> Capabilities {
    Capabilities {
        kind: crate::model::ModelKind::from_metadata("multi_action_value_policy").unwrap(),
        value: true,
        one_row_per_position: true,
        wdl: true,
        backend: crate::model::Backend::Cpu,
    }
}

#[test]
fn the_analysis_reads_every_head_from_the_evaluator() {
    let mut net = OnePass::default();
    let g = Game::startpos();
    let a = analyse_on(&mut net, one_pass(), &g, &[], 0.0).unwrap();
    assert_eq!(net.0, vec![1], "one position, no successors");
    assert_eq!((a.moves.len(), a.evals), (20, 1));
    assert_eq!(a.wdl, Some([0.5, 0.25, 0.25]));
    assert!(a.moves.iter().all(|m| m.policy == Some(0.05)));
    assert_eq!(a.moves[7].bucket_mode, 7, "modes in action order");
    assert_eq!(a.moves[a.best().unwrap()].win_prob, 0.9);
    // A mate in one gets 1.0 whatever the net says.
    let mate = Game::from_fen("6k1/5ppp/8/8/8/1q6/5PPP/3R2K1 w - - 0 1", false).unwrap();
    let a = analyse_on(&mut net, one_pass(), &mate, &[], 0.0).unwrap();
    assert_eq!(a.moves[a.best().unwrap()].uci, "d1d8");
    assert_eq!(a.moves[a.best().unwrap()].win_prob, 1.0);
}

#[test]
fn successor_values_come_from_the_same_evaluator_call() {
    let mut net = OnePass::default();
    let g = Game::startpos();
    let a = analyse_on(&mut net, one_pass(), &g, &[], 0.5).unwrap();
    assert_eq!(
        net.0,
        vec![21],
        "the root and its 20 successors in one call"
    );
    assert_eq!(a.evals, 21);
    // Q' = 0.5 · Q + 0.5 · (1 − 0.8).
    assert!(a
        .moves
        .iter()
        .all(|m| (m.win_prob - (0.5 * m.raw_win_prob + 0.1)).abs() < 1e-6));
    // A net without a value (a policy kind) gets no successors and no repetition rule.
    let policy_only = Capabilities {
        value: false,
        ..one_pass()
    };
    let a = analyse_on(&mut net, policy_only, &g, &[], 0.5).unwrap();
    assert_eq!(net.0, vec![21, 1]);
    assert_eq!(a.evals, 1);
}

/// Q by position: at `root`, 0.30 + 0.01 · i for the i-th move of the request (ascending action
/// id); after the root move `trap` every reply gets 0.95 (a bad move: the opponent wins), after
/// the others 0.5. One row per position; records the batch sizes.
struct Trap {
    root: shakmaty::Chess,
    trap: shakmaty::Chess,
    calls: Vec<usize>,
}

impl Evaluator for Trap {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.calls.push(batch.len());
        Ok(batch
            .iter()
            .map(|r| {
                let n = r.moves.len();
                let q = if r.pos == self.root {
                    (0..n).map(|i| 0.30 + 0.01 * i as f32).collect()
                } else {
                    vec![if r.pos == self.trap { 0.95 } else { 0.5 }; n]
                };
                Scores {
                    q,
                    policy: None,
                    wdl: None,
                    modes: vec![0; n],
                    rows: 1,
                }
            })
            .collect())
    }
    fn stats(&self) -> crate::model::EvalStats {
        crate::model::EvalStats::default()
    }
}

#[test]
fn successor_values_for_the_best_moves_only() {
    let g = Game::startpos();
    let root = g.position().clone();
    let one_row = |net: &mut Trap| analyse_on(net, one_pass(), &g, &[], 0.0).unwrap();
    let mut net = Trap {
        root: root.clone(),
        trap: root.clone(),
        calls: Vec::new(),
    };
    let top = one_row(&mut net);
    let (first, second) = (top.moves.len() - 1, top.moves.len() - 2);
    let mut after = root.clone();
    after.play_unchecked(top.moves[first].mv);
    net.trap = after;
    net.calls.clear();

    // Width 2: the root's two best moves get Q' = 0.5 · Q + 0.5 · (1 − max Q'), the runner-up
    // (0.48, then 0.49) overtakes the trap (0.49, then 0.27), and every other move is capped
    // below 0.27 (its own Q is up to 0.47).
    let mut a = one_row(&mut net);
    successor_top(&mut net, one_pass(), &g, &mut a, 0.5, 2).unwrap();
    assert_eq!(net.calls, vec![1, 2], "the root, then two successors");
    assert_eq!(a.evals, 3);
    assert!((a.moves[first].win_prob - 0.27).abs() < 1e-6);
    assert!((a.moves[second].win_prob - 0.49).abs() < 1e-6);
    assert_eq!(a.best(), Some(second));
    assert!(a.moves[..second]
        .iter()
        .all(|m| m.win_prob < 0.27 && m.raw_win_prob >= 0.30));
    // The whole batch makes the same choice in one run.
    let full = analyse_on(&mut net, one_pass(), &g, &[], 0.5).unwrap();
    assert_eq!(full.best(), Some(second));
    // Width 1 keeps the one-row choice; weight 0, width 0 or a net without values: no run.
    net.calls.clear();
    let mut a = one_row(&mut net);
    successor_top(&mut net, one_pass(), &g, &mut a, 0.5, 1).unwrap();
    assert_eq!(a.best(), Some(first));
    let policy_only = Capabilities {
        value: false,
        ..one_pass()
    };
    for (w, k, caps) in [
        (0.0, 4, one_pass()),
        (0.5, 0, one_pass()),
        (0.5, 4, policy_only),
    ] {
        let before: Vec<f32> = a.moves.iter().map(|m| m.win_prob).collect();
        successor_top(&mut net, caps, &g, &mut a, w, k).unwrap();
        assert!(a.moves.iter().map(|m| m.win_prob).eq(before));
    }
    assert_eq!(
        net.calls,
        vec![1, 1],
        "one row, one successor; nothing after"
    );

    // A mate in one keeps its rule's 1.0 and takes no row.
    let mate = Game::from_fen("6k1/5ppp/8/8/8/1q6/5PPP/3R2K1 w - - 0 1", false).unwrap();
    let mut net = Trap {
        root: mate.position().clone(),
        trap: root,
        calls: Vec::new(),
    };
    let mut a = analyse_on(&mut net, one_pass(), &mate, &[], 0.0).unwrap();
    successor_top(&mut net, one_pass(), &mate, &mut a, 0.5, 3).unwrap();
    assert_eq!(net.calls, vec![1, 3]);
    assert_eq!(a.moves[a.best().unwrap()].uci, "d1d8");
    assert_eq!(a.moves[a.best().unwrap()].win_prob, 1.0);
}
