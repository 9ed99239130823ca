//! Move choice: the searchless policies of the paper and MCTS/PUCT over the same networks.
//!
//! - [`searchless`]: one batched forward pass over the legal moves, play the best (Ruoss et al.).
//! - [`evaluator`]: Q(s, a) for batches of positions from any value-predicting net (MCTS leaves).
//! - [`mcts`]: PUCT tree search with batching, solver, tree reuse and an evaluation cache.
//! - [`endgame`]: the bare-king (mop-up) rule MCTS uses in K+Q/R vs K.

pub mod endgame;
pub mod evaluator;
pub mod mcts;
pub mod searchless;
