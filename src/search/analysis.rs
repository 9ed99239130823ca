//! Every legal move scored in one batched network pass, with the rules the network lacks: the
//! searchless policy's view of a position (Ruoss et al., 2024, section 2.2), also used by `eval`,
//! `bench` and the time-pressure fallback.
//!
//! AV: argmax expected win probability (ties → lowest action id); SV: the mover's value after
//! the move; BC: the policy's probability renormalised over the legal moves; MAV: as AV, every
//! move from one network row. How rows are built and outputs read is the model kind's business
//! ([`crate::model::kinds`]); this file only orders the moves and applies the rules: a move
//! allowing a threefold claim or making a fivefold repetition gets 0.5, a mate in one gets 1.0.
//! The network is reached through the evaluator stack ([`with_stack`]), as MCTS reaches it.

use super::evaluator::{with_stack, Layers};
use crate::game::{standard_uci, Game};
use crate::model::actions::uci_to_action;
use crate::model::{
    Capabilities, EvalRequest, Evaluator, InferenceError, InputError, Model, ModelError, Network,
    Scores,
};
use shakmaty::{Move, Position};

/// Win probability given to a move after which the game would be a repetition draw.
pub const REPETITION_VALUE: f32 = 0.5;

/// What the searchless policy maximises (UCI `MoveChoice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MoveChoice {
    /// Q(s, a) after the rules: the paper's action-value policy (Ruoss et al., 2024, 2.2).
    #[default]
    Q,
    /// The policy head's P(a | s) (nets of kind `multi_action_value_policy`); a mate in one
    /// comes first, and a repetition draw is avoided while another move has Q > 0.5.
    Policy,
    /// Both heads: Q after the rules + [`BLEND_WEIGHT`] · ln P(a | s) (P floored at
    /// [`BLEND_MIN_POLICY`]); a mate in one comes first. Q alone without a policy head.
    Blend,
}

/// Weight of ln P(a | s) against Q (win probability, 0–1) under [`MoveChoice::Blend`]: a move the
/// policy finds e times likelier is worth 0.05 more win probability. Chosen on the 5,761 held-out
/// positions (`weights/README.md`, "Blending the heads"): on the c26 net's int8 twin, action accuracy
/// 34.09 % (Q) / 34.16 % (policy) / 34.77, 35.15, **35.22**, 35.13, 35.13 % for weights 0.02, 0.03,
/// 0.05, 0.07, 0.1; on the c24 twin 32.98 / 33.52 / 33.64, 33.95, **33.95**, 33.87, 33.85 %.
pub const BLEND_WEIGHT: f32 = 0.05;
/// The policy probability below which [`MoveChoice::Blend`] counts a move as this unlikely (keeps
/// ln P finite: at most 0.69 of win probability).
pub const BLEND_MIN_POLICY: f32 = 1e-6;

/// The `MoveChoice` values, in option order.
pub const MOVE_CHOICES: &[&str] = &["q", "policy", "blend"];
/// The `MoveChoice` default: `q`, with Q mixed with each move's successor value
/// ([`SUCCESSOR_VALUE_DEFAULT`]): on top of successor values the policy term costs accuracy
/// (`weights/README.md`, "Successor value"). Without them `blend` is the better choice: on the c24
/// int8 twin a searchless SPRT(0, 10) of `blend` against `policy` at 5+0.05 accepted H1 after 564
/// games, +45.8 ± 23.0 Elo ("Blending the heads"), and `policy` had beaten `q` on held-out accuracy and
/// puzzles before (24.8 % vs 22.7 %, 26.6 % vs 25.2 % on `glimpse-l6d128-c2`).
pub const MOVE_CHOICE_DEFAULT: &str = "q";

impl MoveChoice {
    /// Parses `q`, `policy` or `blend` (case-insensitive).
    pub fn parse(s: &str) -> Option<MoveChoice> {
        match s.trim().to_ascii_lowercase().as_str() {
            "q" => Some(MoveChoice::Q),
            "policy" => Some(MoveChoice::Policy),
            "blend" => Some(MoveChoice::Blend),
            _ => None,
        }
    }
}

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
    /// P(a | s) from the net's policy head (softmax over the moves scored together); `None`
    /// without one.
    pub policy: Option<f32>,
    /// Whether the move allows a repetition draw (the rule set `win_prob` to 0.5).
    pub repetition: bool,
}

