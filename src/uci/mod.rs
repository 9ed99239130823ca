//! UCI protocol.
