//! The model contract checked when a net is loaded: the metadata (`glimpse.kind`,
//! `glimpse.buckets`, `glimpse.precision`, …), the inputs (`tokens`, and `actions` for a kind with
//! an actions input), `log_probs` and the kind's extra outputs. The kind answers every question
//! through [`KindSpec`](crate::model::kinds::KindSpec); nothing here knows a particular kind.

use super::{outlet_shape, Backend, Model, ModelInfo};
use crate::model::error::ModelError;
use crate::model::kinds::{self, ModelKind};
use crate::model::precision::Precision;
use ort::session::Session;
use ort::value::{Outlet, TensorElementType};

/// What the metadata says, before the inputs and outputs are checked.
struct Metadata {
    kind: ModelKind,
    buckets: usize,
    outputs: usize,
    gflop_per_eval: Option<f64>,
    description: String,
    precision: Precision,
}

/// The names of the checked inputs and output.
pub(super) struct Names {
    /// The `tokens` input.
    pub(super) input: String,
    /// The `actions` input (kinds with one).
    pub(super) actions: Option<String>,
    /// The `log_probs` output.
    pub(super) output: String,
}

impl Model {
    /// Checks metadata and I/O shapes against the contract of the model's kind.
    pub(super) fn check(
        session: Session,
        source: &str,
        backend: Backend,
    ) -> Result<Model, ModelError> {
        let err = |m: String| ModelError::Contract {
            model: source.to_string(),
            message: m,
        };
        let meta = read_metadata(&session, source, &err)?;
        let (input, actions) = check_inputs(session.inputs(), meta.kind, &err)?;
        let output = check_outputs(session.outputs(), meta.kind, meta.outputs, &err)?;
        let names = Names {
            input,
            actions,
            output,
        };
        Ok(Model {
            info: ModelInfo {
                kind: meta.kind,
                buckets: meta.buckets,
                seq_len: meta.kind.seq_len(),
                outputs: meta.outputs,
                source: source.to_string(),
                gflop_per_eval: meta.gflop_per_eval,
                description: meta.description,
                backend,
                precision: meta.precision,
            },
            session,
            shards: Vec::new(),
            names,
        })
    }
}

/// The `glimpse.*` metadata: the kind (from the registry), its bucket count and output width,
/// the optional cost, description and precision.
fn read_metadata(
    session: &Session,
    source: &str,
    err: &impl Fn(String) -> ModelError,
) -> Result<Metadata, ModelError> {
    let meta = session
        .metadata()
        .map_err(|e| err(format!("cannot read metadata: {e}")))?;
    let kind_str = meta.custom("glimpse.kind").ok_or_else(|| {
        err(
            "metadata `glimpse.kind` missing (not a Glimpse model; export it with training/)"
                .into(),
        )
    })?;
    let kind = kinds::lookup(&kind_str).map_err(|e| e.for_model(source))?;
    let buckets = match meta.custom("glimpse.buckets") {
        Some(s) => Some(
            s.trim()
                .parse::<usize>()
                .map_err(|_| err(format!("glimpse.buckets {s:?} is not a number")))?,
        ),
        None => None,
    };
    let (buckets, outputs) = kind
        .spec()
        .outputs(buckets)
        .map_err(|e| err(e.to_string()))?;
    let gflop_per_eval = meta
        .custom("glimpse.gflop_per_eval")
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|g| g.is_finite() && *g >= 0.0);
    let description = meta.custom("glimpse.description").unwrap_or_default();
    let precision =
        Precision::from_metadata(meta.custom("glimpse.precision").as_deref()).map_err(err)?;
    Ok(Metadata {
        kind,
        buckets,
        outputs,
        gflop_per_eval,
        description,
        precision,
    })
}

/// The input names: `tokens` int64 `[batch, seq_len]`, and `actions` int64 `[batch, moves]` for a
/// kind with an actions input.
fn check_inputs(
    inputs: &[Outlet],
    kind: ModelKind,
    err: &impl Fn(String) -> ModelError,
) -> Result<(String, Option<String>), ModelError> {
    let seq_len = kind.seq_len();
    let multi = kind.spec().actions_input();
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
                    "{} model needs inputs `tokens` and `actions`, found {:?}",
                    kind.as_str(),
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
    Ok((input_name, actions_name))
}

/// The output name: `log_probs` (or the first output) float32 `[batch, outputs]` or `[batch,
/// moves, outputs]`; every extra output the kind declares must be there with its shape.
fn check_outputs(
    outs: &[Outlet],
    kind: ModelKind,
    outputs: usize,
    err: &impl Fn(String) -> ModelError,
) -> Result<String, ModelError> {
    let multi = kind.spec().actions_input();
    let out = outs
        .iter()
        .find(|o| o.name() == "log_probs")
        .or(outs.first())
        .ok_or_else(|| err("model has no output".into()))?;
    let output_name = out.name().to_string();
    let rank = if multi { 3 } else { 2 };
    match outlet_shape(out.dtype()) {
        Some((TensorElementType::Float32, dims))
            if dims.len() == rank && (dims[rank - 1] <= 0 || dims[rank - 1] == outputs as i64) => {}
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
    for extra in kind.spec().extra_outputs() {
        let found = outs.iter().find(|o| o.name() == extra.name);
        match found.and_then(|o| outlet_shape(o.dtype())) {
            Some((TensorElementType::Float32, dims)) if extra.accepts(&dims) => {}
            other => {
                return Err(err(format!(
                    "output {:?} must be float32 {} for {}, found {other:?}",
                    extra.name,
                    extra.shape_text(),
                    kind.as_str()
                )))
            }
        }
    }
    Ok(output_name)
}
