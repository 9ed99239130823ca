//! UCI options, each declared once ([`table`]): name, type, default, range, where it is applied
//! ([`Applies`]) and help.
//!
//! The declarations drive the `uci` listing, `setoption` validation and the typed [`Settings`]
//! snapshot the engine reads. Each option has a typed [`Key`]; reading through a key cannot panic
//! (a key whose type does not match its declaration reads as the type's default, and a test
//! checks that none does). Names match case-insensitively (UCI). A bad name or value is an
//! [`OptionError`] and the previous value is kept.

mod settings;
mod table;

pub use settings::Settings;
pub use table::{declarations, default_threads};

use std::marker::PhantomData;
use thiserror::Error;

/// A typed handle on one declared option: its UCI name and the Rust type of its value
/// (`bool` for check, `i64` for spin, `f64` for a real number, `String` for combo and string).
#[derive(Debug)]
pub struct Key<T> {
    /// UCI name as declared.
    pub name: &'static str,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for Key<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Key<T> {}

impl<T> Key<T> {
    /// The key of the option declared as `name`.
    pub const fn new(name: &'static str) -> Key<T> {
        Key {
            name,
            _type: PhantomData,
        }
    }
}

/// A Rust type an option value can be read as.
pub trait OptionType: Sized {
    /// The value if `v` has this type.
    fn from_value(v: &Value) -> Option<Self>;
    /// What a mismatched read gives (never happens for the declared keys; tested).
    fn fallback() -> Self;
}

impl OptionType for bool {
    fn from_value(v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn fallback() -> bool {
        false
    }
}

impl OptionType for i64 {
    fn from_value(v: &Value) -> Option<i64> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    fn fallback() -> i64 {
        0
    }
}

impl OptionType for f64 {
    fn from_value(v: &Value) -> Option<f64> {
        match v {
            Value::Float(x) => Some(*x),
            _ => None,
        }
    }
    fn fallback() -> f64 {
        0.0
    }
}

impl OptionType for String {
    fn from_value(v: &Value) -> Option<String> {
        match v {
            Value::Text(t) => Some(t.clone()),
            _ => None,
        }
    }
    fn fallback() -> String {
        String::new()
    }
}

/// A rejected `setoption`; the option keeps its previous value. The texts are the engine's
/// `info string error: …` messages.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum OptionError {
    /// No option has this name.
    #[error("unknown option '{0}' (the 'uci' command lists them)")]
    Unknown(String),
    /// A check option got something other than `true`/`false`.
    #[error("option {name}: value must be true or false, got '{raw}'")]
    NotBool {
        /// Option.
        name: &'static str,
        /// Value given.
        raw: String,
    },
    /// A spin option got a non-integer.
    #[error("option {name}: value must be an integer in {min}..={max}, got '{raw}'")]
    NotInteger {
        /// Option.
        name: &'static str,
        /// Range.
        min: i64,
        /// Range.
        max: i64,
        /// Value given.
        raw: String,
    },
    /// A spin option got an integer outside its range.
    #[error("option {name}: {value} is out of range {min}..={max}")]
    IntOutOfRange {
        /// Option.
        name: &'static str,
        /// Value given.
        value: i64,
        /// Range.
        min: i64,
        /// Range.
        max: i64,
    },
    /// A combo option got a value not in its list.
    #[error("option {name}: value must be one of {vars}, got '{raw}'")]
    NotOneOf {
        /// Option.
        name: &'static str,
        /// Accepted values, comma-separated.
        vars: String,
        /// Value given.
        raw: String,
    },
    /// A string option got control characters.
    #[error("option {name}: control characters are not allowed")]
    ControlCharacters {
        /// Option.
        name: &'static str,
    },
    /// A real-valued option got something that is not a number.
    #[error("option {name}: value must be a number in {min}..={max}, got '{raw}'")]
    NotNumber {
        /// Option.
        name: &'static str,
        /// Range.
        min: f64,
        /// Range.
        max: f64,
        /// Value given.
        raw: String,
    },
    /// A real-valued option got a number outside its range (or not finite).
    #[error("option {name}: {raw} is out of range {min}..={max}")]
    FloatOutOfRange {
        /// Option.
        name: &'static str,
        /// Value given, as written.
        raw: String,
        /// Range.
        min: f64,
        /// Range.
        max: f64,
    },
}

/// Where a new value takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// The network is loaded again at the next `isready`, `go` or `eval`.
    Network,
    /// The next `go` reads it.
    Search,
    /// The next `go` in `SearchMode mcts` reads it.
    Mcts,
    /// The current position is read again at once (castling notation).
    Position,
    /// The random sequence restarts at once.
    Random,
    /// The tables are opened at once.
    Tablebases,
    /// The output writer applies it at once (log file).
    Output,
}

