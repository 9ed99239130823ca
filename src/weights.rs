//! The embedded default network.
//!
//! `build.rs` embeds the net named by `weights/DEFAULT` (the int8 twin of the
//! campaign's latest shipped one-pass net) with `include_bytes!` when that file
//! exists at build time, so the binary alone plays. Without it the slice is empty and the engine asks for
//! `setoption name WeightsFile value <file.onnx>`.

include!(concat!(env!("OUT_DIR"), "/embedded_weights.rs"));

/// Name of the embedded file in the source tree (`weights/` + the line of `weights/DEFAULT`).
pub const EMBEDDED_PATH: &str = concat!("weights/", env!("GLIMPSE_DEFAULT_NET"));

/// The embedded network, or `None` when the binary was built without one.
pub fn embedded() -> Option<&'static [u8]> {
    if EMBEDDED_NET.is_empty() {
        None
    } else {
        Some(EMBEDDED_NET)
    }
}

/// The embedded net's file name (the line of `weights/DEFAULT`), as `id`-like text for start-up notes.
pub fn embedded_name() -> &'static str {
    EMBEDDED_PATH.rsplit('/').next().unwrap_or(EMBEDDED_PATH)
}

/// The message given when no embedded net exists.
pub fn missing_message() -> String {
    format!(
        "this build has no embedded net ({EMBEDDED_PATH} was absent at build time); \
         set one with 'setoption name WeightsFile value /path/to/net.onnx'"
    )
}
