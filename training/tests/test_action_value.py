"""The action-value kind (``kinds/action_value.py``): smoke training of a few steps on a tiny dataset, resume,
export to ONNX through ``export.py`` (registry dispatch, ORT vs JAX on held-out rows) and directly without the
last-layer optimisation, and evaluation through ``evaluate.py`` and the policy."""

from __future__ import annotations

import json
import os

import chess
import numpy as np
import pytest
from conftest import TINY_POSITIONS

from glimpse_train.evaluate import kendall_tau_b
from glimpse_train.kinds import action_value as av
from glimpse_train.onnx_graph import onnx_meta


def test_forward_numpy_vs_jax():
    import jax.numpy as jnp

    cfg = av.ModelConfig(layers=2, dim=32, heads=4)
    p = av.init_params(cfg, 1, emb_init_scale=1.0)
    tok = np.random.default_rng(2).integers(0, 31, (3, cfg.seq_len))
    ref = av.numpy_forward(p, cfg, tok)
    got = np.asarray(av.jax_forward({k: jnp.asarray(v) for k, v in p.items()}, cfg, jnp.asarray(tok)))
    assert got.shape == (3, cfg.out_size) and np.abs(got - ref).max() < 1e-4


def test_smoke_train_export_eval(tiny_ds, in_run_folder, shared):
    from glimpse_train import evaluate, export

    ds = tiny_ds
    assert len(ds.val_rows) > 0 and len(ds.train_rows) > 10 * len(ds.val_rows)
    tok = ds.tokens(ds.train_rows[:3])
    assert tok.shape == (3, 79) and (tok[:, 0] == 0).all()
    cfg = av.TrainConfig(layers=1, dim=32, heads=2, batch=32, steps=12, lr=3e-3, warmup=2, eval_every=6,
                         eval_rows=64, ckpt_seconds=1e9, max_positions=TINY_POSITIONS)
    run = os.path.join("runs", "run")
    os.makedirs(run)
    json.dump(cfg.__dict__, open(os.path.join(run, "config.json"), "w"))
    tr = av.Trainer(cfg, run, ds, log=lambda *_: None)
    cfg.steps = 6
    st = tr.run()
    assert st["step"] == 6 and os.path.exists(os.path.join(run, "ckpt.pkl"))
    cfg.steps = 12
    st = tr.run()  # resumes from the checkpoint just written
    assert st["step"] == 12
    recs = [json.loads(x) for x in open(os.path.join(run, "log.jsonl"))]
    assert [r["step"] for r in recs] == [6, 12] and all(np.isfinite(r["val_loss"]) for r in recs)
    # make export: the registry picks the kind from config.json (no kind field: action value)
    with pytest.raises(SystemExit) as e:
        export.main(["--run", "run", "--shared", shared])
    assert e.value.code == 0
    info = json.load(open(os.path.join(run, "export.json")))
    assert info["step"] == 12 and info["max_abs_diff"] < 1e-4
    path = os.path.join(run, "model.onnx")
    meta = onnx_meta(path)
    params, mcfg, step = av.load_run(run)
    assert step == 12
    assert meta["glimpse.kind"] == "action_value" and meta["glimpse.buckets"] == "128"
    assert int(meta["glimpse.params"]) == sum(v.size for v in params.values())
    assert float(meta["glimpse.gflop_per_eval"]) > 0
    # one product per projection, no Split (ONNX Runtime's Split copies its output)
    import onnx

    assert "Split" not in [n.op_type for n in onnx.load(path).graph.node]
    # the last-layer optimisation must not change outputs
    path2 = "m_full.onnx"
    av.export(params, mcfg, path2, optimise_last_layer=False)
    diff2 = av.verify(params, mcfg, path2, ds.tokens(ds.val_rows[:64]))
    assert diff2 < 1e-4, diff2
    # make evaluate: the policy comes from the file's glimpse.kind
    evaluate.main(["--run", "run", "--shared", shared, "--puzzles", "3"])
    rep = json.load(open(os.path.join(run, "eval", "report.json")))
    assert 0 <= rep["action_accuracy"] <= 1 and -1 <= rep["kendall_tau"] <= 1 and rep["puzzles"] == 3
    pol = av.AVPolicy(path)
    assert pol.choose(chess.Board()) in chess.Board().legal_moves


def test_kendall_tau_b():
    assert abs(kendall_tau_b(np.array([1., 2, 3]), np.array([1., 2, 3])) - 1) < 1e-12
    assert abs(kendall_tau_b(np.array([1., 2, 3]), np.array([3., 2, 1])) + 1) < 1e-12