/// Name of the network-file option; `<embedded>` selects the net built into the binary.
pub const WEIGHTS_FILE: Key<String> = Key::new("WeightsFile");
/// Execution provider option.
pub const BACKEND: Key<String> = Key::new("Backend");
/// ORT intra-op threads option.
pub const THREADS: Key<i64> = Key::new("Threads");
/// Number of principal variations option.
pub const MULTI_PV: Key<i64> = Key::new("MultiPV");
/// Show WDL option.
pub const SHOW_WDL: Key<bool> = Key::new("UCI_ShowWDL");
/// Chess960 option.
pub const CHESS960: Key<bool> = Key::new("UCI_Chess960");
/// Ponder option.
pub const PONDER: Key<bool> = Key::new("Ponder");
/// Move overhead option (ms).
pub const MOVE_OVERHEAD: Key<i64> = Key::new("Move Overhead");
/// Slow Mover option (percent of the clock's optimum time a move).
pub const SLOW_MOVER: Key<i64> = Key::new("Slow Mover");
/// Sampling temperature option (a float, declared as `type string`).
pub const TEMPERATURE: Key<f64> = Key::new("Temperature");
/// Temperature duration option (full moves).
pub const TEMP_DECAY_MOVES: Key<i64> = Key::new("TempDecayMoves");
/// Random seed option.
pub const SEED: Key<i64> = Key::new("Seed");
/// Log file option.
pub const LOG_FILE: Key<String> = Key::new("LogFile");

/// Search mode option: `searchless` (the paper's policy) or `mcts`.
pub const SEARCH_MODE: Key<String> = Key::new("SearchMode");
/// PUCT c_init option.
pub const CPUCT: Key<f64> = Key::new("CPuct");
/// PUCT c_base option.
pub const CPUCT_BASE: Key<f64> = Key::new("CPuctBase");
/// First-play-urgency reduction option.
pub const FPU_REDUCTION: Key<f64> = Key::new("FpuReduction");
/// Visits the network's own Q(s, a) counts for in PUCT option.
pub const Q_INIT_VISITS: Key<f64> = Key::new("QInitVisits");
/// Share of the WDL head in a new MCTS leaf's value option.
pub const LEAF_WDL_WEIGHT: Key<f64> = Key::new("LeafWdlWeight");
/// Prior softmax temperature option.
pub const POLICY_TEMPERATURE: Key<f64> = Key::new("PolicyTemperature");
/// Prior top-k option.
pub const POLICY_TOP_K: Key<i64> = Key::new("PolicyTopK");
/// Prior uniform-mix option.
pub const POLICY_UNIFORM_MIX: Key<f64> = Key::new("PolicyUniformMix");
/// MCTS priors from the net's policy head option.
pub const POLICY_HEAD: Key<bool> = Key::new("PolicyHead");
/// Softmax temperature of the policy head's priors option (Lc0's name).
pub const POLICY_SOFTMAX_TEMP: Key<f64> = Key::new("PolicySoftmaxTemp");
/// Searchless move choice option: `q` (argmax Q, the paper), `policy` (the policy head) or `blend`.
pub const MOVE_CHOICE: Key<String> = Key::new("MoveChoice");
/// Searchless: percent of each move's Q taken from the value of the position after it.
pub const SUCCESSOR_VALUE: Key<i64> = Key::new("SuccessorValue");
/// MCTS minibatch option (0: by backend).
pub const MINIBATCH_SIZE: Key<i64> = Key::new("MinibatchSize");
/// MCTS collision limit per gathering option (Lc0's name).
pub const MAX_COLLISION_EVENTS: Key<i64> = Key::new("MaxCollisionEvents");
/// Bare-king mop-up rule option (MCTS).
pub const MOP_UP: Key<bool> = Key::new("MopUp");
/// Value of a draw for the engine (MCTS), Lc0's `DrawScore`.
pub const DRAW_SCORE: Key<i64> = Key::new("DrawScore");
/// Evaluation cache size option (MB).
pub const HASH: Key<i64> = Key::new("Hash");
/// Syzygy tablebase directories (Stockfish's name; `:`-separated on Unix, `;` on Windows).
pub const SYZYGY_PATH: Key<String> = Key::new("SyzygyPath");
/// Largest piece count probed in the tablebases (Stockfish's name).
pub const SYZYGY_PROBE_LIMIT: Key<i64> = Key::new("SyzygyProbeLimit");
/// Whether tablebase wins and losses obey the 50-move rule (Stockfish's name).
pub const SYZYGY_50_MOVE_RULE: Key<bool> = Key::new("Syzygy50MoveRule");

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
    /// Where a new value takes effect.
    pub applies: Applies,
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

