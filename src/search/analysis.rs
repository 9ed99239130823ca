//! Every legal move scored in one batched network pass, with the rules the network lacks: the
//! searchless policy's view of a position (Ruoss et al., 2024, section 2.2), also used by `eval`,
//! `bench` and the time-pressure fallback.
//!
//! AV: argmax expected win probability (ties → lowest action id); SV: the mover's value after
//! the move; BC: the policy's probability renormalised over the legal moves; MAV: as AV, every
//! move from one network row. How rows are built and outputs read is the model kind's business
//! ([`crate::model::kinds`]); this file only orders the moves and applies the rules: a move
//! allowing a threefold claim or making a fivefold repetition gets 0.5, a mate in one gets 1.0.

use crate::game::{standard_uci, Game};
use crate::model::actions::uci_to_action;
use crate::model::{EvalRequest, Model, ModelError};
use shakmaty::{Move, Position};

/// Win probability given to a move after which the game would be a repetition draw.
pub const REPETITION_VALUE: f32 = 0.5;

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
    /// For BC this is the renormalised policy probability. Exactly 1.0 marks a mate in one
    /// (or, for BC, a move with all the probability mass).
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
    /// Network rows evaluated (UCI `nodes`): one per move for AV and SV, one per position for BC
    /// and MAV.
    pub evals: usize,
}

impl Analysis {
    /// Index (into `moves`) of the argmax of `win_prob`, first maximum in action order; `None` when
    /// there are no legal moves.
    pub fn best(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, m) in self.moves.iter().enumerate() {
            match best {
                Some(b) if self.moves[b].win_prob >= m.win_prob => {}
                _ => best = Some(i),
            }
        }
        best
    }

    /// Indices into `moves` sorted by descending `win_prob` (ties in action order), e.g. for
    /// MultiPV output.
    pub fn ranking(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.moves.len()).collect();
        idx.sort_by(|&a, &b| {
            self.moves[b]
                .win_prob
                .partial_cmp(&self.moves[a].win_prob)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        idx
    }
}

/// Scores all legal moves of the game's current position with one batched ORT run.
/// `searchmoves`, if non-empty, restricts the moves scored (moves not legal here are ignored; if
/// none is legal, all legal moves are scored).
///
/// # Errors
/// Tokenizer or ORT failure.
pub fn analyse(
    model: &mut Model,
    game: &Game,
    searchmoves: &[Move],
) -> Result<Analysis, ModelError> {
    let pos = game.position();
    let mut moves: Vec<Move> = game.legal_moves();
    if !searchmoves.is_empty() && moves.iter().any(|m| searchmoves.contains(m)) {
        moves.retain(|m| searchmoves.contains(m));
    }
    let mut scored: Vec<(u16, Move)> = moves
        .into_iter()
        .map(|m| {
            let uci = standard_uci(&m);
            uci_to_action(&uci)
                .map(|a| (a, m))
                .ok_or_else(|| ModelError::Input(format!("move {uci} is not in the action table")))
        })
        .collect::<Result<_, _>>()?;
    scored.sort_by_key(|&(a, _)| a);
    if scored.is_empty() {
        return Ok(Analysis {
            moves: Vec::new(),
            evals: 0,
        });
    }
    let ordered: Vec<Move> = scored.iter().map(|&(_, m)| m).collect();
    let request = EvalRequest {
        pos: pos.clone(),
        moves: ordered.clone(),
        hash: 0,
    };
    let out = model.evaluate(std::slice::from_ref(&request))?;
    let values = out
        .values
        .into_iter()
        .next()
        .filter(|v| v.len() == ordered.len())
        .ok_or_else(|| ModelError::Inference("the network returned too few values".into()))?;
    let repetition = if model.info().kind.spec().has_value() {
        game.moves_allowing_repetition(&ordered)
    } else {
        vec![false; ordered.len()]
    };
    let moves = scored
        .iter()
        .zip(values)
        .zip(repetition)
        .map(|(((action, mv), value), rep)| {
            let mut child = pos.clone();
            child.play_unchecked(*mv);
            let win_prob = if child.is_checkmate() {
                1.0
            } else if rep {
                REPETITION_VALUE
            } else {
                value.q
            };
            MoveScore {
                mv: *mv,
                uci: game.move_to_uci(mv),
                action: *action,
                win_prob,
                raw_win_prob: value.q,
                bucket_mode: value.mode,
            }
        })
        .collect();
    Ok(Analysis {
        moves,
        evals: out.rows,
    })
}

/// Samples a move index from softmax(win_prob / temperature) with a uniform draw `u` in [0, 1);
/// `temperature <= 0` gives [`Analysis::best`]. A mating move is always chosen if present.
pub fn choose(analysis: &Analysis, temperature: f64, u: f64) -> Option<usize> {
    let moves = &analysis.moves;
    if moves.is_empty() {
        return None;
    }
    if let Some(i) = moves.iter().position(|m| m.win_prob >= 1.0) {
        return Some(i);
    }
    if temperature.is_nan() || temperature <= 0.0 {
        return analysis.best();
    }
    let max = moves
        .iter()
        .map(|m| m.win_prob as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = moves
        .iter()
        .map(|m| ((m.win_prob as f64 - max) / temperature).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return analysis.best();
    }
    let target = u.clamp(0.0, 1.0) * total;
    let mut acc = 0.0;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        if target < acc {
            return Some(i);
        }
    }
    Some(moves.len() - 1)
}

/// Move indices by descending win probability, ties by ascending action id (the policy's order).
pub fn ranked(analysis: &Analysis) -> Vec<usize> {
    let mut order: Vec<usize> = (0..analysis.moves.len()).collect();
    order.sort_by(|&a, &b| {
        let (ma, mb) = (&analysis.moves[a], &analysis.moves[b]);
        mb.win_prob
            .total_cmp(&ma.win_prob)
            .then(ma.action.cmp(&mb.action))
    });
    order
}

/// Whether `mv` checkmates at once.
pub fn gives_mate(game: &Game, mv: &Move) -> bool {
    let mut pos = game.position().clone();
    pos.play_unchecked(*mv);
    pos.is_checkmate()
}

#[cfg(test)]
#[path = "analysis_tests.rs"]
mod tests;
