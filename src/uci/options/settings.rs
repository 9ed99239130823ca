//! `Options` → the typed [`Settings`] snapshot (declared in `crate::settings`, with its
//! defaults, on the engine side of the protocol boundary).

use super::*;
use crate::model::Backend;
use crate::search::analysis::MoveChoice;
use crate::search::mcts::MctsParams;
use crate::search::SearchMode;
pub use crate::settings::Settings;

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
            slow_mover: self.value(SLOW_MOVER).clamp(10, 1000) as u64,
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
                leaf_wdl_weight: self.value(LEAF_WDL_WEIGHT) as f32,
                policy_temperature: self.value(POLICY_TEMPERATURE) as f32,
                policy_top_k: self.value(POLICY_TOP_K).max(0) as usize,
                policy_uniform_mix: self.value(POLICY_UNIFORM_MIX) as f32,
                policy_head: self.value(POLICY_HEAD),
                policy_softmax_temp: self.value(POLICY_SOFTMAX_TEMP) as f32,
                minibatch: self.value(MINIBATCH_SIZE).max(0) as usize,
                max_collision_events: self.value(MAX_COLLISION_EVENTS).clamp(1, 65_536) as u32,
                // Set by the backend the net runs on (`MctsParams::for_backend`).
                pipelined: false,
                draw_score: self.value(DRAW_SCORE).clamp(-100, 100) as f32 / 200.0,
            },
        }
    }
}
