//! The UCI protocol: parsing ([`protocol`]), formatting ([`output`]), the writer ([`out`]) and
//! options ([`options`]).
//!
//! This layer only converts between text and types; the engine facade (`crate::engine`) acts on
//! commands, and the searches report typed output (`crate::search::report`) that [`out::Out`]
//! formats. Nothing below the engine imports this module (a test in `tests/layering.rs` checks).

pub mod options;
pub mod out;
pub mod output;
pub mod protocol;

#[cfg(test)]
mod tests;

pub use options::{Options, Settings};
pub use output::{BestMove, Info, Score, Wdl};
pub use protocol::{parse, Command, GoParams, ParseError, Parsed, StartPosition};

/// Engine name reported by `id name`.
pub const ENGINE_NAME: &str = concat!("Glimpse ", env!("CARGO_PKG_VERSION"));
/// Author reported by `id author`.
pub const ENGINE_AUTHOR: &str = "the Glimpse developers";
