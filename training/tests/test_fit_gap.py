"""``fit_gap.py``: trained and unseen positions are drawn from the right sides of the split, and the gap is
read the right way round (a policy that has memorised exactly the trained positions shows a large gap)."""

from __future__ import annotations

import glob
import os

import numpy as np

from glimpse_train import fit_gap
from glimpse_train.chessdata import BUCKET_CENTRES
from glimpse_train.data import MemDataset


class Memoriser:
    """Knows each trained row's label bucket; outputs a flat distribution for anything else."""

    def __init__(self, ds):
        rows = np.flatnonzero(~ds.val[ds.row_pos])
        self.known = {t.tobytes(): int(b) for t, b in zip(ds.tokens(rows), ds.row_bucket[rows])}

    def win_probs_batch(self, tokens):
        k = len(BUCKET_CENTRES)
        out = np.full((len(tokens), k), -np.log(k), np.float32)
        for i, t in enumerate(tokens):
            b = self.known.get(t.tobytes())
            if b is not None:
                out[i] = -30.0
                out[i, b] = 0.0
        return out


def test_a_memorising_policy_shows_a_gap(shared, tmp_path):
    files = sorted(glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz")))
    ds = MemDataset(files, str(tmp_path / "cache"), log=lambda *_: None)
    rng = np.random.default_rng(4)
    ds.val = rng.random(len(ds.val)) < 0.3  # enough unseen positions in the small fixture
    r = fit_gap.fit_gap(Memoriser(ds), ds, positions=40, seed=1)
    assert r["trained"]["val_positions"] == 40 and r["unseen"]["val_positions"] == 40
    assert r["trained"]["action_accuracy"] > 0.85, r["trained"]
    assert r["gap"] > 0.3 and np.isclose(r["gap"], r["trained"]["action_accuracy"] - r["unseen"]["action_accuracy"])


def test_cli_refuses_a_glob_with_no_files(tmp_path, capsys):
    assert fit_gap.main(["--net", "x.onnx", "--files", str(tmp_path / "none-*.tsv.gz")]) == 1
    assert "no files match" in capsys.readouterr().err
