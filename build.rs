//! Embeds the default net into the binary when it exists (see `src/weights.rs`).
//!
//! The default net's file name is the one line of `weights/DEFAULT` (for example
//! `glimpse-l6d128-c16-int8.onnx`); shipping a new net changes that line and nothing else in the code.
//! The name reaches the crate as `GLIMPSE_DEFAULT_NET`; the bytes as `EMBEDDED_NET` (empty when
//! the file is absent, so a build without weights still works and asks for `WeightsFile`).

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
    let out =
        PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded_weights.rs");
    let code = if net.is_file() {
        format!("/// The embedded network's bytes.\npub static EMBEDDED_NET: &[u8] = include_bytes!({:?});\n", net.display().to_string())
    } else {
        "/// No network was found at build time.\npub static EMBEDDED_NET: &[u8] = &[];\n"
            .to_string()
    };
    fs::write(out, code).expect("write embedded_weights.rs");
}
