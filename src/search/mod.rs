//! Move choice: the searchless policies of the paper (and, later, MCTS).

pub mod searchless;
