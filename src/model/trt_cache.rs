//! On-disk caches of the TensorRT execution provider.
//!
//! TensorRT compiles an engine for each subgraph and input shape the first time it meets it (seconds to
//! minutes), so ONNX Runtime can save the engines (`trt_engine_cache_*`) and the kernel timings
//! (`trt_timing_cache_*`). ONNX Runtime names engine files after the graph's structure, not its weights,
//! and its documentation asks users to clear the cache when the model changes: two nets of one
//! architecture (every campaign net) would share a stale engine. Glimpse therefore keys the engine
//! directory by the SHA-256 of the model's bytes. The timing cache records how fast each kernel tactic runs
//! on the GPU, which does not depend on the weights, so all models share it.
//!
//! Layout: `<root>/<first 16 hex digits of SHA-256>/` for engines and `<root>/` for the timing cache,
//! `<root>` from [`cache_root`].

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Environment variable that sets the cache root; by default `$XDG_CACHE_HOME/glimpse/tensorrt`, else
/// `$HOME/.cache/glimpse/tensorrt`, else `<temp dir>/glimpse-tensorrt`.
pub const CACHE_ENV: &str = "GLIMPSE_TRT_CACHE";

/// Where one model's TensorRT caches go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrtCache {
    /// Engine files of this model only (`trt_engine_cache_path`).
    pub engine_dir: PathBuf,
    /// The timing cache, shared by all models (`trt_timing_cache_path`).
    pub timing_dir: PathBuf,
}

/// The cache root from the process environment (see [`CACHE_ENV`]).
pub fn cache_root() -> PathBuf {
    cache_root_from(
        std::env::var_os(CACHE_ENV),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// The cache root from explicit values of [`CACHE_ENV`], `XDG_CACHE_HOME` and `HOME` (empty values
/// count as unset).
pub fn cache_root_from(
    explicit: Option<OsString>,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> PathBuf {
    let set = |v: Option<OsString>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    if let Some(p) = set(explicit) {
        return p;
    }
    if let Some(p) = set(xdg_cache_home) {
        return p.join("glimpse").join("tensorrt");
    }
    if let Some(p) = set(home) {
        return p.join(".cache").join("glimpse").join("tensorrt");
    }
    std::env::temp_dir().join("glimpse-tensorrt")
}

/// The model's cache key: the first 16 hex digits (64 bits) of the SHA-256 of its bytes.
pub fn model_key(model: &[u8]) -> String {
    Sha256::digest(model)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The cache directories of a model under `root` (nothing is created).
pub fn for_model(root: &Path, model: &[u8]) -> TrtCache {
    TrtCache {
        engine_dir: root.join(model_key(model)),
        timing_dir: root.to_path_buf(),
    }
}

/// [`for_model`] under [`cache_root`], with the engine directory created.
///
/// # Errors
/// The directory cannot be created (read-only or missing parent); the caller then runs TensorRT
/// without caches.
pub fn prepare(model: &[u8]) -> std::io::Result<TrtCache> {
    let cache = for_model(&cache_root(), model);
    std::fs::create_dir_all(&cache.engine_dir)?;
    Ok(cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_the_sha256_prefix_of_the_bytes() {
        // SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad (FIPS 180-2).
        assert_eq!(model_key(b"abc"), "ba7816bf8f01cfea");
        assert_ne!(model_key(b"weights A"), model_key(b"weights B"));
    }

    #[test]
    fn nets_of_one_architecture_get_their_own_engines_but_share_timings() {
        let root = Path::new("/cache");
        let a = for_model(root, b"net c26");
        let b = for_model(root, b"net c30");
        assert_ne!(a.engine_dir, b.engine_dir);
        assert_eq!(a.timing_dir, b.timing_dir);
        assert_eq!(a.engine_dir.parent(), Some(root));
        assert_eq!(a, for_model(root, b"net c26"));
    }

    #[test]
    fn root_prefers_the_variable_then_xdg_then_home() {
        let o = |s: &str| Some(OsString::from(s));
        assert_eq!(
            cache_root_from(o("/x"), o("/xdg"), o("/home/u")),
            PathBuf::from("/x")
        );
        assert_eq!(
            cache_root_from(o(""), o("/xdg"), o("/home/u")),
            PathBuf::from("/xdg/glimpse/tensorrt")
        );
        assert_eq!(
            cache_root_from(None, None, o("/home/u")),
            PathBuf::from("/home/u/.cache/glimpse/tensorrt")
        );
        assert_eq!(
            cache_root_from(None, None, None),
            std::env::temp_dir().join("glimpse-tensorrt")
        );
    }
}
