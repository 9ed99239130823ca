"""Where a one-pass net's time goes in ONNX Runtime (CPU): per-operator profile and the MatMul
rate at the net's own shapes.

``glimpse bench`` reaches only part of the MatMul rate it prints (that rate is ORT's MatMul on
one large [1024×512]·[512×512] product). This tool shows why with two measurements:

1. **Operator profile.** ORT's built-in profiler (``SessionOptions.enable_profiling``) over
   ``--reps`` runs of ``--rows`` real positions (bench-like FENs with all their legal moves, as the
   engine feeds them), summed by operator type: node count and share of kernel time. The profiler
   itself slows every node down (it timestamps each one), so absolute times come from a second,
   unprofiled session: its median wall ms per run and GFLOP/s (from ``glimpse.gflop_per_eval``).
2. **MatMul at the net's shapes.** A plain ORT MatMul [rows·64, d]·[d, d] and [rows·64, d]·[d, 4d]
   (d = ``glimpse.dim``: the attention projections and the feed-forward layer of the 64 square
   tokens) timed alone: the roofline the trunk's products can reach at this batch, next to the large
   product's rate.

Output: a Markdown table per batch size, for the README's "Speed" section.

Usage: ``python -m glimpse_train.ort_profile NET.onnx [--rows 1 32] [--reps 200] [--threads 2]``.
Errors: a net whose inputs are not the one-pass ``tokens``/``actions`` pair raises ``SystemExit``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict

import chess
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .chessdata import MOVE_TO_ACTION, tokenize
from .onnx_graph import ort_session

# onnxruntime is imported inside the functions that run a net: building and reading graphs does not load it.

FENS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R1BQ1RK1 w - - 0 8",
    "2rq1rk1/pp1bppbp/2np1np1/8/3NP3/1BN1BP2/PPPQ2PP/2KR3R b - - 8 11",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "8/5pk1/6p1/8/3R4/6P1/5PK1/r7 w - - 0 40",
]


def feeds(rows: int, pad: int) -> dict[str, np.ndarray]:
    """``tokens`` int64 [rows, 78] (BOS 0 + 77 FEN tokens) and ``actions`` int64 [rows, max moves]
    (the legal moves' action ids, padded with ``pad``), cycling through ``FENS``."""
    toks, acts = [], []
    for i in range(rows):
        fen = FENS[i % len(FENS)]
        toks.append(np.concatenate([[0], tokenize(fen).astype(np.int64)]))
        acts.append([MOVE_TO_ACTION[m.uci()] for m in chess.Board(fen).legal_moves])
    width = max(len(a) for a in acts)
    a = np.full((rows, width), pad, np.int64)
    for i, row in enumerate(acts):
        a[i, : len(row)] = row
    return {"tokens": np.stack(toks), "actions": a}


def matmul_rate(m: int, k: int, n: int, reps: int, threads: int) -> float:
    """GFLOP/s of one ORT MatMul [m, k]·[k, n] (float32), median of ``reps`` runs."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((k, n)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess = ort_session(model.SerializeToString(), threads)
    x = np.random.default_rng(1).standard_normal((m, k)).astype(np.float32)
    for _ in range(3):
        sess.run(["y"], {"x": x})
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        sess.run(["y"], {"x": x})
        ts.append(time.perf_counter() - t)
    return 2.0 * m * k * n / statistics.median(ts) / 1e9


def median_run_ms(sess, feed: dict[str, np.ndarray], reps: int) -> float:
    """Median wall ms of ``reps`` runs of ``sess`` on ``feed`` after 5 warm-up runs."""
    for _ in range(5):
        sess.run(None, feed)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        sess.run(None, feed)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def wall_ms(path: str, rows: int, reps: int, threads: int) -> float:
    """Median wall ms of one unprofiled run of ``rows`` positions (after a warm-up)."""
    meta = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
    return median_run_ms(ort_session(path, threads), feeds(rows, int(meta.get("glimpse.pad_action", "0"))), reps)


def profile(path: str, rows: int, reps: int, threads: int) -> dict:
    """Run ``reps`` profiled runs of ``rows`` positions; return the profiled and unprofiled median
    wall ms per run and kernel ms per run by operator type
    (``{"wall_ms", "profiled_ms", "kernel_ms", "ops": {op: [ms per run, nodes]}, "meta", "runs"}``)."""
    import onnxruntime as ort

    meta = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory() as tmp:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        if names != ["tokens", "actions"]:
            raise SystemExit(f"{path}: inputs {names}, expected the one-pass tokens/actions pair")
        profiled_ms = median_run_ms(sess, feeds(rows, int(meta.get("glimpse.pad_action", "0"))), reps)
        prof = sess.end_profiling()
        with open(prof) as fh:
            events = json.load(fh)
    per_op: dict[str, float] = defaultdict(float)
    nodes: dict[str, set] = defaultdict(set)
    runs = 0
    for e in events:
        if e.get("cat") == "Session" and e.get("name") == "model_run":
            runs += 1
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            op = e["args"].get("op_name", "?")
            per_op[op] += e["dur"] / 1e3
            nodes[op].add(e["name"])
    runs = max(runs, 1)
    ops = {op: [ms / runs, len(nodes[op])] for op, ms in per_op.items()}
    return {"wall_ms": wall_ms(path, rows, reps, threads), "profiled_ms": profiled_ms,
            "kernel_ms": sum(v[0] for v in ops.values()),
            "ops": ops, "meta": meta, "runs": runs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("net")
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    for rows in a.rows:
        p = profile(a.net, rows, a.reps, a.threads)
        meta = p["meta"]
        d = int(meta.get("glimpse.dim", "128"))
        gflop = float(meta.get("glimpse.gflop_per_eval", "nan")) * rows
        print(f"\n{os.path.basename(a.net)}: {rows} row(s) per run, {a.threads} threads, {a.reps} runs "
              f"({p['runs']} profiled)")
        print(f"unprofiled: {p['wall_ms']:.2f} ms per run, {gflop / p['wall_ms'] * 1e3:.1f} GFLOP/s; "
              f"profiled: {p['profiled_ms']:.2f} ms per run, of which kernels {p['kernel_ms']:.2f} ms "
              f"({sum(n for _, n in p['ops'].values())} nodes)")
        print("| operator | nodes | share of kernel time |")
        print("|---|---|---|")
        for op, (ms, n) in sorted(p["ops"].items(), key=lambda kv: -kv[1][0]):
            if ms / p["kernel_ms"] >= 0.005:
                print(f"| {op} | {n} | {100 * ms / p['kernel_ms']:.1f} % |")
        m = rows * 64
        for k, n in ((d, d), (d, 4 * d)):
            print(f"MatMul [{m}×{k}]·[{k}×{n}] alone: {matmul_rate(m, k, n, a.reps, a.threads):.1f} GFLOP/s")
    print(f"MatMul [1024×512]·[512×512] alone (glimpse bench's reference): "
          f"{matmul_rate(1024, 512, 512, 50, a.threads):.1f} GFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
