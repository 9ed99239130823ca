"""Does a net underfit or overfit its data? Action accuracy on positions it trained on against positions of the
same files it never saw.

The validation positions of every label file (3 % by key hash, ``data.is_validation``) are never trained on,
in the label store as in ``../shared``. Drawing equal samples of trained and unseen positions from the same
files compares like with like (the fixed held-out split is ``../shared`` only, a different mix of positions):

* a small gap with both accuracies low means the net cannot fit what it has seen: more capacity (a deeper
  trunk, ``grow.py``) or more training pays;
* a large gap means it memorises: more distinct positions pay (ChessBench §3.3: 7 M+ parameter models
  overfit 0.59 M positions after ~300 passes).

``python -m glimpse_train.fit_gap --net a.onnx [--files 'data/labels/*.tsv.gz'] [--positions 5000]`` (from the
repository root) prints both reports (``evaluate.eval_validation``: action accuracy, Kendall τ, loss).
Measured with c35 on the first 175 store shards: 40.4 % trained vs 38.7 % unseen. With c52 (float32; 67.0 M
position-passes, the last 10.4 M over 2.82 M positions) on shards 0-399 (``--files
'data/labels/glimpse-00[0-3]*.tsv.gz' --positions 5000``, 2026-11-29): 46.12 % trained vs 46.06 % unseen, no
memorising: capacity and training passes pay, not more augmentation.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys

import numpy as np

from . import kinds
from .data import MemDataset
from .evaluate import eval_validation


class _Split:
    """The ``ds`` argument of ``evaluate.eval_validation`` for the given positions of a ``MemDataset``."""

    def __init__(self, ds, positions: np.ndarray):
        self.val_rows = ds.subset_rows(positions)
        self.row_pos, self.row_action, self.row_key = ds.row_pos, ds.row_action, ds.row_key
        self.row_bucket, self.row_p, self.tokens = ds.row_bucket, ds.row_p, ds.tokens


def fit_gap(policy, ds, positions: int = 5000, seed: int = 0) -> dict:
    """``{"trained": report, "unseen": report, "gap": trained − unseen action accuracy}`` of ``policy`` (any
    kind's policy, ``kinds``) on ``positions`` positions drawn (``seed``) from each side of ``ds`` (a
    ``data.MemDataset``). Raises ``ValueError`` when either side has no position."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, pool in (("trained", np.flatnonzero(~ds.val)), ("unseen", np.flatnonzero(ds.val))):
        pool = pool[np.isin(pool, ds.row_pos)]  # positions with at least one labelled move
        if not len(pool):
            raise ValueError(f"no {name} positions in these files")
        pick = np.sort(rng.choice(pool, min(positions, len(pool)), replace=False))
        out[name] = eval_validation(policy, _Split(ds, pick))
    out["gap"] = out["trained"]["action_accuracy"] - out["unseen"]["action_accuracy"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", required=True, help="ONNX net (any kind)")
    ap.add_argument("--files", default="data/labels/*.tsv.gz", help="glob of label files the net trained on")
    ap.add_argument("--positions", type=int, default=5000, help="positions drawn from each side")
    ap.add_argument("--cache", default="training/data/cache", help="label-file array cache (as the campaign's)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    files = sorted(glob.glob(a.files))
    if not files:
        print(f"fit_gap: no files match {a.files}", file=sys.stderr)
        return 1
    try:
        ds = MemDataset(files, a.cache, lambda *_: None)
        r = fit_gap(kinds.for_onnx(a.net).policy(a.net), ds, a.positions, a.seed)
    except (ValueError, OSError) as e:
        print(f"fit_gap: {e}", file=sys.stderr)
        return 1
    for side in ("trained", "unseen"):
        s = r[side]
        print(f"fit_gap: {side}: {s['val_positions']} positions, action accuracy {100 * s['action_accuracy']:.2f} %, "
              f"Kendall tau {s['kendall_tau']:.4f}, loss {s['val_loss']:.4f}")
    print(f"fit_gap: gap {100 * r['gap']:+.2f} points")
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
