//! Glimpse: a UCI chess engine whose moves come from a neural network run through ONNX Runtime.
//!
//! Data flows one way:
//! `stdin → uci (typed commands) → engine (game, options, worker) → search (policy)
//!  → model (tokenizer, actions, ORT session) → scores → uci (typed info) → stdout`.
//!
//! The searchless policies follow *Grandmaster-Level Chess Without Search* (Ruoss et al., 2024);
//! the conventions (77-token FEN encoding, 1968 actions, 128 buckets) are in `model`.

// Functions over clippy's default 100 lines do several things: split them (tests may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod bench;
pub mod display;
pub mod engine;
pub mod game;
pub mod model;
pub mod perft;
pub mod search;
pub mod settings;
pub mod tablebase;
pub mod time;
pub mod uci;
pub mod weights;
