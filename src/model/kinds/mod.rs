//! Model kinds: how a network's rows are built and its outputs read, one file per kind, found
//! through a registry keyed by the ONNX metadata `glimpse.kind`.
//!
//! A kind ([`KindSpec`]) says: its metadata name, the row length, whether it takes the moves as a
//! second `actions` input, how many outputs a row (or move) has for the declared buckets, whether
//! it predicts a value (MCTS needs one), and [`KindSpec::evaluate`]: rows for a batch of
//! positions → one [`MoveValue`] per move. The session ([`crate::model::Model`]) checks the
//! contract with these answers and runs the rows; both searches reach a kind only through
//! [`crate::model::Model::evaluate`].
//!
//! Adding a kind: write one file here implementing [`KindSpec`] and add it to [`REGISTRY`]
//! (ARCHITECTURE.md, "Adding a model kind").

pub mod action_value;
pub mod behavioral_cloning;
pub mod multi_action_value;
pub mod multi_action_value_policy;
pub mod state_value;

use super::backend::{EvalRequest, Evaluated};
use super::error::{InputError, ModelError};
use super::inference::Model;
use super::tokenizer::{tokenize, STATE_TOKENS};
use crate::game::{model_fen, standard_uci};
use crate::model::actions::uci_to_action;
use shakmaty::{Chess, Move};

/// How one model kind lays out its rows and reads its outputs.
pub trait KindSpec: Send + Sync + 'static {
    /// The metadata value of `glimpse.kind` (`action_value`, …).
    fn name(&self) -> &'static str;

    /// The name in diagnostics (`d`, the load message): `ActionValue`, …
    fn label(&self) -> &'static str;

    /// Tokens per `tokens` row (78 = `[BOS, 77 state tokens]` unless the kind appends more).
    fn seq_len(&self) -> usize {
        STATE_TOKENS + 1
    }

    /// Whether the network takes the moves' action ids as a second input `actions`
    /// (int64 `[batch, moves]`) and outputs `[batch, moves, outputs]`.
    fn actions_input(&self) -> bool {
        false
    }

    /// `(buckets, outputs per row or move)` from the metadata `glimpse.buckets` (`None` when
    /// absent).
    ///
    /// # Errors
    /// The bucket count is missing, not allowed, or out of range.
    fn outputs(&self, buckets: Option<usize>) -> Result<(usize, usize), BucketsError>;

    /// Whether one network row scores every move of a position (the cost of a position does not
    /// grow with its number of moves).
    fn one_row_per_position(&self) -> bool;

    /// Whether the outputs are win probabilities (a value MCTS can back up, and to which the
    /// repetition rule applies); `false` for a policy.
    fn has_value(&self) -> bool {
        true
    }

    /// Float32 outputs the kind reads besides `log_probs`; the session checks at load that the
    /// net has them with these shapes.
    fn extra_outputs(&self) -> &'static [ExtraOutput] {
        &[]
    }

    /// Appends what the kind adds to a state row `[0, 77 tokens]` (AV: the action id).
    fn row(&self, state: Vec<i64>, _action: Option<u16>) -> Vec<i64> {
        state
    }

    /// Builds the rows for `batch`, runs them through `model` (one ORT run) and reads one
    /// [`MoveValue`] per requested move, in request order.
    ///
    /// # Errors
    /// A position that cannot be tokenized, a move outside the action table, or an ORT failure.
    fn evaluate(&self, model: &mut Model, batch: &[EvalRequest]) -> Result<Evaluated, ModelError>;
}

/// Every model kind the engine can load, looked up by `glimpse.kind`.
pub static REGISTRY: &[&dyn KindSpec] = &[
    &action_value::ActionValue,
    &state_value::StateValue,
    &behavioral_cloning::BehavioralCloning,
    &multi_action_value::MultiActionValue,
    &multi_action_value_policy::MultiActionValuePolicy,
];

/// One dimension of an [`ExtraOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// The batch (rows); dynamic in the graph.
    Batch,
    /// The moves of a row; dynamic in the graph.
    Moves,
    /// A fixed size.
    Fixed(usize),
}

/// A float32 output a kind reads besides `log_probs` (name and shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtraOutput {
    /// The graph output's name.
    pub name: &'static str,
    /// Its dimensions.
    pub shape: &'static [Dim],
}

