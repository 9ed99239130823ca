//! The loaded network: which one (a [`LoadKey`]), loading and warm-up, and the run costs
//! ([`RowCost`]) the time planning uses.
//!
//! Ownership and threading: one [`NetworkSlot`] per engine, shared as [`SharedNetwork`] (a mutex)
//! by the engine (`isready`, `eval`) and the search thread (`go`). The search thread holds the lock
//! for a whole search; the engine locks it only when no search is in flight, so it never waits on
//! a search. The loaded model's [`ModelInfo`] is also published in its own small mutex for `d`.

use super::backend::EvalRequest;
use super::cost::RowCost;
use super::error::ModelError;
use super::inference::{Backend, Model, ModelInfo, RuntimeConfig};
use crate::weights;
use parking_lot::Mutex;
use shakmaty::{Chess, Position};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
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
/// The embedded net on a GPU backend (`cuda`, `tensorrt`) is the default's float32 source when the
/// build has it ([`weights::embedded_for`]); if the provider then falls back to the CPU, the int8
/// default is loaded instead, on the CPU. A `WeightsFile` is used as given. `warnings` names the
/// embedded file that plays whenever it is not the default.
///
/// # Errors
/// No embedded net, missing or corrupt file, no ONNX Runtime, contract mismatch.
pub fn load_model(key: &LoadKey, warnings: &mut Vec<String>) -> Result<Model, ModelError> {
    let cfg = RuntimeConfig {
        backend: key.backend,
        intra_threads: key.threads.max(1),
    };
    let Some(path) = &key.weights else {
        return load_embedded(&cfg, warnings);
    };
    Model::load_file(Path::new(path), &cfg, warnings)
}

/// The embedded net for `cfg.backend` (see [`load_model`]).
fn load_embedded(cfg: &RuntimeConfig, warnings: &mut Vec<String>) -> Result<Model, ModelError> {
    let gpu = cfg.backend != Backend::Cpu;
    let (bytes, name) = weights::embedded_for(gpu).ok_or(ModelError::NoEmbedded)?;
    if name == weights::embedded_name() {
        return Model::load_bytes(bytes, EMBEDDED, cfg, warnings);
    }
    let mut notes = Vec::new();
    let model = Model::load_bytes(bytes, EMBEDDED, cfg, &mut notes)?;
    if model.info().backend != Backend::Cpu {
        warnings.append(&mut notes);
        warnings.push(format!(
            "{} backend: the embedded default's float32 source {name} plays (the int8 {} is for the CPU)",
            model.info().backend.as_str(),
            weights::embedded_name()
        ));
        return Ok(model);
    }
    // The GPU provider is unavailable: the int8 default is the right net for the CPU it fell back to.
    warnings.extend(notes.into_iter().filter(|n| n.contains("unavailable")));
    warnings.push(format!(
        "backend {} requested, using cpu: the embedded int8 default {} plays",
        cfg.backend.as_str(),
        weights::embedded_name()
    ));
    let cpu = RuntimeConfig {
        backend: Backend::Cpu,
        ..cfg.clone()
    };
    Model::load_bytes(
        weights::embedded().ok_or(ModelError::NoEmbedded)?,
        EMBEDDED,
        &cpu,
        warnings,
    )
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
    /// Measured cost of one-row and batched runs, for time planning.
    cost: RowCost,
    info: Arc<Mutex<Option<ModelInfo>>>,
}

/// One request with every legal move of `pos`.
fn request(pos: Chess) -> EvalRequest {
    let moves = pos.legal_moves().into_iter().collect();
    EvalRequest {
        pos,
        moves,
        hash: 0,
    }
}

/// One request with every legal move of the start position (warm-up and row timing).
fn warm_up_request() -> EvalRequest {
    request(Chess::default())
}

