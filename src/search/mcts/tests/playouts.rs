//! MCTS playout-loop tests with fake evaluators: batching, the draw score, tree reuse, the cache,
//! stopping (poll, deadline, early decision) and `searchmoves`.

use super::*;

#[test]
fn batching_gathers_leaves_and_cleans_up() {
    let game = Game::startpos();
    let mut eval = MaterialEval::default();
    let (tree, reason) = run(&game, &mut eval, 400, 8);
    // `Decided`: the best move could no longer change within the 400 playouts.
    assert!(
        matches!(reason, StopReason::Limit | StopReason::Decided),
        "{reason:?}"
    );
    assert!(
        tree.root().n <= 400 && tree.root().n > 100,
        "{}",
        tree.root().n
    );
    assert!(
        eval.max_batch > 1 && eval.max_batch <= 8,
        "{}",
        eval.max_batch
    );
    assert!(eval.calls < 400, "{} calls", eval.calls);
    assert!(no_virtual_loss_left(&tree));
    assert!(visits_add_up(&tree));
}

#[test]
fn the_collision_limit_grows_with_the_tree_as_lc0_scales_it() {
    assert_eq!(collision_limit(0, 917), 1);
    assert_eq!(collision_limit(28, 917), 1, "up to the scaling start");
    assert_eq!(collision_limit(64, 917), 3);
    assert_eq!(collision_limit(400, 917), 47);
    assert_eq!(collision_limit(1_600, 917), 280);
    assert_eq!(
        collision_limit(1_000_000, 917),
        917,
        "MaxCollisionEvents caps it"
    );
    assert_eq!(collision_limit(1_000_000, 0), 1, "at least one");
    let mut last = 0;
    for n in (0..200_000).step_by(997) {
        let l = collision_limit(n, 65_536);
        assert!(l >= last, "monotone at {n}");
        last = l;
    }
    assert_eq!(last, 65_536, "MaxCollisionEvents below the scaled 80,000");
}

/// Runs `playouts` from the start position with `minibatch` and `max_collision_events`:
/// (positions per network run, collisions, the tree).
fn batches_with(minibatch: usize, max_collision_events: u32, playouts: u64) -> (f64, u64, Tree) {
    let mut eval = SharpEval::default();
    let params = MctsParams {
        max_collision_events,
        ..params(minibatch)
    };
    let (tree, _, progress) = full_search(&Game::startpos(), &mut eval, &params, playouts);
    let per_run = eval.positions as f64 / eval.calls as f64;
    (per_run, progress.collisions, tree)
}

/// Q = 0.9 for a position's first legal move and 0.3 for the others: priors that send almost
/// every descent down one line, so that a batch collides soon; counts runs and positions.
#[derive(Default)]
struct SharpEval {
    calls: usize,
    positions: usize,
}

