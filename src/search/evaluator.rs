//! Node evaluation for MCTS: Q(s, a) for every legal move of a batch of positions.
//!
//! The search asks an [`Evaluator`] for the action values of many leaves at once (one ORT run per
//! minibatch). [`NetEvaluator`] serves the network kinds that can drive a search:
//! - one-pass multi-action-value (MAV): one row per position, all its moves in the `actions`
//!   input (rows padded to the batch's largest move count with `PAD_ACTION`);
//! - action-value (AV): one row `[0, 77 tokens, action]` per (position, move), all in one run;
//! - state-value (SV): one row per successor position, Q(s, a) = 1 − V(s') (Ruoss et al., 2024,
//!   section 2.2).
//!
//! Behavioural cloning has no value output and is refused ([`NetEvaluator::new`]). [`MopUp`]
//! answers bare-king endings by rule before the network sees them.

use super::endgame::bare_king_value;
use crate::game::{model_fen, standard_uci};
use crate::model::actions::uci_to_action;
use crate::model::buckets::{bucket_centres, expected_value};
use crate::model::onnx::PAD_ACTION;
use crate::model::{Model, ModelError, ModelKind};
use shakmaty::{Chess, Move, Position};
use std::time::{Duration, Instant};

/// One position to evaluate and the moves to score (the position's legal moves, in the order the
/// search stores its children).
#[derive(Debug, Clone)]
pub struct EvalRequest {
    /// The position (side to move = the player whose Q values are asked for).
    pub pos: Chess,
    /// Moves to score; non-empty.
    pub moves: Vec<Move>,
}

/// Counters an evaluator keeps for `bench` and the search's overhead report.
#[derive(Debug, Clone, Copy, Default)]
pub struct EvalStats {
    /// Network runs (ORT `Run` calls).
    pub runs: u64,
    /// Network rows in those runs (positions for MAV; moves for AV and SV).
    pub rows: u64,
    /// Positions evaluated.
    pub positions: u64,
    /// Wall time spent inside the evaluator (tokenizing + ORT), the rest of a search's time is
    /// search overhead.
    pub time: Duration,
}

/// Scores the moves of positions: for each request, one win probability in [0, 1] per move,
/// from the point of view of the side to move in that position (Q(s, a) of the paper's
/// action-value predictor).
pub trait Evaluator {
    /// Q values, one `Vec` per request (same order, `moves.len()` values each).
    ///
    /// # Errors
    /// Tokenizer or network failure; the search then ends with the best move found so far.
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Vec<f32>>, ModelError>;

    /// Counters since creation.
    fn stats(&self) -> EvalStats;
}

/// The network as an [`Evaluator`].
pub struct NetEvaluator<'a> {
    model: &'a mut Model,
    centres: Vec<f32>,
    stats: EvalStats,
}

