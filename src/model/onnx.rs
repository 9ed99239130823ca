//! ONNX Runtime backend: library discovery, sessions, execution providers and the model contract.
//!
//! Model contract (see `weights/README.md`): input `tokens` int64 `[batch, 79]` (AV) or
//! `[batch, 78]` (SV, BC), BOS = 0 first; output log-probs float32 `[batch, K]` (AV, SV) or
//! `[batch, 1968]` (BC). Metadata properties: `glimpse.kind` (`action_value` | `state_value` |
//! `behavioral_cloning` | `multi_action_value`), `glimpse.buckets` (K), optional
//! `glimpse.description`, `glimpse.params`, `glimpse.gflop_per_eval`.
//!
//! The one-pass multi-action-value kind (MAV, `training/glimpse_train/onepass_model.py`) has two
//! inputs, `tokens` int64 `[batch, 78]` (`[0, 77 state tokens]`) and `actions` int64
//! `[batch, moves]` (the action ids to score, padded with [`PAD_ACTION`]), and the output
//! `log_probs` float32 `[batch, moves, K]`; an optional `value` output `[batch, K]` is ignored. The
//! outputs at padded slots are meaningless and never influence the real ones. Run it with
//! [`Model::run_moves`].
//!
//! The ONNX Runtime shared library is loaded at run time (`ort` with `load-dynamic`), once per
//! process, by [`init_runtime`]; loading and running never panic (failures, including panics inside
//! `ort`, become [`ModelError`]). ORT's own log goes to stderr at error level (`ORT_LOG` changes it).

use super::actions::NUM_ACTIONS;
use super::tokenizer::{tokenize, STATE_TOKENS};
use ort::environment::Environment;
use ort::ep;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::Session;
use ort::value::{TensorElementType, TensorRef, ValueType};
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// ONNX Runtime version whose library `make ort` provides.
pub const ORT_LIB_VERSION: &str = "1.31.1";

/// ORT `session.dynamic_block_base`: dynamic block sizes in the intra-op thread pool. With 2
/// threads it made a one-row (MAV, 9M-size trunk) pass about 25 % faster on the 2-core development
/// machine (7.0 → 5.3 ms) and left large AV batches unchanged (measured with onnxruntime 1.31.1).
pub const DYNAMIC_BLOCK_BASE: u32 = 4;

/// Action id used to pad the `actions` input of a multi-action-value model (`a1b1`; any valid id
/// would do, the padded outputs are discarded).
pub const PAD_ACTION: i64 = 0;

/// Predictor kind (paper, section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// Action-value: `[BOS, 77 state tokens, action]` → K bucket log-probs.
    ActionValue,
    /// State-value: `[BOS, 77 state tokens]` → K bucket log-probs for the side to move.
    StateValue,
    /// Behavioural cloning: `[BOS, 77 state tokens]` → 1968 action log-probs.
    BehavioralCloning,
    /// Multi-action-value (one pass per position): `[BOS, 77 state tokens]` plus the action ids
    /// of the moves → K bucket log-probs per move.
    MultiActionValue,
}

impl ModelKind {
    /// Parses the metadata value of `glimpse.kind`.
    pub fn from_metadata(s: &str) -> Option<ModelKind> {
        match s.trim() {
            "action_value" => Some(ModelKind::ActionValue),
            "state_value" => Some(ModelKind::StateValue),
            "behavioral_cloning" => Some(ModelKind::BehavioralCloning),
            "multi_action_value" => Some(ModelKind::MultiActionValue),
            _ => None,
        }
    }

    /// The metadata spelling (`action_value`, `state_value`, `behavioral_cloning`,
    /// `multi_action_value`).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::ActionValue => "action_value",
            ModelKind::StateValue => "state_value",
            ModelKind::BehavioralCloning => "behavioral_cloning",
            ModelKind::MultiActionValue => "multi_action_value",
        }
    }

    /// Whether one network row scores every move of a position (BC, MAV), so that the cost of a
    /// position does not grow with its number of moves; AV and SV need one row per move.
    pub fn one_row_per_position(self) -> bool {
        matches!(
            self,
            ModelKind::BehavioralCloning | ModelKind::MultiActionValue
        )
    }

    /// Tokens per input row: 79 for AV (`[0, 77 tokens, action]`), 78 otherwise (for MAV the
    /// actions are a separate input).
    pub fn seq_len(self) -> usize {
        match self {
            ModelKind::ActionValue => STATE_TOKENS + 2,
            _ => STATE_TOKENS + 1,
        }
    }
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

