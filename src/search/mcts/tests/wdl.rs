//! MCTS info lines with `UCI_ShowWDL`: the first line reports the WDL head's numbers (of the
//! root's evaluation, also after tree reuse and a cache hit), the others a split of their Q.

use super::*;
use crate::search::report::{Info, Wdl};
use crate::settings::Settings;

/// Q = 0.5 for every move and, with `head`, a WDL head of 60 % win, 30 % draw, 10 % loss for
/// every position; counts the positions it scores.
#[derive(Default)]
struct HeadEval {
    head: bool,
    positions: usize,
}

impl Evaluator for HeadEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.positions += batch.len();
        Ok(batch
            .iter()
            .map(|r| Scores {
                wdl: self.head.then_some([0.6, 0.3, 0.1]),
                ..vec![0.5; r.moves.len()].into()
            })
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

const HEAD: Wdl = Wdl {
    win: 600,
    draw: 300,
    loss: 100,
};

/// `playouts` playouts on `tree` with `cache`; the info lines (MultiPV 2) with and without
/// `UCI_ShowWDL`.
fn searched(
    tree: &mut Tree,
    cache: &mut EvalCache,
    eval: &mut HeadEval,
    playouts: u64,
) -> [Vec<Info>; 2] {
    let game = Game::startpos();
    let mut limits = Limits {
        playouts: Some(playouts),
        ..Limits::default()
    };
    let (_, progress) = search(
        tree,
        cache,
        eval,
        &params(4),
        &mut limits,
        &mut |_, _, _| false,
    );
    [false, true].map(|show_wdl| {
        let settings = Settings {
            show_wdl,
            multipv: 2,
            ..Settings::default()
        };
        info_lines(tree, &game, &[], &progress, &settings, None)
    })
}

#[test]
fn show_wdl_reports_the_heads_wdl_on_the_line_played() {
    let mut eval = HeadEval {
        head: true,
        ..HeadEval::default()
    };
    let mut tree = Tree::new(&Game::startpos());
    let [plain, wdl] = searched(&mut tree, &mut EvalCache::new(1 << 20), &mut eval, 40);
    assert!(plain.iter().all(|i| i.wdl.is_none()), "{plain:?}");
    assert_eq!(wdl[0].wdl, Some(HEAD), "{wdl:?}");
    let other = wdl[1].wdl.unwrap();
    assert_eq!(other.draw, 0, "the second line splits its Q: {other:?}");
}

#[test]
fn without_a_head_the_wdl_splits_q() {
    let mut eval = HeadEval::default();
    let mut tree = Tree::new(&Game::startpos());
    let [_, wdl] = searched(&mut tree, &mut EvalCache::new(1 << 20), &mut eval, 40);
    assert!(wdl.iter().all(|i| i.wdl.unwrap().draw == 0), "{wdl:?}");
    assert_eq!(tree.root_wdl(), None);
}

#[test]
fn a_reused_or_cached_root_gets_its_head_again() {
    let mut eval = HeadEval {
        head: true,
        ..HeadEval::default()
    };
    let mut cache = EvalCache::new(1 << 20);
    let mut first = Tree::new(&Game::startpos());
    searched(&mut first, &mut cache, &mut eval, 40);
    assert_eq!(first.root_wdl(), Some([0.6, 0.3, 0.1]));
    // The root's scores come from the cache, which keeps the WDL head's numbers.
    let mut again = Tree::new(&Game::startpos());
    searched(&mut again, &mut cache, &mut eval, 8);
    assert_eq!(again.root_wdl(), Some([0.6, 0.3, 0.1]));
    let before = eval.positions;
    driver::root_wdl(&mut again, &mut Cached::new(&mut cache, &mut eval));
    assert_eq!(
        eval.positions, before,
        "no evaluation for a root that has its WDL"
    );
    // A root reused below the old one: the tree never saw its evaluation.
    let mut game = Game::startpos();
    game.push(first.lines(&[], 1)[0].mv).unwrap();
    first.reuse(&game);
    assert_eq!(first.root_wdl(), None);
    let before = eval.positions;
    driver::root_wdl(&mut first, &mut eval);
    assert_eq!(first.root_wdl(), Some([0.6, 0.3, 0.1]));
    assert_eq!(eval.positions, before + 1, "one evaluation of the root");
    // Through the cache, which holds the new root from the first search: no evaluation.
    first.reuse(&game);
    first.root_wdl = None;
    let before = eval.positions;
    driver::root_wdl(&mut first, &mut Cached::new(&mut cache, &mut eval));
    assert_eq!(first.root_wdl(), Some([0.6, 0.3, 0.1]));
    assert_eq!(eval.positions, before, "answered by the cache");
    // Nothing to do for a root not yet evaluated.
    let mut fresh = Tree::new(&Game::startpos());
    let before = eval.positions;
    driver::root_wdl(&mut fresh, &mut eval);
    assert_eq!((fresh.root_wdl(), eval.positions), (None, before));
}

#[test]
fn leaf_wdl_weight_mixes_the_heads_value_into_the_backup() {
    // Every move's Q is 0.5 and the head says W + D/2 = 0.75, so a child expanded by the second
    // playout is worth 1 − (λ·0.75 + (1 − λ)·0.5) to the root's mover.
    for (weight, head, want) in [
        (0.0, true, 0.5),
        (0.5, true, 0.375),
        (1.0, true, 0.25),
        (1.0, false, 0.5),
    ] {
        let mut eval = HeadEval {
            head,
            ..HeadEval::default()
        };
        let mut tree = Tree::new(&Game::startpos());
        let mut limits = Limits {
            playouts: Some(2),
            ..Limits::default()
        };
        let p = MctsParams {
            leaf_wdl_weight: weight,
            ..params(1)
        };
        let mut cache = EvalCache::new(1 << 20);
        search(
            &mut tree,
            &mut cache,
            &mut eval,
            &p,
            &mut limits,
            &mut |_, _, _| false,
        );
        let visited: Vec<f64> = tree.root_children().iter().filter_map(|c| c.q()).collect();
        assert_eq!(visited.len(), 1, "λ {weight}");
        assert!(
            (visited[0] - want).abs() < 1e-6,
            "λ {weight}, head {head}: {visited:?}"
        );
    }
}
