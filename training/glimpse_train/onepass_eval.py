"""Evaluation policy for exported multi-action-value (one-pass) ONNX models.

``MAVPolicy`` has ``AVPolicy``'s interface (``win_probs_batch`` over AV-layout rows ``[N, 79]`` =
``[0, 77 state tokens, action]``, and ``choose(board)``), so ``evaluate.eval_validation`` and
``evaluate.eval_puzzles`` measure it unchanged: consecutive rows with the same 77 state tokens form one
position and are scored with one network row (``tokens`` [1, 78] + ``actions`` [1, M]), batched over
positions and padded with action 0 (padding outputs are dropped).
"""

from __future__ import annotations

import chess
import numpy as np

from .chessdata import BUCKET_CENTRES, MOVE_TO_ACTION, tokenize
from .onepass_model import PAD_ACTION
from .onnx_export import ort_session


def onnx_kind(path: str) -> str:
    import onnx

    meta = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
    return meta.get("glimpse.kind", "")


class MAVPolicy:
    """Argmax of the expected win probability over legal moves (ties → lowest action id), one pass per position."""

    def __init__(self, path: str, positions_per_run: int = 256):
        self.sess = ort_session(path)
        self.centres = BUCKET_CENTRES.astype(np.float64)
        self.per_run = positions_per_run

    def run(self, tokens: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """tokens [B, 78], actions [B, M] → log-probs [B, M, K]."""
        return self.sess.run(["log_probs"], {"tokens": tokens.astype(np.int64), "actions": actions.astype(np.int64)})[0]

    def win_probs_batch(self, rows: np.ndarray) -> np.ndarray:
        """AV-layout rows [N, 79] → log-probs [N, K], one network row per run of equal states."""
        n = len(rows)
        if n == 0:
            return np.zeros((0, 128), np.float32)
        change = np.any(rows[1:, :78] != rows[:-1, :78], axis=1)
        starts = np.concatenate([[0], np.flatnonzero(change) + 1])
        ends = np.concatenate([starts[1:], [n]])
        out = None
        for g in range(0, len(starts), self.per_run):
            s, e = starts[g:g + self.per_run], ends[g:g + self.per_run]
            m = int((e - s).max())
            tokens = rows[s, :78]
            actions = np.full((len(s), m), PAD_ACTION, np.int64)
            for i, (a, b) in enumerate(zip(s, e)):
                actions[i, : b - a] = rows[a:b, 78]
            lp = self.run(tokens, actions)
            if out is None:
                out = np.zeros((n, lp.shape[-1]), np.float32)
            for i, (a, b) in enumerate(zip(s, e)):
                out[a:b] = lp[i, : b - a]
        return out

    def choose(self, board: chess.Board) -> chess.Move:
        moves = sorted(board.legal_moves, key=lambda m: MOVE_TO_ACTION[m.uci()])
        tokens = np.zeros((1, 78), np.int64)
        tokens[0, 1:] = tokenize(board.fen())
        actions = np.asarray([[MOVE_TO_ACTION[m.uci()] for m in moves]], np.int64)
        wp = np.exp(self.run(tokens, actions)[0].astype(np.float64)) @ self.centres
        return moves[int(np.argmax(wp))]
