//! Property-based tests (proptest) over random legal games: FEN round trips, tokenizer and
//! action-table invariants, the repetition and fifty-move rules against a reference built on
//! shakmaty, the time manager's bounds, the UCI parser and option table on arbitrary input, and
//! MCTS invariants with a fake evaluator. Case counts are kept small so the file runs in seconds.

use glimpse::game::{python_fen, standard_uci, Game};
use glimpse::model::actions::{action_to_uci, uci_to_action, NUM_ACTIONS};
use glimpse::model::tokenizer::{tokenize, STATE_TOKENS, VOCAB};
use glimpse::model::{EvalRequest, EvalStats, Evaluator, ModelError, Scores};
use glimpse::search::mcts::{self, EvalCache, Limits, MctsParams, Proven, Tree};
use glimpse::time::{budget, TimeManager};
use glimpse::uci::{self, GoParams, Options};
use proptest::prelude::*;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{Chess, EnPassantMode, Move, Position, Role};
use std::time::Instant;

/// Plays `choices.len()` plies at most from the start position, move `choice % legal` each ply;
/// with `quiet`, reversible moves (no pawn move, capture or castling) are preferred, so that
/// positions repeat often. Stops at a position without legal moves.
fn random_game(choices: &[u16], quiet: bool) -> Game {
    let mut game = Game::startpos();
    for &c in choices {
        let legal = game.legal_moves();
        if legal.is_empty() {
            break;
        }
        let pool: Vec<Move> = if quiet {
            let q: Vec<Move> = legal
                .iter()
                .copied()
                .filter(|m| m.role() != Role::Pawn && !m.is_capture() && !m.is_castle())
                .collect();
            if q.is_empty() {
                legal
            } else {
                q
            }
        } else {
            legal
        };
        let mv = pool[usize::from(c) % pool.len()];
        game.push(mv).expect("a legal move");
    }
    game
}

