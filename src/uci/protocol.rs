//! UCI input: one line of text → a typed [`Command`].
//!
//! Parsing only; nothing here touches the game or the model. Follows the UCI protocol (April 2006
//! text by Stefan Meyer-Kahlen): tokens are separated by any whitespace, unknown tokens before a
//! known command are skipped (and reported), and `setoption` names and values may contain spaces.
//! Errors carry a message meant for an `info string` line.

/// Where a `position` command starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartPosition {
    /// `position startpos`.
    StartPos,
    /// `position fen <fields…>`: the FEN fields joined by single spaces (not validated here).
    Fen(String),
}

pub use crate::search::limits::GoParams;

/// One parsed input line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `uci`: identify and list options, then `uciok`.
    Uci,
    /// `debug on|off`.
    Debug(bool),
    /// `isready`: answer `readyok` (after loading the model if needed).
    IsReady,
    /// `setoption name <id> [value <x>]`; `name` as typed (matched case-insensitively later).
    SetOption {
        /// Option name, may contain spaces.
        name: String,
        /// Value text, `None` for buttons or a missing `value` part.
        value: Option<String>,
    },
    /// `register …` (Glimpse needs no registration; the rest of the line is kept).
    Register(String),
    /// `ucinewgame`.
    UciNewGame,
    /// `position startpos|fen … [moves …]`.
    Position {
        /// Start position.
        start: StartPosition,
        /// Moves in UCI notation, applied in order.
        moves: Vec<String>,
    },
    /// `go …`.
    Go(GoParams),
    /// `stop`.
    Stop,
    /// `ponderhit`.
    PonderHit,
    /// `quit`.
    Quit,
    /// `d`: show the board, the FEN and the model (non-standard, as in Stockfish).
    Display,
    /// `eval`: a table of every legal move with its scores (non-standard).
    Eval,
}

/// A line that could not be turned into a command; the message suits an `info string`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// A parsed command plus non-fatal notes (skipped tokens, ignored `go` values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The command.
    pub command: Command,
    /// Things that were ignored, one message each.
    pub warnings: Vec<String>,
}

const COMMANDS: &[&str] = &[
    "uci",
    "debug",
    "isready",
    "setoption",
    "register",
    "ucinewgame",
    "position",
    "go",
    "stop",
    "ponderhit",
    "quit",
    "d",
    "eval",
];

/// Parses one input line.
///
/// Returns `Ok(None)` for a blank line. Leading unknown tokens are skipped with a warning (UCI:
/// "ignore it and try to parse the rest of the string").
///
/// # Errors
/// No known command on the line, or a command whose arguments are unusable (`position` without a
/// start, `setoption` without `name`, `debug` without `on|off`). `go` never fails: bad values are
/// dropped with a warning so that the GUI still gets a `bestmove`.
pub fn parse(line: &str) -> Result<Option<Parsed>, ParseError> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    if tokens.is_empty() {
        return Ok(None);
    }
    let Some(start) = tokens.iter().position(|t| COMMANDS.contains(t)) else {
        return Err(ParseError(format!(
            "unknown command '{}' (type 'uci' for the protocol)",
            clip(line.trim())
        )));
    };
    let mut warnings = Vec::new();
    if start > 0 {
        warnings.push(format!(
            "ignored unknown token(s) '{}'",
            clip(&tokens[..start].join(" "))
        ));
    }
    let args = &tokens[start + 1..];
    let command = match tokens[start] {
        "uci" => Command::Uci,
        "isready" => Command::IsReady,
        "ucinewgame" => Command::UciNewGame,
        "stop" => Command::Stop,
        "ponderhit" => Command::PonderHit,
        "quit" => Command::Quit,
        "d" => Command::Display,
        "eval" => Command::Eval,
        "debug" => match args.first() {
            Some(&"on") => Command::Debug(true),
            Some(&"off") => Command::Debug(false),
            _ => {
                return Err(ParseError(
                    "debug: expected 'debug on' or 'debug off'".into(),
                ))
            }
        },
        "register" => Command::Register(args.join(" ")),
        "setoption" => parse_setoption(args)?,
        "position" => parse_position(args)?,
        "go" => Command::Go(parse_go(args, &mut warnings)),
        _ => unreachable!("every entry of COMMANDS is handled"),
    };
    if !matches!(
        command,
        Command::Register(_)
            | Command::SetOption { .. }
            | Command::Position { .. }
            | Command::Go(_)
            | Command::Debug(_)
    ) && !args.is_empty()
    {
        warnings.push(format!(
            "ignored extra token(s) '{}'",
            clip(&args.join(" "))
        ));
    }
    Ok(Some(Parsed { command, warnings }))
}

