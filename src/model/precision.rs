//! The numeric precision of a network's weights, from the ONNX metadata `glimpse.precision`
//! (`fp32`, `fp16` from `make convert PRECISION=fp16`, `int8` from `make quantize`). The engine
//! runs every precision the same way (the inputs and outputs stay int64 / float32); the precision is
//! reported where the loaded net is named (the load `info string`, `d`, `glimpse bench`).

use std::fmt;

/// Precision of a network's weights and arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// float32 throughout: what the exporters write; also assumed when `glimpse.precision` is
    /// absent (every net exported before the key existed is float32).
    #[default]
    Fp32,
    /// float16 weights and arithmetic (`make convert PRECISION=fp16`, for GPUs).
    Fp16,
    /// int8 weights of the matrix multiplies with activations quantised at run time (ONNX
    /// Runtime's dynamic quantisation, `make quantize`); the other operators stay float32.
    Int8,
}

impl Precision {
    /// Reads a `glimpse.precision` value (`fp32`, `fp16`, `int8`; case and surrounding blanks
    /// ignored); `None` for anything else.
    pub fn parse(s: &str) -> Option<Precision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp32" => Some(Precision::Fp32),
            "fp16" => Some(Precision::Fp16),
            "int8" => Some(Precision::Int8),
            _ => None,
        }
    }

    /// The metadata spelling (`fp32`, `fp16`, `int8`).
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
        }
    }

    /// The precision a model declares: `glimpse.precision` if present, else [`Precision::Fp32`].
    ///
    /// # Errors
    /// A value that is not one of the three names; the message quotes it.
    pub fn from_metadata(value: Option<&str>) -> Result<Precision, String> {
        match value {
            None => Ok(Precision::Fp32),
            Some(v) => Precision::parse(v)
                .ok_or_else(|| format!("glimpse.precision {v:?} is not one of fp32, fp16, int8")),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in [Precision::Fp32, Precision::Fp16, Precision::Int8] {
            assert_eq!(Precision::parse(p.as_str()), Some(p));
            assert_eq!(p.to_string(), p.as_str());
        }
        assert_eq!(Precision::parse(" INT8 "), Some(Precision::Int8));
        assert_eq!(Precision::parse("int4"), None);
    }

    #[test]
    fn absent_metadata_means_fp32_and_unknown_is_an_error() {
        assert_eq!(Precision::from_metadata(None), Ok(Precision::Fp32));
        assert_eq!(Precision::from_metadata(Some("int8")), Ok(Precision::Int8));
        let e = Precision::from_metadata(Some("bf16")).unwrap_err();
        assert!(e.contains("\"bf16\"") && e.contains("int8"), "{e}");
    }
}