impl ExtraOutput {
    /// Whether the graph's declared `dims` (≤ 0: dynamic) fit this shape.
    pub fn accepts(&self, dims: &[i64]) -> bool {
        dims.len() == self.shape.len()
            && self.shape.iter().zip(dims).all(|(want, &d)| match want {
                Dim::Batch | Dim::Moves => true,
                Dim::Fixed(n) => d <= 0 || d == *n as i64,
            })
    }

    /// Values in one run of `rows` rows with `moves` moves each.
    pub fn len(&self, rows: usize, moves: usize) -> usize {
        self.shape
            .iter()
            .map(|d| match d {
                Dim::Batch => rows,
                Dim::Moves => moves,
                Dim::Fixed(n) => *n,
            })
            .product()
    }

    /// The shape as text (`[batch, moves]`, `[batch, 3]`).
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> = self
            .shape
            .iter()
            .map(|d| match d {
                Dim::Batch => "batch".to_string(),
                Dim::Moves => "moves".to_string(),
                Dim::Fixed(n) => n.to_string(),
            })
            .collect();
        format!("[{}]", dims.join(", "))
    }
}

/// A registered model kind (a handle on its [`KindSpec`]); compares by metadata name and prints
/// its label.
#[derive(Clone, Copy)]
pub struct ModelKind(&'static dyn KindSpec);

impl ModelKind {
    /// The kind's specification.
    pub fn spec(self) -> &'static dyn KindSpec {
        self.0
    }

    /// The metadata spelling (`action_value`, …).
    pub fn as_str(self) -> &'static str {
        self.0.name()
    }

    /// Parses the metadata value of `glimpse.kind`; `None` for an unregistered kind.
    pub fn from_metadata(s: &str) -> Option<ModelKind> {
        lookup(s).ok()
    }

    /// Whether one network row scores every move of a position.
    pub fn one_row_per_position(self) -> bool {
        self.0.one_row_per_position()
    }

    /// Tokens per `tokens` row.
    pub fn seq_len(self) -> usize {
        self.0.seq_len()
    }
}

impl PartialEq for ModelKind {
    fn eq(&self, other: &ModelKind) -> bool {
        self.0.name() == other.0.name()
    }
}
impl Eq for ModelKind {}

impl std::fmt::Debug for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.label())
    }
}

/// `glimpse.kind` names no registered kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown glimpse.kind {kind:?} (expected {known})")]
pub struct UnknownKind {
    /// The value looked up.
    pub kind: String,
    /// The registered names, as `a, b or c`.
    pub known: String,
}

impl UnknownKind {
    /// The load error for the model at `source`.
    pub fn for_model(self, source: &str) -> ModelError {
        ModelError::UnknownKind {
            model: source.to_string(),
            kind: self.kind,
            known: self.known,
        }
    }
}

