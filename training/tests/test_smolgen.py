"""Smolgen (Lc0's BT2+ attention-bias generator) in the one-pass kind: the float64 reference, JAX and both
ONNX graphs agree, the file imports back to the same weights, a zero shared projection leaves the net's
outputs unchanged (``grow.add_smolgen``) while its gradient is not zero, and ``grow --smolgen`` writes such a
file from a trained net."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from glimpse_train import grow
from glimpse_train.kinds import multi_action_value as mav
from glimpse_train.transformer import SMOLGEN_GLOBAL

CFG = mav.MAVConfig(layers=2, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True, head_global=True,
                    canonical=True, policy_dim=8, wdl_head=True, smolgen=6, smolgen_compress=3, smolgen_hidden=10)


def _inputs(seed: int, b: int = 3, m: int = 7):
    rng = np.random.default_rng(seed)
    tok = np.zeros((b, 78), np.int64)
    tok[:, 1:] = rng.integers(0, 31, (b, 77))
    return tok, rng.integers(0, 1968, (b, m))


def _jax_outputs(p, cfg, tok, act) -> dict:
    import jax.numpy as jnp

    out = mav.jax_outputs({k: jnp.asarray(v) for k, v in p.items()}, cfg, jnp.asarray(tok, jnp.int32),
                          jnp.asarray(act, jnp.int32))
    return {k: np.asarray(v) for k, v in out.items()}


def test_shapes_cost_and_config_from_params():
    p = mav.param_shapes(CFG)
    assert p[SMOLGEN_GLOBAL] == (6, 78 * 78), "one projection shared by the layers"
    assert p["multi_head_dot_product_attention_1/smolgen/dense1/w"] == (78 * 3, 10)
    assert p["multi_head_dot_product_attention/smolgen/dense2/w"] == (10, 4 * 6)
    assert p["multi_head_dot_product_attention/smolgen/ln2/scale"] == (6,)
    plain = dataclasses.replace(CFG, smolgen=0)
    added = mav.num_params(CFG) - mav.num_params(plain)
    per_layer = 32 * 3 + 78 * 3 * 10 + 10 + 2 * 10 + 10 * 24 + 24 + 2 * 6
    assert added == 2 * per_layer + 6 * 78 * 78
    flops = 2 * 2 * (78 * 32 * 3 + 78 * 3 * 10 + 10 * 24 + 24 * 78 * 78) / 1e9
    assert mav.cost_split(CFG)["trunk_gflop"] - mav.cost_split(plain)["trunk_gflop"] == pytest.approx(flops)
    # the side-to-move frame is metadata, not a parameter
    assert mav.infer_config(mav.init_params(CFG), heads=4) == dataclasses.replace(CFG, canonical=False)


def test_reference_jax_and_both_onnx_graphs_agree_and_reimport(tmp_path):
    import onnx

    from glimpse_train.onnx_graph import onnx_meta, ort_session
    from glimpse_train.onnx_import import import_onepass

    p = mav.perturbed_params(CFG, 3)
    tok, act = _inputs(4)
    ref = mav.numpy_outputs(p, CFG, tok, act)
    jx = _jax_outputs(p, CFG, tok, act)
    names = sorted(ref)
    assert names == ["log_probs", "policy", "value", "wdl"]
    for n in names:
        assert float(np.abs(jx[n] - ref[n]).max()) < 1e-4, n
    # the smolgen matters: without it (same other weights) the outputs move
    plain = dataclasses.replace(CFG, smolgen=0)
    no_sg = mav.numpy_outputs({k: v for k, v in p.items() if k in mav.param_shapes(plain)}, plain, tok, act)
    assert float(np.abs(no_sg["log_probs"] - ref["log_probs"]).max()) > 1e-2
    for fused in (False, True):
        path = str(tmp_path / f"sg{int(fused)}.onnx")
        onnx.save(mav.build_model(p, CFG, fused_attention=fused), path)
        got = ort_session(path).run(names, {"tokens": tok, "actions": act})
        for n, g in zip(names, got):
            assert float(np.abs(g - ref[n]).max()) < 1e-4, (fused, n)
        assert onnx_meta(path)["glimpse.smolgen"] == "6,3,10"
        back, cfg2 = import_onepass(path)
        assert cfg2 == CFG and set(back) == set(p)
        assert all(np.allclose(back[k], p[k], atol=1e-6) for k in p)


def test_added_smolgen_keeps_the_outputs_and_its_projection_gets_a_gradient():
    import jax
    import jax.numpy as jnp

    plain = dataclasses.replace(CFG, smolgen=0)
    src = mav.perturbed_params(plain, 5)
    p, cfg = grow.add_smolgen(src, plain, 6, compress=3, hidden=10, seed=1)
    assert cfg == CFG and not p[SMOLGEN_GLOBAL].any()
    assert all(np.array_equal(p[k], src[k]) for k in src), "the source's weights are copied"
    tok, act = _inputs(6)
    before, after = mav.numpy_outputs(src, plain, tok, act), mav.numpy_outputs(p, cfg, tok, act)
    for n in before:
        assert float(np.abs(before[n] - after[n]).max()) < 1e-9, n

    def loss(g):
        q = {k: jnp.asarray(v) for k, v in p.items()}
        q[SMOLGEN_GLOBAL] = g
        out = mav.jax_outputs(q, cfg, jnp.asarray(tok, jnp.int32), jnp.asarray(act, jnp.int32))
        return jnp.sum(out["log_probs"][..., 0])

    grad = jax.grad(loss)(jnp.asarray(p[SMOLGEN_GLOBAL]))
    assert float(jnp.abs(grad).max()) > 1e-6
    with pytest.raises(ValueError, match="already"):
        grow.add_smolgen(p, cfg, 6)
    with pytest.raises(ValueError, match="positive"):
        grow.add_smolgen(src, plain, 0)
    with pytest.raises(ValueError, match="deepen"):
        grow.grow_params(p, cfg, 3)


def test_grow_cli_adds_a_smolgen_and_the_trainer_keeps_it(tmp_path, capsys):
    from glimpse_train.onnx_import import import_onepass

    plain = dataclasses.replace(CFG, smolgen=0)
    src, out = str(tmp_path / "plain.onnx"), str(tmp_path / "sg.onnx")
    mav.export(mav.perturbed_params(plain, 8), plain, src)
    assert grow.main(["--net", src, "--smolgen", "16", "--out", out]) == 0
    assert "smolgen G16" in capsys.readouterr().out
    _, cfg = import_onepass(out)
    assert (cfg.layers, cfg.smolgen, cfg.smolgen_compress, cfg.smolgen_hidden) == (2, 16, 8, 128)
    tcfg = mav.with_start_architecture(mav.MAVTrainConfig(policy_dim=8, wdl_weight=0.1), cfg)
    assert tcfg.model() == dataclasses.replace(cfg, value_head=True)
    assert grow.main(["--net", out, "--smolgen", "16", "--out", str(tmp_path / "x.onnx")]) == 1
    assert "already" in capsys.readouterr().err
