//! UCI options, each declared once: name, type, default, range and help.
//!
//! The declarations drive the `uci` listing, `setoption` validation and the typed [`Settings`]
//! snapshot the engine reads. Names match case-insensitively (UCI). A bad name or value is an
//! error and the previous value is kept.

use crate::model::Backend;
use crate::model::LoadKey;
use crate::search::mcts::MctsParams;

/// Name of the network-file option; `<embedded>` selects the net built into the binary.
pub const WEIGHTS_FILE: &str = "WeightsFile";
/// Execution provider option.
pub const BACKEND: &str = "Backend";
/// ORT intra-op threads option.
pub const THREADS: &str = "Threads";
/// Number of principal variations option.
pub const MULTI_PV: &str = "MultiPV";
/// Show WDL option.
pub const SHOW_WDL: &str = "UCI_ShowWDL";
/// Chess960 option.
pub const CHESS960: &str = "UCI_Chess960";
/// Ponder option.
pub const PONDER: &str = "Ponder";
/// Move overhead option (ms).
pub const MOVE_OVERHEAD: &str = "Move Overhead";
/// Sampling temperature option (a float, declared as `type string`).
pub const TEMPERATURE: &str = "Temperature";
/// Temperature duration option (full moves).
pub const TEMP_DECAY_MOVES: &str = "TempDecayMoves";
/// Random seed option.
pub const SEED: &str = "Seed";
/// Log file option.
pub const LOG_FILE: &str = "LogFile";

/// Search mode option: `searchless` (the paper's policy) or `mcts`.
pub const SEARCH_MODE: &str = "SearchMode";
/// PUCT c_init option.
pub const CPUCT: &str = "CPuct";
/// PUCT c_base option.
pub const CPUCT_BASE: &str = "CPuctBase";
/// First-play-urgency reduction option.
pub const FPU_REDUCTION: &str = "FpuReduction";
/// Prior softmax temperature option.
pub const POLICY_TEMPERATURE: &str = "PolicyTemperature";
/// Prior top-k option.
pub const POLICY_TOP_K: &str = "PolicyTopK";
/// Prior uniform-mix option.
pub const POLICY_UNIFORM_MIX: &str = "PolicyUniformMix";
/// MCTS minibatch option.
pub const MINIBATCH_SIZE: &str = "MinibatchSize";
/// Bare-king mop-up rule option (MCTS).
pub const MOP_UP: &str = "MopUp";
/// Value of a draw for the engine (MCTS), Lc0's `DrawScore`.
pub const DRAW_SCORE: &str = "DrawScore";
/// Evaluation cache size option (MB).
pub const HASH: &str = "Hash";

/// The value written for the embedded net.
pub const EMBEDDED: &str = crate::model::slot::EMBEDDED;

/// The type, default and range of an option.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionKind {
    /// `type check`.
    Check {
        /// Default.
        default: bool,
    },
    /// `type spin` (integers).
    Spin {
        /// Default.
        default: i64,
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// `type combo`.
    Combo {
        /// Default.
        default: &'static str,
        /// Accepted values.
        vars: &'static [&'static str],
    },
    /// `type string`.
    Text {
        /// Default (`<empty>` is written for "").
        default: &'static str,
    },
    /// A real number in `[min, max]`. UCI `spin` is integer-only, so it is declared as
    /// `type string` (as Lc0 does for its float options) and validated here.
    Float {
        /// Default.
        default: f64,
        /// Smallest accepted value.
        min: f64,
        /// Largest accepted value.
        max: f64,
    },
}

/// One option declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionDecl {
    /// UCI name (case preserved for the listing).
    pub name: &'static str,
    /// Type, default, range.
    pub kind: OptionKind,
    /// One-line help (README, `glimpse --help`).
    pub help: &'static str,
}

/// A current option value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// check.
    Bool(bool),
    /// spin.
    Int(i64),
    /// combo or string.
    Text(String),
    /// float.
    Float(f64),
}

/// The ORT thread default: the available cores, at most 2 (leaves a GUI and an opponent room).
pub fn default_threads(cores: usize) -> i64 {
    cores.clamp(1, 2) as i64
}

