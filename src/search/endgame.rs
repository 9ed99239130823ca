//! The bare-king rule: a rule-based value for K + mating material vs a lone king.
//!
//! The network gives every non-losing move in such an ending the same "won" value, so neither
//! the searchless policy nor a short search makes progress, and the game drifts into the
//! 50-move rule (the searchless policy's known weakness, Ruoss et al. 2024, section 5). Engines
//! solve this with endgame knowledge: Stockfish's `KXK` evaluation pushes the lone king to the
//! edge and brings the winning king closer; Lc0 probes tablebases. MCTS mode (option `MopUp`)
//! uses this value in place of the network in those positions, and the solver finishes the mate
//! once it is in reach.

use shakmaty::attacks::king_attacks;
use shakmaty::{Bitboard, Chess, Color, Position, Role, Square};

/// Value of a won bare-king ending for the strong side before the mop-up bonus. It stays well
/// above the 0.5 of a draw (losing the piece, stalemate) so that search never trades the win
/// for progress, and the spread up to `BASE + BONUS` is wide enough for PUCT to follow.
pub const BASE: f32 = 0.60;
/// Largest mop-up bonus (lone king boxed in a corner, kings close).
pub const BONUS: f32 = 0.39;

/// Whether `side` has only its king.
fn bare(pos: &Chess, side: Color) -> bool {
    pos.board().by_color(side).count() == 1
}

/// Whether `side` can force mate against a lone king with what it has: a queen, a rook, or
/// two bishops / bishop and knight… kept simple: a queen or a rook (pawns make the position
/// a different ending, left to the network).
fn mating_material(pos: &Chess, side: Color) -> bool {
    let b = pos.board();
    let ours = b.by_color(side);
    let heavy = (b.by_role(Role::Queen) | b.by_role(Role::Rook)) & ours;
    let pawns = b.by_role(Role::Pawn) & ours;
    !heavy.is_empty() && pawns.is_empty()
}

/// Manhattan distance of `sq` from the centre, 0 (d4/e4/d5/e5) to 6 (corners).
fn centre_distance(sq: Square) -> u32 {
    let f = u32::from(sq.file());
    let r = u32::from(sq.rank());
    let df = if f < 4 { 3 - f } else { f - 4 };
    let dr = if r < 4 { 3 - r } else { r - 4 };
    df + dr
}

/// Squares the lone king on `wk` can reach by king moves through squares the strong side does not
/// attack or occupy (the "box" the rook or queen confines it to), itself included: 1..=64.
fn box_area(pos: &Chess, strong: Color, wk: Square) -> u32 {
    let b = pos.board();
    // Attacks are computed with the lone king removed, so it cannot hide behind itself.
    let occupied = b.occupied() ^ Bitboard::from_square(wk);
    let blocked = b.by_color(strong);
    let mut seen = Bitboard::from_square(wk);
    let mut frontier = seen;
    while !frontier.is_empty() {
        let mut next = Bitboard::EMPTY;
        for sq in frontier {
            for to in king_attacks(sq) & !seen & !blocked {
                if b.attacks_to(to, strong, occupied).is_empty() {
                    next |= Bitboard::from_square(to);
                }
            }
        }
        seen |= next;
        frontier = next;
    }
    seen.count() as u32
}

/// Chebyshev distance between two squares (king moves), 1..=7 for two kings.
fn king_distance(a: Square, b: Square) -> u32 {
    let df = (i32::from(a.file()) - i32::from(b.file())).unsigned_abs();
    let dr = (i32::from(a.rank()) - i32::from(b.rank())).unsigned_abs();
    df.max(dr)
}

/// The mop-up value of `pos` for its side to move, when one side has a queen or rook (and no
/// pawns) against a lone king: for the strong side BASE + BONUS · (0.45 · (1 − (box − 1)/63) +
/// 0.35 · lone king's distance from the centre / 6 + 0.2 · (7 − distance between the kings) / 6),
/// where box is the number of squares the lone king can reach ([`box_area`]); its complement
/// for the lone king. `None` for any other position (the network decides).
pub fn bare_king_value(pos: &Chess) -> Option<f32> {
    let turn = pos.turn();
    let (strong, weak) = if bare(pos, !turn) && mating_material(pos, turn) {
        (turn, !turn)
    } else if bare(pos, turn) && mating_material(pos, !turn) {
        (!turn, turn)
    } else {
        return None;
    };
    let b = pos.board();
    let (sk, wk) = (b.king_of(strong)?, b.king_of(weak)?);
    let boxed = 1.0 - (box_area(pos, strong, wk) - 1) as f32 / 63.0;
    let edge = centre_distance(wk) as f32 / 6.0;
    let close = (7 - king_distance(sk, wk).min(7)) as f32 / 6.0;
    let v = BASE + BONUS * (0.45 * boxed + 0.35 * edge + 0.2 * close);
    Some(if strong == turn { v } else { 1.0 - v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Game;

    fn value(fen: &str) -> Option<f32> {
        bare_king_value(Game::from_fen(fen, false).unwrap().position())
    }

    #[test]
    fn applies_only_to_heavy_piece_against_a_lone_king() {
        assert!(value("8/8/8/4k3/8/8/8/4K2Q w - - 0 1").is_some());
        assert!(value("8/8/8/4k3/8/8/8/4K2R b - - 0 1").is_some());
        // Lone king vs minor piece, pawns, or material on both sides: the network decides.
        assert!(value("8/8/8/4k3/8/8/8/4K2B w - - 0 1").is_none());
        assert!(value("8/8/8/4k3/8/8/4P3/4K2R w - - 0 1").is_none());
        assert!(value("8/8/8/4k3/8/8/r7/4K2R w - - 0 1").is_none());
        assert!(value("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1").is_none());
    }

    #[test]
    fn the_box_counts_the_lone_kings_squares() {
        // The rook on b1 boxes the a8 king into a2..a8 (a1 and the b-file are attacked).
        let g = Game::from_fen("k7/8/8/8/8/8/8/1R5K w - - 0 1", false).unwrap();
        assert_eq!(box_area(g.position(), Color::White, Square::A8), 7);
        let free = Game::from_fen("8/8/8/4k3/8/8/8/K6R w - - 0 1", false).unwrap();
        assert!(box_area(free.position(), Color::White, Square::E5) > 40);
    }

    #[test]
    fn edge_and_closeness_raise_the_strong_side_value() {
        let centre = value("8/8/8/4k3/8/8/8/K5Q1 w - - 0 1").unwrap();
        let edge = value("4k3/8/8/8/8/8/8/K5Q1 w - - 0 1").unwrap();
        let corner = value("7k/8/8/8/8/8/8/K5Q1 w - - 0 1").unwrap();
        let corner_close = value("7k/8/5K2/8/8/8/8/6Q1 w - - 0 1").unwrap();
        assert!(centre < edge && edge < corner && corner < corner_close);
        assert!(centre >= BASE && corner_close <= BASE + BONUS);
        // The lone king's side to move sees the complement.
        let black = value("7k/8/5K2/8/8/8/8/6Q1 b - - 0 1").unwrap();
        assert!((black - (1.0 - corner_close)).abs() < 1e-6);
    }
}
