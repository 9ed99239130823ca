//! ONNX Runtime library discovery: the shared library is loaded at run time (`ort` with
//! `load-dynamic`), once per process, by [`init_runtime`]. ORT's own log goes to stderr at error
//! level (`ORT_LOG` changes it).
//!
//! Panics inside `ort` are caught here ([`guarded`]), at the foreign-library boundary, and become
//! [`ModelError`]s; nothing above this layer catches panics except the engine's command boundary.

use super::error::ModelError;
use ort::environment::Environment;
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// ONNX Runtime version whose library `make ort` provides.
pub const ORT_LIB_VERSION: &str = "1.31.1";

/// The text of a caught panic payload.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs `f` (a call into `ort`), turning a panic inside it into `wrap("<what>: ONNX Runtime
/// panicked: …")`.
pub(crate) fn guarded<T>(
    what: &str,
    wrap: fn(String) -> ModelError,
    f: impl FnOnce() -> Result<T, ModelError>,
) -> Result<T, ModelError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(wrap(format!(
            "{what}: ONNX Runtime panicked: {}",
            panic_message(p.as_ref())
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
    let loaded = guarded("loading the library", ModelError::Runtime, || {
        let builder = ort::init_from(path).map_err(|e| ModelError::Runtime(e.to_string()))?;
        builder
            .with_name("glimpse")
            .with_telemetry(false)
            .build()
            .map_err(|e| {
                ModelError::Runtime(format!("cannot create the ONNX Runtime environment: {e}"))
            })
    });
    loaded.map_err(|e| e.to_string())
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

pub(crate) fn runtime() -> Result<(PathBuf, Environment), ModelError> {
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
    Err(ModelError::Runtime(format!(
        "cannot load the ONNX Runtime library (libonnxruntime.so.{ORT_LIB_VERSION}); tried:\n{}\n\
         run `make` (or `make ort`) in the source tree to fetch it into lib/, or set ORT_DYLIB_PATH \
         to the library's path",
        tried.join("\n")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

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
