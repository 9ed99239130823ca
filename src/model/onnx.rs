//! ONNX Runtime backend: library discovery, sessions, execution providers and the model contract.
//!
//! Model contract (see `weights/README.md`): input `tokens` int64 `[batch, 79]` (AV) or
//! `[batch, 78]` (SV, BC), BOS = 0 first; output log-probs float32 `[batch, K]` (AV, SV) or
//! `[batch, 1968]` (BC). Metadata properties: `glimpse.kind` (`action_value` | `state_value` |
//! `behavioral_cloning`), `glimpse.buckets` (K), optional `glimpse.description`, `glimpse.params`,
//! `glimpse.gflop_per_eval`.

use std::path::{Path, PathBuf};

/// Predictor kind (paper, section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// Action-value: `[BOS, 77 state tokens, action]` → K bucket log-probs.
    ActionValue,
    /// State-value: `[BOS, 77 state tokens]` → K bucket log-probs for the side to move.
    StateValue,
    /// Behavioural cloning: `[BOS, 77 state tokens]` → 1968 action log-probs.
    BehavioralCloning,
}

/// Execution provider choice (UCI option `Backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// CPU execution provider (default).
    #[default]
    Cpu,
    /// CUDA execution provider (needs the onnxruntime-gpu libraries).
    Cuda,
    /// TensorRT execution provider (falls back to CUDA, then CPU).
    TensorRt,
}

/// How sessions are built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Execution provider.
    pub backend: Backend,
    /// ORT intra-op threads (UCI `Threads`), ≥ 1.
    pub intra_threads: usize,
}

/// What a loaded model is.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// Predictor kind (from metadata `glimpse.kind`).
    pub kind: ModelKind,
    /// Number of win-probability buckets K (from `glimpse.buckets`); 0 for BC.
    pub buckets: usize,
    /// Tokens per row: 79 (AV) or 78 (SV/BC).
    pub seq_len: usize,
    /// Outputs per row: K or 1968.
    pub outputs: usize,
    /// Where the model came from (file path or `<embedded>`).
    pub source: String,
    /// GFLOP per row, from metadata `glimpse.gflop_per_eval` if present.
    pub gflop_per_eval: Option<f64>,
    /// Free-text description from metadata.
    pub description: String,
    /// Execution provider actually in use.
    pub backend: Backend,
}

/// Errors from loading or running a model; never panics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ModelError {}

/// Finds and loads the ONNX Runtime shared library once per process: env `ORT_DYLIB_PATH`, next to
/// the executable, `lib/` of the source tree. Returns the path loaded.
///
/// # Errors
/// A message that lists every place looked in and how to fix it (`make`, or set `ORT_DYLIB_PATH`).
pub fn init_runtime() -> Result<PathBuf, ModelError> {
    todo!("issue 2")
}

/// A loaded ONNX session plus its checked [`ModelInfo`].
pub struct Model {
    info: ModelInfo,
}

impl Model {
    /// Loads a model file. `warnings` receives non-fatal notes (e.g. backend fell back to CPU).
    ///
    /// # Errors
    /// Missing/corrupt file, missing runtime, unknown kind, metadata/shape mismatch.
    pub fn load_file(
        path: &Path,
        cfg: &RuntimeConfig,
        warnings: &mut Vec<String>,
    ) -> Result<Model, ModelError> {
        let _ = (path, cfg, warnings);
        todo!("issue 2")
    }

    /// Loads a model from bytes (the embedded default); `source` names it in [`ModelInfo`].
    ///
    /// # Errors
    /// As [`Model::load_file`].
    pub fn load_bytes(
        bytes: &[u8],
        source: &str,
        cfg: &RuntimeConfig,
        warnings: &mut Vec<String>,
    ) -> Result<Model, ModelError> {
        let _ = (bytes, source, cfg, warnings);
        todo!("issue 2")
    }

    /// The model's checked description.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Runs `rows` rows of `info().seq_len` token ids (row-major, length `rows * seq_len`) and returns
    /// `rows * info().outputs` log-probs, row-major.
    ///
    /// # Errors
    /// Wrong input length or an ORT failure.
    pub fn run(&mut self, tokens: &[i64], rows: usize) -> Result<Vec<f32>, ModelError> {
        let _ = (tokens, rows);
        todo!("issue 2")
    }
}