fn zobrist(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

/// The reference count: how often `pos` occurs in `history` (the whole game), by Zobrist hash.
fn occurrences(history: &[Chess], pos: &Chess) -> usize {
    let k = zobrist(pos);
    history.iter().filter(|p| zobrist(p) == k).count()
}

/// python-chess `is_fivefold_repetition() or can_claim_threefold_repetition()` for the last
/// position of `history`, from the whole history rather than the engine's reversible window.
fn reference_claimable(history: &[Chess]) -> bool {
    let now = history.last().expect("a position");
    if occurrences(history, now) >= 3 {
        return true;
    }
    now.legal_moves().iter().any(|m| {
        let mut next = now.clone();
        next.play_unchecked(*m);
        occurrences(history, &next) >= 2
    })
}

/// `cases` cases (or `PROPTEST_CASES`, e.g. fewer under valgrind), no regression files.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// Every position of a random game survives FEN → position → FEN, and the parsed position is
    /// the same position (hash, clocks, legal moves).
    #[test]
    fn fen_round_trips(choices in prop::collection::vec(any::<u16>(), 0..160)) {
        let game = random_game(&choices, false);
        for pos in game.positions() {
            let fen = python_fen(pos);
            let again = Game::from_fen(&fen, false).expect("the engine's own FEN parses");
            prop_assert_eq!(again.fen(), fen.clone());
            let back = again.position();
            prop_assert_eq!(zobrist(back), zobrist(pos));
            prop_assert_eq!(back.halfmoves(), pos.halfmoves());
            prop_assert_eq!(back.fullmoves(), pos.fullmoves());
            prop_assert_eq!(back.legal_moves().len(), pos.legal_moves().len());
        }
    }

    /// The tokenizer gives 77 ids in the vocabulary whose side and board tokens spell the
    /// position, and every legal move of a random position has an action whose UCI is the move.
    #[test]
    fn tokenizer_and_action_table(choices in prop::collection::vec(any::<u16>(), 0..160)) {
        let game = random_game(&choices, false);
        let pos = game.position();
        let fen = python_fen(pos);
        let tokens = tokenize(&fen).expect("python-chess FENs tokenize");
        prop_assert_eq!(tokens.len(), STATE_TOKENS);
        prop_assert!(tokens.iter().all(|&t| usize::from(t) < VOCAB.len()));
        let side = if pos.turn().is_white() { b'w' } else { b'b' };
        prop_assert_eq!(VOCAB[usize::from(tokens[0])], side);
        for (i, &t) in tokens[1..65].iter().enumerate() {
            // FEN order: rank 8 to 1, file a to h.
            let sq = shakmaty::Square::from_coords(
                shakmaty::File::new((i % 8) as u32),
                shakmaty::Rank::new(7 - (i / 8) as u32),
            );
            let want = pos.board().piece_at(sq).map_or(b'.', |p| p.char() as u8);
            prop_assert_eq!(VOCAB[usize::from(t)], want, "square {}", sq);
        }
        for mv in pos.legal_moves() {
            let uci = standard_uci(&mv);
            let id = uci_to_action(&uci);
            prop_assert!(id.is_some(), "{} has no action", uci);
            let id = usize::from(id.unwrap());
            prop_assert!(id < NUM_ACTIONS);
            prop_assert_eq!(action_to_uci(id), Some(uci.as_str()));
        }
    }

    /// Repetition counts and claims agree with a reference over the whole game history, for
    /// games that shuffle pieces (many repetitions), and the 50-move counter agrees with a count
    /// of plies since the last capture or pawn move.
    #[test]
    fn repetition_and_fifty_move_rules(
        choices in prop::collection::vec(0u16..6, 1..120),
        start_clock in 0u32..100,
    ) {
        let start = format!("r3k2r/pppq1ppp/2n2n2/8/8/2N2N2/PPPQ1PPP/R3K2R w KQkq - {start_clock} 10");
        let mut game = Game::from_fen(&start, false).expect("valid FEN");
        let mut history: Vec<Chess> = vec![game.position().clone()];
        let mut clock = start_clock;
        for &c in &choices {
            let legal = game.legal_moves();
            if legal.is_empty() {
                break;
            }
            let quiet: Vec<Move> = legal.iter().copied()
                .filter(|m| m.role() != Role::Pawn && !m.is_capture() && !m.is_castle())
                .collect();
            let pool = if quiet.is_empty() { &legal } else { &quiet };
            let mv = pool[usize::from(c) % pool.len()];
            // The engine's claim test for this move (python-chess semantics) before playing it.
            let mut after = history.clone();
            let mut next = game.position().clone();
            next.play_unchecked(mv);
            after.push(next);
            prop_assert_eq!(game.move_allows_repetition(&mv), reference_claimable(&after));
            clock = if mv.role() == Role::Pawn || mv.is_capture() { 0 } else { clock + 1 };
            game.push(mv).expect("legal");
            history.push(game.position().clone());
            prop_assert_eq!(game.repetition_count(), occurrences(&history, game.position()));
            prop_assert_eq!(game.repetition_claimable(), reference_claimable(&history));
            prop_assert_eq!(game.position().halfmoves(), clock);
            let fen = game.fen();
            let fen_clock: u32 = fen.split(' ').nth(4).unwrap().parse().unwrap();
            prop_assert_eq!(fen_clock, clock);
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Whatever the clock fields (negative, zero, 2^63), the budget is within the clock: optimum
    /// ≤ hard ≤ own time − overhead (at least 1 ms), within `movetime`, and the search deadline
    /// never after the hard limit.
    #[test]
    fn time_budget_never_beyond_the_clock(
        wtime in prop_oneof![any::<i64>(), -1000i64..100_000],
        btime in prop_oneof![any::<i64>(), -1000i64..100_000],
        winc in prop::option::of(prop_oneof![any::<i64>(), 0i64..5000]),
        binc in prop::option::of(prop_oneof![any::<i64>(), 0i64..5000]),
        movestogo in prop::option::of(prop_oneof![any::<u32>(), 0u32..5]),
        movetime in prop::option::of(prop_oneof![any::<u64>(), 0u64..10_000]),
        use_clock in any::<bool>(),
        white in any::<bool>(),
        overhead in prop_oneof![0u64..1000, Just(5000u64)],
    ) {
        let go = GoParams {
            wtime: use_clock.then_some(wtime),
            btime: use_clock.then_some(btime),
            winc,
            binc,
            movestogo,
            movetime,
            ..GoParams::default()
        };
        let b = budget(&go, white, overhead);
        let own = if white { wtime } else { btime };
        match (b.optimum_ms, b.hard_ms) {
            (None, None) => prop_assert!(!use_clock && movetime.is_none()),
            (Some(o), Some(h)) => {
                prop_assert!(o >= 1 && o <= h, "optimum {} hard {}", o, h);
                if use_clock {
                    let avail = (own.max(0) as u64).saturating_sub(overhead).max(1);
                    prop_assert!(h <= avail, "hard {} beyond the clock {}", h, avail);
                }
                if let Some(m) = movetime {
                    prop_assert!(h <= m.max(1), "hard {} beyond movetime {}", h, m);
                }
                let s = b.search_ms().expect("a deadline");
                prop_assert!(s >= 1 && s <= h);
                let start = Instant::now();
                let d = TimeManager::new(&go, white, overhead).at_go(start);
                prop_assert_eq!(d.hard_ms, Some(h));
                prop_assert!(d.soft().unwrap() <= d.hard().unwrap());
            }
            other => prop_assert!(false, "half a budget: {:?}", other),
        }
    }

    /// The UCI parser never panics on arbitrary text (it returns a command or an error).
    #[test]
    fn parser_never_panics_on_arbitrary_lines(line in ".{0,200}") {
        let _ = uci::parse(&line);
    }

    /// Nor on lines built from UCI words with odd numbers and moves in between, and a `go`
    /// that parses carries the numbers it was given.
    #[test]
    fn parser_never_panics_on_uci_word_soup(
        words in prop::collection::vec(prop_oneof![
            Just("go".to_string()), Just("position".to_string()), Just("startpos".to_string()),
            Just("fen".to_string()), Just("moves".to_string()), Just("wtime".to_string()),
            Just("btime".to_string()), Just("winc".to_string()), Just("movestogo".to_string()),
            Just("movetime".to_string()), Just("nodes".to_string()), Just("depth".to_string()),
            Just("infinite".to_string()), Just("ponder".to_string()), Just("searchmoves".to_string()),
            Just("setoption".to_string()), Just("name".to_string()), Just("value".to_string()),
            Just("e2e4".to_string()), Just("9223372036854775808".to_string()),
            Just("-9223372036854775809".to_string()), Just("\t".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            "[a-h][1-8][a-h][1-8][qrbn]?",
            "\\PC{0,8}",
        ], 0..16),
    ) {
        let line = words.join(" ");
        if let Ok(Some(parsed)) = uci::parse(&line) {
            if let uci::Command::Go(go) = &parsed.command {
                // The clock given, or 0 for one that cannot be read (with a warning).
                if let Some(t) = go.wtime {
                    prop_assert!(
                        line.contains(&t.to_string())
                            || (t == 0
                                && parsed.warnings.iter().any(|w| w.contains("counts as wtime 0")))
                    );
                }
            }
        }
    }

    /// Setting any option to any text never panics; a refused value keeps the old one.
    #[test]
    fn options_never_panic(name_pick in any::<prop::sample::Index>(), value in "\\PC{0,40}") {
        let mut options = Options::new(2);
        let names: Vec<String> = options.declarations().iter().map(|d| d.name.to_string()).collect();
        let name = name_pick.get(&names).clone();
        let before = options.uci_lines();
        if options.set(&name, Some(&value)).is_err() {
            prop_assert_eq!(options.uci_lines(), before);
        }
        let _ = options.set(&value, Some(&value));
    }
}

/// A deterministic fake network: Q(s, a) from a hash of the position and the move, in [0, 1].
#[derive(Default)]
struct HashEval {
    calls: u64,
    rows: u64,
}

impl Evaluator for HashEval {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.calls += 1;
        self.rows += batch.len() as u64;
        Ok(batch
            .iter()
            .map(|r| {
                r.moves
                    .iter()
                    .map(|m| {
                        let mut after = r.pos.clone();
                        after.play_unchecked(*m);
                        let h = zobrist(&after) ^ r.hash.rotate_left(17);
                        (h % 10_001) as f32 / 10_000.0
                    })
                    .collect::<Vec<f32>>()
                    .into()
            })
            .collect())
    }

    fn stats(&self) -> EvalStats {
        EvalStats {
            runs: self.calls,
            rows: self.rows,
            positions: self.rows,
            time: std::time::Duration::ZERO,
        }
    }
}

proptest! {
    #![proptest_config(config(32))]

    /// MCTS with a fake evaluator from random positions: the root's visits are one more than its
    /// children's, the playout count is respected, every value and prior is a probability, and
    /// the best move and its PV are legal.
    #[test]
    fn mcts_invariants(
        choices in prop::collection::vec(any::<u16>(), 0..80),
        playouts in 1u64..160,
        minibatch in 1usize..12,
        draw_score in -0.5f32..0.5,
    ) {
        let game = random_game(&choices, false);
        prop_assume!(!game.legal_moves().is_empty());
        let mut tree = Tree::new(&game);
        let mut cache = EvalCache::new(1 << 20);
        let mut net = HashEval::default();
        let mut eval = glimpse::model::cache::Cached::new(&mut cache, &mut net);
        let params = MctsParams { minibatch, draw_score, ..MctsParams::default() };
        let mut limits = Limits { playouts: Some(playouts), ..Limits::default() };
        let (_reason, progress) =
            mcts::search(&mut tree, &mut eval, &params, &mut limits, &mut |_, _, _| false);
        prop_assert!(progress.playouts <= playouts);
        prop_assert!(progress.playouts >= 1);
        let children = tree.root_children();
        let sum: u64 = children.iter().map(|c| u64::from(c.n)).sum();
        prop_assert_eq!(u64::from(tree.root().n), sum + 1, "root visits vs children");
        prop_assert_eq!(u64::from(tree.root().n), progress.playouts);
        let prior_sum: f32 = children.iter().map(|c| c.prior).sum();
        prop_assert!((prior_sum - 1.0).abs() < 1e-3, "priors sum to {}", prior_sum);
        for c in &children {
            prop_assert!((0.0..=1.0).contains(&c.prior));
            prop_assert!((0.0..=1.0).contains(&c.net_q));
            if let Some(q) = c.q() {
                prop_assert!((-1e-9..=1.0 + 1e-9).contains(&q), "Q {}", q);
            }
        }
        let lines = tree.lines(&[], 3);
        prop_assert!(!lines.is_empty());
        for line in &lines {
            prop_assert!((0.0..=1.0).contains(&line.value()));
            let mut pos = game.position().clone();
            for mv in &line.pv {
                prop_assert!(pos.is_legal(*mv), "PV move {:?} illegal", mv);
                pos.play_unchecked(*mv);
            }
        }
        let best = &lines[0];
        prop_assert!(game.legal_moves().contains(&best.mv));
        if let Proven::Loss(_) = best.proven {
            // A proven win for the root: it is the most-visited or the fastest mate, never hidden.
            prop_assert!(best.mate().unwrap() > 0);
        }
    }
}
