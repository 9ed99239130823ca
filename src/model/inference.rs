//! The ONNX Runtime session of one network: execution providers, the model contract checked at
//! load time, and the raw `run` calls. Row building and output decoding belong to the model kind
//! ([`crate::model::kinds`]); this file knows kinds only through [`KindSpec`].
//!
//! Model contract (see `weights/README.md`): input `tokens` int64 `[batch, seq_len]` (BOS = 0
//! first; `seq_len` from the kind), for kinds with an actions input also `actions` int64
//! `[batch, moves]` (padded with [`PAD_ACTION`]); output `log_probs` float32 `[batch, outputs]` or
//! `[batch, moves, outputs]`. Metadata: `glimpse.kind` (looked up in the kind registry),
//! `glimpse.buckets` (K), optional `glimpse.description`, `glimpse.params`,
//! `glimpse.gflop_per_eval`, `glimpse.precision` (`fp32` when absent, `fp16`, `int8`; see
//! [`Precision`]).
//!
//! Loading and running never panic: failures, including panics inside `ort`, become
//! [`ModelError`]s.

use super::actions::NUM_ACTIONS;
use super::error::{InferenceError, InputError, ModelError};
use super::kinds::{ExtraOutput, ModelKind};
use super::precision::Precision;
use super::runtime::{guarded, runtime};
use super::tokenizer::tokenize;
use super::{trt_cache, trt_profile};
use ort::environment::Environment;
use ort::ep;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::Session;
use ort::value::{TensorElementType, TensorRef, ValueType};
use std::path::Path;

mod contract;
mod provider;

pub use provider::Backend;

/// ORT `session.dynamic_block_base`: dynamic block sizes in the intra-op thread pool. With 2
/// threads it made a one-row (MAV, 9M-size trunk) pass about 25 % faster on the 2-core development
/// machine (7.0 → 5.3 ms) and left large AV batches unchanged (measured with onnxruntime 1.31.1).
pub const DYNAMIC_BLOCK_BASE: u32 = 4;

/// Action id used to pad the `actions` input of a multi-action-value model (`a1b1`; any valid id
/// would do, the padded outputs are discarded).
pub const PAD_ACTION: i64 = 0;

/// How sessions are built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Execution provider.
    pub backend: Backend,
    /// ORT intra-op threads (UCI `Threads`), ≥ 1; on the CPU with ≥ 2 also the number of
    /// single-threaded copies that split a run's rows ([`Model::row_shards`]).
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
    /// Precision of the weights (metadata `glimpse.precision`; [`Precision::Fp32`] when absent).
    pub precision: Precision,
}
/// The outputs of one [`Model::run_moves_with`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveOutputs {
    /// `log_probs`, `rows * moves * outputs` values, row-major.
    pub log_probs: Vec<f32>,
    /// The requested extra outputs, in request order, each flattened row-major.
    pub extra: Vec<Vec<f32>>,
}