impl Evaluator for SharpEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.calls += 1;
        self.positions += batch.len();
        Ok(batch
            .iter()
            .map(|r| {
                (0..r.moves.len())
                    .map(|i| if i == 0 { 0.9 } else { 0.3 })
                    .collect::<Vec<f32>>()
                    .into()
            })
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

#[test]
fn collisions_keep_their_virtual_loss_and_let_large_batches_fill() {
    // Stopping at the first collision (MaxCollisionEvents 1, the rule before the scaling)
    // leaves a 256-leaf minibatch far from full; with the scaled limit the batches grow as the
    // tree does, and every virtual loss is gone after the search.
    let (first, first_collisions, tree) = batches_with(256, 1, 3_000);
    assert!(no_virtual_loss_left(&tree));
    let (scaled, scaled_collisions, tree) = batches_with(256, 917, 3_000);
    assert!(no_virtual_loss_left(&tree));
    assert_eq!(tree.root().n, 3_000);
    assert!(
        scaled > 2.0 * first,
        "positions per run: {scaled:.1} scaled vs {first:.1} stopping at the first collision"
    );
    assert!(scaled_collisions > first_collisions);
    assert!(visits_add_up(&tree), "with collisions in the batches too");
    // A young tree (under 28 visits) still stops at the first collision.
    let (_, young, _) = batches_with(256, 917, 20);
    let (_, young_first, _) = batches_with(256, 1, 20);
    assert_eq!(young, young_first);
}

/// Q = `white` for every move when White is to move, `black` when Black is: a position both
/// sides agree on (with white = 1 − black).
struct SideEval {
    white: f32,
    black: f32,
}

impl Evaluator for SideEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        Ok(batch
            .iter()
            .map(|r| {
                let q = if r.pos.turn().is_white() {
                    self.white
                } else {
                    self.black
                };
                vec![q; r.moves.len()].into()
            })
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

#[test]
fn draw_score_steers_repetitions() {
    // White stands a little worse everywhere (Q 0.45) but 3.Nf3 repeats: a draw by repetition.
    let mut game = Game::startpos();
    for m in ["g1f3", "g8f6", "f3g1", "f6g8"] {
        game.push_uci(m).unwrap();
    }
    let search_with = |draw_score: f32| {
        let p = MctsParams {
            draw_score,
            ..params(8)
        };
        let mut eval = SideEval {
            white: 0.45,
            black: 0.55,
        };
        run_with(&game, &mut eval, 400, &p).0
    };
    let rep_move = |tree: &Tree| {
        let c = tree
            .child_by_move(0, &game.parse_uci("g1f3").unwrap())
            .unwrap();
        tree.nodes[c as usize].clone()
    };
    // DrawScore 0: the draw (0.5) beats 0.45, so White takes the repetition.
    let tree = search_with(0.0);
    let best = tree.lines(&[], 1)[0].mv;
    assert_eq!(crate::game::standard_uci(&best), "g1f3");
    assert_eq!(rep_move(&tree).net_q, 0.5);
    // DrawScore −40 (a draw is worth 0.3 to White, 0.7 to Black): White avoids it.
    let tree = search_with(-0.2);
    let best = tree.lines(&[], 1)[0].mv;
    assert_ne!(crate::game::standard_uci(&best), "g1f3");
    let rep = rep_move(&tree);
    assert!((rep.net_q - 0.3).abs() < 1e-6, "{}", rep.net_q);
    assert!((tree.draw_value(0) - 0.3).abs() < 1e-6);
    assert!((tree.draw_value(1) - 0.7).abs() < 1e-6);
    assert!(rep.n * 10 < tree.root().n, "{} of {}", rep.n, tree.root().n);
    // A different draw score restarts the statistics; so does re-rooting one ply down (the
    // other side to move would inherit draw values meant for White).
    let mut tree = tree;
    tree.use_draw_score(0.0);
    assert_eq!(tree.len(), 1);
    let mut tree = search_with(-0.2);
    let mut next = game.clone();
    next.push_uci("e2e4").unwrap();
    assert_eq!(tree.reuse(&next), 0);
}

#[test]
fn tree_reuse_keeps_the_subtree() {
    let game = Game::startpos();
    let mut eval = MaterialEval::default();
    let (mut tree, _) = run(&game, &mut eval, 600, 8);
    let lines = tree.lines(&[], 1);
    let best = lines[0].mv;
    let child = tree.child_by_move(0, &best).unwrap();
    let reply = tree.ranked_children(child, &[])[0];
    let reply_mv = tree.nodes[reply as usize].mv.unwrap();
    let expected = tree.nodes[reply as usize].n;
    let mut next = game.clone();
    next.push(best).unwrap();
    next.push(reply_mv).unwrap();
    let kept = tree.reuse(&next);
    assert_eq!(kept, expected);
    assert!(kept > 0);
    assert_eq!(tree.root().n, expected);
    assert_eq!(tree.root_position(), next.position());
    // Parent links and child ranges stay consistent.
    for i in 0..tree.nodes.len() {
        for c in tree.children(i as u32) {
            assert_eq!(tree.nodes[c as usize].parent, i as u32);
        }
    }
    // A position not below the root starts a fresh tree.
    let other = fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
    assert_eq!(tree.reuse(&other), 0);
    assert_eq!(tree.len(), 1);
}

#[test]
fn cache_serves_repeated_positions() {
    let game = Game::startpos();
    let mut cache = EvalCache::new(1 << 20);
    let mut eval = MaterialEval::default();
    let p = params(4);
    let mut evaluated: Vec<usize> = Vec::new();
    for _ in 0..2 {
        let mut tree = Tree::new(&game);
        playouts_on(&mut tree, &mut cache, &mut eval, &p, 100);
        evaluated.push(eval.positions);
    }
    // The second search finds most positions in the cache (its tree grows in a different order
    // because cached leaves expand at once, so a few new positions are reached).
    assert!(evaluated[0] > 50);
    let second = evaluated[1] - evaluated[0];
    assert!(second * 3 < evaluated[0], "{evaluated:?}");
    assert!(
        cache.hits as usize * 2 >= evaluated[0],
        "{} hits",
        cache.hits
    );
    assert!(cache.hashfull() > 0);
    // A budget too small for one entry stores nothing; clear() empties.
    let mut small = EvalCache::new(10);
    small.insert(1, &vec![0.5; 20].into());
    assert!(small.is_empty());
    cache.clear();
    assert!(cache.is_empty());
}

#[test]
fn stop_from_poll_ends_the_search_cleanly() {
    let game = Game::startpos();
    let mut tree = Tree::new(&game);
    let mut cache = EvalCache::new(1 << 20);
    let mut eval = MaterialEval::default();
    let mut limits = Limits {
        infinite: true,
        ..Limits::default()
    };
    let mut polls = 0;
    let (reason, progress) = search(
        &mut tree,
        &mut cache,
        &mut eval,
        &params(8),
        &mut limits,
        &mut |_, _, _| {
            polls += 1;
            polls == 5
        },
    );
    assert_eq!(reason, StopReason::Signal);
    assert_eq!(polls, 5);
    assert!(progress.playouts > 5);
    assert!(no_virtual_loss_left(&tree));
    assert!(!tree.lines(&[], 1).is_empty());
}

#[test]
fn searchmoves_restrict_the_root() {
    let game = Game::startpos();
    let a4 = game.parse_uci("a2a4").unwrap();
    let h3 = game.parse_uci("h2h3").unwrap();
    let mut tree = Tree::new(&game);
    let mut cache = EvalCache::new(1 << 20);
    let mut limits = Limits {
        playouts: Some(200),
        searchmoves: vec![a4, h3],
        ..Limits::default()
    };
    search(
        &mut tree,
        &mut cache,
        &mut MaterialEval::default(),
        &params(4),
        &mut limits,
        &mut |_, _, _| false,
    );
    let lines = tree.lines(&limits.searchmoves, 10);
    assert_eq!(lines.len(), 2);
    for c in tree.root_children() {
        if c.mv != Some(a4) && c.mv != Some(h3) {
            assert_eq!(c.n, 0);
        }
    }
}

#[test]
fn early_stop_when_the_best_move_is_decided() {
    // With one legal move and a clock the search returns at once.
    let game = fen("k7/p7/8/8/8/8/1r6/K7 w - - 0 1");
    let mut tree = Tree::new(&game);
    let mut limits = Limits {
        deadline: Some(Instant::now() + std::time::Duration::from_secs(60)),
        ..Limits::default()
    };
    let (reason, p) = search(
        &mut tree,
        &mut EvalCache::new(1 << 20),
        &mut MaterialEval::default(),
        &params(4),
        &mut limits,
        &mut |_, _, _| false,
    );
    assert_eq!(reason, StopReason::OnlyMove);
    assert_eq!(p.playouts, 1);
}

#[test]
fn node_size_matches_the_memory_note() {
    // MAX_NODES's documentation assumes 56-byte nodes.
    assert!(
        std::mem::size_of::<Node>() <= 56,
        "{}",
        std::mem::size_of::<Node>()
    );
}

#[test]
fn a_passed_deadline_still_evaluates_the_root() {
    // With a very low clock the soft deadline can pass before the first minibatch; the search
    // must still evaluate the root once (the soak found MCTS answering with the fallback move).
    let game = fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3");
    let mut tree = Tree::new(&game);
    let mut limits = Limits {
        deadline: Some(Instant::now()),
        ..Limits::default()
    };
    let mut eval = MaterialEval::default();
    let (reason, p) = search(
        &mut tree,
        &mut EvalCache::new(1 << 20),
        &mut eval,
        &params(4),
        &mut limits,
        &mut |_, _, _| false,
    );
    assert_eq!(reason, StopReason::Limit);
    assert!(tree.nodes[0].expanded, "the root was never evaluated");
    assert!(p.playouts >= 1);
    assert!(eval.calls >= 1);
    assert!(
        !tree.is_empty(),
        "the driver would answer with the fallback move"
    );
}

/// `playouts` playouts from `game` (no early stop) with `params`, through a 1 MB cache:
/// the tree, why it stopped, and the progress.
fn full_search(
    game: &Game,
    eval: &mut dyn Evaluator,
    params: &MctsParams,
    playouts: u64,
) -> (Tree, StopReason, Progress) {
    let mut tree = Tree::new(game);
    let mut cache = EvalCache::new(1 << 20);
    let mut limits = Limits {
        playouts: Some(playouts),
        infinite: true,
        ..Limits::default()
    };
    let (reason, progress) = search(
        &mut tree,
        &mut cache,
        eval,
        params,
        &mut limits,
        &mut |_, _, _| false,
    );
    (tree, reason, progress)
}

/// A node's visits are 1 (its own evaluation) + its children's, wherever the network expanded it.
fn visits_add_up(tree: &Tree) -> bool {
    tree.nodes.iter().enumerate().all(|(i, n)| {
        !n.expanded
            || n.proven != Proven::Unknown
            || n.repetition
            || n.n
                == 1 + tree
                    .children(i as u32)
                    .map(|c| tree.nodes[c as usize].n)
                    .sum::<u32>()
    })
}

#[test]
fn a_pipelined_search_keeps_the_tree_whole_and_finds_the_same_move() {
    // White wins the queen on d5 (c4xd5): both ways of running batches must find it.
    let game = fen("rnb1kbnr/ppp1pppp/8/3q4/2P5/8/PP1PPPPP/RNBQKBNR w KQkq - 0 3");
    for minibatch in [1, 16, 64] {
        let mut best = Vec::new();
        for pipelined in [false, true] {
            let params = MctsParams {
                pipelined,
                ..params(minibatch)
            };
            let mut eval = MaterialEval::default();
            let (tree, reason, progress) = full_search(&game, &mut eval, &params, 500);
            let case = format!("minibatch {minibatch}, pipelined {pipelined}");
            assert_eq!(reason, StopReason::Limit, "{case}");
            assert_eq!(tree.root().n, 500, "{case}: the playout limit is exact");
            assert_eq!(progress.playouts, 500, "{case}");
            assert!(no_virtual_loss_left(&tree), "{case}");
            assert!(visits_add_up(&tree), "{case}");
            assert_eq!(progress.eval.runs, eval.calls as u64, "{case}: counters");
            best.push(tree.lines(&[], 1)[0].mv);
        }
        assert_eq!(best[0], best[1], "minibatch {minibatch}");
        assert_eq!(game.move_to_uci(&best[1]), "c4d5");
    }
}

/// [`MaterialEval`] that fails from its `fail_at`-th call on.
struct FailingEval {
    inner: MaterialEval,
    fail_at: usize,
}

impl Evaluator for FailingEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        if self.inner.calls + 1 >= self.fail_at {
            self.inner.calls += 1;
            return Err(crate::model::InferenceError::Run("injected".into()).into());
        }
        self.inner.evaluate(batch)
    }
    fn stats(&self) -> EvalStats {
        self.inner.stats()
    }
}

#[test]
fn a_network_error_in_a_pipelined_search_ends_it_with_the_tree_whole() {
    let game = Game::startpos();
    for pipelined in [false, true] {
        let params = MctsParams {
            pipelined,
            ..params(8)
        };
        let mut eval = FailingEval {
            inner: MaterialEval::default(),
            fail_at: 4,
        };
        let (tree, reason, progress) = full_search(&game, &mut eval, &params, 400);
        assert!(
            matches!(reason, StopReason::Error(_)),
            "pipelined {pipelined}: {reason:?}"
        );
        assert!(no_virtual_loss_left(&tree), "pipelined {pipelined}");
        assert!(visits_add_up(&tree), "pipelined {pipelined}");
        assert!(
            tree.root().n >= 1 && progress.playouts < 400,
            "pipelined {pipelined}: the batches before the error stand ({})",
            tree.root().n
        );
    }
}
