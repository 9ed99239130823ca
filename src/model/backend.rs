//! The backend interface: the one network path both searches use.
//!
//! Layers, as Lc0's backends: a search hands batches of [`EvalRequest`]s to an [`Evaluator`];
//! [`Network`] is the evaluator over an ONNX Runtime session ([`Model`]), which builds the rows and
//! reads the outputs through the model's kind ([`crate::model::kinds`]); wrappers add a cache
//! ([`crate::model::cache::Cached`]) or a rule ([`crate::search::evaluator::MopUp`]) without the
//! search or the network knowing, stacked in one place (`crate::search::evaluator::with_stack`).
//! Test evaluators (fixed values, recorded batches) stand in for the network in the search tests.

use super::error::ModelError;
use super::inference::Model;
use super::kinds::ModelKind;
use shakmaty::{Chess, Move};
use std::time::{Duration, Instant};

/// One position to evaluate and the moves to score.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    /// The position (side to move = the player whose Q values are asked for).
    pub pos: Chess,
    /// Moves to score (for MCTS, the position's legal moves in the order the tree stores them);
    /// non-empty.
    pub moves: Vec<Move>,
    /// Zobrist hash of the position and its history as the caller keys it (cache key); 0 when
    /// the caller does not cache.
    pub hash: u64,
}

/// One move's score from the network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoveValue {
    /// Q(s, a) in [0, 1]: the mover's win probability after the move (value kinds), or the
    /// move's renormalised policy probability (a policy kind).
    pub q: f32,
    /// Index of the most likely bucket (mover's point of view); 0 for a policy kind.
    pub mode: usize,
    /// P(a | s) from the net's policy head, softmax over the requested moves (the
    /// `multi_action_value_policy` kind; BC: its policy); `None` for a net without one.
    pub prior: Option<f32>,
}

/// The network's answer to a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    /// Network rows run (UCI `nodes` for the searchless policy): one per move for AV and SV,
    /// one per position for BC and MAV.
    pub rows: usize,
    /// One `Vec` per request, one value per requested move, in order.
    pub values: Vec<Vec<MoveValue>>,
    /// Per request, the WDL head's `[win, draw, loss]` probabilities for the side to move
    /// (Lc0's WDL head); empty for a net without one.
    pub wdl: Vec<[f32; 3]>,
}

/// What an [`Evaluator`] returns for one position: a value per requested move and, from a net
/// with the heads, a prior per move and the position's WDL.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scores {
    /// Q(s, a) per requested move, in [0, 1] (mover's win probability after the move).
    pub q: Vec<f32>,
    /// P(a | s) per requested move from the policy head, summing to 1; `None` without one
    /// (MCTS then derives its priors from `q`).
    pub policy: Option<Vec<f32>>,
    /// The WDL head's `[win, draw, loss]` probabilities for the side to move (Lc0's WDL head);
    /// `None` for a net without one, and from the bare-king rule, which does not run the net (the
    /// cache keeps the net's).
    pub wdl: Option<[f32; 3]>,
    /// The most likely bucket per requested move (mover's point of view; 0 for a policy
    /// kind); empty from a layer that does not run the net.
    pub modes: Vec<usize>,
    /// Network rows this position took (one for a one-row kind, else one per move); 0 from a
    /// layer that does not run the net.
    pub rows: usize,
}

impl From<Vec<f32>> for Scores {
    /// Values without a policy or a WDL, from no network row.
    fn from(q: Vec<f32>) -> Scores {
        Scores {
            q,
            ..Scores::default()
        }
    }
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
    /// Wall time spent inside the evaluator (tokenizing + ORT); the rest of a search's time is
    /// search overhead.
    pub time: Duration,
}

/// Scores the moves of positions: for each request, one win probability in [0, 1] per move,
/// from the point of view of the side to move in that position (Q(s, a) of the paper's
/// action-value predictor).
pub trait Evaluator: Send {
    /// Scores, one per request (same order, `moves.len()` values each, and as many priors
    /// when the net has a policy head).
    ///
    /// # Errors
    /// Tokenizer or network failure; the search then ends with the best move found so far.
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError>;