/// Every option, in listing order. `cores` bounds `Threads`.
pub fn declarations(cores: usize) -> Vec<OptionDecl> {
    let cores = cores.max(1) as i64;
    vec![
        OptionDecl {
            name: WEIGHTS_FILE,
            kind: OptionKind::Text { default: EMBEDDED },
            help: "ONNX network file; <embedded> is the net built into the binary",
        },
        OptionDecl {
            name: BACKEND,
            kind: OptionKind::Combo { default: "cpu", vars: &["cpu", "cuda", "tensorrt"] },
            help: "ONNX Runtime execution provider; a GPU provider that cannot start falls back to cpu",
        },
        OptionDecl {
            name: THREADS,
            kind: OptionKind::Spin { default: default_threads(cores as usize), min: 1, max: 256 },
            help: "ONNX Runtime intra-op threads used by one forward pass",
        },
        OptionDecl {
            name: MULTI_PV,
            kind: OptionKind::Spin { default: 1, min: 1, max: 256 },
            help: "number of best moves reported with an info line each",
        },
        OptionDecl {
            name: SHOW_WDL,
            kind: OptionKind::Check { default: false },
            help: "add 'wdl W D L' (per mille, draws 0: the net predicts an expected score) to info lines",
        },
        OptionDecl {
            name: CHESS960,
            kind: OptionKind::Check { default: false },
            help: "Chess960: castling is written king-takes-rook (e1h1)",
        },
        OptionDecl {
            name: PONDER,
            kind: OptionKind::Check { default: false },
            help: "the GUI may ponder; bestmove then carries a ponder move (one extra forward pass)",
        },
        OptionDecl {
            name: MOVE_OVERHEAD,
            kind: OptionKind::Spin { default: 30, min: 0, max: 5000 },
            help: "milliseconds kept in reserve per move for GUI and network lag",
        },
        OptionDecl {
            name: TEMPERATURE,
            kind: OptionKind::Float { default: 0.0, min: 0.0, max: 1.0 },
            help: "sample moves from softmax(win probability / T); 0 plays the best move (paper: 0.005)",
        },
        OptionDecl {
            name: TEMP_DECAY_MOVES,
            kind: OptionKind::Spin { default: 0, min: 0, max: 1000 },
            help: "Temperature applies while the full-move number is at most this; 0 means in every move",
        },
        OptionDecl {
            name: SEED,
            kind: OptionKind::Spin { default: 0, min: 0, max: i64::from(i32::MAX) },
            help: "random seed for Temperature; 0 draws a fresh seed, other values repeat at each ucinewgame",
        },
        OptionDecl {
            name: SEARCH_MODE,
            kind: OptionKind::Combo { default: "searchless", vars: &["searchless", "mcts"] },
            help: "searchless: one batched pass, play the best move (the paper); mcts: PUCT tree search on the same net",
        },
        OptionDecl {
            name: HASH,
            kind: OptionKind::Spin { default: 64, min: 1, max: 65536 },
            help: "MCTS: MB for the cache of network results by position",
        },
        OptionDecl {
            name: CPUCT,
            kind: OptionKind::Float { default: 1.25, min: 0.0, max: 100.0 },
            help: "MCTS: c_init of c(s) = c_init + ln((1 + N + c_base)/c_base) (AlphaZero)",
        },
        OptionDecl {
            name: CPUCT_BASE,
            kind: OptionKind::Float { default: 19652.0, min: 1.0, max: 1e9 },
            help: "MCTS: c_base of c(s) (AlphaZero)",
        },
        OptionDecl {
            name: FPU_REDUCTION,
            kind: OptionKind::Float { default: 0.3, min: -1.0, max: 1.0 },
            help: "MCTS: unvisited move's Q = parent Q minus this times sqrt(visited prior mass) (Lc0 FPU)",
        },
        OptionDecl {
            name: POLICY_TEMPERATURE,
            kind: OptionKind::Float { default: 0.1, min: 0.0, max: 10.0 },
            help: "MCTS: priors = softmax(Q / this) over the top PolicyTopK moves, Q in win probability",
        },
        OptionDecl {
            name: POLICY_TOP_K,
            kind: OptionKind::Spin { default: 5, min: 0, max: 256 },
            help: "MCTS: moves that share the softmax prior (0 = all)",
        },
        OptionDecl {
            name: POLICY_UNIFORM_MIX,
            kind: OptionKind::Float { default: 0.05, min: 0.0, max: 1.0 },
            help: "MCTS: share of the prior spread uniformly over all legal moves",
        },
        OptionDecl {
            name: MOP_UP,
            kind: OptionKind::Check { default: true },
            help: "MCTS: in K+Q/R vs K the value comes from a mop-up rule (lone king to the edge, kings together) instead of the net",
        },
        OptionDecl {
            name: DRAW_SCORE,
            kind: OptionKind::Spin { default: 0, min: -100, max: 100 },
            help: "MCTS: a draw's value for the engine, -100 (a loss) .. 100 (a win) as Lc0; negative avoids draws (contempt)",
        },
        OptionDecl {
            name: MINIBATCH_SIZE,
            kind: OptionKind::Spin { default: 16, min: 1, max: 1024 },
            help: "MCTS: leaves gathered (with virtual loss) per network run",
        },
        OptionDecl {
            name: LOG_FILE,
            kind: OptionKind::Text { default: "" },
            help: "append every UCI line in (>>) and out (<<) to this file; empty disables",
        },
    ]
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
    /// `Temperature` (0 = argmax).
    pub temperature: f64,
    /// `TempDecayMoves` (0 = always).
    pub temp_decay_moves: u32,
    /// `Seed` (0 = random).
    pub seed: u64,
    /// `LogFile`; `None` when empty.
    pub log_file: Option<String>,
    /// `SearchMode`: the registered search to use (`searchless`, `mcts`; `crate::search::MODES`).
    pub search_mode: String,
    /// `Hash` in MB (MCTS evaluation cache).
    pub hash_mb: usize,
    /// `MopUp`: the bare-king rule in MCTS.
    pub mop_up: bool,
    /// MCTS parameters (`CPuct`, `CPuctBase`, `FpuReduction`, `PolicyTemperature`,
    /// `PolicyTopK`, `PolicyUniformMix`, `MinibatchSize`, `DrawScore`).
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

/// Declarations plus current values.
#[derive(Debug, Clone)]
pub struct Options {
    decls: Vec<OptionDecl>,
    values: Vec<Value>,
}

/// What a successful `setoption` changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    /// Canonical option name.
    pub name: &'static str,
    /// Whether the value differs from before.
    pub differs: bool,
}

