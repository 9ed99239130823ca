//! The network layer: model formats, the ONNX Runtime backend and the model kinds.
//!
//! - [`tokenizer`]: FEN → 77 token ids (the reference's vocabulary and layout).
//! - [`actions`]: the 1968-move action table (UCI move ↔ action id).
//! - [`buckets`]: K uniform win-probability buckets, expected value, cp/WDL conversion.
//! - [`runtime`]: ONNX Runtime library discovery (once per process).
//! - [`session`]: one ORT session, execution providers, the model contract checked at load.
//! - [`trt_cache`]: TensorRT engine and timing caches on disk, keyed by the model's SHA-256.
//! - [`trt_profile`]: the TensorRT optimisation profile that covers every input shape the engine sends.
//! - [`kinds`]: one file per model kind (rows in, values out) and the registry by `glimpse.kind`.
//! - [`backend`]: the [`Evaluator`] interface both searches call, and [`Network`] over a session.
//! - [`cache`]: the result cache and its evaluator wrapper.
//! - [`precision`]: the weights' precision (`glimpse.precision`: fp32, fp16, int8).
//! - [`slot`]: which network is loaded, loading and warm-up, shared by engine and search.
//! - [`cost`]: measured run costs (one row, per row in a batch) for time planning.
//! - [`error`]: the typed [`ModelError`].

pub mod actions;
pub mod backend;
pub mod buckets;
pub mod cache;
pub mod cost;
pub mod error;
pub mod inference;
pub mod kinds;
pub mod precision;
pub mod runtime;
pub mod slot;
pub mod tokenizer;
pub mod trt_cache;
pub mod trt_profile;

pub use backend::{
    Capabilities, EvalRequest, EvalStats, Evaluated, Evaluator, MoveValue, Network, Scores,
};
pub use error::{InferenceError, InputError, ModelError};
pub use inference::{Backend, Model, ModelInfo, RuntimeConfig, PAD_ACTION};
pub use kinds::ModelKind;
pub use precision::Precision;
pub use runtime::{init_runtime, ORT_LIB_VERSION};
pub use slot::{LoadKey, NetworkSlot, Note, Preloader, SharedNetwork};
