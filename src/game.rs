//! Game state: start position + moves played (shakmaty), repetition history, and the FEN string in
//! the python-chess convention that the network is fed.
//!
//! Conventions mirrored from python-chess 1.11 (what the searchless-chess reference engines use):
//! - [`Game::fen`] is `board.fen()`: the en-passant square only when a legal en-passant capture
//!   exists, castling rights that do not match the position dropped, castling written `KQkq`
//!   (X-FEN file letters only where a rook further out makes `K`/`Q` ambiguous, Chess960 only).
//! - [`Game::move_allows_repetition`] is `is_fivefold_repetition() ||
//!   can_claim_threefold_repetition()` evaluated after the move, with python-chess's transposition
//!   key (board, turn, castling rights, en-passant square only if a legal capture exists) and its
//!   history walk that stops at the first irreversible move (pawn move, capture, castling-rights
//!   change, or a move made while a legal en-passant capture existed).

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, Move, Position, PositionError, PositionErrorKinds,
    Square,
};

/// Errors for bad FENs, impossible positions and illegal or malformed moves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GameError(pub String);

/// A game: start position, moves, and every position since (for repetition rules).
#[derive(Debug, Clone)]
pub struct Game {
    chess960: bool,
    positions: Vec<Chess>,
    moves: Vec<Move>,
}

/// python-chess `_transposition_key`: board, turn, castling rights, legal en-passant square.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    board: Board,
    turn: Color,
    castling: Bitboard,
    ep: Option<Square>,
}

fn key(pos: &Chess) -> Key {
    Key {
        board: pos.board().clone(),
        turn: pos.turn(),
        castling: pos.castles().castling_rights(),
        ep: pos.legal_ep_square(),
    }
}

fn castling_mode(chess960: bool) -> CastlingMode {
    if chess960 {
        CastlingMode::Chess960
    } else {
        CastlingMode::Standard
    }
}

/// Parses a FEN into a position the way the engine accepts it: syntax errors and impossible
/// positions are errors; castling rights that do not match the position and en-passant squares
/// that cannot be right are dropped (as python-chess's `board.fen()` would drop them).
///
/// # Errors
/// Malformed FEN (message names the problem) or an impossible position (missing king, pawns on
/// the back rank, side not to move in check, impossible check, too much material, …).
pub fn parse_fen(fen: &str, chess960: bool) -> Result<Chess, GameError> {
    parse_fen_noting(fen, chess960).map(|(pos, _)| pos)
}

/// The largest halfmove clock and fullmove number the network reads: the tokenizer writes each
/// in 3 characters (`docs/searchless-conventions.md`, tokens 71–76), so [`model_fen`]
/// writes larger counters as this.
pub const MAX_NET_COUNTER: u32 = 999;

/// [`parse_fen`], with a note for each thing it repaired or clamped: castling rights that do
/// not match the position, an impossible en-passant square (both dropped), a counter too large
/// for 32 bits (saturated) and a counter over [`MAX_NET_COUNTER`] (the net reads that).
///
/// # Errors
/// As [`parse_fen`].
pub fn parse_fen_noting(fen: &str, chess960: bool) -> Result<(Chess, Vec<String>), GameError> {
    let trimmed = fen.trim();
    if trimmed.is_empty() {
        return Err(GameError("empty FEN".into()));
    }
    let parsed = Fen::from_ascii(trimmed.as_bytes())
        .map_err(|e| GameError(format!("invalid FEN {trimmed:?}: {e}")))?;
    let setup = parsed.into_setup();
    if setup.pockets.is_some() || setup.remaining_checks.is_some() {
        return Err(GameError(format!(
            "invalid FEN {trimmed:?}: variant fields (pockets or check counters) are not supported"
        )));
    }
    let mut notes = Vec::new();
    let fields: Vec<&str> = trimmed.split_ascii_whitespace().collect();
    for (i, what) in [(4, "halfmove clock"), (5, "fullmove number")] {
        let Some(text) = fields.get(i) else { continue };
        let digits = text.trim_start_matches('0');
        if digits.len() > 10 || digits.parse::<u64>().is_ok_and(|v| v > u64::from(u32::MAX)) {
            notes.push(format!(
                "{what} {} is out of range; read as {}",
                clip_field(text),
                u32::MAX
            ));
        }
    }
    if fields
        .get(5)
        .is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b == b'0'))
    {
        notes.push("fullmove number 0 read as 1 (it starts at 1)".into());
    }
    if setup.halfmoves > MAX_NET_COUNTER || setup.fullmoves.get() > MAX_NET_COUNTER {
        notes.push(format!(
            "counters over {MAX_NET_COUNTER} do not fit the network's input: it reads {}",
            "them as 999 (the tokenizer's 3 characters)"
        ));
    }
    let pos = match setup.position::<Chess>(castling_mode(chess960)) {
        Ok(pos) => pos,
        Err(e) => {
            let kinds = e.kinds();
            if kinds.contains(PositionErrorKinds::INVALID_CASTLING_RIGHTS) {
                notes.push("castling rights that do not match the position were dropped".into());
            }
            if kinds.contains(PositionErrorKinds::INVALID_EP_SQUARE) {
                notes.push("an impossible en-passant square was dropped".into());
            }
            e.ignore_invalid_castling_rights()
                .or_else(PositionError::ignore_invalid_ep_square)
                .map_err(|e| GameError(format!("impossible position in FEN {trimmed:?}: {e}")))?
        }
    };
    Ok((pos, notes))
}

