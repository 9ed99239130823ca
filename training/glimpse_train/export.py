"""Export a training run's EMA weights to ONNX and verify onnxruntime against the JAX model.

``--run`` reads ``runs/<run>/config.json`` and ``runs/<run>/ckpt.pkl`` (EMA tree; ``--raw`` for the raw
params, ``--snapshot`` for an ``ema/step*.npz``); the ONNX file follows Glimpse's contract (see
``onnx_export``). Verification: 512 held-out (validation) rows through both; exits 1 if the max abs
log-prob difference exceeds 1e-4.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys

import numpy as np

from .model import KIND_AV, ModelConfig, jax_forward, num_params
from .onnx_export import export, ort_session

TOL = 1e-4


def load_run(run_dir: str, snapshot: str | None = None, raw: bool = False):
    """(params dict, ModelConfig, step) of a run."""
    cfgj = json.load(open(os.path.join(run_dir, "config.json")))
    mcfg = ModelConfig(kind=KIND_AV, layers=cfgj["layers"], dim=cfgj["dim"], heads=cfgj["heads"])
    if snapshot:
        z = np.load(snapshot)
        params = {k: np.asarray(z[k], np.float32) for k in z.files}
        step = int("".join(c for c in os.path.basename(snapshot) if c.isdigit()) or 0)
    else:
        with open(os.path.join(run_dir, "ckpt.pkl"), "rb") as f:
            blob = pickle.load(f)
        params = {k: np.asarray(v, np.float32) for k, v in blob["params" if raw else "ema"].items()}
        step = blob["step"]
    return params, mcfg, step


def verify(params, mcfg: ModelConfig, onnx_path: str, tokens: np.ndarray) -> float:
    import jax.numpy as jnp

    want = np.asarray(jax_forward({k: jnp.asarray(v) for k, v in params.items()}, mcfg, jnp.asarray(tokens)))
    got = ort_session(onnx_path).run(["log_probs"], {"tokens": tokens.astype(np.int64)})[0]
    return float(np.abs(got - want).max())


def main(argv=None):
    from . import onepass_export, onepass_train

    if onepass_train.is_onepass_run(list(sys.argv[1:] if argv is None else argv)):
        return onepass_export.main(argv)  # multi_action_value run
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--run", required=True)
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--out", default=None, help="ONNX path (default runs/<run>/model.onnx)")
    ap.add_argument("--snapshot", default=None)
    ap.add_argument("--raw", action="store_true", help="export raw params instead of EMA")
    ap.add_argument("--data-dir", default="data/full")
    a = ap.parse_args(argv)
    run_dir = os.path.join(a.runs_dir, a.run)
    params, mcfg, step = load_run(run_dir, a.snapshot, a.raw)
    out = a.out or os.path.join(run_dir, "model.onnx")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    desc = (f"Glimpse action-value net, run {a.run} step {step} ({'raw' if a.raw else 'EMA'} weights), "
            f"L={mcfg.layers} D={mcfg.dim} H={mcfg.heads}, trained on Stockfish 15.1 labels")
    export(params, mcfg, out, desc)
    # held-out rows
    from .data import ensure_dataset

    cfgj = json.load(open(os.path.join(run_dir, "config.json")))
    ds = ensure_dataset(a.shared, a.data_dir if not cfgj.get("max_positions") else f"data/first{cfgj['max_positions']}",
                        [], cfgj.get("max_positions", 0))
    rows = ds.val_rows[np.linspace(0, len(ds.val_rows) - 1, min(512, len(ds.val_rows))).astype(int)]
    diff = verify(params, mcfg, out, ds.tokens(rows))
    size = os.path.getsize(out)
    print(f"exported {out} ({size / 1e6:.2f} MB, {num_params(mcfg):,} params, step {step}); "
          f"max |ORT - JAX| over {len(rows)} held-out rows = {diff:.3g} (tol {TOL:g})")
    info = {"onnx": out, "run": a.run, "step": step, "ema": not a.raw, "max_abs_diff": diff, "bytes": size}
    with open(os.path.join(run_dir, "export.json"), "w") as f:
        json.dump(info, f, indent=1)
    sys.exit(0 if diff <= TOL else 1)


if __name__ == "__main__":
    main()