/// The registered names as `a, b, c or d`.
pub fn known_names() -> String {
    let names: Vec<&str> = REGISTRY.iter().map(|k| k.name()).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The kind registered under `name` (surrounding blanks ignored).
///
/// # Errors
/// [`UnknownKind`] naming the value and the registered kinds.
pub fn lookup(name: &str) -> Result<ModelKind, UnknownKind> {
    REGISTRY
        .iter()
        .find(|k| k.name() == name.trim())
        .map(|k| ModelKind(*k))
        .ok_or_else(|| UnknownKind {
            kind: name.to_string(),
            known: known_names(),
        })
}

/// The state row `[0, 77 tokens]` of a position (python-chess FEN, [`model_fen`]).
///
/// # Errors
/// The FEN cannot be tokenized.
pub fn state_row(pos: &Chess) -> Result<Vec<i64>, ModelError> {
    let t = tokenize(&model_fen(pos)).map_err(InputError::Tokenize)?;
    let mut row = Vec::with_capacity(STATE_TOKENS + 2);
    row.push(0);
    row.extend(t.iter().map(|&x| x as i64));
    Ok(row)
}

/// The action id (1968 table, standard notation) of a move.
///
/// # Errors
/// The move is not in the table.
pub fn action_id(mv: &Move) -> Result<i64, ModelError> {
    let uci = standard_uci(mv);
    uci_to_action(&uci)
        .map(i64::from)
        .ok_or_else(|| InputError::NotInActionTable(uci).into())
}

/// `(buckets, buckets)` for a value kind: K must be given and in 2..=4096.
///
/// # Errors
/// Missing or out of range.
pub fn value_buckets(buckets: Option<usize>) -> Result<(usize, usize), BucketsError> {
    let k = buckets.ok_or(BucketsError::Missing)?;
    if !(2..=4096).contains(&k) {
        return Err(BucketsError::OutOfRange(k));
    }
    Ok((k, k))
}

/// Why a kind refuses the metadata `glimpse.buckets` ([`KindSpec::outputs`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BucketsError {
    /// A value kind needs the bucket count.
    #[error("metadata `glimpse.buckets` missing")]
    Missing,
    /// Outside 2..=4096.
    #[error("glimpse.buckets = {0} is out of range")]
    OutOfRange(usize),
    /// A kind with a fixed count got another.
    #[error("{kind} model declares {declared} buckets (expected {expected})")]
    Fixed {
        /// The kind's `glimpse.kind` name.
        kind: &'static str,
        /// The count in the metadata.
        declared: usize,
        /// The only count the kind accepts.
        expected: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_finds_every_kind_by_its_metadata_name() {
        for k in REGISTRY {
            let found = lookup(k.name()).expect("registered");
            assert_eq!(found.as_str(), k.name());
            assert_eq!(format!("{found:?}"), k.label());
        }
        assert_eq!(lookup(" state_value ").unwrap().seq_len(), 78);
        assert_eq!(lookup("action_value").unwrap().seq_len(), 79);
        assert!(lookup("multi_action_value").unwrap().one_row_per_position());
        assert!(!lookup("action_value").unwrap().one_row_per_position());
        assert!(!lookup("behavioral_cloning").unwrap().spec().has_value());
    }

    #[test]
    fn unknown_kind_is_a_typed_error_naming_the_known_ones() {
        let e = lookup("square_token_policy").unwrap_err();
        assert_eq!(e.kind, "square_token_policy");
        assert_eq!(
            e.to_string(),
            "unknown glimpse.kind \"square_token_policy\" (expected action_value, state_value, \
             behavioral_cloning, multi_action_value or multi_action_value_policy)"
        );
        let m = e.for_model("net.onnx");
        assert!(matches!(m, ModelError::UnknownKind { .. }));
        assert!(m
            .to_string()
            .starts_with("model net.onnx: unknown glimpse.kind"));
        assert!(ModelKind::from_metadata("").is_none());
    }

    #[test]
    fn extra_outputs_are_declared_and_checked() {
        let mavp = lookup("multi_action_value_policy").unwrap().spec();
        let names: Vec<&str> = mavp.extra_outputs().iter().map(|x| x.name).collect();
        assert_eq!(names, ["policy", "wdl"]);
        assert!(lookup("multi_action_value")
            .unwrap()
            .spec()
            .extra_outputs()
            .is_empty());
        let (policy, wdl) = (mavp.extra_outputs()[0], mavp.extra_outputs()[1]);
        assert!(policy.accepts(&[-1, -1]));
        assert!(!policy.accepts(&[-1]), "wrong rank");
        assert!(wdl.accepts(&[-1, 3]) && wdl.accepts(&[-1, -1]));
        assert!(!wdl.accepts(&[-1, 4]), "wrong fixed size");
        assert_eq!((policy.len(2, 5), wdl.len(2, 5)), (10, 6));
        assert_eq!(
            (policy.shape_text(), wdl.shape_text()),
            ("[batch, moves]".to_string(), "[batch, 3]".to_string())
        );
    }

    #[test]
    fn bucket_declarations_are_checked() {
        let av = lookup("action_value").unwrap().spec();
        assert_eq!(av.outputs(Some(128)), Ok((128, 128)));
        assert!(av.outputs(None).is_err());
        assert!(av.outputs(Some(1)).is_err());
        let bc = lookup("behavioral_cloning").unwrap().spec();
        assert_eq!(bc.outputs(None), Ok((0, 1968)));
        assert!(bc.outputs(Some(128)).is_err());
    }
}
