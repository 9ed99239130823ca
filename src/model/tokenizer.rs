//! FEN → 77 token ids, exactly as the searchless-chess reference tokenizer
//! (`searchless_chess/src/tokenizer.py`, commit 90ae0e6); see `docs/searchless-conventions.md`.
//!
//! Layout: side to move (1), board in FEN order with digits expanded to `.` (64), castling field
//! right-padded with `.` (4), en-passant square or `..` (2), halfmove clock and fullmove number
//! left-aligned and right-padded with `.` (3 + 3). Vocabulary: `0123456789abcdefghpnrkqPBNRQKw.`
//! (31 characters; `b` = 11 serves the file letter, black to move and the black bishop alike).

/// Number of state tokens produced for one FEN.
pub const STATE_TOKENS: usize = 77;

/// The 31-character vocabulary; token id = index.
pub const VOCAB: &[u8; 31] = b"0123456789abcdefghpnrkqPBNRQKw.";

/// Token id of `.` (empty square / padding).
const DOT: u8 = 30;

/// Errors for FENs the reference tokenizer rejects (e.g. 4-digit clocks, X-FEN castling letters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizeError(pub String);

impl std::fmt::Display for TokenizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot tokenize FEN: {}", self.0)
    }
}

impl std::error::Error for TokenizeError {}

/// Token id of one ASCII character, `None` if it is not in [`VOCAB`].
pub fn char_token(c: u8) -> Option<u8> {
    VOCAB.iter().position(|&v| v == c).map(|i| i as u8)
}

fn token(c: u8, field: &str) -> Result<u8, TokenizeError> {
    char_token(c).ok_or_else(|| {
        TokenizeError(format!(
            "character {:?} in the {field} field is not in the vocabulary",
            c as char
        ))
    })
}

/// Tokenizes a full 6-field FEN string as given (no normalisation) into 77 ids in `0..31`.
///
/// Like the reference, the string is split on single spaces into exactly six fields (a double
/// space or a missing clock field is an error), and each field is encoded character by character
/// without checking chess validity (the board field is only required to expand to 64 squares).
///
/// # Errors
/// Wrong field count, characters outside the vocabulary (e.g. Shredder castling `HAha`), a board
/// that does not expand to 64 squares, a castling field longer than 4, an en-passant field that is
/// not 2 characters or `-`, clocks of 4+ digits.
pub fn tokenize(fen: &str) -> Result<[u8; STATE_TOKENS], TokenizeError> {
    let fields: Vec<&str> = fen.split(' ').collect();
    if fields.len() != 6 {
        return Err(TokenizeError(format!(
            "expected 6 space-separated fields, got {}",
            fields.len()
        )));
    }
    let (board, side, castling, ep, halfmove, fullmove) = (
        fields[0], fields[1], fields[2], fields[3], fields[4], fields[5],
    );

    let mut out = [DOT; STATE_TOKENS];
    let mut n = 0usize;
    let mut push = |t: u8, n: &mut usize| -> Result<(), TokenizeError> {
        if *n >= STATE_TOKENS {
            return Err(TokenizeError("FEN produces more than 77 tokens".into()));
        }
        out[*n] = t;
        *n += 1;
        Ok(())
    };

    // Side to move: the character itself ('w' = 29, 'b' = 11).
    if side.len() != 1 {
        return Err(TokenizeError(format!(
            "side to move {side:?} is not one character"
        )));
    }
    push(token(side.as_bytes()[0], "side-to-move")?, &mut n)?;

    // Board: digits expand to that many '.', '/' dropped.
    let board_start = n;
    for &c in board.as_bytes() {
        match c {
            b'/' => {}
            b'1'..=b'9' => {
                for _ in 0..(c - b'0') {
                    push(DOT, &mut n)?;
                }
            }
            _ => push(token(c, "board")?, &mut n)?,
        }
    }
    if n - board_start != 64 {
        return Err(TokenizeError(format!(
            "board field expands to {} squares, not 64",
            n - board_start
        )));
    }

    // Castling: characters in order, right-padded to 4; '-' becomes "....".
    if castling != "-" {
        if castling.len() > 4 {
            return Err(TokenizeError(format!(
                "castling field {castling:?} is longer than 4"
            )));
        }
        for &c in castling.as_bytes() {
            push(token(c, "castling")?, &mut n)?;
        }
    }
    n = 69;

    // En passant: two characters or '..'.
    if ep != "-" {
        if ep.len() != 2 {
            return Err(TokenizeError(format!(
                "en-passant field {ep:?} is not a square"
            )));
        }
        for &c in ep.as_bytes() {
            push(token(c, "en-passant")?, &mut n)?;
        }
    }

    // Clocks: decimal, left-aligned, right-padded to 3 (4+ digits fail as in the reference).
    for (value, name, start) in [
        (halfmove, "halfmove clock", 71),
        (fullmove, "fullmove number", 74),
    ] {
        if value.len() > 3 {
            return Err(TokenizeError(format!(
                "{name} {value:?} has more than 3 characters"
            )));
        }
        n = start;
        for &c in value.as_bytes() {
            push(token(c, name)?, &mut n)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_position_layout() {
        let t = tokenize("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1").unwrap();
        assert_eq!(t[0], 29);
        assert_eq!(&t[1..9], &[20, 19, 11, 22, 21, 11, 19, 20]);
        assert!(t[17..49].iter().all(|&x| x == DOT));
        assert_eq!(&t[65..69], &[28, 27, 21, 22]);
        assert_eq!(&t[69..77], &[30, 30, 0, 30, 30, 1, 30, 30]);
    }

    #[test]
    fn rejects_bad_inputs() {
        let base = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";
        assert!(tokenize(&format!("{base} w KQkq - 0 1000")).is_err());
        assert!(tokenize(&format!("{base} w KQkq - 1000 1")).is_err());
        assert!(tokenize(&format!("{base} w HAha - 0 1")).is_err());
        assert!(tokenize(&format!("{base} w KQkq -")).is_err());
        assert!(tokenize(&format!("{base}  w KQkq - 0 1")).is_err());
        assert!(tokenize("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1").is_err());
        // Lowercase file letters are in the vocabulary, as in the reference.
        assert!(tokenize(&format!("{base} w ha - 0 1")).is_ok());
        assert_eq!(
            tokenize(&format!("{base} w KQkq - 999 999")).unwrap()[71..77],
            [9, 9, 9, 9, 9, 9]
        );
    }
}
