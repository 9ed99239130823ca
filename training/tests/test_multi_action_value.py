"""The one-pass kind (``kinds/multi_action_value.py``):

1. square/token tables (a8 → 2, h1 → 65, castling and promotions by their squares), numpy vs JAX forward,
   padding invariance, the cost split (head ≪ trunk at the 9M size);
2. position grouping of the dataset (every labelled move of a position in its row, masks, targets);
3. smoke training (a few steps, resume), ``export.py`` (registry dispatch; the kind in metadata, ORT vs JAX
   ≤ 1e-4), ``evaluate.py`` (the one-pass policy picked from the file) and the policy's position grouping.
"""

from __future__ import annotations

import json
import os

import chess
import numpy as np
import pytest
from conftest import TINY_POSITIONS

from glimpse_train.chessdata import MOVE_TO_ACTION
from glimpse_train.kinds import multi_action_value as mav
from glimpse_train.onnx_graph import onnx_meta


def test_tables():
    a = MOVE_TO_ACTION
    assert mav.FROM_TOKEN[a["a8b8"]] == 2 and mav.TO_TOKEN[a["a8b8"]] == 3
    assert mav.FROM_TOKEN[a["h1h2"]] == 65 and mav.TO_TOKEN[a["h1h2"]] == 57
    assert (mav.FROM_TOKEN[a["e1g1"]], mav.TO_TOKEN[a["e1g1"]]) == (2 + 56 + 4, 2 + 56 + 6)
    for pc in "qrbn":  # promotions differ only by the action id
        assert mav.FROM_TOKEN[a["e7e8" + pc]] == 2 + 8 + 4 and mav.TO_TOKEN[a["e7e8" + pc]] == 2 + 4


def test_forward_numpy_vs_jax_and_padding():
    import jax.numpy as jnp

    cfg = mav.MAVConfig(layers=2, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True, head_global=True)
    p = mav.perturbed_params(cfg, 7)
    rng = np.random.default_rng(1)
    tok = np.zeros((2, 78), np.int64)
    tok[:, 1:] = rng.integers(0, 31, (2, 77))
    act = rng.integers(0, 1968, (2, 9))
    ref, rv = mav.numpy_forward(p, cfg, tok, act)
    jp = {k: jnp.asarray(v) for k, v in p.items()}
    lp, v = mav.jax_forward(jp, cfg, jnp.asarray(tok, jnp.int32), jnp.asarray(act, jnp.int32))
    d = max(float(np.abs(np.asarray(lp) - ref).max()), float(np.abs(np.asarray(v) - rv).max()))
    assert d < 1e-4, d
    padded = np.concatenate([act, act[:, :3] * 0], 1)
    lp2, _ = mav.jax_forward(jp, cfg, jnp.asarray(tok, jnp.int32), jnp.asarray(padded, jnp.int32))
    assert float(np.abs(np.asarray(lp2)[:, :9] - np.asarray(lp)).max()) < 1e-6


def test_cost_split():
    cs = mav.cost_split(mav.MAVConfig(layers=8, dim=256, heads=8))
    assert cs["head_share_35_moves"] < 0.05, cs


