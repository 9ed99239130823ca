//! The embedded default network.
