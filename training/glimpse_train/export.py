"""Export a training run's weights to ONNX and verify onnxruntime against JAX: ``make export RUN=...``.

``--run`` reads ``runs/<run>/config.json`` and ``runs/<run>/ckpt.pkl`` (EMA tree; ``--raw`` for the raw
params, ``--snapshot`` for an ``ema/step*.npz``); the run's kind (registry, ``kinds/``) builds the graph
with Glimpse's ONNX contract for that kind. Verification: held-out (validation) rows or positions through
both; exits 1 if the max abs difference exceeds 1e-4. Writes ``runs/<run>/export.json``.

``--npz params.npz out.onnx --kind action_value --heads 8`` converts a golden-style npz
(``params/<module>/<name>``, a reference AV/SV/BC tree) instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import kinds
from .data import ensure_dataset
from .kinds.action_value import KIND_AV, KINDS, export, infer_config, load_npz_params

TOL = 1e-4


def export_npz(argv) -> None:
    ap = argparse.ArgumentParser(description="Convert a golden-style npz (params/<module>/<name>) to ONNX")
    ap.add_argument("--npz", required=True)
    ap.add_argument("out")
    ap.add_argument("--kind", choices=KINDS, default=KIND_AV)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--tree", default="params", help="params or params_ema")
    ap.add_argument("--description", default="")
    a = ap.parse_args(argv)
    params = load_npz_params(a.npz, a.tree)
    cfg = infer_config(params, a.kind, a.heads)
    export(params, cfg, a.out, a.description)
    print(f"wrote {a.out}: {cfg}")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(x == "--npz" or x.startswith("--npz=") for x in argv):
        return export_npz(argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--run", required=True)
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--out", default=None, help="ONNX path (default runs/<run>/model.onnx)")
    ap.add_argument("--snapshot", default=None)
    ap.add_argument("--raw", action="store_true", help="export raw params instead of EMA")
    ap.add_argument("--data-dir", default="data/full")
    a = ap.parse_args(argv)
    run_dir = os.path.join(a.runs_dir, a.run)
    kind = kinds.for_run(run_dir) or kinds.DEFAULT
    params, mcfg, step = kind.load_run(run_dir, a.snapshot, a.raw)
    out = a.out or os.path.join(run_dir, "model.onnx")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    kind.export(params, mcfg, out, kind.describe_run(a.run, step, a.raw, mcfg))
    cfgj = json.load(open(os.path.join(run_dir, "config.json")))
    maxpos = cfgj.get("max_positions", 0)
    ds = ensure_dataset(a.shared, a.data_dir if not maxpos else f"data/first{maxpos}", [], maxpos)
    diff, what = kind.verify_held_out(params, mcfg, out, ds)
    size = os.path.getsize(out)
    print(f"exported {out} ({size / 1e6:.2f} MB, {kind.num_params(mcfg):,} params, step {step}); "
          f"max |ORT - JAX| over {what} = {diff:.3g} (tol {TOL:g})")
    info = {"onnx": out, "run": a.run, "step": step, "ema": not a.raw, "max_abs_diff": diff, "bytes": size,
            **kind.export_info(mcfg)}
    with open(os.path.join(run_dir, "export.json"), "w") as f:
        json.dump(info, f, indent=1)
    sys.exit(0 if diff <= TOL else 1)


if __name__ == "__main__":
    main()
