//! Tests of the move choice over an analysis (no network).

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
    }
}

#[test]
fn best_takes_first_maximum() {
    let a = Analysis {
        moves: vec![score(1, 0.2), score(5, 0.7), score(9, 0.7), score(10, 0.1)],
        evals: 4,
    };
    assert_eq!(a.best(), Some(1));
    assert_eq!(a.ranking(), vec![1, 2, 0, 3]);
    assert_eq!(choose(&a, 0.0, 0.99), Some(1));
    let empty = Analysis {
        moves: vec![],
        evals: 0,
    };
    assert_eq!(empty.best(), None);
    assert_eq!(choose(&empty, 1.0, 0.5), None);
}

#[test]
fn sampling_follows_the_softmax() {
    let a = Analysis {
        moves: vec![score(1, 0.5), score(2, 0.5)],
        evals: 2,
    };
    assert_eq!(choose(&a, 1.0, 0.0), Some(0));
    assert_eq!(choose(&a, 1.0, 0.49), Some(0));
    assert_eq!(choose(&a, 1.0, 0.51), Some(1));
    assert_eq!(choose(&a, 1.0, 0.999), Some(1));
    // A very low temperature is (numerically) the argmax.
    let b = Analysis {
        moves: vec![score(1, 0.40), score(2, 0.60)],
        evals: 2,
    };
    assert_eq!(choose(&b, 0.005, 0.5), Some(1));
    // Mate in one wins regardless of the draw.
    let c = Analysis {
        moves: vec![score(1, 0.9), score(2, 1.0)],
        evals: 2,
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
    };
    let a = Analysis {
        moves: vec![
            mk("a2a3", 10, 0.4),
            mk("e2e4", 20, 0.6),
            mk("d2d4", 30, 0.6),
        ],
        evals: 3,
    };
    assert_eq!(ranked(&a), vec![1, 2, 0]);
}
