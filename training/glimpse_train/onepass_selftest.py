"""Fast checks of the one-pass (multi_action_value) pipeline (``make test-training``); plain asserts.

1. square/token tables (a8 → 2, h1 → 65, castling and promotions by their squares), numpy vs JAX forward,
   padding invariance, the cost split (head ≪ trunk at the 9M size);
2. position grouping of the dataset (every labelled move of a position in its row, masks, targets);
3. smoke training (a few steps, resume), export to ONNX with the kind in metadata, ORT vs JAX (≤ 1e-4),
   and the evaluation policy on validation positions and a board.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import chess
import numpy as np

from .chessdata import MOVE_TO_ACTION

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def model_tables_and_forward(shared):
    import jax.numpy as jnp

    from .onepass_model import FROM_TOKEN, TO_TOKEN, MAVConfig, cost_split, jax_forward, numpy_forward, perturbed_params

    a = MOVE_TO_ACTION
    assert FROM_TOKEN[a["a8b8"]] == 2 and TO_TOKEN[a["a8b8"]] == 3
    assert FROM_TOKEN[a["h1h2"]] == 65 and TO_TOKEN[a["h1h2"]] == 57
    assert (FROM_TOKEN[a["e1g1"]], TO_TOKEN[a["e1g1"]]) == (2 + 56 + 4, 2 + 56 + 6)
    for pc in "qrbn":  # promotions differ only by the action id
        assert FROM_TOKEN[a["e7e8" + pc]] == 2 + 8 + 4 and TO_TOKEN[a["e7e8" + pc]] == 2 + 4
    cfg = MAVConfig(layers=2, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True,
                    head_global=True)
    p = perturbed_params(cfg, 7)
    rng = np.random.default_rng(1)
    tok = np.zeros((2, 78), np.int64)
    tok[:, 1:] = rng.integers(0, 31, (2, 77))
    act = rng.integers(0, 1968, (2, 9))
    ref, rv = numpy_forward(p, cfg, tok, act)
    jp = {k: jnp.asarray(v) for k, v in p.items()}
    lp, v = jax_forward(jp, cfg, jnp.asarray(tok, jnp.int32), jnp.asarray(act, jnp.int32))
    d = max(float(np.abs(np.asarray(lp) - ref).max()), float(np.abs(np.asarray(v) - rv).max()))
    assert d < 1e-4, d
    lp2, _ = jax_forward(jp, cfg, jnp.asarray(tok, jnp.int32), jnp.asarray(np.concatenate([act, act[:, :3] * 0], 1), jnp.int32))
    assert float(np.abs(np.asarray(lp2)[:, :9] - np.asarray(lp)).max()) < 1e-6
    cs = cost_split(MAVConfig(layers=8, dim=256, heads=8))
    assert cs["head_share_35_moves"] < 0.05, cs
    return f"JAX vs numpy64 {d:.2g}; 9M size: trunk {cs['trunk_gflop']:.3f} GFLOP, 35 moves {cs['head_share_35_moves']:.1%}"


@check
def smoke_train_export_eval(shared):
    from .data import Dataset, build_dataset, label_files
    from .evaluate import eval_validation
    from .onepass_eval import MAVPolicy
    from .onepass_export import export, load_run, verify
    from .onepass_train import MAVTrainConfig, MAVTrainer, PositionData

    tmp = tempfile.mkdtemp(prefix="glimpse-mav-selftest-")
    try:
        build_dataset(label_files(shared)[:1], os.path.join(tmp, "data"), max_positions=150, log=lambda *_: None)
        ds = Dataset(os.path.join(tmp, "data"))
        pd = PositionData(ds)
        assert len(pd.train_pos) + len(pd.val_pos) == len(ds.states) and len(pd.val_pos) > 0
        tokens, actions, mask, rows = pd.batch(pd.train_pos[:5])
        assert tokens.shape == (5, 78) and (tokens[:, 0] == 0).all() and actions.shape[1] % 16 == 0
        for i, p in enumerate(pd.train_pos[:5]):
            want = set(np.flatnonzero(ds.row_pos == p).tolist())
            assert set(rows[i][mask[i]].tolist()) == want
            assert (tokens[i, 1:] == ds.states[p]).all() and (actions[i][~mask[i]] == 0).all()
        cfg = MAVTrainConfig(layers=1, dim=32, heads=2, batch=8, steps=12, lr=3e-3, warmup=2, eval_every=6,
                             eval_positions=32, ckpt_seconds=1e9)
        run = os.path.join(tmp, "run")
        os.makedirs(run)
        json.dump(cfg.__dict__, open(os.path.join(run, "config.json"), "w"))
        tr = MAVTrainer(cfg, run, ds, log=lambda *_: None)
        t, v = tr.targets(rows, mask)
        assert np.allclose(t[mask].sum(-1), 1, atol=1e-5) and (t[~mask] == 0).all() and np.allclose(v.sum(-1), 1, atol=1e-5)
        cfg.steps = 6
        assert tr.run()["step"] == 6
        cfg.steps = 12
        assert tr.run()["step"] == 12  # resumed
        recs = [json.loads(x) for x in open(os.path.join(run, "log.jsonl"))]
        assert [r["step"] for r in recs] == [6, 12] and all(np.isfinite(r["val_loss"]) for r in recs)
        params, mcfg, step = load_run(run)
        assert step == 12
        path = os.path.join(tmp, "m.onnx")
        meta = {p.key: p.value for p in export(params, mcfg, path).metadata_props}
        assert meta["glimpse.kind"] == "multi_action_value" and meta["glimpse.buckets"] == "128"
        assert int(meta["glimpse.params"]) == sum(v.size for v in params.values())
        tokens, actions, _, _ = pd.batch(pd.val_pos)
        diff = verify(params, mcfg, path, tokens, actions)
        assert diff < 1e-4, diff
        pol = MAVPolicy(path, positions_per_run=3)
        rep = eval_validation(pol, ds)
        assert 0 <= rep["action_accuracy"] <= 1 and -1 <= rep["kendall_tau"] <= 1 and np.isfinite(rep["val_loss"])
        # the grouped policy gives the same log-probs as one position at a time
        rows_av = ds.tokens(ds.val_rows)
        grouped = pol.win_probs_batch(rows_av)
        single = MAVPolicy(path, positions_per_run=1).win_probs_batch(rows_av)
        assert np.abs(grouped - single).max() < 1e-5
        assert pol.choose(chess.Board()) in chess.Board().legal_moves
        return f"12 steps + resume, export diff {diff:.2g}, val action acc {rep['action_accuracy']:.2f}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    from .selftest import run_checks

    run_checks(CHECKS, argv, "one-pass checks", __doc__)


if __name__ == "__main__":
    main()