/// Where the model bytes come from.
enum Source<'a> {
    File(&'a Path),
    Bytes(&'a [u8]),
}

/// The TensorRT provider with its engine and timing caches on disk ([`trt_cache`]) and one
/// optimisation profile over every input shape the engine sends ([`trt_profile`]), so that no engine is
/// rebuilt mid-game; without caches or profile when the model cannot be read or inspected, or the cache
/// directory cannot be created.
fn tensorrt_provider(env: &Environment, src: &Source<'_>) -> ep::TensorRT {
    let mut trt = ep::TensorRT::default();
    let bytes = match src {
        Source::File(p) => match std::fs::read(p) {
            Ok(b) => std::borrow::Cow::Owned(b),
            Err(_) => return trt,
        },
        Source::Bytes(b) => std::borrow::Cow::Borrowed(*b),
    };
    if let Some(p) = input_dims(env, &bytes).and_then(|i| trt_profile::for_inputs(&i)) {
        trt = trt
            .with_profile_min_shapes(p.min)
            .with_profile_opt_shapes(p.opt)
            .with_profile_max_shapes(p.max);
    }
    match trt_cache::prepare(&bytes) {
        Ok(c) => trt
            .with_engine_cache(true)
            .with_engine_cache_path(c.engine_dir.display())
            .with_timing_cache(true)
            .with_timing_cache_path(c.timing_dir.display()),
        Err(_) => trt,
    }
}

/// The model's inputs as `(name, dims)`, dims ≤ 0 dynamic, read by an unoptimised CPU session (tens of
/// milliseconds; only when TensorRT is chosen). `None` when the bytes do not load.
fn input_dims(env: &Environment, bytes: &[u8]) -> Option<Vec<(String, Vec<i64>)>> {
    let session = Session::builder(env)
        .ok()?
        .with_optimization_level(GraphOptimizationLevel::Disable)
        .ok()?
        .commit_from_memory(bytes)
        .ok()?;
    session
        .inputs()
        .iter()
        .map(|i| outlet_shape(i.dtype()).map(|(_, dims)| (i.name().to_string(), dims)))
        .collect()
}

fn session_for(
    env: &Environment,
    src: &Source<'_>,
    cfg: &RuntimeConfig,
    backend: Backend,
) -> Result<Session, String> {
    let e = |e: ort::Error<SessionBuilder>| ort_message(&e);
    let mut builder = Session::builder(env)
        .map_err(|e| ort_message(&e))?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(e)?
        .with_intra_threads(cfg.intra_threads.max(1))
        .map_err(e)?
        .with_dynamic_block_base(DYNAMIC_BLOCK_BASE)
        .map_err(e)?;
    builder = match backend {
        // No arena, no memory patterns: MCTS runs many `[rows, moves]` shapes, and with ORT's
        // defaults each new largest shape extended the arena for good (a 1,000-game soak grew one
        // MCTS process 174 → 215 MiB in steps). Without them freed tensors go back to the OS and
        // speed is unchanged (README, Reliability).
        Backend::Cpu => builder
            .with_memory_pattern(false)
            .map_err(e)?
            .with_execution_providers([ep::CPU::default()
                .with_arena_allocator(false)
                .build()
                .error_on_failure()])
            .map_err(e)?,
        Backend::Cuda => builder
            .with_execution_providers([ep::CUDA::default().build().error_on_failure()])
            .map_err(e)?,
        Backend::TensorRt => builder
            .with_execution_providers([
                tensorrt_provider(env, src).build().error_on_failure(),
                ep::CUDA::default().build(),
            ])
            .map_err(e)?,
    };
    match src {
        Source::File(p) => builder.commit_from_file(p),
        Source::Bytes(b) => builder.commit_from_memory(b),
    }
    .map_err(|e| ort_message(&e))
}

/// Reads a 2-D tensor outlet as (element type, [dim0, dim1]); dims ≤ 0 are dynamic.
fn outlet_shape(ty: &ValueType) -> Option<(TensorElementType, Vec<i64>)> {
    let elem = ty.tensor_type()?;
    let shape = ty.tensor_shape()?;
    Some((elem, shape.iter().copied().collect()))
}

/// A note for the load's `info string` when a net's precision is a poor fit for the backend in use:
/// a dynamically quantised int8 net ([`Precision::Int8`]) runs its quantise and integer-MatMul nodes
/// poorly on CUDA, 3.4 ms a move against 1.2 ms for its float32 source on an H200 (README, GPU use).
pub fn precision_note(precision: Precision, backend: Backend) -> Option<String> {
    (precision == Precision::Int8 && backend != Backend::Cpu).then(|| {
        format!(
            "int8 net on the {} backend: its float32 or float16 source runs about 3x faster on a GPU (setoption name WeightsFile)",
            backend.as_str()
        )
    })
}

/// ONNX Runtime refused to build the `what` input tensor.
fn tensor_error(what: &'static str, e: &impl std::fmt::Display) -> ModelError {
    InputError::Tensor {
        what,
        message: ort_message(e),
    }
    .into()
}

/// ONNX Runtime's text of an error without the line break its kernel messages end with (it split the
/// engine's `info string` after the reason, e.g. "b zero point is not valid").
fn ort_message(e: &impl std::fmt::Display) -> String {
    e.to_string().trim_end().to_owned()
}

/// Token or action ids outside `0..1968`.
fn check_ids(ids: &[i64]) -> Result<(), ModelError> {
    match ids.iter().find(|&&t| !(0..NUM_ACTIONS as i64).contains(&t)) {
        Some(bad) => Err(InputError::TokenOutOfRange(*bad).into()),
        None => Ok(()),
    }
}

/// A panic inside `ort` during a run.
fn inference_panic(message: String) -> ModelError {
    InferenceError::Panicked(message).into()
}

/// A loaded ONNX session plus its checked [`ModelInfo`].
pub struct Model {
    info: ModelInfo,
    session: Session,
    /// T single-threaded sessions of the same net when the CPU backend has `Threads` T ≥ 2, else
    /// none: a run of at least [`SHARD_MIN_ROWS`] rows is cut into one contiguous block of rows per
    /// shard, run at the same time on T threads (data parallelism instead of ORT's intra-op pool
    /// splitting each operator). With the c52 int8 net on the 2-core development machine: MCTS
    /// 292 → 311 nodes/s, the mean of six interleaved runs of each (`glimpse bench --mcts --nodes
    /// 400`, 2026-11-28); two single-threaded processes side by side made 1.3–1.4× one process on
    /// 2 intra-op threads, so the net's small (128-wide) operators do not fill a 2-thread pool.
    shards: Vec<Session>,
    names: contract::Names,
}

/// The fewest rows a run splits between the shards; smaller runs (the one-row root of a search)
/// take the session with T intra-op threads.
pub const SHARD_MIN_ROWS: usize = 2;

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("info", &self.info)
            .field("shards", &self.shards.len())
            .finish()
    }
}

