//! The searchless policy and MCTS's hand-over to it on a fake evaluator (no network): what the
//! runner hands a search ([`Net`]) is all they read.

use super::*;
use crate::model::actions::uci_to_action;
use crate::model::cost::RowCost;
use crate::model::{
    Backend, Capabilities, EvalRequest, EvalStats, Evaluator, LoadKey, ModelError, ModelKind, Note,
    Scores,
};
use crate::search::report::{Listener, Wdl};
use crate::search::GoParams;
use crate::settings::Settings;
use crate::time::{Deadlines, TimeManager};
use parking_lot::Mutex;
use std::sync::Arc;

/// Q = 0.4 for every root move (0.9 for the last in request order, the highest action id) and
/// 0.8 for every reply in other positions, a WDL head, a uniform policy; one row per position.
/// Records the batch sizes.
#[derive(Default)]
struct OnePass(Vec<usize>);

impl Evaluator for OnePass {
    fn evaluate(&mut self, batch: &[EvalRequest]) -> Result<Vec<Scores>, ModelError> {
        self.0.push(batch.len());
        Ok(batch
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let n = r.moves.len();
                let mut q = vec![if i == 0 { 0.4 } else { 0.8 }; n];
                if i == 0 {
                    q[n - 1] = 0.9;
                }
                Scores {
                    q,
                    policy: Some(vec![1.0 / n as f32; n]),
                    wdl: Some([0.5, 0.25, 0.25]),
                    modes: vec![0; n],
                    rows: 1,
                }
            })
            .collect())
    }
    fn stats(&self) -> EvalStats {
        EvalStats::default()
    }
}

fn caps(kind: &str, value: bool) -> Capabilities {
    Capabilities {
        kind: ModelKind::from_metadata(kind).unwrap(),
        value,
        one_row_per_position: true,
        wdl: true,
        backend: crate::model::Backend::Cpu,
    }
}

/// Keeps the remarks.
#[derive(Default)]
struct Notes(Mutex<Vec<String>>);

impl Listener for Notes {
    fn report(&self, _: &[crate::search::report::Info], _: Option<&BestMove>) {}
    fn note(&self, note: Note) {
        let (Note::Info(m) | Note::Error(m)) = note;
        self.0.lock().push(m);
    }
}

fn request(settings: Settings) -> SearchRequest {
    let go = GoParams::default();
    SearchRequest {
        key: LoadKey {
            weights: None,
            backend: Backend::Cpu,
            threads: 1,
        },
        game: Game::startpos(),
        searchmoves: Vec::new(),
        time: TimeManager::new(&go, true, 0),
        go,
        settings,
        temperature: 0.0,
        u: 0.0,
        start: Instant::now(),
        tablebase: None,
        net_ready: true,
    }
}

/// `algorithm` on the start position through `eval` with `caps`: its outcome, the run costs and
/// the remarks.
fn think_with(
    algorithm: &mut dyn Algorithm,
    eval: &mut OnePass,
    caps: Capabilities,
    settings: Settings,
) -> (Outcome, RowCost, Vec<String>) {
    let req = request(settings);
    let notes = Arc::new(Notes::default());
    let sink = SearchSink::new(Arc::clone(&notes) as Arc<dyn Listener>);
    let ctl = Control::new(Deadlines::none(req.start));
    let mut cost = RowCost::default();
    let mut net = Net {
        evaluator: eval,
        caps,
        cost: &mut cost,
    };
    let outcome = algorithm.think(&mut net, &req, &ctl, &sink).unwrap();
    let notes = notes.0.lock().clone();
    (outcome, cost, notes)
}

/// The start position's legal move with the highest action id (the one the fake rates 0.9).
fn last_in_action_order() -> String {
    let g = Game::startpos();
    let mut moves: Vec<(u16, String)> = g
        .legal_moves()
        .iter()
        .map(|m| {
            let uci = crate::game::standard_uci(m);
            (uci_to_action(&uci).unwrap(), uci)
        })
        .collect();
    moves.sort();
    moves.pop().unwrap().1
}

#[test]
fn searchless_plays_through_the_evaluator_it_is_given() {
    let mut eval = OnePass::default();
    let settings = Settings {
        show_wdl: true,
        ponder: true,
        ..Settings::default()
    };
    let (out, cost, _) = think_with(
        &mut Searchless,
        &mut eval,
        caps("multi_action_value", true),
        settings,
    );
    assert_eq!(out.best.mv, Some(last_in_action_order()));
    assert!(out.best.ponder.is_some(), "the ponder pass ran");
    assert_eq!(
        eval.0,
        vec![21, 1],
        "root and successors in one call, then the ponder pass"
    );
    let info = &out.infos[0];
    assert_eq!(info.nodes, 22);
    assert_eq!(
        info.wdl,
        Some(Wdl {
            win: 500,
            draw: 250,
            loss: 250
        }),
        "the WDL head"
    );
    assert!(cost.per_row_ms().is_some(), "the run costs were recorded");
}

#[test]
fn mcts_hands_a_net_without_a_value_to_the_searchless_policy() {
    let mut eval = OnePass::default();
    let (out, _, notes) = think_with(
        &mut crate::search::mcts::Mcts::default(),
        &mut eval,
        caps("behavioral_cloning", false),
        Settings::default(),
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("SearchMode mcts refused")),
        "{notes:?}"
    );
    assert_eq!(out.best.mv, Some(last_in_action_order()));
    assert_eq!(eval.0, vec![1], "no successors without a value");
}

#[test]
fn short_of_time_the_best_moves_still_get_successor_values() {
    // A clock whose soft deadline the whole successor batch (21 rows at 5 ms) overruns but 1 + 4
    // rows fit: the root alone, then the successors of its 4 best moves.
    let go = GoParams {
        movetime: Some(60),
        ..GoParams::default()
    };
    let mut req = request(Settings::default());
    req.time = TimeManager::new(&go, true, 0);
    let notes = Arc::new(Notes::default());
    let sink = SearchSink::new(Arc::clone(&notes) as Arc<dyn Listener>);
    let mut cost = RowCost::default();
    cost.record(5.0, 1);
    cost.record(100.0, 20);
    let mut eval = OnePass::default();
    let mut net = Net {
        evaluator: &mut eval,
        caps: caps("multi_action_value", true),
        cost: &mut cost,
    };
    let (a, partial) = evaluate(&mut net, &req, Some(50), &sink).unwrap();
    assert!(!partial);
    let width = eval.0[1];
    assert!(eval.0[0] == 1 && (2..20).contains(&width), "{:?}", eval.0);
    assert_eq!(a.evals, 1 + width);
    let notes = notes.0.lock().clone();
    assert!(
        notes
            .iter()
            .any(|n| n.contains(&format!("successor values for the {width} best of 20"))),
        "{notes:?}"
    );
    // The fake's best root move (Q 0.9) leads the successor batch, whose first row the fake also
    // rates as a root (best reply 0.9): 0.4 · 0.9 + 0.6 · 0.1. The other three of the width mix
    // to 0.4 · 0.4 + 0.6 · 0.2, and every move outside it is capped below that.
    let best = a.best().unwrap();
    assert_eq!(a.moves[best].uci, last_in_action_order());
    assert!((a.moves[best].win_prob - 0.42).abs() < 1e-6);
    let mixed = a.moves.iter().filter(|m| (m.win_prob - 0.28).abs() < 1e-6);
    assert_eq!(mixed.count(), width - 1);
    assert!(a.moves.iter().all(|m| m.win_prob <= 0.42));
}
