//! One root move as the info lines report it ([`RootLine`], from [`super::Tree::lines`]).

use super::Proven;
use shakmaty::Move;

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
