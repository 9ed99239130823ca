"""Convert the golden tiny reference checkpoints (npz, ``params`` tree) to ONNX and verify them.

For each of AV/SV/BC: ``<shared>/golden/tiny_<k>_params.npz`` → ``<out>/tiny_<k>.onnx``; the number of
heads comes from ``tiny_<k>_config.json``. Every golden log-prob record in ``tiny_<k>_outputs.jsonl``
(the 64 single/pair records and every per-move record of the 5 position records) is run through
onnxruntime and compared; exits non-zero when the max abs diff exceeds 1e-4 (2e-4 for BC).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from .model import KIND_AV, KIND_BC, KIND_SV, infer_config, load_npz_params, numpy_forward
from .onnx_export import export, ort_session

KINDS = {"av": KIND_AV, "sv": KIND_SV, "bc": KIND_BC}
TOL = {"av": 1e-4, "sv": 1e-4, "bc": 2e-4}


def golden_cases(path: str, short: str):
    """Yield (embedding_input, expected log-probs) for every golden record."""
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["kind"] in ("pair", "single"):
                yield r["embedding_input"], r["log_probs"]
            elif r["kind"] == "position":
                if short == "av":
                    for m in r["per_move"]:
                        yield m["embedding_input"], m["log_probs"]
                elif short == "sv":
                    cur = r["current"]
                    yield cur.get("embedding_input", [0] + cur["predict_input"][:-1]), cur["log_probs"]
                    for m in r["per_move"]:
                        yield m["embedding_input"], m["next_log_probs_raw"]
                else:
                    yield r["embedding_input"], r["log_probs_all_actions"]


def run(shared: str, out_dir: str) -> bool:
    os.makedirs(out_dir, exist_ok=True)
    ok = True
    for short, kind in KINDS.items():
        gdir = os.path.join(shared, "golden")
        cfg_json = json.load(open(os.path.join(gdir, f"tiny_{short}_config.json")))
        heads = int(cfg_json["transformer_config"]["num_heads"])
        params = load_npz_params(os.path.join(gdir, f"tiny_{short}_params.npz"), "params")
        cfg = infer_config(params, kind, heads)
        path = os.path.join(out_dir, f"tiny_{short}.onnx")
        export(params, cfg, path, description=f"golden tiny {kind} (searchless_chess reference, params tree)")
        cases = list(golden_cases(os.path.join(gdir, f"tiny_{short}_outputs.jsonl"), short))
        toks = np.asarray([c[0] for c in cases], np.int64)
        want = np.asarray([c[1] for c in cases], np.float64)
        sess = ort_session(path)
        got = sess.run(["log_probs"], {"tokens": toks})[0]
        # batch-1 run must agree too (dynamic batch)
        got1 = sess.run(["log_probs"], {"tokens": toks[:1]})[0]
        ref = numpy_forward(params, cfg, toks)
        diff = float(np.abs(got - want).max())
        diff_np = float(np.abs(ref - want).max())
        diff_b1 = float(np.abs(got1[0] - got[0]).max())
        good = diff <= TOL[short] and diff_b1 <= 1e-5 and got.dtype == np.float32 and got.shape == want.shape
        ok &= good
        print(f"tiny_{short}: {len(cases)} golden records, L={cfg.layers} D={cfg.dim} H={cfg.heads} K={cfg.out_size}; "
              f"max |ORT - golden| = {diff:.3g} (tol {TOL[short]:g}), numpy64 ref {diff_np:.3g}, "
              f"batch-1 vs batch {diff_b1:.3g} -> {'OK' if good else 'FAIL'} ({path})")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="target/test-models")
    a = ap.parse_args(argv)
    sys.exit(0 if run(a.shared, a.out) else 1)


if __name__ == "__main__":
    main()
