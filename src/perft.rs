//! Perft: legal move-path counts for move-generator verification.