impl Options {
    /// All options at their defaults; `cores` bounds `Threads`.
    pub fn new(cores: usize) -> Options {
        let decls = declarations(cores);
        let values = decls.iter().map(|d| default_value(&d.kind)).collect();
        Options { decls, values }
    }

    /// The declarations, in listing order.
    pub fn declarations(&self) -> &[OptionDecl] {
        &self.decls
    }

    /// `option name … type …` lines for the `uci` answer.
    pub fn uci_lines(&self) -> Vec<String> {
        self.decls.iter().map(uci_line).collect()
    }

    /// The declaration of `name` (case-insensitive).
    pub fn find(&self, name: &str) -> Option<&OptionDecl> {
        self.index(name).map(|i| &self.decls[i])
    }

    fn index(&self, name: &str) -> Option<usize> {
        let name = name.trim();
        self.decls
            .iter()
            .position(|d| d.name.eq_ignore_ascii_case(name))
    }

    /// Sets an option from `setoption` text.
    ///
    /// # Errors
    /// Unknown name, missing value, or a value of the wrong type or out of range; the message
    /// names the option and its accepted values. The old value is kept.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<Changed, String> {
        let Some(i) = self.index(name) else {
            return Err(format!(
                "unknown option '{}' (the 'uci' command lists them)",
                name.trim()
            ));
        };
        let decl = &self.decls[i];
        let new = parse_value(decl, value)?;
        let differs = self.values[i] != new;
        self.values[i] = new;
        Ok(Changed {
            name: decl.name,
            differs,
        })
    }

    /// The current value of a declared option.
    ///
    /// # Panics
    /// Only on a name that is not declared (a programming error, never user input).
    pub fn get(&self, name: &str) -> &Value {
        let i = self
            .index(name)
            .unwrap_or_else(|| panic!("option {name} is declared"));
        &self.values[i]
    }

    fn int(&self, name: &str) -> i64 {
        match self.get(name) {
            Value::Int(v) => *v,
            other => panic!("option {name} is a spin, found {other:?}"),
        }
    }

    fn bool(&self, name: &str) -> bool {
        match self.get(name) {
            Value::Bool(v) => *v,
            other => panic!("option {name} is a check, found {other:?}"),
        }
    }

    fn text(&self, name: &str) -> &str {
        match self.get(name) {
            Value::Text(v) => v,
            other => panic!("option {name} is a string, found {other:?}"),
        }
    }

    fn float(&self, name: &str) -> f64 {
        match self.get(name) {
            Value::Float(v) => *v,
            other => panic!("option {name} is a float, found {other:?}"),
        }
    }

    /// The typed snapshot.
    pub fn settings(&self) -> Settings {
        let weights = self.text(WEIGHTS_FILE).trim();
        let weights_file = if is_embedded_name(weights) {
            None
        } else {
            Some(weights.to_string())
        };
        let backend = match self.text(BACKEND) {
            "cuda" => Backend::Cuda,
            "tensorrt" => Backend::TensorRt,
            _ => Backend::Cpu,
        };
        let log = self.text(LOG_FILE).trim();
        Settings {
            weights_file,
            backend,
            threads: self.int(THREADS).max(1) as usize,
            multipv: self.int(MULTI_PV).clamp(1, 256) as usize,
            show_wdl: self.bool(SHOW_WDL),
            chess960: self.bool(CHESS960),
            ponder: self.bool(PONDER),
            move_overhead_ms: self.int(MOVE_OVERHEAD).max(0) as u64,
            temperature: self.float(TEMPERATURE),
            temp_decay_moves: self.int(TEMP_DECAY_MOVES).max(0) as u32,
            seed: self.int(SEED).max(0) as u64,
            log_file: if log.is_empty() || log == "<empty>" {
                None
            } else {
                Some(log.to_string())
            },
            search_mode: self.text(SEARCH_MODE).to_string(),
            hash_mb: self.int(HASH).max(1) as usize,
            mop_up: self.bool(MOP_UP),
            mcts_params: MctsParams {
                c_puct: self.float(CPUCT) as f32,
                c_puct_base: self.float(CPUCT_BASE) as f32,
                fpu_reduction: self.float(FPU_REDUCTION) as f32,
                policy_temperature: self.float(POLICY_TEMPERATURE) as f32,
                policy_top_k: self.int(POLICY_TOP_K).max(0) as usize,
                policy_uniform_mix: self.float(POLICY_UNIFORM_MIX) as f32,
                minibatch: self.int(MINIBATCH_SIZE).max(1) as usize,
                draw_score: self.int(DRAW_SCORE).clamp(-100, 100) as f32 / 200.0,
            },
        }
    }
}

