//! Syzygy endgame tablebases (`SyzygyPath`, `SyzygyProbeLimit`, `Syzygy50MoveRule`), read with
//! `shakmaty-syzygy`.
//!
//! - [`Tablebases::open`] reads the option's directories once, when the option is set (not at each
//!   `go`): every `*.rtbw`/`*.rtbz` file whose name, size and magic bytes are right is added; a
//!   missing directory or a bad file is reported and left out, the rest is used.
//! - [`Probe`] is what a search gets at `go` time: the tables, the piece limit and the 50-move
//!   rule. [`Probe::root`] is Stockfish's root probe (`Tablebases::root_probe`): every root move
//!   ranked by DTZ, and the moves that keep the best rank (the best WDL under the 50-move rule,
//!   with DTZ progress when a repetition or the 50-move counter demands it).
//!   [`Probe::wdl_after_zeroing`] is the probe MCTS makes after a capture or pawn move.
//!
//! Values are from the point of view of the side to move in the probed position. Probe errors
//! (a table missing, a corrupt file found only when read) give `None`: the search goes on
//! without the tables there.

use crate::game::Game;
use shakmaty::{Chess, Move, Position};
use shakmaty_syzygy::{Dtz, SyzygyError, Tablebase, Wdl};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Stockfish's `MAX_DTZ`: the rank of a certain win (`1 << 18`).
pub const MAX_DTZ: i32 = 1 << 18;

/// The centipawn score reported for a tablebase win (a loss: the negative), as Stockfish 16+ writes
/// a tablebase win found at the root (`cp 20000`).
pub const TB_WIN_CP: i32 = 20_000;

/// Magic bytes of a WDL table (`.rtbw`).
const WDL_MAGIC: [u8; 4] = [0x71, 0xe8, 0x23, 0x5d];
/// Magic bytes of a DTZ table (`.rtbz`).
const DTZ_MAGIC: [u8; 4] = [0xd7, 0x66, 0x0c, 0xa5];

/// The tables found in the `SyzygyPath` directories.
pub struct Tablebases {
    tables: Tablebase<Chess>,
    wdl_files: usize,
    dtz_files: usize,
    /// Set after the first probe error, so that it is reported once.
    failed: AtomicBool,
}

impl fmt::Debug for Tablebases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tablebases")
            .field("wdl_files", &self.wdl_files)
            .field("dtz_files", &self.dtz_files)
            .field("max_pieces", &self.max_pieces())
            .finish()
    }
}

/// What [`Tablebases::open`] found: the tables (`None` when no usable file was found) and one
/// message per directory or file left out.
#[derive(Debug)]
pub struct Opened {
    /// The usable tables.
    pub tables: Option<Tablebases>,
    /// Problems, one line each (a missing directory, a corrupt file).
    pub problems: Vec<String>,
}

/// Whether `s` is the option's empty value (`""` or `<empty>`, as Stockfish writes it).
pub fn is_empty_path(s: &str) -> bool {
    let s = s.trim();
    s.is_empty() || s == "<empty>"
}

/// The directories of a `SyzygyPath` value: separated by `:` on Unix and `;` on Windows
/// (`std::env::split_paths`, as Stockfish); blanks dropped.
pub fn split_path(value: &str) -> Vec<PathBuf> {
    if is_empty_path(value) {
        return Vec::new();
    }
    std::env::split_paths(value.trim())
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// Checks a table file's magic bytes (WDL or DTZ by extension) before it is added.
fn check_magic(path: &Path) -> Result<(), String> {
    let want = match path.extension().and_then(|e| e.to_str()) {
        Some("rtbw") => WDL_MAGIC,
        Some("rtbz") => DTZ_MAGIC,
        _ => return Ok(()),
    };
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| format!("cannot read: {e}"))?;
    if magic == want {
        Ok(())
    } else {
        Err(format!("not a Syzygy table (magic bytes {magic:02x?})"))
    }
}