/// Declarations plus current values.
#[derive(Debug, Clone)]
pub struct Options {
    decls: Vec<OptionDecl>,
    values: Vec<Value>,
    /// The machine's available parallelism: `Threads` above it is used as this many.
    cores: usize,
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
        Options {
            decls,
            values,
            cores: cores.max(1),
        }
    }

    /// The cores `Threads` is capped at (the machine's available parallelism).
    pub fn cores(&self) -> usize {
        self.cores
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
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<Changed, OptionError> {
        let Some(i) = self.index(name) else {
            return Err(OptionError::Unknown(name.trim().to_string()));
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

    /// The current value of `name` (case-insensitive), if declared.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.index(name).map(|i| &self.values[i])
    }

    /// The current value behind a typed key. Never panics: an undeclared key or a type that does
    /// not match the declaration reads as [`OptionType::fallback`] (tested not to happen).
    pub fn value<T: OptionType>(&self, key: Key<T>) -> T {
        self.get(key.name)
            .and_then(T::from_value)
            .unwrap_or_else(T::fallback)
    }
}

/// How the `uci` listing writes an empty string default; a GUI may send it back as the value.
pub const EMPTY: &str = "<empty>";

/// Whether a string option's value means "none": "" or [`EMPTY`] (surrounding blanks ignored).
pub fn is_empty_value(v: &str) -> bool {
    let v = v.trim();
    v.is_empty() || v == EMPTY
}

/// Whether a `WeightsFile` value means the embedded net (`<embedded>`, `<default>`, `<empty>`, "").
pub fn is_embedded_name(v: &str) -> bool {
    let v = v.trim();
    is_empty_value(v) || v.eq_ignore_ascii_case(EMBEDDED) || v.eq_ignore_ascii_case("<default>")
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
            let shown = if default.is_empty() { EMPTY } else { default };
            format!("option name {n} type string default {shown}")
        }
        OptionKind::Float { default, .. } => {
            format!("option name {n} type string default {default}")
        }
    }
}

fn parse_value(decl: &OptionDecl, value: Option<&str>) -> Result<Value, OptionError> {
    let name = decl.name;
    let raw = value.map(str::trim).unwrap_or("");
    match &decl.kind {
        OptionKind::Check { .. } => match raw.to_ascii_lowercase().as_str() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(OptionError::NotBool {
                name,
                raw: raw.to_string(),
            }),
        },
        OptionKind::Spin { min, max, .. } => {
            let v: i64 = raw.parse().map_err(|_| OptionError::NotInteger {
                name,
                min: *min,
                max: *max,
                raw: raw.to_string(),
            })?;
            if v < *min || v > *max {
                return Err(OptionError::IntOutOfRange {
                    name,
                    value: v,
                    min: *min,
                    max: *max,
                });
            }
            Ok(Value::Int(v))
        }
        OptionKind::Combo { vars, .. } => vars
            .iter()
            .find(|v| v.eq_ignore_ascii_case(raw))
            .map(|v| Value::Text(v.to_string()))
            .ok_or_else(|| OptionError::NotOneOf {
                name,
                vars: vars.join(", "),
                raw: raw.to_string(),
            }),
        OptionKind::Text { .. } => {
            if raw.chars().any(char::is_control) {
                return Err(OptionError::ControlCharacters { name });
            }
            Ok(Value::Text(raw.to_string()))
        }
        OptionKind::Float { min, max, .. } => {
            let v: f64 = raw.parse().map_err(|_| OptionError::NotNumber {
                name,
                min: *min,
                max: *max,
                raw: raw.to_string(),
            })?;
            if !v.is_finite() || v < *min || v > *max {
                return Err(OptionError::FloatOutOfRange {
                    name,
                    raw: raw.to_string(),
                    min: *min,
                    max: *max,
                });
            }
            Ok(Value::Float(v))
        }
    }
}

#[cfg(test)]
mod tests;
