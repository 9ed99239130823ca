//! Searchless policies (Ruoss et al., 2024, section 2.2): score every legal move in one batched
//! forward pass and play the best. AV: argmax expected win probability (ties → lowest action id);
//! SV: minimise the opponent's value after the move; BC: argmax log-prob over legal moves.
//! Rules the model lacks: repetition (a move allowing a threefold claim or making a fivefold gets
//! 0.5) and mate in one (always played).

use crate::game::Game;
use crate::model::{Model, ModelError};
use shakmaty::Move;

/// One legal move's score.
#[derive(Debug, Clone)]
pub struct MoveScore {
    /// The move.
    pub mv: Move,
    /// UCI string for the GUI (Chess960-aware).
    pub uci: String,
    /// Action id in the 1968 table (standard notation).
    pub action: u16,
    /// Win probability for the side to move in [0, 1] after rules (repetition → 0.5, mate → 1.0).
    /// For BC this is the renormalised policy probability.
    pub win_prob: f32,
    /// The network's own value before rules.
    pub raw_win_prob: f32,
    /// Index of the most likely bucket (AV/SV); for BC, 0.
    pub bucket_mode: usize,
}

/// Every legal move scored, in ascending action-id order.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Scores in ascending action id.
    pub moves: Vec<MoveScore>,
    /// Network rows evaluated (UCI `nodes`).
    pub evals: usize,
}

impl Analysis {
    /// Index (into `moves`) of the argmax of `win_prob`, first maximum in action order; `None` when
    /// there are no legal moves.
    pub fn best(&self) -> Option<usize> {
        todo!("issue 2")
    }
}

/// Scores all legal moves of the game's current position with one batched ORT run.
/// `searchmoves`, if non-empty, restricts the moves scored.
///
/// # Errors
/// Tokenizer or ORT failure.
pub fn analyse(
    model: &mut Model,
    game: &Game,
    searchmoves: &[Move],
) -> Result<Analysis, ModelError> {
    let _ = (model, game, searchmoves);
    todo!("issue 2")
}

/// Samples a move index from softmax(win_prob / temperature) with a uniform draw `u` in [0, 1);
/// `temperature <= 0` gives [`Analysis::best`]. A mating move is always chosen if present.
pub fn choose(analysis: &Analysis, temperature: f64, u: f64) -> Option<usize> {
    let _ = (analysis, temperature, u);
    todo!("issue 2")
}
