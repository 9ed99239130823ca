//! Text of the two diagnostic commands, `d` (board diagram) and `eval` (every move ranked); both
//! are sent as `info string` lines.

use crate::game::Game;
use crate::model::buckets::win_prob_to_cp;
use crate::model::ModelInfo;
use crate::search::analysis::{gives_mate, ranked, Analysis};

/// An ASCII board from a FEN's placement field (white at the bottom).
pub fn board_diagram(fen: &str) -> String {
    let placement = fen.split_whitespace().next().unwrap_or("");
    let sep = " +---+---+---+---+---+---+---+---+";
    let mut s = String::new();
    for (r, rank) in placement.split('/').enumerate() {
        s.push_str(sep);
        s.push('\n');
        let mut row = String::new();
        for c in rank.chars() {
            match c.to_digit(10) {
                Some(n) => (0..n).for_each(|_| row.push_str(" |  ")),
                None => row.push_str(&format!(" | {c}")),
            }
        }
        s.push_str(&format!("{row} | {}\n", 8 - r));
    }
    s.push_str(sep);
    s.push_str("\n   a   b   c   d   e   f   g   h");
    s
}

/// The `d` report: board, FEN (python-chess convention), number of legal moves, loaded model.
pub fn position_report(game: &Game, model: Option<&ModelInfo>) -> String {
    let mut text = board_diagram(&game.fen());
    text.push_str(&format!("\nFen: {}\n", game.fen()));
    text.push_str(&format!("Legal moves: {}\n", game.legal_moves().len()));
    match model {
        Some(i) => text.push_str(&format!(
            "Model: {} | {:?} | {} | {} buckets | seq {} | outputs {} | backend {:?} | {}",
            i.source,
            i.kind,
            i.precision,
            i.buckets,
            i.seq_len,
            i.outputs,
            i.backend,
            i.description
        )),
        None => text.push_str("Model: not loaded yet (loads at isready or go)"),
    }
    text
}

/// The `eval` table: every legal move by descending win probability.
pub fn eval_table(game: &Game, analysis: &Analysis, chosen: Option<usize>) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<7} {:>6} {:>8} {:>8} {:>6} {:>6}",
        "move", "action", "win%", "net%", "cp", "bucket"
    )];
    for i in ranked(analysis) {
        let m = &analysis.moves[i];
        let mark = if Some(i) == chosen { " *" } else { "" };
        let mate = if gives_mate(game, &m.mv) { " mate" } else { "" };
        lines.push(format!(
            "{:<7} {:>6} {:>8.3} {:>8.3} {:>6} {:>6}{mate}{mark}",
            m.uci,
            m.action,
            100.0 * m.win_prob,
            100.0 * m.raw_win_prob,
            win_prob_to_cp(f64::from(m.win_prob)),
            m.bucket_mode
        ));
    }
    if analysis.moves.is_empty() {
        lines.push("(no legal moves)".into());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagram_has_eight_ranks() {
        let d = board_diagram(crate::engine::STARTPOS_FEN);
        assert_eq!(d.lines().filter(|l| l.starts_with(" |")).count(), 8);
        assert!(d.contains(" | r | n | b | q | k | b | n | r | 8"));
        assert!(d.ends_with("   a   b   c   d   e   f   g   h"));
    }
}
