//! The loaded network: which one (a [`LoadKey`]), loading and warm-up, and the per-row cost the
//! time planning uses.
//!
//! Ownership and threading: one [`NetworkSlot`] per engine, shared as [`SharedNetwork`] (a mutex)
//! by the engine (`isready`, `eval`) and the search thread (`go`). The search thread holds the lock
//! for a whole search; the engine locks it only when no search is in flight, so it never waits on
//! a search. The loaded model's [`ModelInfo`] is also published in its own small mutex for `d`.

use super::backend::EvalRequest;
use super::error::ModelError;
use super::session::{Backend, Model, ModelInfo, RuntimeConfig};
use crate::weights;
use parking_lot::Mutex;
use shakmaty::{Chess, Position};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The value written for the embedded net (UCI `WeightsFile`, `ModelInfo::source`).
pub const EMBEDDED: &str = "<embedded>";

/// Which model to load: the options that decide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadKey {
    /// File, or `None` for the embedded net.
    pub weights: Option<String>,
    /// Execution provider.
    pub backend: Backend,
    /// ORT intra-op threads.
    pub threads: usize,
}

/// Loads the model a [`LoadKey`] names (the embedded net or a file).
///
/// # Errors
/// No embedded net, missing or corrupt file, no ONNX Runtime, contract mismatch.
pub fn load_model(key: &LoadKey, warnings: &mut Vec<String>) -> Result<Model, ModelError> {
    let cfg = RuntimeConfig {
        backend: key.backend,
        intra_threads: key.threads.max(1),
    };
    match &key.weights {
        None => match weights::embedded() {
            Some(bytes) => Model::load_bytes(bytes, EMBEDDED, &cfg, warnings),
            None => Err(ModelError::NoEmbedded(weights::missing_message())),
        },
        Some(path) => Model::load_file(Path::new(path), &cfg, warnings),
    }
}

/// A diagnostic from loading, for the caller to print (`info string`, or an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A remark (loaded, provider fallback).
    Info(String),
    /// A failure (the previous model, if any, is kept).
    Error(String),
}

/// The engine's network, shared by the engine and the search thread.
pub type SharedNetwork = Arc<Mutex<NetworkSlot>>;

/// The loaded network and what is known about it.
#[derive(Default)]
pub struct NetworkSlot {
    model: Option<Model>,
    loaded: Option<LoadKey>,
    failed: Option<LoadKey>,
    /// Measured milliseconds per network row (moving average), for time planning.
    row_ms: Option<f64>,
    info: Arc<Mutex<Option<ModelInfo>>>,
}

/// One request with every legal move of the start position (warm-up and row timing).
fn warm_up_request() -> EvalRequest {
    let pos = Chess::default();
    let moves = pos.legal_moves().into_iter().collect();
    EvalRequest {
        pos,
        moves,
        hash: 0,
    }
}

impl NetworkSlot {
    /// An empty slot (nothing loaded), shared.
    pub fn shared() -> SharedNetwork {
        Arc::new(Mutex::new(NetworkSlot::default()))
    }

    /// The loaded model's description, updated at each load (for `d`; never blocks on a search).
    pub fn info_handle(&self) -> Arc<Mutex<Option<ModelInfo>>> {
        Arc::clone(&self.info)
    }

    /// The loaded model, if any.
    pub fn model(&mut self) -> Option<&mut Model> {
        self.model.as_mut()
    }

    /// Measured milliseconds per network row, if known.
    pub fn row_ms(&self) -> Option<f64> {
        self.row_ms
    }

    /// Folds a new measurement of `ms` for `rows` rows into the per-row cost (moving average).
    pub fn record_rows(&mut self, ms: f64, rows: usize) {
        if rows > 0 {
            let per_row = ms / rows as f64;
            self.row_ms = Some(self.row_ms.map_or(per_row, |r| 0.7 * r + 0.3 * per_row));
        }
    }

    /// Loads and warms up the model for `key` unless it is loaded or already failed to load;
    /// `report` gets the diagnostics. Returns whether some model (possibly the previous one) is
    /// available.
    pub fn ensure(&mut self, key: &LoadKey, report: &mut dyn FnMut(Note)) -> bool {
        if self.loaded.as_ref() == Some(key) || self.failed.as_ref() == Some(key) {
            return self.model.is_some();
        }
        let t0 = Instant::now();
        let mut warnings = Vec::new();
        let result = load_model(key, &mut warnings);
        for w in warnings {
            report(Note::Info(w));
        }
        let what = key.weights.as_deref().unwrap_or(EMBEDDED).to_string();
        let mut model = match result {
            Ok(m) => m,
            Err(e) => {
                self.load_failed(key, &what, &e.to_string(), report);
                return self.model.is_some();
            }
        };
        let load_ms = t0.elapsed().as_secs_f64() * 1e3;
        let t1 = Instant::now();
        // Two passes: the first allocates and picks kernels, the second is timed for the time
        // planning.
        let request = [warm_up_request()];
        let warm = model.evaluate(&request).and_then(|_| {
            let t2 = Instant::now();
            let out = model.evaluate(&request)?;
            Ok(t2.elapsed().as_secs_f64() * 1e3 / out.rows.max(1) as f64)
        });
        let warm_ms = t1.elapsed().as_secs_f64() * 1e3;
        match warm {
            Ok(row_ms) => {
                let i = model.info();
                report(Note::Info(format!(
                    "loaded {} ({:?}, {}, {} buckets, {:?} backend) in {load_ms:.0} ms, warm-up {warm_ms:.0} ms",
                    i.source, i.kind, i.precision, i.buckets, i.backend
                )));
                *self.info.lock() = Some(i.clone());
                self.model = Some(model);
                self.row_ms = Some(row_ms);
                self.loaded = Some(key.clone());
                self.failed = None;
            }
            Err(e) => {
                let why = format!("the warm-up run failed: {e}");
                self.load_failed(key, &what, &why, report);
            }
        }
        self.model.is_some()
    }

    fn load_failed(&mut self, key: &LoadKey, what: &str, err: &str, report: &mut dyn FnMut(Note)) {
        let keep = if self.model.is_some() {
            "; keeping the previous model"
        } else {
            ""
        };
        report(Note::Error(format!(
            "cannot use network '{what}': {err}{keep}"
        )));
        self.failed = Some(key.clone());
    }
}