/// Every legal move scored, in ascending action-id order.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// Scores in ascending action id.
    pub moves: Vec<MoveScore>,
    /// Network rows evaluated (UCI `nodes`): one per move for AV and SV, one per position for BC
    /// and MAV.
    pub evals: usize,
    /// What [`Analysis::key`] orders by; `Q` unless set (and `Policy` only takes effect when
    /// every move has a policy value).
    pub choice: MoveChoice,
    /// The WDL head's `[win, draw, loss]` for the side to move, when the net has one.
    pub wdl: Option<[f32; 3]>,
    /// `DrawScore` / 200 (−0.5…0.5): how much more than [`REPETITION_VALUE`] the side to move
    /// values a repetition draw when moves are ranked ([`Analysis::key`]); 0 unless set. The
    /// reported `win_prob` of a repetition stays 0.5. Lc0's `DrawScore` convention.
    pub draw_shift: f32,
}

impl Analysis {
    /// The value the move at `i` is ranked by: under [`MoveChoice::Q`], `win_prob` (for a
    /// repetition draw, 0.5 + [`Analysis::draw_shift`]); under [`MoveChoice::Policy`] its policy
    /// probability, 2 for a mate in one, and 0 for a repetition draw while some other move has
    /// Q above the draw's value (0.5 + `draw_shift`); under [`MoveChoice::Blend`] the `Q` key +
    /// [`BLEND_WEIGHT`] · ln max(P, [`BLEND_MIN_POLICY`]), and 2 for a mate in one. Both fall back to
    /// the `Q` key when a move has no policy value.
    pub fn key(&self, i: usize) -> f32 {
        let m = &self.moves[i];
        let q_key = if m.repetition {
            REPETITION_VALUE + self.draw_shift
        } else {
            m.win_prob
        };
        if self.choice == MoveChoice::Q || self.moves.iter().any(|m| m.policy.is_none()) {
            return q_key;
        }
        if m.win_prob >= 1.0 {
            return 2.0;
        }
        if self.choice == MoveChoice::Blend {
            let p = m.policy.unwrap_or(0.0).max(BLEND_MIN_POLICY);
            return q_key + BLEND_WEIGHT * p.ln();
        }
        let draw = REPETITION_VALUE + self.draw_shift;
        let winning = self
            .moves
            .iter()
            .any(|o| !o.repetition && o.win_prob > draw);
        if m.repetition && winning {
            return 0.0;
        }
        m.policy.unwrap_or(0.0)
    }

    /// Index (into `moves`) of the argmax of [`Analysis::key`], first maximum in action order;
    /// `None` when there are no legal moves.
    pub fn best(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for i in 0..self.moves.len() {
            match best {
                Some(b) if self.key(b) >= self.key(i) => {}
                _ => best = Some(i),
            }
        }
        best
    }

    /// Indices into `moves` sorted by descending [`Analysis::key`] (ties in action order), e.g.
    /// for MultiPV output.
    pub fn ranking(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.moves.len()).collect();
        idx.sort_by(|&a, &b| self.key(b).total_cmp(&self.key(a)).then(a.cmp(&b)));
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
    analyse_with(model, game, searchmoves, 0.0)
}

/// The `SuccessorValue` default, in percent of each move's Q taken from the value of the position
/// after it. Action accuracy on 2,450 positions of the held-out split (`weights/README.md`,
/// "Successor value"), the c35 int8 twin: 34.2 % (Q alone), 38.4 % (the successor value alone),
/// 39.6 / 39.4 / **40.3** / 40.2 % at 40 / 50 / 60 / 75 %; float32 c35: 34.8, 38.2, 40.0 % (at 50).
pub const SUCCESSOR_VALUE_DEFAULT: i64 = 60;

/// The successor weight (0–1) of a `SuccessorValue` in percent, clamped to 0–100: the one
/// conversion the UCI option and `glimpse bench --successor-value` share.
pub fn successor_weight(percent: i64) -> f32 {
    percent.clamp(0, 100) as f32 / 100.0
}

/// Whether a net of this kind can give successor values: one row per position (the whole
/// successor batch costs one row per move) and a value per move.
pub fn successor_capable(model: &Model) -> bool {
    successors(model.capabilities())
}

/// [`successor_capable`] from a net's capability record.
fn successors(caps: Capabilities) -> bool {
    caps.one_row_per_position && caps.value
}

/// The legal moves (those of `searchmoves` when it names any) with their action ids, in
/// action-id order.
fn root_moves(game: &Game, searchmoves: &[Move]) -> Result<Vec<(u16, Move)>, ModelError> {
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
                .ok_or_else(|| ModelError::Input(InputError::NotInActionTable(uci.clone())))
        })
        .collect::<Result<_, _>>()?;
    scored.sort_by_key(|&(a, _)| a);
    Ok(scored)
}