def test_smoke_train_export_eval(tiny_ds, in_run_folder, shared):
    from glimpse_train import evaluate, export

    ds = tiny_ds
    pd = mav.PositionData(ds)
    assert len(pd.train_pos) + len(pd.val_pos) == len(ds.states) and len(pd.val_pos) > 0
    tokens, actions, mask, rows = pd.batch(pd.train_pos[:5])
    assert tokens.shape == (5, 78) and (tokens[:, 0] == 0).all() and actions.shape[1] % 16 == 0
    for i, p in enumerate(pd.train_pos[:5]):
        want = set(np.flatnonzero(ds.row_pos == p).tolist())
        assert set(rows[i][mask[i]].tolist()) == want
        assert (tokens[i, 1:] == ds.states[p]).all() and (actions[i][~mask[i]] == 0).all()
    cfg = mav.MAVTrainConfig(layers=1, dim=32, heads=2, batch=8, steps=12, lr=3e-3, warmup=2, eval_every=6,
                             eval_positions=32, ckpt_seconds=1e9, max_positions=TINY_POSITIONS)
    run = os.path.join("runs", "run")
    os.makedirs(run)
    json.dump(cfg.__dict__, open(os.path.join(run, "config.json"), "w"))
    tr = mav.MAVTrainer(cfg, run, ds, log=lambda *_: None)
    (table,) = tr.constants()
    idx, best = tr.target_index(rows, mask)
    t, v = table[idx], table[best]
    assert np.allclose(t[mask].sum(-1), 1, atol=1e-5) and np.allclose(v.sum(-1), 1, atol=1e-5)
    cfg.steps = 6
    assert tr.run()["step"] == 6
    cfg.steps = 12
    assert tr.run()["step"] == 12  # resumed
    recs = [json.loads(x) for x in open(os.path.join(run, "log.jsonl"))]
    assert [r["step"] for r in recs] == [6, 12] and all(np.isfinite(r["val_loss"]) for r in recs)
    # make export: the registry picks the kind from config.json
    with pytest.raises(SystemExit) as e:
        export.main(["--run", "run", "--shared", shared])
    assert e.value.code == 0
    info = json.load(open(os.path.join(run, "export.json")))
    assert info["kind"] == "multi_action_value" and info["step"] == 12 and info["max_abs_diff"] < 1e-4
    params, mcfg, step = mav.load_run(run)
    assert step == 12
    path = os.path.join(run, "model.onnx")
    meta = onnx_meta(path)
    assert meta["glimpse.kind"] == "multi_action_value" and meta["glimpse.buckets"] == "128"
    assert int(meta["glimpse.params"]) == sum(v.size for v in params.values())
    tokens, actions, _, _ = pd.batch(pd.val_pos)
    diff = mav.verify(params, mcfg, path, tokens, actions)
    assert diff < 1e-4, diff
    # make evaluate: the policy comes from the file's glimpse.kind
    evaluate.main(["--run", "run", "--shared", shared, "--puzzles", "3"])
    rep = json.load(open(os.path.join(run, "eval", "report.json")))
    assert 0 <= rep["action_accuracy"] <= 1 and -1 <= rep["kendall_tau"] <= 1 and np.isfinite(rep["val_loss"])
    assert rep["puzzles"] == 3
    pol = mav.MAVPolicy(path, positions_per_run=3)
    # the grouped policy gives the same log-probs as one position at a time
    rows_av = ds.tokens(ds.val_rows)
    grouped = pol.win_probs_batch(rows_av)
    single = mav.MAVPolicy(path, positions_per_run=1).win_probs_batch(rows_av)
    assert np.abs(grouped - single).max() < 1e-5
    assert pol.choose(chess.Board()) in chess.Board().legal_moves


def test_micro_batches_give_the_whole_batch_loss_and_gradient(tiny_ds, tmp_path):
    """``micro`` = 4 splits a step's 8 positions into 4 slices of 2 with different move counts; the mean of
    their losses and gradients is the whole batch's (every loss term is a mean over positions), so the
    optimiser sees the same update; a ``micro`` that does not divide the batch is refused."""
    import jax

    pd_ = dict(layers=1, dim=32, heads=2, batch=8, lr=3e-3, warmup=2, max_positions=TINY_POSITIONS, policy_dim=16,
               wdl_weight=0.1, value_weight=0.1)
    one = mav.MAVTrainer(mav.MAVTrainConfig(**pd_), str(tmp_path / "a"), tiny_ds, log=lambda *_: None)
    four = mav.MAVTrainer(mav.MAVTrainConfig(**pd_, micro=4), str(tmp_path / "b"), tiny_ds, log=lambda *_: None)
    assert four.micro == 4
    params = {k: jax.numpy.asarray(v) for k, v in one.init_params().items()}
    arrays, n = one.make_batch(one.step_items(3))
    moves = arrays[2].reshape(4, 2, -1).sum(axis=(1, 2))
    assert len(set(moves.tolist())) > 1, "the slices differ in moves: a plain mean of slice losses would be off"
    arrays = tuple(map(jax.numpy.asarray, arrays))
    consts = tuple(map(jax.numpy.asarray, one.constants()))
    l1, g1 = one._loss_and_grad(params, consts, *arrays)
    l4, g4 = four._loss_and_grad(params, consts, *arrays)
    assert abs(float(l1) - float(l4)) < 1e-5 * abs(float(l1))
    for k in g1:
        assert np.allclose(np.asarray(g1[k]), np.asarray(g4[k]), rtol=1e-3, atol=1e-6), k
    with pytest.raises(ValueError, match="divide"):
        mav.MAVTrainer(mav.MAVTrainConfig(**pd_, micro=3), str(tmp_path / "c"), tiny_ds, log=lambda *_: None)


