//! Typed errors of the network layer (loading, the model contract, running).

use super::kinds::ModelKind;
use super::tokenizer::TokenizeError;
use std::path::PathBuf;
use thiserror::Error;

/// Errors from loading or running a model. Nothing in the model layer panics on bad input: every
/// failure (including a panic inside `ort`, caught at the ORT call) becomes one of these. Texts
/// from ONNX Runtime itself (its reasons for refusing a file or failing a run) stay text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelError {
    /// The ONNX Runtime library could not be loaded or initialised (message lists where it looked).
    #[error("{0}")]
    Runtime(String),
    /// No network file is set and the binary has no embedded net.
    #[error("{}", crate::weights::missing_message())]
    NoEmbedded,
    /// A model file does not exist.
    #[error("model file {} not found", .0.display())]
    NotFound(PathBuf),
    /// ONNX Runtime refused the file (corrupt, unsupported operator, no execution provider).
    #[error("cannot load model {model}: {message}")]
    Load {
        /// Where the model came from (path or `<embedded>`).
        model: String,
        /// ONNX Runtime's reason.
        message: String,
    },
    /// The metadata `glimpse.kind` names no registered model kind ([`crate::model::kinds`]).
    #[error("model {model}: unknown glimpse.kind {kind:?} (expected {known})")]
    UnknownKind {
        /// Where the model came from.
        model: String,
        /// The metadata value found.
        kind: String,
        /// The registered kinds, for the message.
        known: String,
    },
    /// Metadata or input/output shapes do not match the model contract of its kind.
    #[error("model {model}: {message}")]
    Contract {
        /// Where the model came from.
        model: String,
        /// What does not match.
        message: String,
    },
    /// The rows handed to the network are malformed (length, token ids out of range, wrong kind).
    #[error("{0}")]
    Input(#[from] InputError),
    /// ONNX Runtime failed while running, or its output has the wrong shape.
    #[error("{0}")]
    Inference(#[from] InferenceError),
    /// The kind predicts no value (behavioural cloning), so it cannot drive MCTS.
    #[error(
        "a {} net predicts no value and cannot drive MCTS; \
         use SearchMode searchless or an action-value, state-value or one-pass net",
        .kind.as_str()
    )]
    NoValue {
        /// The net's kind.
        kind: ModelKind,
    },
}

/// Malformed rows or moves for the network ([`ModelError::Input`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InputError {
    /// The position cannot be tokenized.
    #[error("{0}")]
    Tokenize(TokenizeError),
    /// A move (standard notation) outside the 1968-move action table.
    #[error("move {0} is not in the action table")]
    NotInActionTable(String),
    /// `run` on a kind that needs the moves' action ids.
    #[error("a {} model needs the moves' action ids: use run_moves", .0.as_str())]
    NeedsActions(ModelKind),
    /// `run_moves` on a kind without an actions input.
    #[error("run_moves needs a multi_action_value model, this is {}", .0.as_str())]
    NoActionsInput(ModelKind),
    /// The token buffer does not hold `rows × seq_len` ids.
    #[error("model input has {found} tokens, expected {rows} rows × {seq_len}")]
    TokenCount {
        /// Ids given.
        found: usize,
        /// Rows.
        rows: usize,
        /// Tokens per row.
        seq_len: usize,
    },
    /// The action buffer does not hold `rows × moves` ids.
    #[error("model input has {found} action ids, expected {rows} rows × {moves}")]
    ActionCount {
        /// Ids given.
        found: usize,
        /// Rows.
        rows: usize,
        /// Moves per row.
        moves: usize,
    },
    /// A batch without moves.
    #[error("no moves to score")]
    NoMoves,
    /// A token id outside the vocabulary.
    #[error("token id {0} out of range 0..1968")]
    TokenOutOfRange(i64),
    /// ONNX Runtime refused to build an input tensor (`what`: `input` or `actions`).
    #[error("cannot build the {what} tensor: {message}")]
    Tensor {
        /// Which tensor.
        what: &'static str,
        /// ONNX Runtime's reason.
        message: String,
    },
}

/// A failed network run or an output of the wrong shape ([`ModelError::Inference`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InferenceError {
    /// ONNX Runtime's run failed.
    #[error("inference failed: {0}")]
    Run(String),
    /// A panic inside `ort`, caught ([`crate::model::runtime::guarded`]).
    #[error("{0}")]
    Panicked(String),
    /// A named output is not among the results.
    #[error("output {0:?} missing")]
    OutputMissing(String),
    /// `log_probs` cannot be read as float32.
    #[error("cannot read output: {0}")]
    ReadOutput(String),
    /// An extra output cannot be read as float32.
    #[error("cannot read output {name:?}: {message}")]
    ReadExtra {
        /// The output.
        name: &'static str,
        /// ONNX Runtime's reason.
        message: String,
    },
    /// `log_probs` has another shape than the rows asked for.
    #[error("output shape {found:?}, expected {expected:?}")]
    Shape {
        /// The shape returned.
        found: Vec<i64>,
        /// The shape expected.
        expected: Vec<usize>,
    },
    /// An extra output has another number of values than its shape gives.
    #[error("output {name:?} has {found} values, expected {expected}")]
    ExtraLength {
        /// The output.
        name: &'static str,
        /// Values returned.
        found: usize,
        /// Values expected.
        expected: usize,
    },
    /// The kind decoded fewer positions or moves than were asked for.
    #[error("the network returned too few values")]
    TooFewValues,
    /// An evaluator layer answered fewer positions than it was asked for.
    #[error("evaluator returned too few results")]
    TooFewResults,
}
