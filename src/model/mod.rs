//! Model formats and the ONNX Runtime backend.
//!
//! - [`tokenizer`]: FEN → 77 token ids (the reference's vocabulary and layout).
//! - [`actions`]: the 1968-move action table (UCI move ↔ action id).
//! - [`buckets`]: K uniform win-probability buckets, expected value, cp/WDL conversion.
//! - [`onnx`]: ONNX Runtime discovery, sessions, execution providers, metadata checks.

pub mod actions;
pub mod buckets;
pub mod onnx;
pub mod tokenizer;

pub use onnx::{Backend, Model, ModelError, ModelInfo, ModelKind, RuntimeConfig};
