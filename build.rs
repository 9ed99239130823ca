//! Embeds `weights/glimpse-l6d128-c2.onnx` (the default net; keep in step with
//! `EMBEDDED_PATH` in `src/weights.rs`) into the binary when it exists (see `src/weights.rs`).

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let net = manifest.join("weights").join("glimpse-l6d128-c2.onnx");
    println!("cargo:rerun-if-changed=weights");
    println!("cargo:rerun-if-changed={}", net.display());
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
