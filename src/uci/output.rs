//! UCI output: typed [`Info`] and [`BestMove`] → protocol text. Formatting only.
//!
//! Every line the engine writes to stdout goes through this module, so stdout carries nothing but
//! UCI: free text is always wrapped as `info string …` with newlines removed.

use std::fmt::Write as _;

/// A score as UCI writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// Centipawns from the side to move's point of view.
    Cp(i32),
    /// Mate in this many moves (positive: the side to move mates; negative: it is mated).
    Mate(i32),
}

/// Win/draw/loss per mille (sums to 1000), from the side to move's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wdl {
    /// Wins ‰.
    pub win: u32,
    /// Draws ‰.
    pub draw: u32,
    /// Losses ‰.
    pub loss: u32,
}

impl Wdl {
    /// Per mille from a WDL head's `[win, draw, loss]` probabilities (renormalised; rounding
    /// goes to the draws so the three sum to 1000). Non-finite or all-zero input gives
    /// `0 1000 0`.
    pub fn from_probs(p: [f32; 3]) -> Wdl {
        let p = p.map(|x| {
            if x.is_finite() {
                f64::from(x.max(0.0))
            } else {
                0.0
            }
        });
        let total: f64 = p.iter().sum();
        if total <= 0.0 {
            return Wdl {
                win: 0,
                draw: 1000,
                loss: 0,
            };
        }
        let win = (p[0] / total * 1000.0).round() as u32;
        let loss = ((p[2] / total * 1000.0).round() as u32).min(1000 - win);
        Wdl {
            win,
            draw: 1000 - win - loss,
            loss,
        }
    }

    /// The split Glimpse reports: the network predicts an expected score `p` (win probability in
    /// the Lichess sense, draws counting half), not a draw rate, so `w = round(1000·p)`, `d = 0`,
    /// `l = 1000 − w`. The expected score `(w + d/2)/1000` equals `p` up to rounding.
    pub fn from_win_prob(p: f64) -> Wdl {
        let p = if p.is_finite() {
            p.clamp(0.0, 1.0)
        } else {
            0.5
        };
        let win = (p * 1000.0).round() as u32;
        Wdl {
            win,
            draw: 0,
            loss: 1000 - win,
        }
    }
}

/// One `info` line about a searched move (one per MultiPV entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// Depth in plies (1 for the searchless policy).
    pub depth: u32,
    /// Selective depth in plies.
    pub seldepth: u32,
    /// MultiPV index, 1-based.
    pub multipv: u32,
    /// Score of this line.
    pub score: Score,
    /// WDL, written only when `Some` (UCI_ShowWDL).
    pub wdl: Option<Wdl>,
    /// Network evaluations so far (UCI `nodes`).
    pub nodes: u64,
    /// Nodes per second.
    pub nps: u64,
    /// Milliseconds since `go`.
    pub time_ms: u64,
    /// Cache fill per mille (UCI `hashfull`), written when `Some`.
    pub hashfull: Option<u32>,
    /// Tablebase probes in this search (UCI `tbhits`), written when `Some` (tables are loaded).
    pub tbhits: Option<u64>,
    /// Principal variation, UCI moves.
    pub pv: Vec<String>,
}

/// The answer to `go`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BestMove {
    /// The move in UCI notation; `None` when the side to move has no legal move.
    pub mv: Option<String>,
    /// The expected reply to ponder on, if known.
    pub ponder: Option<String>,
}

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
