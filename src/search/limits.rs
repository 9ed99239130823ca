//! The limits of one `go` as the searches and the time manager read them. The UCI layer parses
//! the `go` command into [`GoParams`]; nothing here knows the protocol's text.

/// Parameters of `go`; every field is optional. Times are milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoParams {
    /// `searchmoves`: UCI strings, resolved against the legal moves by the engine.
    pub searchmoves: Vec<String>,
    /// `ponder`: search in the opponent's time until `ponderhit` or `stop`.
    pub ponder: bool,
    /// White's remaining time (ms); negative values (some GUIs) are kept as given.
    pub wtime: Option<i64>,
    /// Black's remaining time (ms).
    pub btime: Option<i64>,
    /// White's increment per move (ms).
    pub winc: Option<i64>,
    /// Black's increment per move (ms).
    pub binc: Option<i64>,
    /// Moves to the next time control.
    pub movestogo: Option<u32>,
    /// Search depth in plies (accepted; the searchless policy always looks one ply deep).
    pub depth: Option<u32>,
    /// Node (network evaluation) limit (accepted; one batched pass is always made).
    pub nodes: Option<u64>,
    /// Search for a mate in this many moves (accepted; mate in one is always played).
    pub mate: Option<u32>,
    /// Exact time for this move (ms).
    pub movetime: Option<u64>,
    /// `infinite`: do not print `bestmove` before `stop`.
    pub infinite: bool,
}