    /// Counters since creation.
    fn stats(&self) -> EvalStats;

    /// Scores already known for a position (`hash`, with `n` moves) without running anything:
    /// a cache layer answers, the network does not. The search asks while it gathers a batch.
    fn probe(&mut self, _hash: u64, _n: usize) -> Option<Scores> {
        None
    }

    /// Fill of a cache layer, per mille (UCI `hashfull`); 0 without one.
    fn hashfull(&self) -> u32 {
        0
    }
}

/// What a loaded net can answer, read once from its kind: the record a search checks instead of
/// asking the kind itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The kind (`glimpse.kind`).
    pub kind: ModelKind,
    /// A value per move (Q); false for behavioural cloning, which MCTS cannot search with.
    pub value: bool,
    /// One network row scores every move of a position (BC, MAV); else one row per move.
    pub one_row_per_position: bool,
    /// The WDL head: [`Scores::wdl`] per position.
    pub wdl: bool,
    /// The execution provider the net runs on (after any fallback), which sets MCTS's
    /// minibatch when `MinibatchSize` is 0.
    pub backend: crate::model::Backend,
}

impl Model {
    /// What this net's kind can answer.
    pub fn capabilities(&self) -> Capabilities {
        let kind = self.info().kind;
        let spec = kind.spec();
        Capabilities {
            kind,
            value: spec.has_value(),
            one_row_per_position: kind.one_row_per_position(),
            wdl: spec.extra_outputs().iter().any(|o| o.name == "wdl"),
            backend: self.info().backend,
        }
    }

    /// Scores the moves of each request with one network run, rows built and outputs read by
    /// the model's kind.
    ///
    /// # Errors
    /// A position that cannot be tokenized, a move outside the action table, or an ORT failure.
    pub fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Evaluated, ModelError> {
        if batch.is_empty() {
            return Ok(Evaluated {
                rows: 0,
                values: Vec::new(),
                wdl: Vec::new(),
            });
        }
        let kind = self.info().kind.spec();
        kind.evaluate(self, batch)
    }
}

/// The network as an [`Evaluator`] (values, priors, bucket modes and the WDL head), with
/// counters: the only way from the engine to [`Model::evaluate`].
pub struct Network<'a> {
    model: &'a mut Model,
    capabilities: Capabilities,
    stats: EvalStats,
}

impl<'a> Network<'a> {
    /// Wraps a loaded model (any kind: the searchless policy plays a policy kind too).
    pub fn new(model: &'a mut Model) -> Network<'a> {
        Network {
            capabilities: model.capabilities(),
            model,
            stats: EvalStats::default(),
        }
    }

    /// Wraps a loaded model for a search that needs values.
    ///
    /// # Errors
    /// [`ModelError::NoValue`] for a kind without a value (behavioural cloning: it cannot
    /// score a node; Ruoss et al. 2024, 2.2).
    pub fn for_values(model: &'a mut Model) -> Result<Network<'a>, ModelError> {
        let kind = model.info().kind;
        if !kind.spec().has_value() {
            return Err(ModelError::NoValue { kind });
        }
        Ok(Network::new(model))
    }

    /// What the wrapped net can answer.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }
}

impl Evaluator for Network<'_> {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let t0 = Instant::now();
        let out = self.model.evaluate(batch)?;
        self.stats.rows += out.rows as u64;
        self.stats.runs += 1;
        self.stats.positions += batch.len() as u64;
        self.stats.time += t0.elapsed();
        let (wdl, one_row) = (out.wdl, self.capabilities.one_row_per_position);
        Ok(out
            .values
            .into_iter()
            .zip(batch)
            .enumerate()
            .map(|(i, (v, r))| Scores {
                q: v.iter().map(|m| m.q).collect(),
                policy: v.iter().map(|m| m.prior).collect(),
                wdl: wdl.get(i).copied(),
                modes: v.iter().map(|m| m.mode).collect(),
                rows: if one_row { 1 } else { r.moves.len() },
            })
            .collect())
    }

    fn stats(&self) -> EvalStats {
        self.stats
    }
}