impl Tablebases {
    /// Opens every table in the directories of a `SyzygyPath` value ([`split_path`]). Files that
    /// are not named like tables are ignored; a directory that cannot be listed and a table
    /// whose size or magic bytes are wrong are left out with a message in
    /// [`Opened::problems`]. The tables themselves are read lazily, at the first probe.
    pub fn open(value: &str) -> Opened {
        let mut tables = Tablebase::<Chess>::new();
        let mut problems = Vec::new();
        let (mut wdl_files, mut dtz_files) = (0, 0);
        for dir in split_path(value) {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) => {
                    problems.push(format!("{}: {e}", dir.display()));
                    continue;
                }
            };
            let mut paths: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            for path in paths {
                let ext = path.extension().and_then(|e| e.to_str());
                if !matches!(ext, Some("rtbw" | "rtbz")) {
                    continue;
                }
                if let Err(e) = check_magic(&path) {
                    problems.push(format!("{}: {e}; left out", path.display()));
                    continue;
                }
                match tables.add_file(&path) {
                    Ok(()) if ext == Some("rtbw") => wdl_files += 1,
                    Ok(()) => dtz_files += 1,
                    // A name that is not a material (e.g. `notes.rtbw`): not a table, ignored.
                    Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {}
                    Err(e) => problems.push(format!("{}: {e}; left out", path.display())),
                }
            }
        }
        let tables = (wdl_files + dtz_files > 0).then(|| Tablebases {
            tables,
            wdl_files,
            dtz_files,
            failed: AtomicBool::new(false),
        });
        Opened { tables, problems }
    }

    /// WDL tables found (Stockfish's "Found N tablebases").
    pub fn wdl_files(&self) -> usize {
        self.wdl_files
    }

    /// DTZ tables found.
    pub fn dtz_files(&self) -> usize {
        self.dtz_files
    }

    /// The largest piece count (kings included) of any table found.
    pub fn max_pieces(&self) -> usize {
        self.tables.max_pieces()
    }

    /// The `info string` text for the tables found.
    pub fn describe(&self) -> String {
        format!(
            "Syzygy: found {} WDL and {} DTZ tables, up to {} pieces",
            self.wdl_files,
            self.dtz_files,
            self.max_pieces()
        )
    }

    /// Turns a probe error into `None`; the first one is kept for [`Tablebases::take_error`].
    fn ok<T>(&self, r: Result<T, SyzygyError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(SyzygyError::Castling | SyzygyError::TooManyPieces) => None,
            Err(_) => {
                self.failed.store(true, Ordering::Relaxed);
                None
            }
        }
    }

    /// Whether a probe failed (missing or corrupt table) since the last call; the caller reports
    /// it once.
    pub fn take_error(&self) -> bool {
        self.failed.swap(false, Ordering::Relaxed)
    }

    /// WDL (50-move rule aware) of `pos` assuming it was reached by a capture or pawn move; `None`
    /// when no table answers.
    pub fn wdl_after_zeroing(&self, pos: &Chess) -> Option<Wdl> {
        self.ok(self.tables.probe_wdl_after_zeroing(pos))
    }

    /// DTZ of `pos` (plies to a capture, pawn move or mate; positive when the side to move wins;
    /// may be rounded by one ply, as the tables store it). `None` when no table answers.
    pub fn dtz(&self, pos: &Chess) -> Option<Dtz> {
        self.ok(self.tables.probe_dtz(pos))
            .map(|d| d.ignore_rounding())
    }
}

/// The tablebase settings of one `go`: the tables, `SyzygyProbeLimit` and `Syzygy50MoveRule`.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The tables opened from `SyzygyPath`.
    pub tables: Arc<Tablebases>,
    /// Probe only positions with at most this many pieces (kings included).
    pub limit: usize,
    /// A win or loss that the 50-move rule turns into a draw counts as a draw.
    pub rule50: bool,
}

/// One root move as the root probe ranks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankedMove {
    /// The move.
    pub mv: Move,
    /// DTZ counted from the root (positive: the mover wins; 1 for a mate, 0 for a draw).
    pub dtz: i32,
    /// Stockfish's `tbRank`: [`MAX_DTZ`] for a win within the 50-move rule, 0 for a draw,
    /// negative for a loss; higher is better.
    pub rank: i32,
}