impl<'a> NetEvaluator<'a> {
    /// Wraps a loaded model.
    ///
    /// # Errors
    /// A behavioural-cloning model (no value: it cannot score a node; Ruoss et al. 2024, 2.2).
    pub fn new(model: &'a mut Model) -> Result<NetEvaluator<'a>, ModelError> {
        let info = model.info();
        if info.kind == ModelKind::BehavioralCloning {
            return Err(ModelError(
                "a behavioral_cloning net predicts no value and cannot drive MCTS; \
                 use SearchMode searchless or an action-value, state-value or one-pass net"
                    .into(),
            ));
        }
        let centres = bucket_centres(info.outputs);
        Ok(NetEvaluator {
            model,
            centres,
            stats: EvalStats::default(),
        })
    }
}

fn action_of(mv: &Move) -> Result<i64, ModelError> {
    let uci = standard_uci(mv);
    uci_to_action(&uci)
        .map(i64::from)
        .ok_or_else(|| ModelError(format!("move {uci} is not in the action table")))
}

impl Evaluator for NetEvaluator<'_> {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Vec<f32>>, ModelError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let t0 = Instant::now();
        let info = self.model.info().clone();
        let k = info.outputs;
        let out = match info.kind {
            ModelKind::MultiActionValue => {
                let m = batch
                    .iter()
                    .map(|r| r.moves.len())
                    .max()
                    .unwrap_or(1)
                    .max(1);
                let mut tokens = Vec::with_capacity(batch.len() * info.seq_len);
                let mut actions = Vec::with_capacity(batch.len() * m);
                for r in batch {
                    tokens.extend(self.model.row(&model_fen(&r.pos), None)?);
                    for mv in &r.moves {
                        actions.push(action_of(mv)?);
                    }
                    actions.extend(std::iter::repeat_n(PAD_ACTION, m - r.moves.len()));
                }
                let lp = self.model.run_moves(&tokens, &actions, batch.len(), m)?;
                self.stats.rows += batch.len() as u64;
                batch
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        (0..r.moves.len())
                            .map(|j| {
                                let at = (i * m + j) * k;
                                expected_value(&lp[at..at + k], &self.centres)
                            })
                            .collect()
                    })
                    .collect()
            }
            ModelKind::ActionValue => {
                let rows: usize = batch.iter().map(|r| r.moves.len()).sum();
                let mut tokens = Vec::with_capacity(rows * info.seq_len);
                for r in batch {
                    let mut base = self.model.row(&model_fen(&r.pos), Some(0))?;
                    for mv in &r.moves {
                        *base.last_mut().expect("AV rows are 79 long") = action_of(mv)?;
                        tokens.extend_from_slice(&base);
                    }
                }
                let lp = self.model.run(&tokens, rows)?;
                self.stats.rows += rows as u64;
                let mut values = lp.chunks_exact(k).map(|l| expected_value(l, &self.centres));
                batch
                    .iter()
                    .map(|r| values.by_ref().take(r.moves.len()).collect())
                    .collect()
            }
            ModelKind::StateValue => {
                let rows: usize = batch.iter().map(|r| r.moves.len()).sum();
                let mut tokens = Vec::with_capacity(rows * info.seq_len);
                for r in batch {
                    for mv in &r.moves {
                        let mut child = r.pos.clone();
                        child.play_unchecked(*mv);
                        tokens.extend(self.model.row(&model_fen(&child), None)?);
                    }
                }
                let lp = self.model.run(&tokens, rows)?;
                self.stats.rows += rows as u64;
                // The successor's value is the opponent's: the mover's Q is its complement.
                let mut values = lp
                    .chunks_exact(k)
                    .map(|l| 1.0 - expected_value(l, &self.centres));
                batch
                    .iter()
                    .map(|r| values.by_ref().take(r.moves.len()).collect())
                    .collect()
            }
            ModelKind::BehavioralCloning => {
                return Err(ModelError(
                    "behavioral_cloning nets cannot drive MCTS".into(),
                ))
            }
        };
        self.stats.runs += 1;
        self.stats.positions += batch.len() as u64;
        self.stats.time += t0.elapsed();
        Ok(out)
    }

    fn stats(&self) -> EvalStats {
        self.stats
    }
}

/// An [`Evaluator`] that answers bare-king endings by the rule of
/// [`crate::search::endgame::bare_king_value`] (Q(s, a) = 1 − value of the position after a)
/// and passes every other position to `inner` in one call.
pub struct MopUp<'e> {
    inner: &'e mut dyn Evaluator,
    /// Positions answered by the rule.
    pub by_rule: u64,
}

impl<'e> MopUp<'e> {
    /// Wraps `inner`.
    pub fn new(inner: &'e mut dyn Evaluator) -> MopUp<'e> {
        MopUp { inner, by_rule: 0 }
    }

    /// The wrapped evaluator (to search without the rule).
    pub fn into_inner(self) -> &'e mut dyn Evaluator {
        self.inner
    }
}

impl Evaluator for MopUp<'_> {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(batch.len());
        let mut forward = Vec::new();
        for r in batch {
            if bare_king_value(&r.pos).is_some() {
                self.by_rule += 1;
                out.push(Some(
                    r.moves
                        .iter()
                        .map(|mv| {
                            let mut child = r.pos.clone();
                            child.play_unchecked(*mv);
                            // Not a bare-king ending any more (the piece was taken): a draw by
                            // material, which the search scores by the rules anyway.
                            bare_king_value(&child).map_or(0.5, |v| 1.0 - v)
                        })
                        .collect(),
                ));
            } else {
                out.push(None);
                forward.push(r.clone());
            }
        }
        let mut net = self.inner.evaluate(&forward)?.into_iter();
        out.into_iter()
            .map(|o| match o {
                Some(q) => Ok(q),
                None => net
                    .next()
                    .ok_or_else(|| ModelError("evaluator returned too few results".into())),
            })
            .collect()
    }

    fn stats(&self) -> EvalStats {
        self.inner.stats()
    }
}
