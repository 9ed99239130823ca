"""Position batches for trainers whose step is a batch of positions with all their labelled moves (the
one-pass kind's ``MAVTrainer``; a new kind with the same step reuses them): ``PositionData`` groups a
``data.Dataset``'s rows by position and pads each batch's moves with ``PAD_ACTION``; ``mirror_batch``
mirrors positions without castling rights left to right (more training positions for free).
"""

from __future__ import annotations

import numpy as np

from .chessdata import ACTION_MIRROR, mirror_states, no_castling
from .data import Dataset

PAD_ACTION = 0  # id used to pad the `actions` input; its outputs are ignored


class PositionData:
    """A ``Dataset`` grouped by position: the rows (labelled moves) of position i are
    ``start[i]:end[i]`` (``build_dataset`` appends each position's moves contiguously)."""

    def __init__(self, ds: Dataset):
        self.ds = ds
        n = len(ds.states)
        if len(ds.row_pos) and np.any(np.diff(ds.row_pos) < 0):
            raise ValueError("dataset rows are not grouped by position")
        counts = np.bincount(ds.row_pos, minlength=n)[:n]  # rows are grouped: each position's are contiguous
        self.end = np.cumsum(counts)
        self.start = self.end - counts
        has = self.end > self.start
        self.train_pos = np.nonzero(has & ~ds.val)[0]
        self.val_pos = np.nonzero(has & ds.val)[0]

    def batch(self, pos: np.ndarray, multiple: int = 16, width: int = 0):
        """(tokens int32 [B, 78], actions int32 [B, M] padded with ``PAD_ACTION``, mask bool [B, M],
        rows int64 [B, M] (dataset row per slot, -1 at padding)); M = the most moves rounded up to
        ``multiple``, and at least ``width``."""
        counts = self.end[pos] - self.start[pos]
        m = max(multiple, width, int(-(-counts.max() // multiple) * multiple))
        b = len(pos)
        tokens = np.zeros((b, 78), np.int32)
        tokens[:, 1:] = self.ds.states[pos]
        rows = np.full((b, m), -1, np.int64)
        for i, (s, c) in enumerate(zip(self.start[pos], counts)):
            rows[i, :c] = np.arange(s, s + c)
        mask = rows >= 0
        actions = np.full((b, m), PAD_ACTION, np.int32)
        actions[mask] = self.ds.row_action[rows[mask]]
        return tokens, actions, mask, rows


def mirror_batch(tokens: np.ndarray, actions: np.ndarray, mask: np.ndarray, share: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A training batch (tokens int32 [B, 78] with the leading 0, actions int32 [B, M], mask bool [B, M]) with
    each position that has no castling rights mirrored left to right with probability ``share``: its state
    tokens (``chessdata.mirror_states``) and its moves (``ACTION_MIRROR``); the targets, indexed by row, stay.
    Returns new arrays; the inputs are not changed."""
    states = tokens[:, 1:]
    flip = no_castling(states) & (rng.random(len(tokens)) < share)
    if not flip.any():
        return tokens, actions
    tokens, actions = tokens.copy(), actions.copy()
    tokens[flip, 1:] = mirror_states(states[flip])
    sel = flip[:, None] & mask
    actions[sel] = ACTION_MIRROR[actions[sel]]
    return tokens, actions