/// A FEN field for a message: at most 24 characters.
fn clip_field(text: &str) -> String {
    if text.chars().count() > 24 {
        format!("{}…", text.chars().take(24).collect::<String>())
    } else {
        text.to_string()
    }
}

/// python-chess `castling_xfen()` of a position: `KQkq` letters, or a rook's file letter when
/// another rook of that side stands further out on the same wing; `-` when there are no rights.
fn castling_xfen(pos: &Chess) -> String {
    let rights = pos.castles().castling_rights();
    let board = pos.board();
    let mut out = String::new();
    for color in [Color::White, Color::Black] {
        let Some(king) = board.king_of(color) else {
            continue;
        };
        let backrank = Bitboard::from_rank(color.backrank());
        let own_rooks = board.rooks() & board.by_color(color) & backrank;
        // Descending square order, as python-chess's scan_reversed.
        let mut squares: Vec<Square> = (rights & backrank).into_iter().collect();
        squares.reverse();
        for rook in squares {
            let a_side = rook.file() < king.file();
            let others = own_rooks.without(rook);
            let ambiguous = others
                .into_iter()
                .any(|other| (other.file() < rook.file()) == a_side);
            let ch = if ambiguous {
                rook.file().char()
            } else if a_side {
                'q'
            } else {
                'k'
            };
            out.push(if color == Color::White {
                ch.to_ascii_uppercase()
            } else {
                ch
            });
        }
    }
    if out.is_empty() {
        out.push('-');
    }
    out
}

/// Castling field for the network: one `K`/`Q`/`k`/`q` per right (h-side / a-side), so that
/// Chess960 positions stay inside the tokenizer's vocabulary. Equal to [`castling_xfen`] in
/// standard chess.
fn castling_kq(pos: &Chess) -> String {
    let rights = pos.castles().castling_rights();
    let board = pos.board();
    let mut out = String::new();
    for color in [Color::White, Color::Black] {
        let Some(king) = board.king_of(color) else {
            continue;
        };
        let backrank = Bitboard::from_rank(color.backrank());
        let mut squares: Vec<Square> = (rights & backrank).into_iter().collect();
        squares.reverse();
        for rook in squares {
            let ch = if rook.file() < king.file() { 'q' } else { 'k' };
            out.push(if color == Color::White {
                ch.to_ascii_uppercase()
            } else {
                ch
            });
        }
    }
    if out.is_empty() {
        out.push('-');
    }
    out
}

fn fen_with_castling(pos: &Chess, castling: String) -> String {
    let ep = pos
        .legal_ep_square()
        .map_or_else(|| "-".to_string(), |sq| sq.to_string());
    format!(
        "{} {} {} {} {} {}",
        pos.board(),
        if pos.turn() == Color::White { 'w' } else { 'b' },
        castling,
        ep,
        pos.halfmoves(),
        pos.fullmoves()
    )
}

/// [`fen_with_castling`] with both counters at most [`MAX_NET_COUNTER`].
fn net_fen_with_castling(pos: &Chess, castling: String) -> String {
    let mut fen = fen_with_castling(pos, castling);
    if pos.halfmoves() > MAX_NET_COUNTER || pos.fullmoves().get() > MAX_NET_COUNTER {
        let head: Vec<&str> = fen.split(' ').take(4).collect();
        fen = format!(
            "{} {} {}",
            head.join(" "),
            pos.halfmoves().min(MAX_NET_COUNTER),
            pos.fullmoves().get().min(MAX_NET_COUNTER)
        );
    }
    fen
}

