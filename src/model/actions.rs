//! The 1968-move action table of the searchless-chess reference (`utils.MOVE_TO_ACTION`).

/// Number of actions.
pub const NUM_ACTIONS: usize = 1968;

/// UCI string of action `id` (standard-chess notation, castling as king move `e1g1`).
/// Returns `None` for `id >= 1968`.
pub fn action_to_uci(id: usize) -> Option<&'static str> {
    let _ = id;
    todo!("issue 2")
}

/// Action id of a UCI move string (`e2e4`, `e7e8q`, `e1g1`), `None` if not in the table.
pub fn uci_to_action(uci: &str) -> Option<u16> {
    let _ = uci;
    todo!("issue 2")
}
