//! `glimpse`: the UCI loop by default; `bench`, `eval` and `perft` as subcommands.

// Functions over clippy's default 100 lines do several things: split them (tests may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use clap::{Parser, Subcommand};

/// Glimpse: a UCI chess engine that plays from a neural network through ONNX Runtime.
///
/// Without a subcommand it speaks UCI on stdin/stdout (add it to a GUI as is).
#[derive(Parser, Debug)]
#[command(
    name = "glimpse",
    version,
    about = "Glimpse: a UCI chess engine that plays from a neural network through ONNX Runtime",
    long_about = "Glimpse: a UCI chess engine that plays from a neural network through ONNX Runtime.\n\n\
                  Without a command it speaks UCI on stdin/stdout: add the binary to a GUI (Cute Chess, \
                  Arena) or to cutechess-cli as it is. Options are set with UCI setoption (see README.md)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Speed and signature on a fixed set of positions.
    Bench(glimpse::bench::BenchArgs),
    /// Score every legal move of a position (FEN words, or "startpos").
    Eval(glimpse::bench::EvalArgs),
    /// Count legal move paths to DEPTH plies (move generator check).
    Perft {
        /// Depth in plies.
        depth: u32,
        /// Position (FEN); the start position if omitted.
        fen: Vec<String>,
        /// Read castling as Chess960 (X-FEN/Shredder).
        #[arg(long)]
        chess960: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        None => {
            glimpse::engine::run_stdio();
            0
        }
        Some(Cmd::Bench(args)) => glimpse::bench::bench(&args),
        Some(Cmd::Eval(args)) => glimpse::bench::eval(&args),
        Some(Cmd::Perft {
            depth,
            fen,
            chess960,
        }) => glimpse::bench::perft_cli(depth, &fen.join(" "), chess960),
    };
    std::process::exit(code);
}
