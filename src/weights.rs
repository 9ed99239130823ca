//! The embedded default network.
//!
//! `build.rs` embeds the net named by `weights/DEFAULT` (the int8 twin of the
//! campaign's latest shipped one-pass net) with `include_bytes!` when that file
//! exists at build time, so the binary alone plays. Without it the slice is empty and the engine asks for
//! `setoption name WeightsFile value <file.onnx>`. The twin's float32 source is embedded beside it when
//! `weights/` has it: a GPU backend plays that one ([`embedded_for`]), since ONNX Runtime runs an int8
//! net's quantise and integer-MatMul nodes about 3x slower on CUDA than the float net (README, GPU use).

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

/// The embedded float32 source of the default, or `None` when the build has none (the default is not an
/// int8 twin, or its source was absent at build time).
pub fn embedded_float() -> Option<&'static [u8]> {
    (!EMBEDDED_FLOAT_NET.is_empty()).then_some(EMBEDDED_FLOAT_NET)
}

/// The embedded float32 source's file name (`<stem>.onnx` beside `<stem>-int8.onnx`), or "" when none.
pub fn embedded_float_name() -> &'static str {
    env!("GLIMPSE_DEFAULT_FLOAT_NET")
}

/// Which embedded net plays: the float32 source when `gpu` (a CUDA or TensorRT backend is asked for)
/// and the build has one, else the default. Returns the bytes and the file name, `None` without an
/// embedded net.
pub fn embedded_for(gpu: bool) -> Option<(&'static [u8], &'static str)> {
    match embedded_float() {
        Some(float) if gpu => Some((float, embedded_float_name())),
        _ => embedded().map(|b| (b, embedded_name())),
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
