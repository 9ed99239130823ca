//! MCTS with Syzygy tables: tablebase terminals need no network run; new tables reset the tree.

use super::*;

/// Q = 0.5 for every move; records the piece count of every position it is asked about.
#[derive(Default)]
struct CountingEval {
    pieces: Vec<usize>,
}

impl Evaluator for CountingEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.pieces
            .extend(batch.iter().map(|r| r.pos.board().occupied().count()));
        Ok(batch
            .iter()
            .map(|r| vec![0.5; r.moves.len()].into())
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

/// The vendored K+R vs K tables (tests/data/syzygy).
fn vendored_tables() -> crate::tablebase::Probe {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/syzygy");
    let opened = crate::tablebase::Tablebases::open(dir);
    crate::tablebase::Probe {
        tables: std::sync::Arc::new(opened.tables.expect("vendored tables")),
        limit: 7,
        rule50: true,
    }
}

#[test]
fn tablebase_terminals_after_captures_need_no_network() {
    // K+R vs K+N, White to move: Rxd2 and Kxd2 reach K+R vs K (a win), every other move does not
    // capture. With the tables, those two children are terminals valued 1 for White and the
    // network never sees a 3-piece position; without them it does.
    let game = Game::from_fen("4k3/8/8/8/8/8/3n4/3RK3 w - - 0 1", false).unwrap();
    let mut with = CountingEval::default();
    let mut tree = Tree::new(&game);
    tree.use_tablebase(Some(vendored_tables()));
    let mut cache = EvalCache::new(1 << 20);
    playouts_on(&mut tree, &mut cache, &mut with, &params(8), 300);
    assert!(
        tree.tb_hits() >= 2,
        "the root captures (and deeper ones) are probed"
    );
    for uci in ["d1d2", "e1d2"] {
        let mv = game.parse_uci(uci).unwrap();
        let child = tree.child_by_move(0, &mv).expect("root child");
        let node = &tree.nodes[child as usize];
        assert_eq!(node.tb, Some(-1), "{uci}: lost for Black to move");
        assert!(!node.expanded, "{uci}: a terminal is never expanded");
        assert!(node.n > 0 && node.q() == Some(1.0), "{uci}: {:?}", node.q());
    }
    assert!(with.pieces.iter().all(|&p| p == 4), "{:?}", with.pieces);
    let best = tree.lines(&[], 1)[0].mv;
    assert!(best.is_capture(), "{best:?}");
    assert!(no_virtual_loss_left(&tree));

    // Control: without tables the captures are ordinary leaves evaluated by the network.
    let mut without = CountingEval::default();
    let (tree, _) = run(&game, &mut without, 300, 8);
    assert_eq!(tree.tb_hits(), 0);
    assert!(without.pieces.contains(&3));
}

#[test]
fn changing_the_tables_starts_the_statistics_afresh() {
    let game = Game::from_fen("4k3/8/8/8/8/8/3n4/3RK3 w - - 0 1", false).unwrap();
    let (mut tree, _) = run(&game, &mut ConstEval(0.5), 50, 4);
    assert!(tree.root().n > 0);
    tree.use_tablebase(Some(vendored_tables()));
    assert_eq!(
        tree.root().n,
        0,
        "statistics gathered without tables are dropped"
    );
    assert_eq!(tree.len(), 1);
}