/// The start position and each position after one of its 20 moves: the shape of the
/// `SuccessorValue` batch (21 rows for a one-row-per-position kind), timed at warm-up so that the
/// first move under a clock knows what a batch costs.
fn warm_up_batch() -> Vec<EvalRequest> {
    let root = Chess::default();
    let mut batch = vec![request(root.clone())];
    for mv in root.legal_moves() {
        let mut child = root.clone();
        child.play_unchecked(mv);
        batch.push(request(child));
    }
    batch
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

    /// The loaded model and its measured run costs (a search reads and updates both), if any.
    pub fn parts(&mut self) -> Option<(&mut Model, &mut RowCost)> {
        let cost = &mut self.cost;
        self.model.as_mut().map(|m| (m, cost))
    }

    /// Whether the model for `key` is loaded, or failed to load (then [`NetworkSlot::ensure`]
    /// returns at once either way).
    pub fn settled(&self, key: &LoadKey) -> bool {
        self.loaded.as_ref() == Some(key) || self.failed.as_ref() == Some(key)
    }

    /// Loads and warms up the model for `key` unless it is loaded or already failed to load;
    /// `report` gets the diagnostics. Returns whether some model (possibly the previous one) is
    /// available.
    pub fn ensure(&mut self, key: &LoadKey, report: &mut dyn FnMut(Note)) -> bool {
        if self.settled(key) {
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
        // Two passes of each shape: the first allocates and picks kernels, the second is timed
        // for the time planning. One-row-per-position kinds also time the successor batch.
        let mut cost = RowCost::default();
        let mut timed = |model: &mut Model, batch: &[EvalRequest]| {
            model.evaluate(batch)?;
            let t2 = Instant::now();
            let out = model.evaluate(batch)?;
            cost.record(t2.elapsed().as_secs_f64() * 1e3, out.rows);
            Ok::<(), ModelError>(())
        };
        let mut warm = timed(&mut model, &[warm_up_request()]);
        if warm.is_ok() && model.info().kind.one_row_per_position() {
            warm = timed(&mut model, &warm_up_batch());
        }
        let warm_ms = t1.elapsed().as_secs_f64() * 1e3;
        match warm {
            Ok(()) => {
                let i = model.info();
                report(Note::Info(format!(
                    "loaded {} ({:?}, {}, {} buckets, {:?} backend) in {load_ms:.0} ms, warm-up {warm_ms:.0} ms",
                    i.source, i.kind, i.precision, i.buckets, i.backend
                )));
                *self.info.lock() = Some(i.clone());
                self.model = Some(model);
                self.cost = cost;
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

/// How long the [`Preloader`] waits after a request for a newer one before it loads. A `go`,
/// `isready` or `eval` in the meantime loads the net itself (the slot's lock is free).
pub const PRELOAD_SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

/// Loads networks in the background, so the net is ready before the first `go` needs it: the
/// engine asks for the current [`LoadKey`] after `uci` and after each change of a network option.
///
/// Threading: one loader thread takes keys from a channel, skips to the newest one that arrives
/// within [`PRELOAD_SETTLE`] of the last (or while it waited for the slot's lock), and loads it
/// with [`NetworkSlot::ensure`] under the slot's lock, so `isready`, `eval` and a
/// search that need the net wait for that lock (and find it loaded). [`Preloader::loading`] is
/// true from a request until its load has finished.
pub struct Preloader {
    jobs: Option<crossbeam_channel::Sender<LoadKey>>,
    pending: Arc<AtomicUsize>,
}

impl Preloader {
    /// Starts the loader thread for `net`; `report` gets the load diagnostics.
    pub fn spawn(net: SharedNetwork, mut report: impl FnMut(Note) + Send + 'static) -> Preloader {
        let (tx, rx) = crossbeam_channel::unbounded::<LoadKey>();
        let pending = Arc::new(AtomicUsize::new(0));
        let done = Arc::clone(&pending);
        let spawned = std::thread::Builder::new()
            .name("glimpse-loader".into())
            .spawn(move || {
                while let Ok(mut key) = rx.recv() {
                    // Settle: a GUI sends its `setoption`s right after `uciok`; load only the last
                    // key, not the embedded net first and the chosen one after it.
                    let mut taken = 1;
                    while let Ok(newer) = rx.recv_timeout(PRELOAD_SETTLE) {
                        key = newer;
                        taken += 1;
                    }
                    let mut slot = net.lock();
                    // A request that came while a search held the slot supersedes this one:
                    // load only the newest (a stale key would load, or report, a net no longer set).
                    while let Ok(newer) = rx.try_recv() {
                        key = newer;
                        taken += 1;
                    }
                    slot.ensure(&key, &mut report);
                    drop(slot);
                    done.fetch_sub(taken, Ordering::SeqCst);
                }
            });
        Preloader {
            jobs: spawned.is_ok().then_some(tx),
            pending,
        }
    }

    /// Asks for `key` to be loaded in the background (a no-op load when it already is). Returns
    /// false when the loader thread could not be started (the net then loads on first use).
    pub fn request(&self, key: LoadKey) -> bool {
        let Some(jobs) = &self.jobs else {
            return false;
        };
        self.pending.fetch_add(1, Ordering::SeqCst);
        if jobs.send(key).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Whether a requested load has not finished yet.
    pub fn loading(&self) -> bool {
        self.pending.load(Ordering::SeqCst) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn missing(name: &str) -> LoadKey {
        LoadKey {
            weights: Some(format!("/nonexistent/{name}.onnx")),
            backend: Backend::Cpu,
            threads: 1,
        }
    }

    #[test]
    fn the_preloader_loads_only_the_last_of_quick_requests_and_reports() {
        let net = NetworkSlot::shared();
        let notes = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&notes);
        let pre = Preloader::spawn(Arc::clone(&net), move |n| sink.lock().push(n));
        assert!(!pre.loading());
        assert!(pre.request(missing("first")));
        assert!(pre.request(missing("second")));
        assert!(pre.loading());
        let t0 = Instant::now();
        while pre.loading() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!pre.loading(), "the load never finished");
        let notes = notes.lock();
        assert_eq!(notes.len(), 1, "{notes:?}");
        match &notes[0] {
            Note::Error(m) => assert!(m.contains("second.onnx"), "{m}"),
            other => panic!("expected an error, got {other:?}"),
        }
        // The failed key is settled: `ensure` will not try it again.
        assert!(net.lock().settled(&missing("second")));
        assert!(!net.lock().settled(&missing("first")));
    }

    #[test]
    fn a_request_made_while_the_slot_is_busy_supersedes_the_waiting_one() {
        let net = NetworkSlot::shared();
        let notes = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&notes);
        let pre = Preloader::spawn(Arc::clone(&net), move |n| sink.lock().push(n));
        let busy = net.lock(); // a search holds the slot
        assert!(pre.request(missing("stale")));
        // Past the settle time the loader has taken "stale" and waits for the lock.
        std::thread::sleep(PRELOAD_SETTLE * 3);
        assert!(pre.request(missing("newest")));
        drop(busy);
        let t0 = Instant::now();
        while pre.loading() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!pre.loading(), "the load never finished");
        let notes = notes.lock();
        assert_eq!(notes.len(), 1, "only the newest key is loaded: {notes:?}");
        assert!(
            matches!(&notes[0], Note::Error(m) if m.contains("newest.onnx")),
            "{notes:?}"
        );
    }
}
