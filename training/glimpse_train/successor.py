"""Held-out action accuracy of the searchless policy with successor values (the engine's `SuccessorValue`).

The engine's searchless move (``search::analysis::analyse_with``) mixes each move's one-pass Q(s, a) with the value
of the position after it, V(s') = 1 − max_a' Q(s', a') read from the same net (the paper's state-value policy,
Ruoss et al., 2024, 2.2, with the state value taken from the action values), all in one batched run of 1 + moves
rows: ``(1 − w) · Q + w · V``, plus ``b · ln P`` under ``MoveChoice blend`` (P the policy head's probability,
floored at 1e-6). A mate keeps 1.0; a stalemate or a position without mating material counts 0.5.

This script measures that choice on positions of the fixed held-out split (the validation positions of
``<shared>/data/labels``, as the campaign's), for a grid of weights ``w`` and policy weights ``b``: a move is
right when Stockfish scored it best (ties count, as ``evaluate.eval_validation``). Moves are ordered by action id
and the first maximum wins, as in the engine.

``python -m glimpse_train.successor --net ../weights/glimpse-l10d128-c58-int8.onnx --shared ../../shared
--positions 2500`` (from ``training/``; ~10 min on 2 busy cores for the L10 twin) prints one line per ``w``
with the accuracy at each ``b`` and a JSON report. ``--value-mix L …`` repeats the grid with the successor's value
taken as (1 − L) · (1 − max_a' Q(s', a')) + L · (1 − V(s')), V the net's value head (the expected win probability of
its ``value`` buckets, trained on the best move's label): a question for the engine's `SuccessorValue` and MCTS's
leaf value. ``--top-k K …`` adds the accuracy with successor values for only the K best moves by Q, the others
left out of the choice: what the engine plays when the whole batch does not fit its clock (``successor_top``).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import sys

import chess
import numpy as np

from .chessdata import BUCKET_CENTRES, MOVE_TO_ACTION, tokens_actions
from .data import is_validation, parse_line, score_key
from .onnx_graph import ort_session

WEIGHTS = (0.0, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0)
POLICY_WEIGHTS = (0.0, 0.01, 0.05)


def held_out(shared: str) -> list[tuple[str, dict[str, float]]]:
    """``(FEN, {uci: Stockfish order key})`` of every held-out position of ``<shared>/data/labels``."""
    out = []
    for f in sorted(glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz"))):
        with gzip.open(f, "rt") as fh:
            for line in fh:
                try:
                    fen, moves = parse_line(line)
                except ValueError:
                    continue
                if is_validation(fen):
                    out.append((fen, {m: score_key(s) for m, s in moves}))
    return out


def _expected(lp: np.ndarray) -> np.ndarray:
    return np.exp(lp.astype(np.float64)) @ BUCKET_CENTRES


def position_arrays(sess, fen: str, labels: dict[str, float]) -> dict | None:
    """For one position: per legal labelled move (ascending action id) Q, the successor value V, the same from
    the value head (``vh``: 1 − its expected win probability of the successor; ``v`` again without a ``value``
    output), ln P (or zeros without a policy head) and whether Stockfish scored it best; ``None`` with fewer than 2
    such moves."""
    board = chess.Board(fen)
    legal = sorted((m for m in board.legal_moves if m.uci() in labels), key=lambda m: MOVE_TO_ACTION[m.uci()])
    if len(legal) < 2:
        return None
    names = [o.name for o in sess.get_outputs()]
    succ, fixed = [], np.full(len(legal), np.nan)
    for i, m in enumerate(legal):
        b = board.copy(stack=False)
        b.push(m)
        if b.is_checkmate():
            fixed[i] = 1.0
        elif b.is_stalemate() or b.is_insufficient_material():
            fixed[i] = 0.5
        else:
            succ.append((i, b))
    tokens, actions = tokens_actions([board] + [b for _, b in succ])
    out = dict(zip(names, sess.run(names, {"tokens": tokens, "actions": actions})))
    ev = _expected(out["log_probs"])
    n = board.legal_moves.count()
    order = {int(a): j for j, a in enumerate(actions[0, :n])}  # the root's real moves (padding after them)
    idx = [order[MOVE_TO_ACTION[m.uci()]] for m in legal]
    q = ev[0, idx]
    v, vh = fixed.copy(), fixed.copy()
    head = _expected(out["value"]) if "value" in out else None
    for r, (i, b) in enumerate(succ, start=1):
        v[i] = 1.0 - ev[r, : b.legal_moves.count()].max()
        vh[i] = v[i] if head is None else 1.0 - head[r]
    lp = np.zeros(len(legal))
    if "policy" in out:
        logits = out["policy"][0, :n].astype(np.float64)
        logits = logits - logits.max()
        lp = np.maximum((logits - np.log(np.exp(logits).sum()))[idx], np.log(1e-6))
    keys = np.array([labels[m.uci()] for m in legal])
    return {"q": q, "v": v, "vh": vh, "lp": lp, "mate": fixed == 1.0, "best": keys == keys.max()}


def top_k_mask(q: np.ndarray, mate: np.ndarray, k: int) -> np.ndarray:
    """The moves a successor batch of width ``k`` scores: the ``k`` highest Q (first maxima first, as the engine
    orders them) and every mating move; ``k`` 0 or at least the moves: all of them."""
    if k <= 0 or k >= len(q):
        return np.ones(len(q), bool)
    keep = np.zeros(len(q), bool)
    keep[np.argsort(-q, kind="stable")[:k]] = True
    return keep | mate


def accuracy(recs: list[dict], w: float, b: float, value_mix: float = 0.0, top_k: int = 0) -> float:
    """Share of ``recs`` whose chosen move (first maximum of (1 − w)·Q + w·V + b·ln P; a mate first) is best, V =
    (1 − ``value_mix``) · ``v`` + ``value_mix`` · ``vh``; ``top_k`` > 0: chosen among ``top_k_mask``'s moves only
    (successor values for the top ``top_k`` by Q, 1 + ``top_k`` rows instead of 1 + moves)."""
    hits = 0
    for r in recs:
        v = r["v"] if value_mix == 0 else (1 - value_mix) * r["v"] + value_mix * r["vh"]
        score = np.where(r["mate"], 2.0, (1 - w) * r["q"] + w * v + b * r["lp"])
        score = np.where(top_k_mask(r["q"], r["mate"], top_k), score, -np.inf)
        hits += bool(r["best"][int(np.argmax(score))])
    return hits / max(len(recs), 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", required=True, help="one-pass ONNX net (multi_action_value kinds)")
    ap.add_argument("--shared", default="../../shared")
    ap.add_argument("--positions", type=int, default=2500, help="held-out positions drawn (0: all 5,761)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--value-mix", type=float, nargs="+", default=[0.0], metavar="L",
                    help="shares of the value head in the successor's value, one grid each (default 0)")
    ap.add_argument("--top-k", type=int, nargs="+", default=[], metavar="K",
                    help="also: accuracy at the weights with successor values for only the K best moves by Q")
    a = ap.parse_args(argv)
    items = held_out(a.shared)
    if not items:
        print(f"successor: no held-out positions in {a.shared}/data/labels", file=sys.stderr)
        return 1
    if a.positions and a.positions < len(items):
        pick = np.random.default_rng(a.seed).choice(len(items), a.positions, replace=False)
        items = [items[i] for i in sorted(pick)]
    try:
        sess = ort_session(a.net, a.threads)
    except Exception as e:  # noqa: BLE001 - ORT raises its own exception types for a bad file
        print(f"successor: cannot load {a.net}: {e}", file=sys.stderr)
        return 1
    recs = [r for fen, lab in items if (r := position_arrays(sess, fen, lab)) is not None]
    grids = {}
    for lam in a.value_mix:
        grid = {str(w): {str(b): round(100 * accuracy(recs, w, b, lam), 2) for b in POLICY_WEIGHTS} for w in WEIGHTS}
        grids[str(lam)] = grid
        print(f"successor: {len(recs)} held-out positions, {os.path.basename(a.net)}, value head {lam:g} of the "
              f"successor value; rows w (successor weight), columns b (ln P weight) {list(POLICY_WEIGHTS)}")
        for w, row in grid.items():
            print(f"successor: w {w}: " + "  ".join(f"{v:.2f}" for v in row.values()))
    rep = {"net": a.net, "positions": len(recs), "accuracy_percent": grids[str(a.value_mix[0])]}
    if a.top_k:
        widths = {str(k): {str(w): round(100 * accuracy(recs, w, 0.0, a.value_mix[0], k), 2) for w in WEIGHTS}
                  for k in a.top_k}
        print(f"successor: successor values for the K best moves by Q only; rows K, columns w {list(WEIGHTS)} (b 0)")
        for k, row in widths.items():
            print(f"successor: K {k}: " + "  ".join(f"{v:.2f}" for v in row.values()))
        rep["by_top_k"] = widths
    if len(a.value_mix) > 1:
        rep["by_value_mix"] = grids
    print(json.dumps(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
