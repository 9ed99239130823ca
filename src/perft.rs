//! Perft: legal move-path counts for move-generator verification.
//!
//! `perft(pos, d)` counts the leaf nodes of the legal move tree of depth `d` (bulk counting at
//! depth 1: the number of legal moves). Castling follows the position's own castling rights, so a
//! Chess960 position parsed with `CastlingMode::Chess960` is counted with Chess960 castling.

use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Position};

/// Number of leaf nodes at `depth` plies below `pos` (depth 0 → 1).
pub fn perft(pos: &Chess, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let moves = pos.legal_moves();
    if depth == 1 {
        return moves.len() as u64;
    }
    moves
        .iter()
        .map(|&m| {
            let mut child = pos.clone();
            child.play_unchecked(m);
            perft(&child, depth - 1)
        })
        .sum()
}

/// Perft split by root move: `(uci, count)` for each legal move, sorted by UCI string (castling in
/// `mode` notation). The counts sum to [`perft`]`(pos, depth)` for `depth >= 1`.
pub fn divide(pos: &Chess, depth: u32, mode: CastlingMode) -> Vec<(String, u64)> {
    if depth == 0 {
        return Vec::new();
    }
    let mut out: Vec<(String, u64)> = pos
        .legal_moves()
        .iter()
        .map(|&m| {
            let mut child = pos.clone();
            child.play_unchecked(m);
            (
                UciMove::from_move(m, mode).to_string(),
                perft(&child, depth - 1),
            )
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_position_counts() {
        let pos = Chess::new();
        assert_eq!(perft(&pos, 0), 1);
        assert_eq!(perft(&pos, 1), 20);
        assert_eq!(perft(&pos, 2), 400);
        assert_eq!(perft(&pos, 3), 8902);
        let d = divide(&pos, 2, CastlingMode::Standard);
        assert_eq!(d.len(), 20);
        assert_eq!(d.iter().map(|(_, n)| n).sum::<u64>(), 400);
        assert_eq!(d[0], ("a2a3".to_string(), 20));
    }
}