/// FEN of `pos` exactly as python-chess `board.fen()` writes it (legal en-passant square only,
/// X-FEN castling).
pub fn python_fen(pos: &Chess) -> String {
    fen_with_castling(pos, castling_xfen(pos))
}

/// FEN of `pos` for the tokenizer: [`python_fen`], except that castling rights are always written
/// with `KQkq` letters (differs only for ambiguous Chess960 rights, which the reference vocabulary
/// cannot express) and that counters over [`MAX_NET_COUNTER`] are written as it (the reference
/// tokenizer's fields hold 3 characters; a 1,000-ply game would otherwise silence the net).
pub fn model_fen(pos: &Chess) -> String {
    net_fen_with_castling(pos, castling_kq(pos))
}

/// Action-table UCI of a move (standard notation: castling as the king's two-square move, or for
/// Chess960 castling the king's destination on the c/g file).
pub fn standard_uci(mv: &Move) -> String {
    UciMove::from_standard(*mv).to_string()
}

/// Counts `k` in `keys`.
fn count(keys: &[Key], k: &Key) -> usize {
    keys.iter().filter(|x| *x == k).count()
}

/// Whether the position `after` (reached by the move), with the transposition keys of the
/// reversible history window `window` (positions before it, newest first, already cut at the
/// first irreversible move; empty if the move itself was irreversible), is a fivefold repetition
/// or allows a threefold claim (python-chess semantics).
fn repetition_after(after: &Chess, window_before: &[Key]) -> bool {
    let k = key(after);
    let mut window = Vec::with_capacity(window_before.len() + 1);
    window.push(k.clone());
    window.extend_from_slice(window_before);
    let n = count(&window, &k);
    if n >= 3 {
        // Threefold occurred (covers fivefold too).
        return true;
    }
    // python-chess: a legal next move reaches a position seen at least twice in the window.
    after.legal_moves().iter().any(|r| {
        let mut next = after.clone();
        next.play_unchecked(*r);
        count(&window, &key(&next)) >= 2
    })
}

impl Game {
    /// The standard start position.
    pub fn startpos() -> Game {
        Game {
            chess960: false,
            positions: vec![Chess::new()],
            moves: Vec::new(),
        }
    }

    /// A game from a FEN (X-FEN/Shredder castling accepted when `chess960`).
    ///
    /// Castling rights that do not match the position and impossible en-passant squares are
    /// dropped silently (python-chess keeps them but never writes or uses them).
    ///
    /// # Errors
    /// Malformed FEN or impossible position.
    pub fn from_fen(fen: &str, chess960: bool) -> Result<Game, GameError> {
        Self::from_fen_noting(fen, chess960).map(|(g, _)| g)
    }

    /// [`Game::from_fen`] with the notes of [`parse_fen_noting`] (what was repaired or clamped).
    ///
    /// # Errors
    /// Malformed FEN or impossible position.
    pub fn from_fen_noting(fen: &str, chess960: bool) -> Result<(Game, Vec<String>), GameError> {
        let (pos, notes) = parse_fen_noting(fen, chess960)?;
        Ok((Game::from_position(pos, chess960), notes))
    }

    /// A game from an already validated position.
    pub fn from_position(pos: Chess, chess960: bool) -> Game {
        Game {
            chess960,
            positions: vec![pos],
            moves: Vec::new(),
        }
    }

    /// Parses a UCI move in the current position without playing it (`e2e4`, `e7e8q`; castling
    /// as `e1g1` or king-takes-rook `e1h1` in either mode).
    ///
    /// # Errors
    /// Malformed or illegal move.
    pub fn parse_uci(&self, uci: &str) -> Result<Move, GameError> {
        let parsed = UciMove::from_ascii(uci.trim().as_bytes())
            .map_err(|_| GameError(format!("malformed UCI move {uci:?}")))?;
        parsed.to_move(self.position()).map_err(|_| {
            GameError(format!(
                "illegal move {uci:?} in {}",
                python_fen(self.position())
            ))
        })
    }

    /// Plays a UCI move (`e2e4`, `e7e8q`; castling as `e1g1` or, in Chess960 mode, king-takes-rook).
    ///
    /// # Errors
    /// Malformed or illegal move; the game is unchanged.
    pub fn push_uci(&mut self, uci: &str) -> Result<(), GameError> {
        let mv = self.parse_uci(uci)?;
        self.push(mv)
    }