/// Whether a `WeightsFile` value means the embedded net (`<embedded>`, `<default>`, `<empty>`, "").
pub fn is_embedded_name(v: &str) -> bool {
    let v = v.trim();
    v.is_empty()
        || v.eq_ignore_ascii_case(EMBEDDED)
        || v.eq_ignore_ascii_case("<default>")
        || v == "<empty>"
}

fn default_value(kind: &OptionKind) -> Value {
    match kind {
        OptionKind::Check { default } => Value::Bool(*default),
        OptionKind::Spin { default, .. } => Value::Int(*default),
        OptionKind::Combo { default, .. } | OptionKind::Text { default } => {
            Value::Text(default.to_string())
        }
        OptionKind::Float { default, .. } => Value::Float(*default),
    }
}

fn uci_line(d: &OptionDecl) -> String {
    let n = d.name;
    match &d.kind {
        OptionKind::Check { default } => format!("option name {n} type check default {default}"),
        OptionKind::Spin { default, min, max } => {
            format!("option name {n} type spin default {default} min {min} max {max}")
        }
        OptionKind::Combo { default, vars } => {
            let vars: String = vars.iter().map(|v| format!(" var {v}")).collect();
            format!("option name {n} type combo default {default}{vars}")
        }
        OptionKind::Text { default } => {
            let shown = if default.is_empty() {
                "<empty>"
            } else {
                default
            };
            format!("option name {n} type string default {shown}")
        }
        OptionKind::Float { default, .. } => {
            format!("option name {n} type string default {default}")
        }
    }
}

fn parse_value(decl: &OptionDecl, value: Option<&str>) -> Result<Value, String> {
    let name = decl.name;
    let raw = value.map(str::trim).unwrap_or("");
    match &decl.kind {
        OptionKind::Check { .. } => match raw.to_ascii_lowercase().as_str() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!(
                "option {name}: value must be true or false, got '{raw}'"
            )),
        },
        OptionKind::Spin { min, max, .. } => {
            let v: i64 = raw.parse().map_err(|_| {
                format!("option {name}: value must be an integer in {min}..={max}, got '{raw}'")
            })?;
            if v < *min || v > *max {
                return Err(format!("option {name}: {v} is out of range {min}..={max}"));
            }
            Ok(Value::Int(v))
        }
        OptionKind::Combo { vars, .. } => vars
            .iter()
            .find(|v| v.eq_ignore_ascii_case(raw))
            .map(|v| Value::Text(v.to_string()))
            .ok_or_else(|| {
                format!(
                    "option {name}: value must be one of {}, got '{raw}'",
                    vars.join(", ")
                )
            }),
        OptionKind::Text { .. } => {
            if raw.chars().any(char::is_control) {
                return Err(format!("option {name}: control characters are not allowed"));
            }
            Ok(Value::Text(raw.to_string()))
        }
        OptionKind::Float { min, max, .. } => {
            let v: f64 = raw.parse().map_err(|_| {
                format!("option {name}: value must be a number in {min}..={max}, got '{raw}'")
            })?;
            if !v.is_finite() || v < *min || v > *max {
                return Err(format!(
                    "option {name}: {raw} is out of range {min}..={max}"
                ));
            }
            Ok(Value::Float(v))
        }
    }
}
