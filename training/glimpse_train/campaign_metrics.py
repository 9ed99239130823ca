"""What the campaign's gate measures beyond ``evaluate.eval_validation`` (``campaign_gate``,
``heldout``, ``quantize --heldout``): the fixed held-out split (``HeldOut``) and the held-out accuracy of
a net's policy head and of the engine's searchless ``MoveChoice blend`` (``head_accuracies``).
"""

from __future__ import annotations

import os

import numpy as np

from .chessdata import BUCKET_CENTRES
from .onnx_graph import ort_session


class HeldOut:
    """The fixed held-out split: validation positions (3 % by key hash) of ``<shared>/data/labels`` files,
    as the ``ds`` argument of ``evaluate.eval_validation``."""

    def __init__(self, ds, shared: str):
        shared_idx = [i for i, f in enumerate(ds.files)
                      if os.path.abspath(f).startswith(os.path.abspath(os.path.join(shared, "data", "labels")))]
        pos = np.flatnonzero(ds.val & np.isin(ds.source, shared_idx))
        rows = ds.subset_rows(pos)
        self.ds, self.val_rows = ds, rows
        self.row_pos, self.row_action, self.row_key = ds.row_pos, ds.row_action, ds.row_key
        self.row_bucket, self.row_p = ds.row_bucket, ds.row_p

    def tokens(self, rows):
        return self.ds.tokens(rows)


BLEND_WEIGHT = 0.05
"""Weight of ln P against Q under the engine's ``MoveChoice blend`` (``search::analysis::BLEND_WEIGHT``)."""
BLEND_MIN_POLICY = 1e-6
"""Floor of P under ``MoveChoice blend`` (``search::analysis::BLEND_MIN_POLICY``)."""


def policy_accuracy(onnx_path: str, held: "HeldOut", per_run: int = 256) -> float | None:
    """Share of held-out positions where the argmax of the net's ``policy`` output (Lc0-style head) is a
    Stockfish-best move; ``None`` when the net has no policy output."""
    return head_accuracies(onnx_path, held, per_run)["policy_accuracy"]


def head_per_position(onnx_path: str, held: "HeldOut", per_run: int = 256,
                      blend_weight: float = BLEND_WEIGHT) -> dict[str, np.ndarray] | None:
    """Per held-out position, in ascending position id (as ``evaluate.validation_per_position``): whether the
    argmax of the net's ``policy`` logits is a Stockfish-best move (``policy_ok`` [P] bool), and whether the
    engine's searchless default ``MoveChoice blend`` is (``blend_ok`` [P] bool: argmax of Q + ``blend_weight`` ·
    ln max(P, 1e-6), Q the expected win probability of the ``log_probs`` buckets, P the softmax of the policy
    logits over the position's labelled moves; `src/search/analysis.rs`). ``per_run`` positions a network run.
    ``None`` when the net has no policy output."""
    sess = ort_session(onnx_path)
    if "policy" not in [o.name for o in sess.get_outputs()]:
        return None
    rows = held.val_rows
    rows = rows[np.argsort(held.row_pos[rows], kind="stable")]
    pos = held.row_pos[rows]
    bounds = np.flatnonzero(np.diff(pos)) + 1
    groups = np.split(rows, bounds) if len(rows) else []
    ok_policy, ok_blend = np.zeros(len(groups), bool), np.zeros(len(groups), bool)
    for g0 in range(0, len(groups), per_run):
        grp = groups[g0:g0 + per_run]
        m = max(len(g) for g in grp)
        tokens = np.zeros((len(grp), 78), np.int64)
        actions = np.zeros((len(grp), m), np.int64)
        mask = np.zeros((len(grp), m), bool)
        for i, g in enumerate(grp):
            tokens[i, 1:] = held.ds.states[held.row_pos[g[0]]]
            actions[i, : len(g)] = held.row_action[g]
            mask[i, : len(g)] = True
        lp, pol = sess.run(["log_probs", "policy"], {"tokens": tokens, "actions": actions})
        q = np.exp(lp.astype(np.float64)) @ BUCKET_CENTRES
        pol = np.where(mask, pol.astype(np.float64), -np.inf)
        log_p = pol - pol.max(axis=1, keepdims=True)
        log_p = log_p - np.log(np.exp(log_p).sum(axis=1, keepdims=True))
        blend = q + blend_weight * np.maximum(log_p, np.log(BLEND_MIN_POLICY))
        for i, g in enumerate(grp):
            keys = held.row_key[g]
            ok_policy[g0 + i] = keys[int(np.argmax(pol[i, : len(g)]))] == keys.max()
            ok_blend[g0 + i] = keys[int(np.argmax(blend[i, : len(g)]))] == keys.max()
    return {"policy_ok": ok_policy, "blend_ok": ok_blend}


def head_accuracies(onnx_path: str, held: "HeldOut", per_run: int = 256,
                    blend_weight: float = BLEND_WEIGHT) -> dict[str, float | None]:
    """Held-out action accuracy of the net's policy head (``policy_accuracy``) and of the engine's searchless
    default ``MoveChoice blend`` (``blend_accuracy``): the shares of :func:`head_per_position`. Both ``None``
    when the net has no policy output."""
    pp = head_per_position(onnx_path, held, per_run, blend_weight)
    if pp is None:
        return {"policy_accuracy": None, "blend_accuracy": None}
    return {"policy_accuracy": float(np.mean(pp["policy_ok"])), "blend_accuracy": float(np.mean(pp["blend_ok"]))}