    /// Plays a move given as a shakmaty [`Move`].
    ///
    /// # Errors
    /// Illegal move; the game is unchanged.
    pub fn push(&mut self, mv: Move) -> Result<(), GameError> {
        let pos = self.position();
        if !pos.is_legal(mv) {
            return Err(GameError(format!(
                "illegal move {} in {}",
                self.move_to_uci(&mv),
                python_fen(pos)
            )));
        }
        let mut next = pos.clone();
        next.play_unchecked(mv);
        self.positions.push(next);
        self.moves.push(mv);
        Ok(())
    }

    /// Every position of the game, the start position first and the current one last.
    pub fn positions(&self) -> &[Chess] {
        &self.positions
    }

    /// Current position.
    pub fn position(&self) -> &Chess {
        self.positions.last().expect("at least the start position")
    }

    /// The position the game started from (before [`Game::moves`]).
    pub fn start_position(&self) -> &Chess {
        &self.positions[0]
    }

    /// Moves played since the start position.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Whether the game uses Chess960 castling notation.
    pub fn chess960(&self) -> bool {
        self.chess960
    }

    /// Legal moves of the current position (shakmaty's generation order).
    pub fn legal_moves(&self) -> Vec<Move> {
        self.position().legal_moves().to_vec()
    }

    /// UCI notation of `mv` for the GUI (king-takes-rook castling when `chess960`).
    pub fn move_to_uci(&self, mv: &Move) -> String {
        UciMove::from_move(*mv, castling_mode(self.chess960)).to_string()
    }

    /// Current position's FEN as python-chess `board.fen()` writes it (ep square only when a legal
    /// en-passant capture exists) — the string the tokenizer is fed.
    pub fn fen(&self) -> String {
        python_fen(self.position())
    }

    /// Transposition keys of the reversible window ending at the current position, newest first
    /// (python-chess's history walk in `can_claim_threefold_repetition`).
    fn window(&self) -> Vec<Key> {
        let mut keys = vec![key(self.position())];
        for j in (0..self.moves.len()).rev() {
            if self.positions[j].is_irreversible(self.moves[j]) {
                break;
            }
            keys.push(key(&self.positions[j]));
        }
        keys
    }

    /// For each of `moves` (legal in the current position), whether it allows a repetition claim
    /// ([`Game::move_allows_repetition`]); shares the history walk between moves.
    pub fn moves_allowing_repetition(&self, moves: &[Move]) -> Vec<bool> {
        let pos = self.position();
        let window = self.window();
        moves
            .iter()
            .map(|&mv| {
                if !pos.is_legal(mv) {
                    return false;
                }
                let mut after = pos.clone();
                after.play_unchecked(mv);
                if pos.is_irreversible(mv) {
                    repetition_after(&after, &[])
                } else {
                    repetition_after(&after, &window)
                }
            })
            .collect()
    }

    /// Whether after `mv` a fivefold repetition exists or a threefold repetition can be claimed
    /// (python-chess `is_fivefold_repetition() || can_claim_threefold_repetition()`).
    /// An illegal `mv` gives `false`.
    pub fn move_allows_repetition(&self, mv: &Move) -> bool {
        self.moves_allowing_repetition(std::slice::from_ref(mv))[0]
    }

    /// Whether the current position is a fivefold repetition or the side to move can claim a
    /// threefold repetition (python-chess semantics, as for [`Game::move_allows_repetition`]).
    pub fn repetition_claimable(&self) -> bool {
        let window = self.window();
        repetition_after(self.position(), &window[1..])
    }

    /// Whether some position occurred twice since the last capture or pawn move (Stockfish's
    /// `has_repeated`, used by the tablebase root probe to insist on DTZ progress).
    pub fn repeated_since_zeroing(&self) -> bool {
        let window = self.window();
        window
            .iter()
            .enumerate()
            .any(|(i, k)| window[i + 1..].contains(k))
    }

