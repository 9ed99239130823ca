//! The typed snapshot of the options ([`Settings`]) that the engine hands to a search, and their
//! defaults. The UCI layer (`crate::uci::options`) declares the options and builds the snapshot;
//! the searches read only this type.

use crate::model::{Backend, LoadKey};
use crate::search::analysis::{self, MoveChoice};
use crate::search::mcts::{self, MctsParams};
use crate::search::SearchMode;

/// The ONNX Runtime thread default: the available cores, at most 2 (leaves a GUI and an opponent
/// room).
pub fn default_threads(cores: usize) -> i64 {
    cores.clamp(1, 2) as i64
}

/// The typed snapshot of all options that the engine reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `WeightsFile`; `None` for the embedded net.
    pub weights_file: Option<String>,
    /// `Backend`.
    pub backend: Backend,
    /// `Threads` (≥ 1).
    pub threads: usize,
    /// `MultiPV` (1..=256).
    pub multipv: usize,
    /// `UCI_ShowWDL`.
    pub show_wdl: bool,
    /// `UCI_Chess960`.
    pub chess960: bool,
    /// `Ponder`.
    pub ponder: bool,
    /// `Move Overhead` in ms.
    pub move_overhead_ms: u64,
    /// `Slow Mover`: percent of the clock's optimum time a move ([`crate::time::scaled_budget`]).
    pub slow_mover: u64,
    /// `Temperature` (0 = argmax).
    pub temperature: f64,
    /// `TempDecayMoves` (0 = always).
    pub temp_decay_moves: u32,
    /// `Seed` (0 = random).
    pub seed: u64,
    /// `LogFile`; `None` when empty.
    pub log_file: Option<String>,
    /// `SearchMode`: the registered search to use.
    pub search_mode: SearchMode,
    /// `Hash` in MB (MCTS evaluation cache).
    pub hash_mb: usize,
    /// `MopUp`: the bare-king rule in MCTS.
    pub mop_up: bool,
    /// `MoveChoice`: what the searchless policy maximises.
    pub move_choice: MoveChoice,
    /// `SuccessorValue` / 100: the weight of each move's successor value in its Q (searchless).
    pub successor_weight: f32,
    /// `SyzygyProbeLimit`: most pieces of a probed position (0: no probing).
    pub syzygy_probe_limit: usize,
    /// `Syzygy50MoveRule`.
    pub syzygy_50_move_rule: bool,
    /// MCTS parameters (`CPuct`, `CPuctBase`, `FpuReduction`, `PolicyTemperature`,
    /// `PolicyTopK`, `PolicyUniformMix`, `PolicyHead`, `PolicySoftmaxTemp`, `MinibatchSize`,
    /// `DrawScore`).
    pub mcts_params: MctsParams,
}

impl Settings {
    /// Every option at its default, with `Threads` bounded by `cores` (what `Options::new(cores)`
    /// gives; a test in `uci::options` keeps the two equal).
    pub fn defaults(cores: usize) -> Settings {
        Settings {
            weights_file: None,
            backend: Backend::default(),
            threads: default_threads(cores) as usize,
            multipv: 1,
            show_wdl: false,
            chess960: false,
            ponder: false,
            move_overhead_ms: 30,
            slow_mover: crate::time::DEFAULT_SLOW_MOVER,
            temperature: 0.0,
            temp_decay_moves: 0,
            seed: 0,
            log_file: None,
            search_mode: SearchMode::default(),
            hash_mb: mcts::defaults::HASH_MB as usize,
            mop_up: mcts::defaults::MOP_UP,
            move_choice: MoveChoice::default(),
            successor_weight: analysis::successor_weight(analysis::SUCCESSOR_VALUE_DEFAULT),
            syzygy_probe_limit: 7,
            syzygy_50_move_rule: true,
            mcts_params: MctsParams::default(),
        }
    }

    /// Which network these settings select.
    pub fn load_key(&self) -> LoadKey {
        LoadKey {
            weights: self.weights_file.clone(),
            backend: self.backend,
            threads: self.threads,
        }
    }
}

impl Default for Settings {
    /// [`Settings::defaults`] on one core.
    fn default() -> Settings {
        Settings::defaults(1)
    }
}
