//! Engine facade: game, options, model and search worker.