/// Shortens echoed input so a garbage line cannot flood the output.
fn clip(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

fn parse_setoption(args: &[&str]) -> Result<Command, ParseError> {
    if args.first() != Some(&"name") {
        return Err(ParseError(
            "setoption: expected 'setoption name <id> [value <x>]'".into(),
        ));
    }
    let rest = &args[1..];
    let value_at = rest.iter().position(|t| *t == "value");
    let (name_tokens, value) = match value_at {
        Some(i) => (&rest[..i], Some(rest[i + 1..].join(" "))),
        None => (rest, None),
    };
    if name_tokens.is_empty() {
        return Err(ParseError("setoption: missing option name".into()));
    }
    Ok(Command::SetOption {
        name: name_tokens.join(" "),
        value,
    })
}

fn parse_position(args: &[&str]) -> Result<Command, ParseError> {
    let moves_at = args.iter().position(|t| *t == "moves");
    let (head, moves) = match moves_at {
        Some(i) => (
            &args[..i],
            args[i + 1..].iter().map(|s| s.to_string()).collect(),
        ),
        None => (args, Vec::new()),
    };
    let start = match head.first() {
        Some(&"startpos") => {
            if head.len() > 1 {
                return Err(ParseError(format!(
                    "position: unexpected '{}' after startpos (expected 'moves')",
                    clip(&head[1..].join(" "))
                )));
            }
            StartPosition::StartPos
        }
        Some(&"fen") => {
            if head.len() < 2 {
                return Err(ParseError("position fen: missing FEN".into()));
            }
            StartPosition::Fen(head[1..].join(" "))
        }
        _ => {
            return Err(ParseError(
                "position: expected 'position startpos|fen <FEN> [moves <m1> …]'".into(),
            ))
        }
    };
    Ok(Command::Position { start, moves })
}

fn parse_go(args: &[&str], warnings: &mut Vec<String>) -> GoParams {
    let mut go = GoParams::default();
    let mut i = 0;
    while i < args.len() {
        let key = args[i];
        i += 1;
        match key {
            "infinite" => go.infinite = true,
            "ponder" => go.ponder = true,
            "searchmoves" => {
                while i < args.len() && !is_go_keyword(args[i]) {
                    go.searchmoves.push(args[i].to_string());
                    i += 1;
                }
            }
            "wtime" | "btime" | "winc" | "binc" | "movestogo" | "depth" | "nodes" | "mate"
            | "movetime" => {
                let raw = args.get(i).filter(|t| !is_go_keyword(t));
                if raw.is_some() {
                    i += 1;
                }
                let err = match raw {
                    None => format!("'{key}' needs a value"),
                    Some(raw) => match set_go_value(&mut go, key, raw) {
                        Ok(()) => continue,
                        Err(msg) => msg,
                    },
                };
                // A limit that cannot be read counts as 0, so the `go` ends at once (as
                // Stockfish does with `go movetime -5`) instead of running until `stop`.
                if is_go_limit(key) {
                    set_go_value(&mut go, key, "0").expect("0 is a valid limit");
                    warnings.push(format!("go: {err}; counts as {key} 0"));
                } else {
                    warnings.push(format!("go: {err}; ignored"));
                }
            }
            other => warnings.push(format!("go: unknown token '{}' ignored", clip(other))),
        }
    }
    go
}

/// The `go` parameters that end a search by themselves (a clock, a time, a depth, nodes, a mate).
fn is_go_limit(key: &str) -> bool {
    matches!(
        key,
        "wtime" | "btime" | "movetime" | "depth" | "nodes" | "mate"
    )
}

fn is_go_keyword(t: &str) -> bool {
    matches!(
        t,
        "searchmoves"
            | "ponder"
            | "wtime"
            | "btime"
            | "winc"
            | "binc"
            | "movestogo"
            | "depth"
            | "nodes"
            | "mate"
            | "movetime"
            | "infinite"
    )
}

fn set_go_value(go: &mut GoParams, key: &str, raw: &str) -> Result<(), String> {
    let bad = |what: &str| format!("'{key} {}' is not {what}", clip(raw));
    match key {
        "wtime" | "btime" | "winc" | "binc" => {
            let v: i64 = raw
                .parse()
                .map_err(|_| bad("an integer number of milliseconds"))?;
            match key {
                "wtime" => go.wtime = Some(v),
                "btime" => go.btime = Some(v),
                "winc" => go.winc = Some(v),
                _ => go.binc = Some(v),
            }
        }
        "movetime" => {
            go.movetime = Some(
                raw.parse()
                    .map_err(|_| bad("a non-negative number of milliseconds"))?,
            )
        }
        "nodes" => go.nodes = Some(raw.parse().map_err(|_| bad("a non-negative integer"))?),
        "movestogo" | "depth" | "mate" => {
            let v: u32 = raw.parse().map_err(|_| bad("a non-negative integer"))?;
            match key {
                "movestogo" => go.movestogo = Some(v),
                "depth" => go.depth = Some(v),
                _ => go.mate = Some(v),
            }
        }
        _ => return Err(format!("unknown go parameter '{key}'")),
    }
    Ok(())
}
