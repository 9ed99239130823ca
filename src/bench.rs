//! `glimpse bench`, `glimpse eval` and `glimpse perft`: command-line tools over the library.

use clap::Args;

/// Options of `glimpse bench`.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Network file (default: the embedded net).
    #[arg(long)]
    pub weights: Option<String>,
}

/// Options of `glimpse eval`.
#[derive(Args, Debug, Clone)]
pub struct EvalArgs {
    /// FEN words (or "startpos").
    #[arg(required = true)]
    pub fen: Vec<String>,
    /// Network file (default: the embedded net).
    #[arg(long)]
    pub weights: Option<String>,
}

/// Runs the bench; returns the process exit code.
pub fn bench(args: &BenchArgs) -> i32 {
    let _ = args;
    eprintln!("glimpse: bench is not implemented yet");
    1
}

/// Runs `eval`; returns the process exit code.
pub fn eval(args: &EvalArgs) -> i32 {
    let _ = args;
    eprintln!("glimpse: eval is not implemented yet");
    1
}

/// Runs `perft`; returns the process exit code.
pub fn perft_cli(depth: u32, fen: &str, chess960: bool) -> i32 {
    let _ = (depth, fen, chess960);
    eprintln!("glimpse: perft is not implemented yet");
    1
}
