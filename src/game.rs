//! Game state: start position + moves played (shakmaty), repetition history, and the FEN string in
//! the python-chess convention that the network is fed.

use shakmaty::{Chess, Move};

/// Errors for bad FENs, impossible positions and illegal or malformed moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameError(pub String);

/// A game: start position, moves, and every position since (for repetition rules).
#[derive(Debug, Clone)]
pub struct Game {
    chess960: bool,
    positions: Vec<Chess>,
    moves: Vec<Move>,
}

impl Game {
    /// The standard start position.
    pub fn startpos() -> Game {
        todo!("issue 2")
    }

    /// A game from a FEN (X-FEN/Shredder castling accepted when `chess960`).
    ///
    /// # Errors
    /// Malformed FEN or impossible position.
    pub fn from_fen(fen: &str, chess960: bool) -> Result<Game, GameError> {
        let _ = (fen, chess960);
        todo!("issue 2")
    }

    /// Plays a UCI move (`e2e4`, `e7e8q`; castling as `e1g1` or, in Chess960 mode, king-takes-rook).
    ///
    /// # Errors
    /// Malformed or illegal move; the game is unchanged.
    pub fn push_uci(&mut self, uci: &str) -> Result<(), GameError> {
        let _ = uci;
        todo!("issue 2")
    }

    /// Current position.
    pub fn position(&self) -> &Chess {
        self.positions.last().expect("at least the start position")
    }

    /// Moves played since the start position.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Whether the game uses Chess960 castling notation.
    pub fn chess960(&self) -> bool {
        self.chess960
    }

    /// Legal moves of the current position.
    pub fn legal_moves(&self) -> Vec<Move> {
        todo!("issue 2")
    }

    /// UCI notation of `mv` for the GUI (king-takes-rook castling when `chess960`).
    pub fn move_to_uci(&self, mv: &Move) -> String {
        let _ = mv;
        todo!("issue 2")
    }

    /// Current position's FEN as python-chess `board.fen()` writes it (ep square only when a legal
    /// en-passant capture exists) — the string the tokenizer is fed.
    pub fn fen(&self) -> String {
        todo!("issue 2")
    }

    /// Whether after `mv` a fivefold repetition exists or a threefold repetition can be claimed
    /// (python-chess `is_fivefold_repetition() || can_claim_threefold_repetition()`).
    pub fn move_allows_repetition(&self, mv: &Move) -> bool {
        let _ = mv;
        todo!("issue 2")
    }
}
