"""Positions a second of the one-pass train step, JAX against PyTorch (``torch_step.py``), on this machine.

    python -m glimpse_train.train_bench [--net campaign/campaign-l6d128.onnx] [--steps 20] [--shared ../../shared]

For each ``--case BACKEND:BATCH:MICRO`` (default: the campaign's JAX step, ``jax:64:4``, and PyTorch at batch
64, 128 and 256): a trainer starting from ``--net`` (the campaign's configuration, the net's shapes), three
warm-up steps, then ``--steps`` timed steps on the first ``--positions`` positions of the shared labels.
Prints one line a case; ``--json`` writes them. Run it on idle cores (a paused campaign).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np

from .campaign_config import CAMPAIGN_MODEL
from .campaign_train import StartNetTrainer
from .data import Dataset, build_dataset, label_files
from .kinds.multi_action_value import MAVTrainConfig, with_start_architecture
from .onnx_import import import_onepass


def time_case(ds, net: str, backend: str, batch: int, micro: int, steps: int, work: str) -> dict:
    """One case: ``{"backend", "batch", "micro", "steps", "positions_per_s"}`` over ``steps`` timed steps."""
    tcfg = MAVTrainConfig(**{**CAMPAIGN_MODEL, "batch": batch, "micro": micro, "ckpt_seconds": 1e9})
    tcfg = with_start_architecture(tcfg, import_onepass(net)[1])
    tr = StartNetTrainer(tcfg, os.path.join(work, f"{backend}-{batch}-{micro}"), ds, lambda *_: None, net,
                         backend=backend)
    st = tr.fresh_state()
    consts = tuple(tr.jnp.asarray(c) for c in tr.constants())

    def step(i: int) -> int:
        arrays, n = tr.make_batch(tr.step_items(i))
        st["params"], st["ema"], st["opt_state"], loss = tr._step(
            st["params"], st["ema"], st["opt_state"], np.float32(i), np.float32(1.0), consts, *map(tr._put, arrays))
        float(loss)
        return n["positions"]

    for i in range(3):
        step(i)
    t0 = time.perf_counter()
    n = sum(step(i) for i in range(3, 3 + steps))
    return {"backend": backend, "batch": batch, "micro": micro, "steps": steps,
            "positions_per_s": round(n / (time.perf_counter() - t0), 1)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../../shared")
    ap.add_argument("--net", default="campaign/campaign-l6d128.onnx", help="one-pass ONNX net to start from")
    ap.add_argument("--case", action="append", default=None, metavar="BACKEND:BATCH:MICRO")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--positions", type=int, default=3000)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    cases = a.case or ["jax:64:4", "torch:64:1", "torch:128:1", "torch:256:2"]
    with tempfile.TemporaryDirectory() as work:
        build_dataset(label_files(a.shared), os.path.join(work, "data"), max_positions=a.positions, log=lambda *_: None)
        ds = Dataset(os.path.join(work, "data"))
        rows = []
        for c in cases:
            backend, batch, micro = c.split(":")
            rows.append(time_case(ds, a.net, backend, int(batch), int(micro), a.steps, work))
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"net": a.net, "cases": rows, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}, f, indent=1)


if __name__ == "__main__":
    main()
