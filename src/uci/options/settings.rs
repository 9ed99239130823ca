//! The typed snapshot of the options that the engine and the searches read.

use super::*;
use crate::model::{Backend, LoadKey};
use crate::search::analysis::MoveChoice;
use crate::search::mcts::MctsParams;
use crate::search::SearchMode;

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
    /// Which network these settings select.
    pub fn load_key(&self) -> LoadKey {
        LoadKey {
            weights: self.weights_file.clone(),
            backend: self.backend,
            threads: self.threads,
        }
    }
}

impl Options {
    /// The typed snapshot.
    pub fn settings(&self) -> Settings {
        let weights = self.value(WEIGHTS_FILE);
        let weights = weights.trim();
        let weights_file = if is_embedded_name(weights) {
            None
        } else {
            Some(weights.to_string())
        };
        let backend = Backend::parse(&self.value(BACKEND)).unwrap_or_default();
        let log = self.value(LOG_FILE);
        Settings {
            weights_file,
            backend,
            // More ONNX Runtime threads than cores only contend (256 on 2 cores hung the engine).
            threads: (self.value(THREADS).max(1) as usize).min(self.cores()),
            multipv: self.value(MULTI_PV).clamp(1, 256) as usize,
            show_wdl: self.value(SHOW_WDL),
            chess960: self.value(CHESS960),
            ponder: self.value(PONDER),
            move_overhead_ms: self.value(MOVE_OVERHEAD).max(0) as u64,
            temperature: self.value(TEMPERATURE),
            temp_decay_moves: self.value(TEMP_DECAY_MOVES).max(0) as u32,
            seed: self.value(SEED).max(0) as u64,
            log_file: (!is_empty_value(&log)).then(|| log.trim().to_string()),
            search_mode: SearchMode::parse(&self.value(SEARCH_MODE)).unwrap_or_default(),
            hash_mb: self.value(HASH).max(1) as usize,
            mop_up: self.value(MOP_UP),
            move_choice: MoveChoice::parse(&self.value(MOVE_CHOICE)).unwrap_or_default(),
            successor_weight: crate::search::analysis::successor_weight(
                self.value(SUCCESSOR_VALUE),
            ),
            syzygy_probe_limit: self.value(SYZYGY_PROBE_LIMIT).clamp(0, 7) as usize,
            syzygy_50_move_rule: self.value(SYZYGY_50_MOVE_RULE),
            mcts_params: MctsParams {
                c_puct: self.value(CPUCT) as f32,
                c_puct_base: self.value(CPUCT_BASE) as f32,
                fpu_reduction: self.value(FPU_REDUCTION) as f32,
                q_init_visits: self.value(Q_INIT_VISITS) as f32,
                policy_temperature: self.value(POLICY_TEMPERATURE) as f32,
                policy_top_k: self.value(POLICY_TOP_K).max(0) as usize,
                policy_uniform_mix: self.value(POLICY_UNIFORM_MIX) as f32,
                policy_head: self.value(POLICY_HEAD),
                policy_softmax_temp: self.value(POLICY_SOFTMAX_TEMP) as f32,
                minibatch: self.value(MINIBATCH_SIZE).max(1) as usize,
                draw_score: self.value(DRAW_SCORE).clamp(-100, 100) as f32 / 200.0,
            },
        }
    }
}
