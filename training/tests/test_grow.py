"""Depth growth of a one-pass net (``grow.py``): where the new blocks go, that the grown net computes what
its source computes (numpy reference and through ONNX Runtime), that the new blocks can learn (their output
projections get a gradient), and the CLI's refusals."""

from __future__ import annotations

import numpy as np
import pytest

from glimpse_train import grow
from glimpse_train.kinds import multi_action_value as mav
from glimpse_train.transformer import attn_name, lin_name, ln_name

CFG = mav.MAVConfig(layers=2, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True, head_global=True,
                    canonical=True, policy_dim=8, wdl_head=True)


def _inputs(n=3, moves=7, seed=1):
    rng = np.random.default_rng(seed)
    tok = np.zeros((n, 78), np.int64)
    tok[:, 1:] = rng.integers(0, 31, (n, 77))
    return tok, rng.integers(0, 1968, (n, moves))


def test_insert_after_spreads_the_new_blocks():
    assert grow.insert_after(6, 10) == [0, 1, 3, 4]
    assert grow.insert_after(6, 6) == []
    assert grow.insert_after(2, 3) == [0]
    many = grow.insert_after(2, 7)  # more new blocks than source blocks: indices repeat, stay in range
    assert len(many) == 5 and many == sorted(many) and set(many) <= {0, 1}
    for bad in ((6, 5), (0, 3)):
        with pytest.raises(ValueError):
            grow.insert_after(*bad)


def test_grown_params_compute_the_same_outputs_and_keep_the_source_blocks():
    p = mav.perturbed_params(CFG, 5)
    g, gcfg = grow.grow_params(p, CFG, 5)
    assert gcfg.layers == 5 and set(g) == set(mav.param_shapes(gcfg))
    tok, act = _inputs()
    want, got = mav.numpy_outputs(p, CFG, tok, act), mav.numpy_outputs(g, gcfg, tok, act)
    assert set(want) == set(got) and {"log_probs", "policy", "wdl"} <= set(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], atol=1e-9, err_msg=k)
    # order: source 0, new, new, source 1, new (insert_after(2, 5) == [0, 0, 1])
    assert grow.insert_after(2, 5) == [0, 0, 1]
    src_of = {0: 0, 3: 1}
    for j in range(5):
        a = attn_name(j)
        if j in src_of:
            i = src_of[j]
            np.testing.assert_array_equal(g[f"{a}/linear/w"], p[f"{attn_name(i)}/linear/w"])
            np.testing.assert_array_equal(g[f"{lin_name(3 * j + 2)}/w"], p[f"{lin_name(3 * i + 2)}/w"])
            np.testing.assert_array_equal(g[f"{ln_name(2 * j + 1)}/scale"], p[f"{ln_name(2 * i + 1)}/scale"])
        else:
            assert not g[f"{a}/linear_3/w"].any() and not g[f"{lin_name(3 * j + 2)}/w"].any()
            assert g[f"{a}/linear/w"].std() > 0 and g[f"{lin_name(3 * j)}/w"].std() > 0
            assert not g[f"{a}/pair_bias"].any() and (g[f"{ln_name(2 * j)}/scale"] == 1).all()
    np.testing.assert_array_equal(g[f"{ln_name(10)}/scale"], p[f"{ln_name(4)}/scale"])
    np.testing.assert_array_equal(g["mav_head/linear_out/w"], p["mav_head/linear_out/w"])


def test_new_blocks_get_a_gradient_on_their_output_projections():
    import jax
    import jax.numpy as jnp

    g, gcfg = grow.grow_params(mav.perturbed_params(CFG, 5), CFG, 3)
    tok, act = _inputs()
    jp = {k: jnp.asarray(v) for k, v in g.items()}

    def loss(q):
        lp, _ = mav.jax_forward(q, gcfg, jnp.asarray(tok, jnp.int32), jnp.asarray(act, jnp.int32))
        return -lp[..., -1].mean()

    grads = jax.grad(loss)(jp)
    new = 1  # insert_after(2, 3) == [0]: block 1 is new
    assert float(jnp.abs(grads[f"{attn_name(new)}/linear_3/w"]).max()) > 0
    assert float(jnp.abs(grads[f"{lin_name(3 * new + 2)}/w"]).max()) > 0


def test_grow_cli_writes_an_equal_onnx_and_refuses_bad_requests(tmp_path, capsys):
    from glimpse_train.onnx_graph import onnx_meta
    from glimpse_train.onnx_import import import_onepass

    src, out = str(tmp_path / "src.onnx"), str(tmp_path / "grown.onnx")
    mav.export(mav.perturbed_params(CFG, 3), CFG, src, description="tiny")
    assert grow.main(["--net", src, "--layers", "4", "--out", out]) == 0
    said = capsys.readouterr().out
    assert "L2 -> L4" in said and "largest output difference" in said
    _, cfg = import_onepass(out)
    assert cfg.layers == 4 and cfg.policy_dim == 8 and cfg.wdl_head
    assert "grown L2 -> L4" in onnx_meta(out)["glimpse.description"]
    assert grow.main(["--net", src, "--layers", "1", "--out", str(tmp_path / "x.onnx")]) == 1
    assert "cannot grow 2 layers to 1" in capsys.readouterr().err
    assert grow.main(["--net", str(tmp_path / "missing.onnx"), "--layers", "4", "--out", str(tmp_path / "y.onnx")]) == 1