@pytest.mark.parametrize("attn_bias", [True, False])
def test_fused_attention_export_matches_the_plain_graph_and_reimports(tmp_path, attn_bias):
    """``build_model(fused_attention=True)`` (ONNX Runtime's MultiHeadAttention) computes what the plain
    graph computes, drops its per-head Reshape/Transpose nodes, and imports back to the same weights."""
    import onnx

    from glimpse_train.onnx_graph import ort_session
    from glimpse_train.onnx_import import import_onepass

    cfg = mav.MAVConfig(layers=2, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=attn_bias,
                        head_global=True, canonical=True)
    p = mav.perturbed_params(cfg, 11)
    rng = np.random.default_rng(5)
    tok = np.zeros((3, 78), np.int64)
    tok[:, 1:] = rng.integers(0, 31, (3, 77))
    act = rng.integers(0, 1968, (3, 7))
    outs = {}
    for fused in (False, True):
        path = str(tmp_path / f"f{int(fused)}.onnx")
        model = mav.build_model(p, cfg, fused_attention=fused)
        onnx.save(model, path)
        ops = [n.op_type for n in model.graph.node]
        assert ops.count("MultiHeadAttention") == (cfg.layers if fused else 0)
        assert ops.count("Transpose") == (0 if fused else 2 * cfg.layers)
        outs[fused] = ort_session(path).run(["log_probs"], {"tokens": tok, "actions": act})[0]
        back, cfg2 = import_onepass(path)
        assert cfg2.attn_bias == attn_bias and all(np.allclose(back[k], p[k], atol=1e-6) for k in p)
    assert float(np.abs(outs[True] - outs[False]).max()) < 1e-5


def _fused_projection_weights(model):
    """``model``'s initializers as the exporter wrote them before 2026-11-26 (the importer reads only
    initializers and metadata): each layer's Q, K, V as one ``wqkv`` [D, 3D] matrix, each gate/up pair as
    one ``w12`` [D, 2H] matrix."""
    import copy
    import re

    from onnx import numpy_helper

    m = copy.deepcopy(model)
    init = {t.name: t for t in m.graph.initializer}
    groups: dict[str, dict[int, str]] = {}
    for w in init:
        tag = re.sub(r"_\d+$", "", w)
        if q := re.fullmatch(r"w([qkv])(\d+)", tag):
            groups.setdefault(f"wqkv{q[2]}", {})["qkv".index(q[1])] = w
        elif u := re.fullmatch(r"w([gu])_(\w+)", tag):
            groups.setdefault(f"w12_{u[2]}", {})["gu".index(u[1])] = w
    for j, (fused, parts) in enumerate(groups.items()):
        arrs = []
        for k in sorted(parts):
            a = numpy_helper.to_array(init[parts[k]])
            # heads-major [H, D, dh] → [D, D]
            arrs.append(a.transpose(1, 0, 2).reshape(a.shape[1], -1) if a.ndim == 3 else a)
            m.graph.initializer.remove(init[parts[k]])
        m.graph.initializer.append(numpy_helper.from_array(np.concatenate(arrs, axis=1), f"{fused}_{90000 + j}"))
    return m


def test_export_layout_and_earlier_layouts_import(tmp_path):
    """The exporter writes Q, K, V as per-head products straight into [B, H, T, dh] and gate, up as separate
    products: no Split (which ONNX Runtime runs as a copy) and two Transposes per layer; the file imports
    back to the same weights, and so do the initializers of the earlier fused layout."""
    import onnx

    from glimpse_train.onnx_import import import_onepass

    cfg = mav.MAVConfig(layers=2, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True, head_global=True,
                        canonical=True, policy_dim=16, wdl_head=True)
    p = mav.perturbed_params(cfg, 7)
    model = mav.build_model(p, cfg)
    ops = [n.op_type for n in model.graph.node]
    assert "Split" not in ops and ops.count("Transpose") == 2 * cfg.layers
    legacy = _fused_projection_weights(model)
    names = {t.name.rsplit("_", 1)[0] for t in legacy.graph.initializer}
    assert {"wqkv0", "w12_0", "w12_head"} <= names and "wq0" not in names
    for name, m in (("new", model), ("legacy", legacy)):
        path = str(tmp_path / f"{name}.onnx")
        onnx.save(m, path)
        back, _ = import_onepass(path)
        assert set(back) == set(p) and all(np.allclose(back[k], p[k], atol=1e-6) for k in p), name


def test_reexport_cli_writes_a_fused_twin_and_refuses_an_int8_net(tmp_path, capsys):
    import onnx

    from glimpse_train import onnx_import

    cfg = mav.MAVConfig(layers=1, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True, head_global=True)
    src, out = str(tmp_path / "plain.onnx"), str(tmp_path / "fused.onnx")
    mav.export(mav.perturbed_params(cfg, 3), cfg, src, description="tiny")
    assert onnx_import.main(["--net", src, "--out", out]) == 0
    assert "fused attention" in capsys.readouterr().out
    model = onnx.load(out)
    assert [n.op_type for n in model.graph.node].count("MultiHeadAttention") == 1
    assert {p.key: p.value for p in model.metadata_props}["glimpse.description"] == "tiny"
    int8 = onnx.load(src)
    int8.metadata_props.add(key="glimpse.precision", value="int8")
    onnx.save(int8, str(tmp_path / "int8.onnx"))
    assert onnx_import.main(["--net", str(tmp_path / "int8.onnx"), "--out", str(tmp_path / "x.onnx")]) == 1
    assert "re-export the float32 source" in capsys.readouterr().err