impl Backend {
    /// Parses `cpu`, `cuda`, `tensorrt` (also `trt`), case-insensitively.
    pub fn parse(s: &str) -> Option<Backend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Some(Backend::Cpu),
            "cuda" => Some(Backend::Cuda),
            "tensorrt" | "trt" => Some(Backend::TensorRt),
            _ => None,
        }
    }

    /// Lower-case name (`cpu`, `cuda`, `tensorrt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::TensorRt => "tensorrt",
        }
    }

    /// The fallback order starting at this backend (TensorRT → CUDA → CPU).
    fn chain(self) -> &'static [Backend] {
        match self {
            Backend::TensorRt => &[Backend::TensorRt, Backend::Cuda, Backend::Cpu],
            Backend::Cuda => &[Backend::Cuda, Backend::Cpu],
            Backend::Cpu => &[Backend::Cpu],
        }
    }
}

/// How sessions are built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Execution provider.
    pub backend: Backend,
    /// ORT intra-op threads (UCI `Threads`), ≥ 1.
    pub intra_threads: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            backend: Backend::Cpu,
            intra_threads: 1,
        }
    }
}

/// What a loaded model is.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// Predictor kind (from metadata `glimpse.kind`).
    pub kind: ModelKind,
    /// Number of win-probability buckets K (from `glimpse.buckets`); 0 for BC.
    pub buckets: usize,
    /// Tokens per row: 79 (AV) or 78 (SV/BC/MAV).
    pub seq_len: usize,
    /// Outputs per row (K or 1968); for MAV, per move of the row.
    pub outputs: usize,
    /// Where the model came from (file path or `<embedded>`).
    pub source: String,
    /// GFLOP per row, from metadata `glimpse.gflop_per_eval` if present (MAV: one position with
    /// 35 moves).
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

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs `f`, turning a panic inside `ort` into a [`ModelError`] with `what` as context.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, ModelError>) -> Result<T, ModelError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(ModelError(format!(
            "{what}: ONNX Runtime panicked: {}",
            panic_message(p)
        ))),
    }
}

struct Runtime {
    path: PathBuf,
    env: Environment,
}

static RUNTIME: Mutex<Option<Runtime>> = Mutex::new(None);