    /// Number of times the current position occurred in the reversible window (1 = first time).
    pub fn repetition_count(&self) -> usize {
        let window = self.window();
        count(&window, &window[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_fen_and_ep_convention() {
        let mut g = Game::startpos();
        assert_eq!(
            g.fen(),
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
        );
        g.push_uci("e2e4").unwrap();
        assert_eq!(
            g.fen(),
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
        );
        for m in ["d7d5", "e4e5", "f7f5"] {
            g.push_uci(m).unwrap();
        }
        assert!(g.fen().contains(" f6 0 3"), "{}", g.fen());
        assert!(g.push_uci("e5e4").is_err());
        assert!(g.push_uci("zz").is_err());
        assert_eq!(g.moves().len(), 4);
    }

    #[test]
    fn bad_fens_are_errors() {
        assert!(Game::from_fen("", false).is_err());
        assert!(Game::from_fen("not a fen", false).is_err());
        assert!(Game::from_fen("8/8/8/8/8/8/8/8 w - - 0 1", false).is_err());
        assert!(Game::from_fen("4k3/8/8/8/8/8/8/4K2P w - - 0 1", false).is_err());
        // Side not to move in check.
        assert!(Game::from_fen("4k3/8/8/8/8/8/8/4K2r b - - 0 1", false).is_err());
        // Unclean castling rights are dropped, not errors.
        let g = Game::from_fen("r3k3/8/8/8/8/8/8/4K2R w KQkq - 0 1", false).unwrap();
        assert_eq!(g.fen(), "r3k3/8/8/8/8/8/8/4K2R w Kq - 0 1");
    }

    #[test]
    fn castling_notation() {
        let fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
        let mut g = Game::from_fen(fen, false).unwrap();
        g.push_uci("e1g1").unwrap();
        assert_eq!(g.move_to_uci(&g.moves()[0]), "e1g1");
        let mut g = Game::from_fen(fen, false).unwrap();
        g.push_uci("e1h1").unwrap();
        assert_eq!(g.fen(), "r3k2r/8/8/8/8/8/8/R4RK1 b kq - 1 1");
        let mut g = Game::from_fen(fen, true).unwrap();
        g.push_uci("e1a1").unwrap();
        assert_eq!(g.move_to_uci(&g.moves()[0]), "e1a1");
        assert_eq!(standard_uci(&g.moves()[0]), "e1c1");
        assert_eq!(g.fen(), "r3k2r/8/8/8/8/8/8/2KR3R b kq - 1 1");
    }

    #[test]
    fn chess960_xfen() {
        // King f1, castling rook g1 with another rook on h1: X-FEN writes the file letter.
        let g = Game::from_fen("4k3/8/8/8/8/8/8/5KRR w G - 0 1", true).unwrap();
        assert_eq!(g.fen(), "4k3/8/8/8/8/8/8/5KRR w G - 0 1");
        assert_eq!(model_fen(g.position()), "4k3/8/8/8/8/8/8/5KRR w K - 0 1");
    }

    #[test]
    fn counters_the_net_cannot_read_are_clamped_and_noted() {
        let (g, notes) =
            Game::from_fen_noting("4k3/8/8/8/8/8/8/4K2R w K - 999 1000", false).unwrap();
        assert_eq!(
            model_fen(g.position()),
            "4k3/8/8/8/8/8/8/4K2R w K - 999 999"
        );
        assert!(crate::model::tokenizer::tokenize(&model_fen(g.position())).is_ok());
        assert_eq!(notes.len(), 1, "{notes:?}");
        // A successor of a 999 clock (SuccessorValue) is clamped too.
        let mut g = g;
        g.push_uci("h1h2").unwrap();
        assert!(crate::model::tokenizer::tokenize(&model_fen(g.position())).is_ok());
        let (_, notes) =
            Game::from_fen_noting("4k3/8/8/8/8/8/8/4K3 w - - 99999999999999999999 1", false)
                .unwrap();
        assert!(
            notes.iter().any(|n| n.contains("out of range")),
            "{notes:?}"
        );
        let (_, notes) = Game::from_fen_noting("4k3/8/8/8/8/8/8/4K3 w KQ e3 0 1", false).unwrap();
        assert_eq!(
            notes.len(),
            2,
            "castling and en passant repaired: {notes:?}"
        );
        let (_, notes) = Game::from_fen_noting("4k3/8/8/8/8/8/8/4K3 w - - 0 0", false).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        let (_, notes) = Game::from_fen_noting(crate::engine::STARTPOS_FEN, false).unwrap();
        assert!(notes.is_empty());
    }

    #[test]
    fn knight_shuffle_repetition() {
        // The golden repetition record: after 1.Nf3 Nf6 2.Ng1 Ng8 3.Nf3 Nf6 4.Ng1, ...Ng8 allows
        // White to claim (Nf3 repeats the position after 1.Nf3 a third time).
        let mut g = Game::startpos();
        for m in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"] {
            g.push_uci(m).unwrap();
        }
        let back = g.parse_uci("f6g8").unwrap();
        let other = g.parse_uci("h8g8").unwrap();
        assert!(g.move_allows_repetition(&back));
        assert!(!g.move_allows_repetition(&other));
        // A pawn move cuts the window.
        let pawn = g.parse_uci("e7e5").unwrap();
        assert!(!g.move_allows_repetition(&pawn));
        g.push(back).unwrap();
        assert!(g.repetition_claimable());
        assert_eq!(g.repetition_count(), 3);
    }
}
