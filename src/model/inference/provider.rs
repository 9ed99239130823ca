//! The execution provider choice (UCI `Backend`) and its fallback order.

/// Execution provider choice (UCI option `Backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// CPU execution provider (default).
    #[default]
    Cpu,
    /// CUDA execution provider (needs the onnxruntime-gpu libraries).
    Cuda,
    /// TensorRT execution provider (falls back to CUDA, then CPU).
    TensorRt,
}

impl Backend {
    /// Parses `cpu`, `cuda`, `tensorrt` (also `trt`), case-insensitively.
    pub fn parse(s: &str) -> Option<Backend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Some(Backend::Cpu),
            "cuda" => Some(Backend::Cuda),
            "tensorrt" | "trt" => Some(Backend::TensorRt),
            _ => None,
        }
    }

    /// Lower-case name (`cpu`, `cuda`, `tensorrt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::TensorRt => "tensorrt",
        }
    }

    /// The fallback order starting at this backend (TensorRT → CUDA → CPU).
    pub(crate) fn chain(self) -> &'static [Backend] {
        match self {
            Backend::TensorRt => &[Backend::TensorRt, Backend::Cuda, Backend::Cpu],
            Backend::Cuda => &[Backend::Cuda, Backend::Cpu],
            Backend::Cpu => &[Backend::Cpu],
        }
    }
}