/// Places [`init_runtime`] looks for the library, in order, with a label for messages.
pub fn runtime_candidates() -> Vec<PathBuf> {
    let names = [
        format!("libonnxruntime.so.{ORT_LIB_VERSION}"),
        "libonnxruntime.so".to_string(),
    ];
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        for n in &names {
            out.push(dir.join(n));
        }
    }
    let source_lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("lib");
    for n in &names {
        out.push(source_lib.join(n));
    }
    if let Ok(cwd) = std::env::current_dir() {
        for n in &names {
            let p = cwd.join("lib").join(n);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Checks that `path` is a readable ELF file before handing it to the dynamic loader.
fn precheck(path: &Path) -> Result<(), String> {
    use std::io::Read;
    if !path.exists() {
        return Err("not found".into());
    }
    if !path.is_file() {
        return Err("not a file".into());
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| format!("unreadable: {e}"))?;
    if cfg!(target_os = "linux") && &magic != b"\x7fELF" {
        return Err("not an ELF shared library".into());
    }
    Ok(())
}

fn try_load(path: &Path) -> Result<Environment, String> {
    precheck(path)?;
    let builder = match catch_unwind(|| ort::init_from(path)) {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(p) => return Err(format!("loader panicked: {}", panic_message(p))),
    };
    match catch_unwind(AssertUnwindSafe(|| {
        builder.with_name("glimpse").with_telemetry(false).build()
    })) {
        Ok(Ok(env)) => Ok(env),
        Ok(Err(e)) => Err(format!("cannot create the ONNX Runtime environment: {e}")),
        Err(p) => Err(format!(
            "environment creation panicked: {}",
            panic_message(p)
        )),
    }
}

/// Finds and loads the ONNX Runtime shared library once per process: env `ORT_DYLIB_PATH`, next to
/// the executable, `lib/` of the source tree. Returns the path loaded.
///
/// Each candidate (see [`runtime_candidates`]) is checked to be an ELF file before the dynamic
/// loader sees it; a failed attempt can be retried later (e.g. after `ORT_DYLIB_PATH` was set).
///
/// # Errors
/// A message that lists every place looked in and how to fix it (`make`, or set `ORT_DYLIB_PATH`).
pub fn init_runtime() -> Result<PathBuf, ModelError> {
    runtime().map(|(path, _)| path)
}

fn runtime() -> Result<(PathBuf, Environment), ModelError> {
    let mut guard = RUNTIME.lock();
    if let Some(rt) = guard.as_ref() {
        return Ok((rt.path.clone(), rt.env.clone()));
    }
    let mut tried = Vec::new();
    for path in runtime_candidates() {
        match try_load(&path) {
            Ok(env) => {
                *guard = Some(Runtime {
                    path: path.clone(),
                    env: env.clone(),
                });
                return Ok((path, env));
            }
            Err(why) => tried.push(format!("  {} ({why})", path.display())),
        }
    }
    Err(ModelError(format!(
        "cannot load the ONNX Runtime library (libonnxruntime.so.{ORT_LIB_VERSION}); tried:\n{}\n\
         run `make` (or `make ort`) in the source tree to fetch it into lib/, or set ORT_DYLIB_PATH \
         to the library's path",
        tried.join("\n")
    )))
}

/// Where the model bytes come from.
enum Source<'a> {
    File(&'a Path),
    Bytes(&'a [u8]),
}

fn session_for(
    env: &Environment,
    src: &Source<'_>,
    cfg: &RuntimeConfig,
    backend: Backend,
) -> Result<Session, String> {
    let e = |e: ort::Error<SessionBuilder>| e.to_string();
    let mut builder = Session::builder(env)
        .map_err(|e| e.to_string())?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(e)?
        .with_intra_threads(cfg.intra_threads.max(1))
        .map_err(e)?
        .with_dynamic_block_base(DYNAMIC_BLOCK_BASE)
        .map_err(e)?;
    builder = match backend {
        Backend::Cpu => builder,
        Backend::Cuda => builder
            .with_execution_providers([ep::CUDA::default().build().error_on_failure()])
            .map_err(e)?,
        Backend::TensorRt => builder
            .with_execution_providers([
                ep::TensorRT::default().build().error_on_failure(),
                ep::CUDA::default().build(),
            ])
            .map_err(e)?,
    };
    match src {
        Source::File(p) => builder.commit_from_file(p),
        Source::Bytes(b) => builder.commit_from_memory(b),
    }
    .map_err(|e| e.to_string())
}

/// Reads a 2-D tensor outlet as (element type, [dim0, dim1]); dims ≤ 0 are dynamic.
fn outlet_shape(ty: &ValueType) -> Option<(TensorElementType, Vec<i64>)> {
    let elem = ty.tensor_type()?;
    let shape = ty.tensor_shape()?;
    Some((elem, shape.iter().copied().collect()))
}

/// A loaded ONNX session plus its checked [`ModelInfo`].
pub struct Model {
    info: ModelInfo,
    session: Session,
    input_name: String,
    /// The `actions` input (MAV only).
    actions_name: Option<String>,
    output_name: String,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("info", &self.info).finish()
    }
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
        if !path.is_file() {
            return Err(ModelError(format!(
                "model file {} not found",
                path.display()
            )));
        }
        Self::load(
            Source::File(path),
            &path.display().to_string(),
            cfg,
            warnings,
        )
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
        Self::load(Source::Bytes(bytes), source, cfg, warnings)
    }

    fn load(
        src: Source<'_>,
        source: &str,
        cfg: &RuntimeConfig,
        warnings: &mut Vec<String>,
    ) -> Result<Model, ModelError> {
        let (_, env) = runtime()?;
        guarded(&format!("loading {source}"), || {
            let mut errors = Vec::new();
            let mut session = None;
            for &backend in cfg.backend.chain() {
                match session_for(&env, &src, cfg, backend) {
                    Ok(s) => {
                        session = Some((s, backend));
                        break;
                    }
                    Err(why) => errors.push((backend, why)),
                }
            }
            let Some((session, backend)) = session else {
                let (_, last) = errors
                    .last()
                    .cloned()
                    .unwrap_or((Backend::Cpu, String::new()));
                return Err(ModelError(format!("cannot load model {source}: {last}")));
            };
            for (failed, why) in &errors {
                warnings.push(format!(
                    "{} execution provider unavailable ({}); falling back",
                    failed.as_str(),
                    why.lines().next().unwrap_or("")
                ));
            }
            if backend != cfg.backend {
                warnings.push(format!(
                    "backend {} requested, using {}",
                    cfg.backend.as_str(),
                    backend.as_str()
                ));
            }
            Self::check(session, source, backend)
        })
    }

    /// Checks metadata and I/O shapes against the contract.
    fn check(session: Session, source: &str, backend: Backend) -> Result<Model, ModelError> {
        let err = |m: String| ModelError(format!("model {source}: {m}"));
        let meta = session
            .metadata()
            .map_err(|e| err(format!("cannot read metadata: {e}")))?;
        let kind_str = meta.custom("glimpse.kind").ok_or_else(|| {
            err(
                "metadata `glimpse.kind` missing (not a Glimpse model; export it with training/)"
                    .into(),
            )
        })?;
        let kind = ModelKind::from_metadata(&kind_str).ok_or_else(|| {
            err(format!(
                "unknown glimpse.kind {kind_str:?} (expected action_value, state_value, behavioral_cloning or multi_action_value)"
            ))
        })?;
        let buckets = match meta.custom("glimpse.buckets") {
            Some(s) => s
                .trim()
                .parse::<usize>()
                .map_err(|_| err(format!("glimpse.buckets {s:?} is not a number")))?,
            None if kind == ModelKind::BehavioralCloning => 0,
            None => return Err(err("metadata `glimpse.buckets` missing".into())),
        };
        let outputs = match kind {
            ModelKind::BehavioralCloning => {
                if buckets != 0 {
                    return Err(err(format!(
                        "behavioral_cloning model declares {buckets} buckets (expected 0)"
                    )));
                }
                NUM_ACTIONS
            }
            _ => {
                if !(2..=4096).contains(&buckets) {
                    return Err(err(format!("glimpse.buckets = {buckets} is out of range")));
                }
                buckets
            }
        };
        let gflop_per_eval = meta
            .custom("glimpse.gflop_per_eval")
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|g| g.is_finite() && *g >= 0.0);
        let description = meta.custom("glimpse.description").unwrap_or_default();
        drop(meta);

        let seq_len = kind.seq_len();
        let inputs = session.inputs();
        let multi = kind == ModelKind::MultiActionValue;
        let want_inputs = if multi { 2 } else { 1 };
        if inputs.len() != want_inputs {
            return Err(err(format!(
                "expected {want_inputs} input(s) for {}, found {}",
                kind.as_str(),
                inputs.len()
            )));
        }
        let (tokens_input, actions_input) = if multi {
            let find = |name: &str| {
                inputs.iter().find(|i| i.name() == name).ok_or_else(|| {
                    err(format!(
                        "multi_action_value model needs inputs `tokens` and `actions`, found {:?}",
                        inputs.iter().map(|i| i.name()).collect::<Vec<_>>()
                    ))
                })
            };
            (find("tokens")?, Some(find("actions")?))
        } else {
            (&inputs[0], None)
        };
        let input_name = tokens_input.name().to_string();
        match outlet_shape(tokens_input.dtype()) {
            Some((TensorElementType::Int64, dims))
                if dims.len() == 2 && dims[0] <= 0 && dims[1] == seq_len as i64 => {}
            other => {
                return Err(err(format!(
                    "input {input_name:?} must be int64 [batch, {seq_len}] with a dynamic batch for {}, found {other:?}",
                    kind.as_str()
                )))
            }
        }
        let actions_name = match actions_input {
            None => None,
            Some(a) => match outlet_shape(a.dtype()) {
                Some((TensorElementType::Int64, dims))
                    if dims.len() == 2 && dims[0] <= 0 && dims[1] <= 0 =>
                {
                    Some(a.name().to_string())
                }
                other => {
                    return Err(err(format!(
                        "input \"actions\" must be int64 [batch, moves] with dynamic dimensions, found {other:?}"
                    )))
                }
            },
        };
        let outs = session.outputs();
        let out = outs
            .iter()
            .find(|o| o.name() == "log_probs")
            .or(outs.first())
            .ok_or_else(|| err("model has no output".into()))?;
        let output_name = out.name().to_string();
        let rank = if multi { 3 } else { 2 };
        match outlet_shape(out.dtype()) {
            Some((TensorElementType::Float32, dims))
                if dims.len() == rank
                    && (dims[rank - 1] <= 0 || dims[rank - 1] == outputs as i64) => {}
            other => {
                let shape = if multi {
                    format!("[batch, moves, {outputs}]")
                } else {
                    format!("[batch, {outputs}]")
                };
                return Err(err(format!(
                    "output {output_name:?} must be float32 {shape} for {}, found {other:?}",
                    kind.as_str()
                )));
            }
        }
        Ok(Model {
            info: ModelInfo {
                kind,
                buckets,
                seq_len,
                outputs,
                source: source.to_string(),
                gflop_per_eval,
                description,
                backend,
            },
            session,
            input_name,
            actions_name,
            output_name,
        })
    }

    /// The model's checked description.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Runs `rows` rows of `info().seq_len` token ids (row-major, length `rows * seq_len`) and returns
    /// `rows * info().outputs` log-probs, row-major. Not for multi-action-value models (see
    /// [`Model::run_moves`]).
    ///
    /// # Errors
    /// Wrong input length, token ids outside `0..1968`, a MAV model, or an ORT failure.
    pub fn run(&mut self, tokens: &[i64], rows: usize) -> Result<Vec<f32>, ModelError> {
        if self.actions_name.is_some() {
            return Err(ModelError(
                "a multi_action_value model needs the moves' action ids: use run_moves".into(),
            ));
        }
        let (seq_len, outputs) = (self.info.seq_len, self.info.outputs);
        if tokens.len() != rows * seq_len {
            return Err(ModelError(format!(
                "model input has {} tokens, expected {rows} rows × {seq_len}",
                tokens.len()
            )));
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        if let Some(bad) = tokens
            .iter()
            .find(|&&t| !(0..NUM_ACTIONS as i64).contains(&t))
        {
            return Err(ModelError(format!("token id {bad} out of range 0..1968")));
        }
        let Model {
            session,
            input_name,
            output_name,
            ..
        } = self;
        guarded("running the model", || {
            let input = TensorRef::from_array_view(([rows, seq_len], tokens))
                .map_err(|e| ModelError(format!("cannot build the input tensor: {e}")))?;
            let result = session
                .run(ort::inputs![input_name.as_str() => input])
                .map_err(|e| ModelError(format!("inference failed: {e}")))?;
            let value = result
                .get(output_name.as_str())
                .ok_or_else(|| ModelError(format!("output {output_name:?} missing")))?;
            let (shape, data) = value
                .try_extract_tensor::<f32>()
                .map_err(|e| ModelError(format!("cannot read output: {e}")))?;
            let dims: Vec<i64> = shape.iter().copied().collect();
            if dims != [rows as i64, outputs as i64] || data.len() != rows * outputs {
                return Err(ModelError(format!(
                    "output shape {dims:?}, expected [{rows}, {outputs}]"
                )));
            }
            Ok(data.to_vec())
        })
    }

    /// Runs a multi-action-value model: `rows` rows of 78 token ids (`tokens`, row-major) and
    /// `moves` action ids per row (`actions`, row-major, length `rows * moves`; pad short rows with
    /// [`PAD_ACTION`]). Returns `rows * moves * info().outputs` log-probs, row-major
    /// (`[row][move][bucket]`); the values at padded slots are to be ignored. One ORT run.
    ///
    /// # Errors
    /// Not a MAV model, wrong input lengths, `moves == 0` with `rows > 0`, token or action ids
    /// outside `0..1968`, or an ORT failure.
    pub fn run_moves(
        &mut self,
        tokens: &[i64],
        actions: &[i64],
        rows: usize,
        moves: usize,
    ) -> Result<Vec<f32>, ModelError> {
        let (seq_len, outputs) = (self.info.seq_len, self.info.outputs);
        let Some(actions_name) = self.actions_name.clone() else {
            return Err(ModelError(format!(
                "run_moves needs a multi_action_value model, this is {}",
                self.info.kind.as_str()
            )));
        };
        if tokens.len() != rows * seq_len {
            return Err(ModelError(format!(
                "model input has {} tokens, expected {rows} rows × {seq_len}",
                tokens.len()
            )));
        }
        if actions.len() != rows * moves {
            return Err(ModelError(format!(
                "model input has {} action ids, expected {rows} rows × {moves}",
                actions.len()
            )));
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        if moves == 0 {
            return Err(ModelError("no moves to score".into()));
        }
        if let Some(bad) = tokens
            .iter()
            .chain(actions)
            .find(|&&t| !(0..NUM_ACTIONS as i64).contains(&t))
        {
            return Err(ModelError(format!("token id {bad} out of range 0..1968")));
        }
        let Model {
            session,
            input_name,
            output_name,
            ..
        } = self;
        guarded("running the model", || {
            let t = TensorRef::from_array_view(([rows, seq_len], tokens))
                .map_err(|e| ModelError(format!("cannot build the input tensor: {e}")))?;
            let a = TensorRef::from_array_view(([rows, moves], actions))
                .map_err(|e| ModelError(format!("cannot build the actions tensor: {e}")))?;
            let result = session
                .run(ort::inputs![input_name.as_str() => t, actions_name.as_str() => a])
                .map_err(|e| ModelError(format!("inference failed: {e}")))?;
            let value = result
                .get(output_name.as_str())
                .ok_or_else(|| ModelError(format!("output {output_name:?} missing")))?;
            let (shape, data) = value
                .try_extract_tensor::<f32>()
                .map_err(|e| ModelError(format!("cannot read output: {e}")))?;
            let dims: Vec<i64> = shape.iter().copied().collect();
            if dims != [rows as i64, moves as i64, outputs as i64]
                || data.len() != rows * moves * outputs
            {
                return Err(ModelError(format!(
                    "output shape {dims:?}, expected [{rows}, {moves}, {outputs}]"
                )));
            }
            Ok(data.to_vec())
        })
    }

    /// One input row for `fen` (AV: `action` appended), as the searchless policies build it.
    ///
    /// # Errors
    /// The FEN cannot be tokenized.
    pub fn row(&self, fen: &str, action: Option<u16>) -> Result<Vec<i64>, ModelError> {
        let t = tokenize(fen).map_err(|e| ModelError(e.to_string()))?;
        let mut row = Vec::with_capacity(self.info.seq_len);
        row.push(0);
        row.extend(t.iter().map(|&x| x as i64));
        if self.info.kind == ModelKind::ActionValue {
            row.push(action.unwrap_or(0) as i64);
        }
        Ok(row)
    }

    /// Runs one dummy row (the start position; AV with `e2e4`) so that ORT allocates its buffers
    /// and any provider compiles its kernels before the first real search.
    ///
    /// # Errors
    /// An ORT failure.
    pub fn warm_up(&mut self) -> Result<(), ModelError> {
        let row = self.row(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            Some(317),
        )?;
        if self.actions_name.is_some() {
            return self.run_moves(&row, &[317], 1, 1).map(|_| ());
        }
        self.run(&row, 1).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Model>();
    }

    #[test]
    fn parsing_helpers() {
        assert_eq!(Backend::parse("CUDA"), Some(Backend::Cuda));
        assert_eq!(Backend::parse("trt"), Some(Backend::TensorRt));
        assert_eq!(Backend::parse("gpu"), None);
        assert_eq!(
            ModelKind::from_metadata("state_value"),
            Some(ModelKind::StateValue)
        );
        assert_eq!(ModelKind::ActionValue.seq_len(), 79);
        assert_eq!(ModelKind::BehavioralCloning.seq_len(), 78);
        assert_eq!(
            ModelKind::from_metadata("multi_action_value"),
            Some(ModelKind::MultiActionValue)
        );
        assert_eq!(ModelKind::MultiActionValue.as_str(), "multi_action_value");
        assert_eq!(ModelKind::MultiActionValue.seq_len(), 78);
        assert!(ModelKind::MultiActionValue.one_row_per_position());
        assert!(!ModelKind::ActionValue.one_row_per_position());
        assert_eq!(Backend::TensorRt.chain().len(), 3);
    }

    #[test]
    fn precheck_rejects_non_libraries() {
        let dir = std::env::temp_dir().join(format!("glimpse-precheck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("libonnxruntime.so");
        std::fs::write(&fake, b"not a library").unwrap();
        assert_eq!(precheck(&fake).unwrap_err(), "not an ELF shared library");
        assert_eq!(precheck(&dir.join("missing.so")).unwrap_err(), "not found");
        assert_eq!(precheck(&dir).unwrap_err(), "not a file");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
