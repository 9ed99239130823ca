//! Embeds the default net into the binary when it exists (see `src/weights.rs`).
//!
//! The default net's file name is the one line of `weights/DEFAULT` (for example
//! `glimpse-l6d128-c16-int8.onnx`); shipping a new net changes that line and nothing else in the code.
//! The name reaches the crate as `GLIMPSE_DEFAULT_NET`; the bytes as `EMBEDDED_NET` (empty when
//! the file is absent, so a build without weights still works and asks for `WeightsFile`). When the
//! default is an int8 twin (`<stem>-int8.onnx`) and its float32 source `<stem>.onnx` is in `weights/`,
//! that one is embedded too (`GLIMPSE_DEFAULT_FLOAT_NET`, `EMBEDDED_FLOAT_NET`) for GPU backends.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let pointer = manifest.join("weights").join("DEFAULT");
    println!("cargo:rerun-if-changed=weights");
    println!("cargo:rerun-if-changed={}", pointer.display());
    let name = fs::read_to_string(&pointer)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && !s.contains('/') && !s.contains('\\'))
        .unwrap_or_else(|| "glimpse-default.onnx".to_string());
    let net = manifest.join("weights").join(&name);
    println!("cargo:rerun-if-changed={}", net.display());
    println!("cargo:rustc-env=GLIMPSE_DEFAULT_NET={name}");
    // The float32 source of an int8 default (`<stem>-int8.onnx` -> `<stem>.onnx`), embedded too: a GPU
    // backend plays it (an int8 net runs about 3x slower on CUDA than its float source).
    let float_name = name
        .strip_suffix("-int8.onnx")
        .map(|stem| format!("{stem}.onnx"))
        .filter(|f| manifest.join("weights").join(f).is_file() && net.is_file())
        .unwrap_or_default();
    println!("cargo:rustc-env=GLIMPSE_DEFAULT_FLOAT_NET={float_name}");
    let bytes = |doc: &str, item: &str, file: Option<PathBuf>| match file {
        Some(f) => format!(
            "/// {doc}\npub static {item}: &[u8] = include_bytes!({:?});\n",
            f.display().to_string()
        ),
        None => format!("/// {doc} (absent at build time).\npub static {item}: &[u8] = &[];\n"),
    };
    let float = (!float_name.is_empty()).then(|| manifest.join("weights").join(&float_name));
    if let Some(f) = &float {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let code = bytes(
        "The embedded network's bytes",
        "EMBEDDED_NET",
        net.is_file().then_some(net),
    ) + &bytes(
        "The embedded network's float32 source, for GPU backends",
        "EMBEDDED_FLOAT_NET",
        float,
    );
    let out =
        PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded_weights.rs");
    fs::write(out, code).expect("write embedded_weights.rs");
}