/// Per move of `ordered` from `pos`: the successor's value for the mover when the rules give it (a
/// stalemate or a dead draw 0.5; a mate `None`, its rule gives 1.0), else a row appended to
/// `batch` for the position after it.
fn successor_rows(
    pos: &shakmaty::Chess,
    ordered: &[Move],
    batch: &mut Vec<EvalRequest>,
) -> Vec<Successor> {
    ordered
        .iter()
        .map(|mv| {
            let mut child = pos.clone();
            child.play_unchecked(*mv);
            let replies: Vec<Move> = child.legal_moves().into_iter().collect();
            if replies.is_empty() {
                if child.is_check() {
                    Successor::None // mate: the rule gives 1.0
                } else {
                    Successor::Known(0.5)
                }
            } else if child.is_insufficient_material() {
                Successor::Known(0.5)
            } else {
                batch.push(EvalRequest {
                    pos: child,
                    moves: replies,
                    hash: 0,
                });
                Successor::Row(batch.len() - 1)
            }
        })
        .collect()
}

/// [`analyse`], with each move's Q mixed with the value of the position after it when
/// `successor_weight` (0–1) is above 0 and the net is [`successor_capable`]: Q'(s, a) =
/// (1 − w) · Q(s, a) + w · (1 − max_a' Q(s', a')), where s' is the position after a and a' its
/// legal replies. This is the paper's state-value policy (Ruoss et al., 2024, 2.2: the mover's value
/// of every successor, batched) with the state value read from the one-pass net, beside its action
/// value; the root and every successor go in the same network run (1 + moves rows). A successor
/// without replies or without mating material is not run: a mate keeps its rule (1.0), a stalemate
/// or a dead draw gets 0.5. `raw_win_prob` stays the root's own Q.
///
/// # Errors
/// Tokenizer or ORT failure.
pub fn analyse_with(
    model: &mut Model,
    game: &Game,
    searchmoves: &[Move],
    successor_weight: f32,
) -> Result<Analysis, ModelError> {
    let mut network = Network::new(model);
    let caps = network.capabilities();
    with_stack(&mut network, Layers::none(), |evaluator| {
        analyse_on(evaluator, caps, game, searchmoves, successor_weight)
    })
}

/// [`analyse_with`] on an evaluator (the network's stack, or a test evaluator) for a net that
/// can answer `caps`.
///
/// # Errors
/// The evaluator's failure, or too few scores.
pub fn analyse_on(
    evaluator: &mut dyn Evaluator,
    caps: Capabilities,
    game: &Game,
    searchmoves: &[Move],
    successor_weight: f32,
) -> Result<Analysis, ModelError> {
    let pos = game.position();
    let scored = root_moves(game, searchmoves)?;
    if scored.is_empty() {
        return Ok(Analysis::default());
    }
    let ordered: Vec<Move> = scored.iter().map(|&(_, m)| m).collect();
    let mut batch = vec![EvalRequest {
        pos: pos.clone(),
        moves: ordered.clone(),
        hash: 0,
    }];
    // Per move: the successor's value for the mover when the rules give it, or its row in `batch`.
    let weight = successor_weight.clamp(0.0, 1.0);
    let successor = if weight > 0.0 && successors(caps) {
        successor_rows(pos, &ordered, &mut batch)
    } else {
        vec![Successor::None; ordered.len()]
    };
    let out = evaluator.evaluate(&batch)?;
    if out.len() != batch.len() {
        return Err(InferenceError::TooFewValues.into());
    }
    let mixed: Vec<Option<f32>> = successor.iter().map(|s| successor_value(s, &out)).collect();
    let root: &Scores = out
        .first()
        .filter(|s| s.q.len() == ordered.len())
        .ok_or(InferenceError::TooFewValues)?;
    let values = (0..ordered.len()).map(|i| {
        (
            root.q[i],
            root.modes.get(i).copied().unwrap_or(0),
            root.policy.as_ref().and_then(|p| p.get(i).copied()),
        )
    });
    let repetition = if caps.value {
        game.moves_allowing_repetition(&ordered)
    } else {
        vec![false; ordered.len()]
    };
    let moves = scored
        .iter()
        .zip(values)
        .zip(repetition)
        .zip(mixed)
        .map(|((((action, mv), (q, mode, prior)), rep), after)| {
            let mut child = pos.clone();
            child.play_unchecked(*mv);
            let win_prob = if child.is_checkmate() {
                1.0
            } else if rep {
                REPETITION_VALUE
            } else if let Some(v) = after {
                (1.0 - weight) * q + weight * v
            } else {
                q
            };
            MoveScore {
                mv: *mv,
                uci: game.move_to_uci(mv),
                action: *action,
                win_prob,
                raw_win_prob: q,
                bucket_mode: mode,
                policy: prior,
                repetition: rep,
            }
        })
        .collect();
    Ok(Analysis {
        moves,
        evals: out.iter().map(|s| s.rows).sum(),
        choice: MoveChoice::Q,
        wdl: root.wdl,
        draw_shift: 0.0,
    })
}

