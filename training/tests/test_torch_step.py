"""The PyTorch training step (``torch_step.py``, ``kinds/mav_torch.py``): the forward pass against the float64
reference, the loss and a full update against the JAX step, bfloat16 against float32, and a run that moves
between the two backends through ``ckpt.pkl``. Skipped where PyTorch is not installed (``make torch-setup``;
CI installs it)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import TINY_POSITIONS

from glimpse_train.kinds import multi_action_value as mav

torch = pytest.importorskip("torch")

from glimpse_train.kinds.mav_torch import host_inputs, torch_outputs  # noqa: E402
from glimpse_train.torch_step import TorchStep  # noqa: E402

FULL = dict(layers=2, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True, head_global=True, canonical=True,
            policy_dim=8, wdl_head=True, smolgen=4, smolgen_compress=2, smolgen_hidden=16)


def _inputs(rng, b=3, m=11):
    tok = np.zeros((b, 78), np.int64)
    tok[:, 1:] = rng.integers(0, 31, (b, 77))
    tok[0, 1], tok[1, 1] = 14, 19  # one black, one white to move (`canonical` rewrites the first)
    return tok, rng.integers(0, 1968, (b, m))


@pytest.mark.parametrize("arch", [FULL, dict(layers=1, dim=16, heads=2)], ids=["all-options", "plain"])
def test_forward_matches_the_float64_reference(arch):
    cfg = mav.MAVConfig(**arch)
    p = mav.perturbed_params(cfg, 3)
    tok, act = _inputs(np.random.default_rng(2))
    ref = mav.numpy_outputs(p, cfg, tok, act)
    tp = {k: torch.from_numpy(v) for k, v in p.items()}
    out = torch_outputs(tp, cfg, *map(torch.from_numpy, host_inputs(cfg, tok, act)))
    assert set(out) == set(ref)
    for k in ref:
        assert np.abs(out[k].numpy() - ref[k]).max() < 1e-4, k
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = torch_outputs(tp, cfg, *map(torch.from_numpy, host_inputs(cfg, tok, act)))
    assert low["log_probs"].dtype == torch.float32
    # bfloat16 products: close, not equal (8 bits of mantissa)
    d = np.abs(low["log_probs"].numpy() - ref["log_probs"]).max()
    assert 0 < d < 0.5, d


def _trainer(tiny_ds, path, backend, **kw):
    cfg = mav.MAVTrainConfig(layers=2, dim=32, heads=4, batch=8, lr=3e-3, warmup=2, steps=6, eval_every=3,
                             eval_positions=16, max_positions=TINY_POSITIONS, policy_dim=8, wdl_weight=0.1,
                             value_weight=0.1, attn_bias=1, head_global=1, canonical=1, smolgen=4, ckpt_seconds=1e9,
                             **kw)
    return mav.MAVTrainer(cfg, str(path), tiny_ds, log=lambda *_: None, backend=backend)


@pytest.mark.parametrize("micro", [1, 4])
def test_a_float32_step_is_the_jax_step(tiny_ds, tmp_path, micro):
    """Same start, same batch, step 3 (past warmup, so the learning rate, bias correction, clipping and weight
    decay all act; the decay set large enough to show): params, EMA, Adam moments and counts agree with optax's within float32 rounding."""
    import jax

    jx = _trainer(tiny_ds, tmp_path / "j", "jax", micro=micro, weight_decay=0.3)  # a decay as large as the 1e-5
    tt = _trainer(tiny_ds, tmp_path / "t", "torch", micro=micro, weight_decay=0.3)  # tolerance below
    tt._step = TorchStep(tt, bf16=False)
    st = jx.fresh_state()
    rough = mav.perturbed_params(jx.mcfg, 5)  # every parameter gets a gradient (smolgen's projection starts at 0)
    st["params"] = {k: jax.numpy.asarray(v) for k, v in rough.items()}
    st["ema"] = {k: jax.numpy.asarray(v * 0.9) for k, v in rough.items()}
    st["opt_state"] = jax.tree_util.tree_map(lambda x: x + 3 if x.dtype == np.int32 else x, st["opt_state"])
    arrays, _ = jx.make_batch(jx.step_items(3))
    consts = tuple(map(jax.numpy.asarray, jx.constants()))
    host = jax.device_get(st)
    pt, et, ot, lt = tt._step(host["params"], host["ema"], host["opt_state"], np.float32(3), np.float32(0.5), consts,
                              *arrays)
    pj, ej, oj, lj = jx._step(st["params"], st["ema"], st["opt_state"], np.float32(3), np.float32(0.5), consts,
                              *map(jax.numpy.asarray, arrays))
    assert abs(float(lt) - float(lj)) < 1e-4 * abs(float(lj))
    from optax import tree_utils as tu

    moved, idle = 0, []
    nu_j = tu.tree_get(oj, "nu")
    for k in pj:
        # Adam's update g / (|g| + ε) is a rounding amplifier where |g| is near ε (1e-8): compare the
        # parameters where the gradient is well above it (the moments, below, are compared everywhere)
        big = np.sqrt(np.asarray(nu_j[k]) / (1 - 0.99 ** 4)) > 1e-6
        if not big.any():
            idle.append(k)  # no gradient in this batch (the promotion biases where no move promotes)
            continue
        assert np.allclose(pt[k][big], np.asarray(pj[k])[big], rtol=1e-5, atol=2e-6), k
        assert np.allclose(et[k][big], np.asarray(ej[k])[big], rtol=1e-5, atol=2e-6), k
        moved += not np.allclose(pt[k], host["params"][k])
    assert set(idle) <= {"policy_head/promo/b"}, idle
    assert moved == len(pj) - len(idle), "every parameter with a gradient gets an update"

    for name in ("mu", "nu"):
        a, b = tu.tree_get(ot, name), tu.tree_get(oj, name)
        for k in a:
            assert np.allclose(a[k], np.asarray(b[k]), rtol=1e-3, atol=1e-9), (name, k)
    assert [int(c) for _, c in tu.tree_get_all_with_path(ot, "count")] == [4, 4]


def test_bf16_training_lowers_the_loss_and_resumes_under_jax(tiny_ds, tmp_path):
    """Six bfloat16 steps on one repeated batch lower its loss; the checkpoint they leave is a JAX trainer's:
    the JAX backend resumes it at step 6 with the same weights."""
    tt = _trainer(tiny_ds, tmp_path / "run", "torch")
    tt.train_items = tt.train_items[:8]  # one batch, every step
    st = tt.run()
    assert st["step"] == 6
    log = [__import__("json").loads(line) for line in open(tmp_path / "run" / "log.jsonl")]
    assert log[-1]["train_loss"] < log[0]["train_loss"], log
    assert os.path.exists(tmp_path / "run" / "ckpt.pkl")
    jx = _trainer(tiny_ds, tmp_path / "run", "jax")
    back = jx.load()
    assert back["step"] == 6
    for k, v in st["params"].items():
        assert np.array_equal(np.asarray(back["params"][k]), v), k


def test_unknown_backend_is_refused(tiny_ds, tmp_path):
    with pytest.raises(ValueError, match="backend"):
        _trainer(tiny_ds, tmp_path, "tpu")


def test_the_command_line_refuses_the_torch_step_for_the_action_value_kind():
    from glimpse_train import train

    with pytest.raises(SystemExit, match="JAX only"):
        train.main(["--config", "smoke", "--backend", "torch"])