/// The root probe's answer.
#[derive(Debug, Clone)]
pub struct RootProbe {
    /// Every root move, ranked (in move-generation order).
    pub moves: Vec<RankedMove>,
    /// The best rank.
    pub best_rank: i32,
    /// Probes made (UCI `tbhits`).
    pub hits: u64,
    /// Whether a win or loss counts only without the 50-move rule (`Syzygy50MoveRule`).
    pub rule50: bool,
}

impl RootProbe {
    /// The same probe over the moves in `allowed` only (`go searchmoves`; empty: all). Unchanged
    /// when none of `allowed` is ranked.
    pub fn restrict(mut self, allowed: &[Move]) -> RootProbe {
        if allowed.is_empty() || !self.moves.iter().any(|m| allowed.contains(&m.mv)) {
            return self;
        }
        self.moves.retain(|m| allowed.contains(&m.mv));
        self.best_rank = self.moves.iter().map(|m| m.rank).max().unwrap_or(0);
        self
    }

    /// The displayed score of root move `mv` (as [`RootProbe::cp`]); `None` if not ranked.
    pub fn cp_of(&self, mv: &Move) -> Option<i32> {
        self.moves
            .iter()
            .find(|m| m.mv == *mv)
            .map(|m| rank_cp(m.rank, self.rule50))
    }

    /// The moves that keep the best rank: the best WDL under the 50-move rule and, in a won
    /// position, DTZ progress when the 50-move counter or a repetition since the last zeroing
    /// move asks for it. Never empty when the root has legal moves.
    pub fn keep(&self) -> Vec<Move> {
        self.moves
            .iter()
            .filter(|m| m.rank == self.best_rank)
            .map(|m| m.mv)
            .collect()
    }

    /// The score for the side to move at the root in centipawns, as Stockfish reports a root in
    /// the tables: ±[`TB_WIN_CP`] for a win or loss, 0 for a draw, 1 to 49 cp (−49 to −1) for a
    /// win (loss) that the 50-move rule turns into a draw.
    pub fn cp(&self) -> i32 {
        rank_cp(self.best_rank, self.rule50)
    }

    /// The root's value for the side to move in [0, 1] (win 1, draw or 50-move draw 0.5, loss 0;
    /// without the 50-move rule, any win 1).
    pub fn win_prob(&self) -> f64 {
        let bound = win_bound(self.rule50);
        match self.best_rank {
            r if r >= bound => 1.0,
            r if r > -bound => 0.5,
            _ => 0.0,
        }
    }
}

/// The smallest rank that counts as a win (Stockfish: `MAX_DTZ - 100` with the 50-move rule,
/// i.e. DTZ + 50-move counter ≤ 100; else any win).
fn win_bound(rule50: bool) -> i32 {
    if rule50 {
        MAX_DTZ - 100
    } else {
        1
    }
}

/// Stockfish's displayed score of a tbRank, in centipawns.
fn rank_cp(rank: i32, rule50: bool) -> i32 {
    let bound = win_bound(rule50);
    match rank {
        r if r >= bound => TB_WIN_CP,
        r if r > 0 => (r - (MAX_DTZ - 200)).clamp(3, 100) / 2,
        0 => 0,
        r if r > -bound => -((-(r + (MAX_DTZ - 200))).clamp(3, 100) / 2),
        _ => -TB_WIN_CP,
    }
}

impl Probe {
    /// Whether `pos` is in the tables' reach: no castling rights and at most
    /// `min(limit, largest table)` pieces.
    pub fn covers(&self, pos: &Chess) -> bool {
        let pieces = pos.board().occupied().count();
        pieces <= self.limit.min(self.tables.max_pieces())
            && pos.castles().castling_rights().is_empty()
    }