/// Successor values for only the `width` best moves of an existing one-row `analysis`
/// ([`analyse_on`] at weight 0, the root's Q after the rules): the moves of highest `win_prob`
/// that are neither a mate in one nor a repetition draw get Q'(s, a) = (1 − w) · Q(s, a) + w ·
/// (1 − max_a' Q(s', a')) as in [`analyse_with`], from one more run of at most `width` rows; every
/// other such move keeps its Q capped just below the lowest of those, so that the choice falls
/// among them, as the campaign's two-tier labels keep a shallow tail below their deep top
/// (`training/CAMPAIGN.md`, "Scheme"). This is what the searchless policy plays when the whole
/// successor batch (1 + moves rows) does not fit its clock; held-out accuracy by width and the
/// matches that adopted it: `CHANGELOG.md`. Adds the run's rows to `analysis.evals`; nothing
/// changes when the net is not [`successor_capable`], the weight is 0 or no move qualifies.
///
/// # Errors
/// The evaluator's failure, or too few scores.
pub fn successor_top(
    evaluator: &mut dyn Evaluator,
    caps: Capabilities,
    game: &Game,
    analysis: &mut Analysis,
    successor_weight: f32,
    width: usize,
) -> Result<(), ModelError> {
    let weight = successor_weight.clamp(0.0, 1.0);
    if weight <= 0.0 || !successors(caps) || width == 0 {
        return Ok(());
    }
    let open = |m: &MoveScore| !m.repetition && m.win_prob < 1.0;
    let mut top: Vec<usize> = (0..analysis.moves.len())
        .filter(|&i| open(&analysis.moves[i]))
        .collect();
    // Stable: equal values keep ascending action id, the order ties are broken in.
    top.sort_by(|&a, &b| {
        analysis.moves[b]
            .win_prob
            .total_cmp(&analysis.moves[a].win_prob)
    });
    top.truncate(width);
    if top.is_empty() {
        return Ok(());
    }
    let mut batch = Vec::with_capacity(top.len());
    let ordered: Vec<Move> = top.iter().map(|&i| analysis.moves[i].mv).collect();
    let successor = successor_rows(game.position(), &ordered, &mut batch);
    let out = if batch.is_empty() {
        Vec::new()
    } else {
        evaluator.evaluate(&batch)?
    };
    if out.len() != batch.len() {
        return Err(InferenceError::TooFewValues.into());
    }
    let mut floor = f32::INFINITY;
    for (&i, s) in top.iter().zip(&successor) {
        let m = &mut analysis.moves[i];
        if let Some(v) = successor_value(s, &out) {
            m.win_prob = (1.0 - weight) * m.raw_win_prob + weight * v;
        }
        floor = floor.min(m.win_prob);
    }
    let below = (floor - 1e-6).max(0.0);
    for (i, m) in analysis.moves.iter_mut().enumerate() {
        if open(m) && !top.contains(&i) {
            m.win_prob = m.win_prob.min(below);
        }
    }
    analysis.evals += out.iter().map(|s| s.rows).sum::<usize>();
    Ok(())
}

/// The mover's value of a successor: the rules' value, `1 − max_a' Q(s', a')` from its row of
/// `out`, or `None` (no successor value: weight 0, or a mate whose rule decides).
fn successor_value(s: &Successor, out: &[Scores]) -> Option<f32> {
    match *s {
        Successor::None => None,
        Successor::Known(v) => Some(v),
        Successor::Row(r) => out[r]
            .q
            .iter()
            .copied()
            .reduce(f32::max)
            .map(|best| 1.0 - best),
    }
}

/// Where a move's successor value comes from in [`analyse_with`].
#[derive(Debug, Clone, Copy)]
enum Successor {
    /// Not used (weight 0, or a mate: its rule decides).
    None,
    /// Given by the rules (stalemate, dead draw): the mover's value.
    Known(f32),
    /// The successor's row in the batch.
    Row(usize),
}

/// Samples a move index from softmax(key / temperature) ([`Analysis::key`]: Q, or the policy
/// probability) with a uniform draw `u` in [0, 1); `temperature <= 0` gives [`Analysis::best`].
/// A mating move is always chosen if present.
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
    let keys: Vec<f64> = (0..moves.len())
        .map(|i| f64::from(analysis.key(i)))
        .collect();
    let max = keys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = keys
        .iter()
        .map(|k| ((k - max) / temperature).exp())
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

/// Move indices by descending [`Analysis::key`], ties by ascending action id (the policy's order).
pub fn ranked(analysis: &Analysis) -> Vec<usize> {
    let mut order: Vec<usize> = (0..analysis.moves.len()).collect();
    order.sort_by(|&a, &b| {
        let (ma, mb) = (&analysis.moves[a], &analysis.moves[b]);
        analysis
            .key(b)
            .total_cmp(&analysis.key(a))
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
