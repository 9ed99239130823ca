//! Typed errors of the network layer (loading, the model contract, running).

use thiserror::Error;

/// Errors from loading or running a model. Nothing in the model layer panics on bad input: every
/// failure (including a panic inside `ort`, caught at the ORT call) becomes one of these.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelError {
    /// The ONNX Runtime library could not be loaded or initialised (message lists where it looked).
    #[error("{0}")]
    Runtime(String),
    /// No network file is set and the binary has no embedded net (the message says what to do).
    #[error("{0}")]
    NoEmbedded(String),
    /// A model file does not exist.
    #[error("model file {0} not found")]
    NotFound(String),
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
    Input(String),
    /// ONNX Runtime failed while running, or its output has the wrong shape.
    #[error("{0}")]
    Inference(String),
    /// The kind cannot do what was asked (e.g. a behavioural-cloning net has no value for MCTS).
    #[error("{0}")]
    Unsupported(String),
}
