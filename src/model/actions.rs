//! The 1968-move action table of the searchless-chess reference (`utils.MOVE_TO_ACTION`).
//!
//! Squares a1 = 0 … h8 = 63. For each from-square in ascending order: the destinations of a queen
//! on an otherwise empty board (ascending), then those of a knight (ascending) → ids 0–1791.
//! Then 176 promotions (ids 1792–1967): for (from-rank, to-rank) in [(2, 1), (7, 8)] and file a..h:
//! straight push, capture towards file − 1, capture towards file + 1 (where on the board), each with
//! suffixes `q`, `r`, `b`, `n`. Castling is written as the king's move (`e1g1`).

use once_cell::sync::Lazy;
use std::collections::HashMap;

/// Number of actions.
pub const NUM_ACTIONS: usize = 1968;

struct Table {
    to_uci: Vec<String>,
    from_uci: HashMap<String, u16>,
}

fn square_name(sq: i32) -> String {
    let file = (b'a' + (sq % 8) as u8) as char;
    let rank = (b'1' + (sq / 8) as u8) as char;
    format!("{file}{rank}")
}

fn build() -> Table {
    let mut to_uci = Vec::with_capacity(NUM_ACTIONS);
    for from in 0..64i32 {
        let (ff, fr) = (from % 8, from / 8);
        let mut queen = Vec::new();
        let mut knight = Vec::new();
        for to in 0..64i32 {
            if to == from {
                continue;
            }
            let (tf, tr) = (to % 8, to / 8);
            let (df, dr) = ((tf - ff).abs(), (tr - fr).abs());
            if df == 0 || dr == 0 || df == dr {
                queen.push(to);
            }
            if (df == 1 && dr == 2) || (df == 2 && dr == 1) {
                knight.push(to);
            }
        }
        for to in queen.into_iter().chain(knight) {
            to_uci.push(format!("{}{}", square_name(from), square_name(to)));
        }
    }
    for (from_rank, to_rank) in [(2u8, 1u8), (7, 8)] {
        for file in 0..8i32 {
            for df in [0, -1, 1] {
                let tf = file + df;
                if !(0..8).contains(&tf) {
                    continue;
                }
                for piece in ['q', 'r', 'b', 'n'] {
                    to_uci.push(format!(
                        "{}{}{}{}{}",
                        (b'a' + file as u8) as char,
                        from_rank,
                        (b'a' + tf as u8) as char,
                        to_rank,
                        piece
                    ));
                }
            }
        }
    }
    debug_assert_eq!(to_uci.len(), NUM_ACTIONS);
    let from_uci = to_uci
        .iter()
        .enumerate()
        .map(|(i, s)| (s.clone(), i as u16))
        .collect();
    Table { to_uci, from_uci }
}

static TABLE: Lazy<Table> = Lazy::new(build);

/// UCI string of action `id` (standard-chess notation, castling as king move `e1g1`).
/// Returns `None` for `id >= 1968`.
pub fn action_to_uci(id: usize) -> Option<&'static str> {
    TABLE.to_uci.get(id).map(String::as_str)
}

/// Action id of a UCI move string (`e2e4`, `e7e8q`, `e1g1`), `None` if not in the table.
pub fn uci_to_action(uci: &str) -> Option<u16> {
    TABLE.from_uci.get(uci).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_checkpoints() {
        for (uci, id) in [
            ("a1b1", 0),
            ("e1c1", 99),
            ("e1g1", 102),
            ("g1f3", 169),
            ("e2e4", 317),
            ("a7a8", 1399),
            ("e8c8", 1711),
            ("e8g8", 1714),
            ("a2a1q", 1792),
            ("a7a8q", 1880),
            ("e7e8q", 1924),
            ("h7g8n", 1967),
        ] {
            assert_eq!(uci_to_action(uci), Some(id), "{uci}");
            assert_eq!(action_to_uci(id as usize), Some(uci));
        }
        assert_eq!(action_to_uci(NUM_ACTIONS), None);
        assert_eq!(uci_to_action("e1e1"), None);
        assert_eq!(uci_to_action("e7e8k"), None);
    }
}
