//! FEN → 77 token ids, exactly as the searchless-chess reference tokenizer
//! (`searchless_chess/src/tokenizer.py`, commit 90ae0e6); see `../shared/docs/searchless-conventions.md`.

/// Number of state tokens produced for one FEN.
pub const STATE_TOKENS: usize = 77;

/// Errors for FENs the reference tokenizer rejects (e.g. 4-digit clocks, X-FEN castling letters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizeError(pub String);

/// Tokenizes a full 6-field FEN string as given (no normalisation) into 77 ids in `0..31`.
///
/// # Errors
/// Wrong field count, characters outside the vocabulary, clocks of 4+ digits.
pub fn tokenize(fen: &str) -> Result<[u8; STATE_TOKENS], TokenizeError> {
    let _ = fen;
    todo!("issue 2")
}
