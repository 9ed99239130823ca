"""onnxruntime (Python, CPU) timings of converted nets: 35-row batches, and a MatMul reference rate.

Used for the graph-efficiency measurement (last-layer optimisation on/off) and as a cross-check of
``glimpse bench``. For each ONNX file it times ``--reps`` runs of a batch of ``--rows`` random
token rows (AV: 79 tokens, SV/BC: 78; a typical middlegame has ~35 legal moves) after a warm-up
and prints the median ms per batch, rows/s, the file's ``glimpse.gflop_per_eval`` and the
achieved GFLOP/s. ``--matmul D`` also times a plain [rows·T, D]·[D, 4D] MatMul in ORT as the
machine's matrix-multiply rate.

Usage: ``python -m glimpse_train.ort_bench A.onnx [B.onnx …] [--rows 35] [--reps 20] [--threads 2]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import onnx

from .onnx_graph import ort_session
from .ort_profile import matmul_rate as rate


def meta_of(path: str) -> dict[str, str]:
    m = onnx.load(path, load_external_data=False)
    return {p.key: p.value for p in m.metadata_props}


def random_tokens(seq: int, rows: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    toks = rng.integers(0, 31, (rows, seq), dtype=np.int64)
    toks[:, 0] = 0
    if seq == 79:
        toks[:, -1] = rng.integers(0, 1968, rows)
    return toks


def time_models(paths: list[str], rows: int, reps: int, threads: int, rounds: int = 5) -> list[list[float]]:
    """Seconds per batch for each model; the models take turns (``rounds`` rounds of ``reps/rounds``
    runs each) so that load from other processes affects them alike."""
    sessions, feeds = [], []
    for p in paths:
        sess = ort_session(p, threads)
        seq = sess.get_inputs()[0].shape[1]
        toks = random_tokens(seq, rows)
        for _ in range(2):
            sess.run(["log_probs"], {"tokens": toks})
        sessions.append(sess)
        feeds.append(toks)
    out: list[list[float]] = [[] for _ in paths]
    per = max(1, reps // rounds)
    for _ in range(rounds):
        for i, sess in enumerate(sessions):
            for _ in range(per):
                t = time.perf_counter()
                sess.run(["log_probs"], {"tokens": feeds[i]})
                out[i].append(time.perf_counter() - t)
    return out


def matmul_rate(m: int, d: int, reps: int, threads: int) -> float:
    """GFLOP/s of one ORT MatMul [m, d]·[d, 4d] (float32)."""
    return rate(m, d, 4 * d, reps, threads)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*")
    ap.add_argument("--rows", type=int, default=35)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--matmul", type=int, default=0, help="also time a MatMul of width D")
    a = ap.parse_args(argv)
    print(f"onnxruntime CPU, {a.threads} threads, batches of {a.rows} rows, median of {a.reps} (models interleaved)")
    print("| model | last-layer opt | ms / batch (median) | min | rows/s | GFLOP/row | achieved GFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    times = time_models(a.models, a.rows, a.reps, a.threads)
    for p, ts in zip(a.models, times):
        meta = meta_of(p)
        med = statistics.median(ts)
        gf = float(meta.get("glimpse.gflop_per_eval", "nan"))
        print(f"| {p.rsplit('/', 1)[-1]} | {meta.get('glimpse.last_layer_optimised', '?')} | {med * 1e3:.2f} "
              f"| {min(ts) * 1e3:.2f} | {a.rows / med:.0f} | {gf:.4f} | {gf * a.rows / med:.1f} |", flush=True)
    if a.matmul:
        m = a.rows * 79
        print(f"MatMul [{m}, {a.matmul}]·[{a.matmul}, {4 * a.matmul}]: "
              f"{matmul_rate(m, a.matmul, a.reps, a.threads):.1f} GFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
