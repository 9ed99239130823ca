//! What a search reports, as types: [`Info`] lines, one [`BestMove`], and remarks
//! ([`crate::model::Note`]), handed to a [`Listener`]. The search never formats text; the UCI
//! layer (`crate::uci::out::Out`) implements [`Listener`] and writes the protocol lines.

use crate::model::Note;

/// Where a search's reports go. Implemented by the UCI writer; tests record the reports.
///
/// Threading: shared by the search thread, the hard-limit timer and the engine thread.
pub trait Listener: Send + Sync {
    /// `infos`, then `best` when given, as one block (nothing written between them).
    fn report(&self, infos: &[Info], best: Option<&BestMove>);

    /// A remark ([`Note::Info`]) or an error ([`Note::Error`]).
    fn note(&self, note: Note);
}

/// A score as the searches report it (UCI writes it as `score cp` or `score mate`).
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