    /// The outcome of `pos`, reached by a capture or pawn move, for its side to move: 1 win,
    /// 0 draw (with the 50-move rule also a cursed win or blessed loss), −1 loss; `None` when
    /// not covered ([`Probe::covers`]) or no table answers.
    pub fn outcome_after_zeroing(&self, pos: &Chess) -> Option<i8> {
        if !self.covers(pos) {
            return None;
        }
        Some(match self.tables.wdl_after_zeroing(pos)? {
            Wdl::Win => 1,
            Wdl::Loss => -1,
            Wdl::CursedWin if !self.rule50 => 1,
            Wdl::BlessedLoss if !self.rule50 => -1,
            _ => 0,
        })
    }

    /// Whether `self` and `other` give the same answers (same tables, limit and rule).
    pub fn same_as(&self, other: &Probe) -> bool {
        Arc::ptr_eq(&self.tables, &other.tables)
            && self.limit == other.limit
            && self.rule50 == other.rule50
    }

    /// Stockfish's root probe: each legal root move ranked by the DTZ after it, counted from the
    /// root and against the root's 50-move counter. `None` when the root is not covered
    /// ([`Probe::covers`]), has no legal move, or a table is missing or unreadable.
    pub fn root(&self, game: &Game) -> Option<RootProbe> {
        let root = game.position();
        if !self.covers(root) {
            return None;
        }
        let legal = game.legal_moves();
        if legal.is_empty() {
            return None;
        }
        let cnt50 = root.halfmoves() as i32;
        let rep = game.repeated_since_zeroing();
        let draws = game.moves_allowing_repetition(&legal);
        let mut moves = Vec::with_capacity(legal.len());
        let mut hits = 0;
        for (mv, draw) in legal.into_iter().zip(draws) {
            let mut after = root.clone();
            after.play_unchecked(mv);
            let dtz = if after.is_checkmate() {
                1
            } else if after.halfmoves() == 0 {
                hits += 1;
                // A zeroing move: the WDL after it decides (±1 win/loss, ±101 cursed/blessed).
                match -i32::from(self.tables.wdl_after_zeroing(&after)?) {
                    2 => 1,
                    1 => 101,
                    0 => 0,
                    -1 => -101,
                    _ => -1,
                }
            } else if draw || after.halfmoves() >= 100 || after.is_stalemate() {
                0
            } else {
                hits += 1;
                match -self.tables.dtz(&after)?.0 {
                    d if d > 0 => d + 1,
                    d if d < 0 => d - 1,
                    _ => 0,
                }
            };
            let rank = match dtz {
                d if d > 0 && d + cnt50 <= 99 && !rep => MAX_DTZ,
                d if d > 0 => MAX_DTZ - (d + cnt50),
                d if d < 0 && -d * 2 + cnt50 < 100 => -MAX_DTZ,
                d if d < 0 => -MAX_DTZ + (-d + cnt50),
                _ => 0,
            };
            moves.push(RankedMove { mv, dtz, rank });
        }
        let best_rank = moves.iter().map(|m| m.rank).max()?;
        Some(RootProbe {
            moves,
            best_rank,
            hits,
            rule50: self.rule50,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_splitting_and_empty_values() {
        assert!(split_path("").is_empty());
        assert!(split_path("  <empty> ").is_empty());
        let dirs = split_path("/a/b:/c");
        if cfg!(windows) {
            assert_eq!(dirs.len(), 1);
        } else {
            assert_eq!(dirs, vec![PathBuf::from("/a/b"), PathBuf::from("/c")]);
        }
    }

    #[test]
    fn displayed_scores_follow_stockfish() {
        assert_eq!(rank_cp(MAX_DTZ, true), TB_WIN_CP);
        assert_eq!(rank_cp(-MAX_DTZ, true), -TB_WIN_CP);
        assert_eq!(rank_cp(0, true), 0);
        // A cursed win (dtz + cnt50 = 150): a small positive score with the 50-move rule, a win
        // without it.
        let cursed = MAX_DTZ - 150;
        assert!((1..50).contains(&rank_cp(cursed, true)));
        assert_eq!(rank_cp(cursed, false), TB_WIN_CP);
        assert!((-49..0).contains(&rank_cp(-MAX_DTZ + 150, true)));
    }
}