/// `rows` rows cut into at most `parts` contiguous blocks of sizes that differ by at most one
/// (larger blocks first); no empty block.
pub fn row_blocks(rows: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.clamp(1, rows.max(1));
    let (base, extra) = (rows / parts, rows % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .filter(|r| !r.is_empty())
        .collect()
}

/// The inputs of one run: token ids (`[rows, seq_len]`, row-major) and, for kinds with an actions
/// input, action ids (`[rows, moves]`).
#[derive(Clone, Copy)]
struct Batch<'a> {
    tokens: &'a [i64],
    actions: Option<&'a [i64]>,
    rows: usize,
    moves: usize,
}

impl<'a> Batch<'a> {
    /// The rows `r` of this batch.
    fn rows(&self, r: std::ops::Range<usize>, seq_len: usize) -> Batch<'a> {
        Batch {
            tokens: &self.tokens[r.start * seq_len..r.end * seq_len],
            actions: self
                .actions
                .map(|a| &a[r.start * self.moves..r.end * self.moves]),
            rows: r.len(),
            moves: self.moves,
        }
    }
}

/// One ORT run of `batch` on `session`: `log_probs` (`[rows, outputs]`, or `[rows, moves,
/// outputs]` with actions) and the `extra` outputs, each checked against its expected size.
fn forward(
    session: &mut Session,
    names: &contract::Names,
    info: &ModelInfo,
    batch: Batch<'_>,
    extra: &[ExtraOutput],
) -> Result<MoveOutputs, ModelError> {
    let (seq_len, outputs, rows, moves) = (info.seq_len, info.outputs, batch.rows, batch.moves);
    guarded("running the model", inference_panic, || {
        let t = TensorRef::from_array_view(([rows, seq_len], batch.tokens))
            .map_err(|e| tensor_error("input", &e))?;
        let result = match (batch.actions, &names.actions) {
            (Some(actions), Some(name)) => {
                let a = TensorRef::from_array_view(([rows, moves], actions))
                    .map_err(|e| tensor_error("actions", &e))?;
                session.run(ort::inputs![names.input.as_str() => t, name.as_str() => a])
            }
            _ => session.run(ort::inputs![names.input.as_str() => t]),
        }
        .map_err(|e| InferenceError::Run(ort_message(&e)))?;
        let value = result
            .get(names.output.as_str())
            .ok_or_else(|| InferenceError::OutputMissing(names.output.clone()))?;
        let (shape, data) = value
            .try_extract_tensor::<f32>()
            .map_err(|e| InferenceError::ReadOutput(ort_message(&e)))?;
        let dims: Vec<i64> = shape.iter().copied().collect();
        let expected = if batch.actions.is_some() {
            vec![rows, moves, outputs]
        } else {
            vec![rows, outputs]
        };
        let want: Vec<i64> = expected.iter().map(|&d| d as i64).collect();
        if dims != want || data.len() != expected.iter().product::<usize>() {
            return Err(InferenceError::Shape {
                found: dims,
                expected,
            }
            .into());
        }
        let log_probs = data.to_vec();
        let extra = extra
            .iter()
            .map(|x| {
                let value = result
                    .get(x.name)
                    .ok_or_else(|| InferenceError::OutputMissing(x.name.to_string()))?;
                let (_, data) =
                    value
                        .try_extract_tensor::<f32>()
                        .map_err(|e| InferenceError::ReadExtra {
                            name: x.name,
                            message: e.to_string(),
                        })?;
                let want = x.len(rows, moves);
                if data.len() != want {
                    return Err(InferenceError::ExtraLength {
                        name: x.name,
                        found: data.len(),
                        expected: want,
                    });
                }
                Ok(data.to_vec())
            })
            .collect::<Result<_, InferenceError>>()?;
        Ok(MoveOutputs { log_probs, extra })
    })
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
            return Err(ModelError::NotFound(path.to_path_buf()));
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
        guarded(&format!("loading {source}"), ModelError::Runtime, || {
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
                return Err(ModelError::Load {
                    model: source.to_string(),
                    message: last,
                });
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
            let mut model = Self::check(session, source, backend)?;
            warnings.extend(precision_note(model.info.precision, backend));
            if backend == Backend::Cpu && cfg.intra_threads >= 2 {
                let one = RuntimeConfig {
                    backend,
                    intra_threads: 1,
                };
                let shards: Result<Vec<Session>, String> = (0..cfg.intra_threads)
                    .map(|_| session_for(&env, &src, &one, backend))
                    .collect();
                match shards {
                    Ok(s) => model.shards = s,
                    Err(why) => warnings.push(format!(
                        "single-threaded copies of the net not loaded ({}); runs use {} intra-op threads",
                        why.lines().next().unwrap_or(""),
                        cfg.intra_threads
                    )),
                }
            }
            Ok(model)
        })
    }

    /// The model's checked description.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The single-threaded copies a run's rows are split between (0: every run on one session).
    pub fn row_shards(&self) -> usize {
        self.shards.len()
    }

    /// Runs `rows` rows of `info().seq_len` token ids (row-major, length `rows * seq_len`) and returns
    /// `rows * info().outputs` log-probs, row-major. Not for multi-action-value models (see
    /// [`Model::run_moves`]).
    ///
    /// # Errors
    /// Wrong input length, token ids outside `0..1968`, a MAV model, or an ORT failure.
    pub fn run(&mut self, tokens: &[i64], rows: usize) -> Result<Vec<f32>, ModelError> {
        if self.names.actions.is_some() {
            return Err(InputError::NeedsActions(self.info.kind).into());
        }
        let seq_len = self.info.seq_len;
        if tokens.len() != rows * seq_len {
            return Err(InputError::TokenCount {
                found: tokens.len(),
                rows,
                seq_len,
            }
            .into());
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        check_ids(tokens)?;
        let batch = Batch {
            tokens,
            actions: None,
            rows,
            moves: 0,
        };
        self.forward_rows(batch, &[]).map(|o| o.log_probs)
    }

    /// Runs a multi-action-value model: `rows` rows of 78 token ids (`tokens`, row-major) and
    /// `moves` action ids per row (`actions`, row-major, length `rows * moves`; pad short rows with
    /// [`PAD_ACTION`]). Returns `rows * moves * info().outputs` log-probs, row-major
    /// (`[row][move][bucket]`); the values at padded slots are to be ignored. One ORT run (one per
    /// shard, at the same time, with [`Model::row_shards`]).
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
        self.run_moves_with(tokens, actions, rows, moves, &[])
            .map(|o| o.log_probs)
    }

    /// [`Model::run_moves`] that also reads the float32 outputs `extra` (declared by the kind and
    /// checked at load), each flattened row-major with the sizes its [`ExtraOutput`] shape gives
    /// for `rows` and `moves`.
    ///
    /// # Errors
    /// As [`Model::run_moves`]; an extra output missing or of the wrong size.
    pub fn run_moves_with(
        &mut self,
        tokens: &[i64],
        actions: &[i64],
        rows: usize,
        moves: usize,
        extra: &[ExtraOutput],
    ) -> Result<MoveOutputs, ModelError> {
        let seq_len = self.info.seq_len;
        if self.names.actions.is_none() {
            return Err(InputError::NoActionsInput(self.info.kind).into());
        }
        if tokens.len() != rows * seq_len {
            return Err(InputError::TokenCount {
                found: tokens.len(),
                rows,
                seq_len,
            }
            .into());
        }
        if actions.len() != rows * moves {
            return Err(InputError::ActionCount {
                found: actions.len(),
                rows,
                moves,
            }
            .into());
        }
        if rows == 0 {
            return Ok(MoveOutputs {
                log_probs: Vec::new(),
                extra: vec![Vec::new(); extra.len()],
            });
        }
        if moves == 0 {
            return Err(InputError::NoMoves.into());
        }
        check_ids(tokens)?;
        check_ids(actions)?;
        let batch = Batch {
            tokens,
            actions: Some(actions),
            rows,
            moves,
        };
        self.forward_rows(batch, extra)
    }

    /// Runs a checked batch: on the main session, or cut into [`row_blocks`] that the shards run
    /// at the same time (the first on the calling thread), their outputs joined in row order.
    /// Every output's first dimension is the batch, so joining is concatenation.
    fn forward_rows(
        &mut self,
        batch: Batch<'_>,
        extra: &[ExtraOutput],
    ) -> Result<MoveOutputs, ModelError> {
        let Model {
            info,
            session,
            shards,
            names,
        } = self;
        let by_rows = extra
            .iter()
            .all(|x| x.shape.first() == Some(&crate::model::kinds::Dim::Batch));
        if shards.len() < 2 || batch.rows < SHARD_MIN_ROWS || !by_rows {
            return forward(session, names, info, batch, extra);
        }
        let blocks = row_blocks(batch.rows, shards.len());
        let (info, names) = (&*info, &*names);
        let parts: Vec<Result<MoveOutputs, ModelError>> = std::thread::scope(|s| {
            let mut sessions = shards.iter_mut();
            let first = sessions.next().expect("two or more shards");
            let handles: Vec<_> = blocks[1..]
                .iter()
                .zip(sessions)
                .map(|(r, sess)| {
                    let part = batch.rows(r.clone(), info.seq_len);
                    s.spawn(move || forward(sess, names, info, part, extra))
                })
                .collect();
            let mut parts = vec![forward(
                first,
                names,
                info,
                batch.rows(blocks[0].clone(), info.seq_len),
                extra,
            )];
            parts.extend(handles.into_iter().map(|h| {
                h.join().unwrap_or_else(|p| {
                    Err(inference_panic(format!(
                        "running the model: a row shard panicked: {}",
                        super::runtime::panic_message(p.as_ref())
                    )))
                })
            }));
            parts
        });
        let mut out = MoveOutputs {
            log_probs: Vec::new(),
            extra: vec![Vec::new(); extra.len()],
        };
        for part in parts {
            let part = part?;
            out.log_probs.extend(part.log_probs);
            for (all, x) in out.extra.iter_mut().zip(part.extra) {
                all.extend(x);
            }
        }
        Ok(out)
    }

    /// One input row for `fen` as the model's kind lays it out (`[0, 77 tokens]`, AV with
    /// `action` appended).
    ///
    /// # Errors
    /// The FEN cannot be tokenized.
    pub fn row(&self, fen: &str, action: Option<u16>) -> Result<Vec<i64>, ModelError> {
        let t = tokenize(fen).map_err(InputError::Tokenize)?;
        let mut row = Vec::with_capacity(self.info.seq_len);
        row.push(0);
        row.extend(t.iter().map(|&x| x as i64));
        Ok(self.info.kind.spec().row(row, action))
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
        if self.names.actions.is_some() {
            return self.run_moves(&row, &[317], 1, 1).map(|_| ());
        }
        self.run(&row, 1).map(|_| ())
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ort_messages_lose_their_trailing_line_break_only() {
        // As ONNX Runtime 1.31's MatMulIntegerToFloat kernel words a refused zero point.
        let e = "Non-zero status code returned while running MatMulIntegerToFloat node.\n Status Message: \
                 MatmulInteger : b zero point is not valid\n";
        let m = ort_message(&e);
        assert!(m.ends_with("is not valid") && !m.ends_with('\n'));
        assert_eq!(m.lines().count(), 2, "line breaks inside the message stay");
        let err: ModelError = InferenceError::Run(m).into();
        let line = format!("the warm-up run failed: {err}; keeping the previous model");
        assert!(
            line.ends_with("is not valid; keeping the previous model"),
            "{line}"
        );
    }

    #[test]
    fn int8_on_a_gpu_backend_gets_a_note_and_nothing_else_does() {
        for backend in [Backend::Cuda, Backend::TensorRt] {
            let note = precision_note(Precision::Int8, backend).unwrap();
            assert!(note.contains(backend.as_str()) && note.contains("WeightsFile"));
            assert_eq!(precision_note(Precision::Fp32, backend), None);
            assert_eq!(precision_note(Precision::Fp16, backend), None);
        }
        assert_eq!(precision_note(Precision::Int8, Backend::Cpu), None);
    }

    #[test]
    fn row_blocks_are_contiguous_balanced_and_never_empty() {
        let lens = |rows, parts| -> Vec<usize> {
            let blocks = row_blocks(rows, parts);
            let mut next = 0;
            for b in &blocks {
                assert_eq!(b.start, next, "contiguous");
                next = b.end;
            }
            assert_eq!(next, rows, "every row once");
            blocks.iter().map(|b| b.len()).collect()
        };
        assert_eq!(lens(16, 2), [8, 8]);
        assert_eq!(lens(5, 2), [3, 2]);
        assert_eq!(lens(7, 3), [3, 2, 2]);
        assert_eq!(lens(1, 2), [1]);
        assert_eq!(lens(3, 8), [1, 1, 1]);
        assert_eq!(lens(4, 0), [4]);
        assert!(lens(0, 2).is_empty());
    }

    #[test]
    fn model_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Model>();
    }

    #[test]
    fn backend_names() {
        assert_eq!(Backend::parse("CUDA"), Some(Backend::Cuda));
        assert_eq!(Backend::parse("trt"), Some(Backend::TensorRt));
        assert_eq!(Backend::parse("gpu"), None);
        assert_eq!(Backend::TensorRt.chain().len(), 3);
    }
}
