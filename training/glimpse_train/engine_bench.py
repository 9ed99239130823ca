"""Load converted nets in the Glimpse engine over UCI and time real moves (short self-play games).

For each ONNX file: start ``target/release/glimpse``, ``setoption name WeightsFile value <file>``
(plus ``Threads``), wait for ``readyok``, then let the engine play both sides of a game from the
start position for ``--plies`` plies (``position startpos moves …`` + ``go movetime``, a generous
limit: the searchless engine answers after one batched pass). Every move is checked legal with
python-chess. Reported per net: load time, median and mean ms per move (wall time of ``go`` →
``bestmove``), evaluations/s (the engine's ``nodes`` = network rows, over the summed move times),
``glimpse.gflop_per_eval`` from the file, achieved GFLOP/s, and, with ``--matmul``, that as a share
of the ORT MatMul rate measured by ``glimpse bench`` (pass the GFLOP/s it printed).

This complements ``glimpse bench`` (30 fixed positions × reps), which is too long for 136M/270M on
a 2-core CPU; the first move (start position, 20 rows) is a warm-up and not counted.

Usage: ``python -m glimpse_train.engine_bench NET.onnx[:PLIES] … [--engine ../target/release/glimpse]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import chess
import chess.engine

from .ort_bench import meta_of


def bench_net(engine: str, path: str, plies: int, threads: int | None) -> dict:
    t0 = time.perf_counter()
    eng = chess.engine.SimpleEngine.popen_uci([engine], timeout=600)
    try:
        opts = {"WeightsFile": path}
        if threads:
            opts["Threads"] = threads
        eng.configure(opts)
        eng.ping()
        load_s = time.perf_counter() - t0
        board = chess.Board()
        ms, nodes, moves = [], [], []
        for ply in range(plies + 1):
            if board.is_game_over(claim_draw=True):
                break
            t = time.perf_counter()
            res = eng.play(board, chess.engine.Limit(time=600), info=chess.engine.INFO_BASIC)
            dt = time.perf_counter() - t
            if res.move is None or res.move not in board.legal_moves:
                raise RuntimeError(f"{path}: illegal or no move {res.move} in {board.fen()}")
            if ply > 0:  # the first move is a warm-up
                ms.append(dt * 1e3)
                nodes.append(int(res.info.get("nodes", 0)))
            moves.append(board.san(res.move))
            board.push(res.move)
    finally:
        eng.quit()
    meta = meta_of(path)
    gf = float(meta.get("glimpse.gflop_per_eval", "nan"))
    evals_s = sum(nodes) / (sum(ms) / 1e3) if ms else 0.0
    return {"net": path.rsplit("/", 1)[-1], "params": int(meta.get("glimpse.params", 0)), "load_s": load_s,
            "moves": len(ms), "median_ms": statistics.median(ms) if ms else 0.0,
            "mean_ms": statistics.mean(ms) if ms else 0.0, "rows_per_move": sum(nodes) / max(1, len(nodes)),
            "evals_s": evals_s, "gflop": gf, "gflops": gf * evals_s, "game": " ".join(moves)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("nets", nargs="+", help="NET.onnx[:PLIES]")
    ap.add_argument("--engine", default="../target/release/glimpse")
    ap.add_argument("--plies", type=int, default=6, help="timed plies per net (after one warm-up move)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--matmul", type=float, default=0.0, help="ORT MatMul GFLOP/s (from glimpse bench)")
    a = ap.parse_args(argv)
    rows = []
    for spec in a.nets:
        path, _, n = spec.partition(":")
        r = bench_net(a.engine, path, int(n) if n else a.plies, a.threads)
        rows.append(r)
        print(f"{r['net']}: {r['moves']} moves, game {r['game']}", flush=True)
    print()
    print("| net | parameters | load s | moves timed | rows/move | median ms/move | evaluations/s | GFLOP/eval "
          "| achieved GFLOP/s |" + (" of MatMul |" if a.matmul else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if a.matmul else ""))
    for r in rows:
        print(f"| {r['net']} | {r['params'] / 1e6:.1f} M | {r['load_s']:.1f} | {r['moves']} | {r['rows_per_move']:.1f} "
              f"| {r['median_ms']:.0f} | {r['evals_s']:.1f} | {r['gflop']:.2f} | {r['gflops']:.1f} |"
              + (f" {100 * r['gflops'] / a.matmul:.0f} % |" if a.matmul else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
