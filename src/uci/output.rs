//! UCI output: the search's typed reports ([`Info`], [`BestMove`], from
//! `crate::search::report`) → protocol text. Formatting only.
//!
//! Every line the engine writes to stdout goes through this module, so stdout carries nothing but
//! UCI: free text is always wrapped as `info string …` with newlines removed.

pub use crate::search::report::{BestMove, Info, Score, Wdl};
use std::fmt::Write as _;

/// `info depth D seldepth S multipv K score cp X [wdl W D L] nodes N nps R [hashfull H]
/// [tbhits B] time T pv M…` (Stockfish's order).
pub fn format_info(info: &Info) -> String {
    let mut s = format!(
        "info depth {} seldepth {} multipv {} score ",
        info.depth, info.seldepth, info.multipv
    );
    match info.score {
        Score::Cp(cp) => write!(s, "cp {cp}"),
        Score::Mate(m) => write!(s, "mate {m}"),
    }
    .expect("writing to a String cannot fail");
    if let Some(w) = info.wdl {
        write!(s, " wdl {} {} {}", w.win, w.draw, w.loss).expect("String write");
    }
    write!(s, " nodes {} nps {}", info.nodes, info.nps).expect("String write");
    if let Some(h) = info.hashfull {
        write!(s, " hashfull {h}").expect("String write");
    }
    if let Some(t) = info.tbhits {
        write!(s, " tbhits {t}").expect("String write");
    }
    write!(s, " time {}", info.time_ms).expect("String write");
    if !info.pv.is_empty() {
        s.push_str(" pv ");
        s.push_str(&info.pv.join(" "));
    }
    s
}

/// `bestmove M [ponder P]`, or `bestmove (none)` without a legal move (as Stockfish writes it).
pub fn format_bestmove(best: &BestMove) -> String {
    match (&best.mv, &best.ponder) {
        (Some(m), Some(p)) => format!("bestmove {m} ponder {p}"),
        (Some(m), None) => format!("bestmove {m}"),
        (None, _) => "bestmove (none)".to_string(),
    }
}

/// `c`, or a space where `c` would break or garble a line: control characters (C0, DEL, C1,
/// NEL) and the Unicode line and paragraph separators U+2028/U+2029, which some GUIs read as a
/// line break.
pub fn printable(c: char) -> char {
    if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
        ' '
    } else {
        c
    }
}

/// `info string <text>`, one line per input line; what [`printable`] replaces becomes spaces.
pub fn format_info_string(text: &str) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let clean: String = l.chars().map(printable).collect();
            format!("info string {}", clean.trim_end())
        })
        .collect();
    if lines.is_empty() {
        vec!["info string".to_string()]
    } else {
        lines
    }
}