@pytest.mark.parametrize("sigma", [0.75, 0.0])
def test_targets_from_the_table_equal_soft_targets_row_by_row(tiny_ds, tmp_path, sigma):
    """The batch's indices into the ``constants`` table give exactly ``soft_targets`` of each move's win
    probability and of the position's best; the table has one row per distinct win probability, padded with
    zero rows to a fixed multiple so that its shape does not change as the dataset grows."""
    from glimpse_train.trainloop import soft_targets

    cfg = mav.MAVTrainConfig(layers=1, dim=16, heads=2, batch=8, hl_sigma=sigma)
    tr = mav.MAVTrainer(cfg, str(tmp_path / "run"), tiny_ds, log=lambda *_: None)
    pos = tr.pd.train_pos[:8]
    _, _, mask, rows = tr.pd.batch(pos)
    (table,) = tr.constants()
    idx, best = tr.target_index(rows, mask)
    k = tr.mcfg.buckets
    assert idx.shape == rows.shape and idx.dtype == np.int32 and best.shape == (8,)
    want = soft_targets(tiny_ds.row_p[rows[mask]], k, sigma)
    assert np.array_equal(table[idx][mask], want)
    pbest = np.where(mask, tiny_ds.row_p[np.maximum(rows, 0)], -1.0).max(1)
    assert np.array_equal(table[best], soft_targets(pbest, k, sigma))
    distinct = len(np.unique(tiny_ds.row_p))  # one row per distinct win probability, then zero rows
    assert len(table) % tr.TABLE_ROWS == 0 and len(table) >= distinct
    assert np.allclose(table[:distinct].sum(1), 1, atol=1e-5) and not table[distinct:].any()


def test_wdl_targets_equal_python_chess_sf15_1_model():
    """The vectorised WDL targets give python-chess's ``Cp(cp).wdl(model="sf15.1", ply)`` exactly, with
    mates (win probability 1 or 0) as certain wins or losses, at plies from both sides' move numbers."""
    import math

    import chess.engine

    from glimpse_train.chessdata import CHAR_TO_ID, LICHESS_K
    from glimpse_train.heads import fullmove_of, wdl_targets

    rng = np.random.default_rng(1)
    n = 3000
    states = np.zeros((n, 77), np.int32)
    states[:, 0] = np.where(rng.random(n) < 0.5, CHAR_TO_ID["b"], CHAR_TO_ID["w"])
    for i, f in enumerate(rng.integers(1, 300, n)):
        states[i, 74:77] = [CHAR_TO_ID[c] for c in str(f).ljust(3, ".")]
    p = rng.random(n)
    p[:20], p[20:40], p[40:60], p[60:80] = 0.0, 1.0, rng.random(20) * 1e-9, 1 - rng.random(20) * 1e-9
    got = wdl_targets(p, states)
    ply = 2 * (fullmove_of(states) - 1) + (states[:, 0] == CHAR_TO_ID["b"])
    for i in range(n):
        if p[i] >= 1.0 or p[i] <= 0.0:
            want = (1, 0, 0) if p[i] >= 1.0 else (0, 0, 1)
        else:
            w = chess.engine.Cp(int(round(math.log(p[i] / (1 - p[i])) / LICHESS_K))).wdl(model="sf15.1", ply=int(ply[i]))
            want = (w.wins / 1000, w.draws / 1000, w.losses / 1000)
        assert tuple(got[i]) == tuple(np.float32(want)), (i, p[i], ply[i])


def test_padded_batches_have_one_width_and_the_same_loss(tiny_ds, tmp_path):
    """``pad_moves`` (one array shape for a GPU run) pads with masked slots only: same loss as the tight batch."""
    import jax

    tight = mav.MAVTrainer(mav.MAVTrainConfig(layers=1, dim=16, heads=2, batch=8, policy_dim=8, wdl_weight=0.1),
                           str(tmp_path / "a"), tiny_ds, log=lambda *_: None)
    padded = mav.MAVTrainer(mav.MAVTrainConfig(layers=1, dim=16, heads=2, batch=8, policy_dim=8, wdl_weight=0.1,
                                               pad_moves=112), str(tmp_path / "b"), tiny_ds, log=lambda *_: None)
    pos = tight.pd.train_pos[:8]
    a, na = tight.make_batch(pos)
    b, nb = padded.make_batch(pos)
    assert a[1].shape[1] < 112 and b[1].shape == (8, 112) and b[2].shape == (8, 112)
    assert na == nb and b[2].sum() == a[2].sum()
    params = {k: jax.numpy.asarray(v) for k, v in tight.init_params().items()}
    la, lb = float(tight.loss(params, *a, *tight.constants())), float(padded.loss(params, *b, *padded.constants()))
    assert abs(la - lb) < 1e-5 * max(1.0, abs(la)), (la, lb)
