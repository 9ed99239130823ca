#!/usr/bin/env python3
"""Lichess puzzle accuracy of a UCI engine (Glimpse by default).

Input: the Lichess puzzle CSV format (PuzzleId,FEN,Moves,Rating,...). FEN is the position before
the opponent's move ``Moves[0]``; the solver must then find ``Moves[1]``, the opponent answers
``Moves[2]``, the solver finds ``Moves[3]``, and so on. A puzzle counts as solved only if the whole
solution is found; a different move that checkmates at once is also accepted (as on Lichess). The
engine sees the whole history (``position fen … moves …``) and a fresh game per puzzle.

Output: accuracy overall and per 200-point rating band, a JSON file with every puzzle's result and a
PNG plot of accuracy (with 95 % Wilson intervals) against rating.

Examples::

    tools/puzzles.py --limit 200
    tools/puzzles.py --engine stockfish --depth 8 --limit 500
    tools/puzzles.py --a-option WeightsFile=weights/glimpse-av.onnx --json reports/p.json
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import dataclasses
import datetime as dt
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine

from glimpse_tools import enginelib as el

# matplotlib is imported inside the plotting function alone: the rest of the module works without it.

DEFAULT_PUZZLES = el.SHARED / "data" / "puzzles" / "lichess_puzzles.csv"
BAND = 200


@dataclasses.dataclass
class Puzzle:
    id: str
    fen: str
    moves: list[str]
    rating: int
    themes: list[str]


def load_puzzles(path: str | Path, limit: int = 0, shuffle: bool = False, seed: int = 1,
                 min_rating: int = 0, max_rating: int = 10_000) -> list[Puzzle]:
    """Reads a Lichess puzzle CSV (header row required). ``limit`` 0 = all."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    puzzles = [Puzzle(r["PuzzleId"], r["FEN"], r["Moves"].split(), int(r["Rating"]),
                      r.get("Themes", "").split()) for r in rows
               if min_rating <= int(r["Rating"]) <= max_rating]
    if shuffle:
        random.Random(seed).shuffle(puzzles)
    return puzzles[:limit] if limit else puzzles


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def band_of(rating: int) -> int:
    return rating // BAND * BAND


async def solve(protocol: chess.engine.UciProtocol, puzzle: Puzzle, limit: chess.engine.Limit,
                timeout: float) -> dict[str, Any]:
    """Plays one puzzle; returns {solved, played, expected, reason}."""
    board = chess.Board(puzzle.fen)
    board.push_uci(puzzle.moves[0])
    played: list[str] = []
    game_id = object()
    for i in range(1, len(puzzle.moves), 2):
        expected = chess.Move.from_uci(puzzle.moves[i])
        result, _ = await el.awake_wait_for(protocol.play(board, limit, game=game_id), timeout)
        move = result.move
        if move is None or move not in board.legal_moves:
            return {"solved": False, "played": played + [str(move)], "reason": "illegal or no move"}
        played.append(move.uci())
        if move != expected:
            board.push(move)
            if board.is_checkmate():
                return {"solved": True, "played": played, "reason": "alternative mate"}
            return {"solved": False, "played": played, "reason": f"expected {expected.uci()}"}
        board.push(move)
        if i + 1 < len(puzzle.moves):
            board.push_uci(puzzle.moves[i + 1])
    return {"solved": True, "played": played, "reason": ""}


class PuzzleRun:
    def __init__(self, args, puzzles: list[Puzzle]):
        self.args = args
        self.puzzles = puzzles
        self.results: list[dict[str, Any]] = []
        self.info: el.EngineInfo | None = None
        self.interrupted = False
        self.started = dt.datetime.now()
        self.elapsed = 0.0
        self.error_lines: list[str] = []

    def limit(self) -> chess.engine.Limit:
        a = self.args
        return chess.engine.Limit(time=a.movetime, nodes=a.nodes, depth=a.depth)

    async def run(self) -> None:
        a = self.args
        t0 = time.monotonic()
        bar = el.progress_bar(len(self.puzzles), "puzzle", a.quiet)
        timeout = (a.movetime or 0) + a.stall_timeout
        infos: list[el.EngineInfo] = []

        async def task(protocol, p: Puzzle):
            return await solve(protocol, p, self.limit(), timeout)

        def on_error(p: Puzzle, err: Exception):
            return {"solved": False, "played": [], "reason": f"engine error: {err!r}"}

        def on_result(p: Puzzle, r: dict) -> None:
            r.update({"id": p.id, "rating": p.rating, "themes": p.themes, "solution": p.moves[1::2]})
            self.results.append(r)
            if self.info is None and infos:
                self.info = infos[0]
            if bar is not None:
                solved = sum(x["solved"] for x in self.results)
                bar.set_postfix_str(f"acc {100 * solved / len(self.results):.1f}%")
                bar.update(1)

        try:
            done = await el.run_pool(a.spec, self.puzzles, task, a.concurrency, on_result, on_error, infos,
                                     self.error_lines)
            self.interrupted = not done
        finally:
            if self.info is None and infos:
                self.info = infos[0]
            if bar is not None:
                bar.close()
            self.elapsed = time.monotonic() - t0

    def summary(self) -> dict[str, Any]:
        a = self.args
        res = self.results
        solved = sum(r["solved"] for r in res)
        bands: dict[int, list[int]] = {}
        for r in res:
            b = bands.setdefault(band_of(r["rating"]), [0, 0])
            b[0] += r["solved"]
            b[1] += 1
        band_rows = []
        for b in sorted(bands):
            k, n = bands[b]
            lo, hi = wilson(k, n)
            band_rows.append({"band": f"{b}-{b + BAND - 1}", "low": b, "solved": k, "total": n,
                              "accuracy": k / n, "ci95": [lo, hi]})
        themes: dict[str, list[int]] = {}
        for r in res:
            for t in r["themes"]:
                th = themes.setdefault(t, [0, 0])
                th[0] += r["solved"]
                th[1] += 1
        lo, hi = wilson(solved, len(res))
        return {
            "engine": self.info.as_dict() if self.info else None,
            "limit": {"movetime": a.movetime, "nodes": a.nodes, "depth": a.depth},
            "puzzles_file": str(a.puzzles), "puzzles_file_sha256": el.sha256_file(a.puzzles),
            "limit_count": a.limit, "shuffle": a.shuffle, "seed": a.seed, "concurrency": a.concurrency,
            "started": self.started.isoformat(timespec="seconds"), "seconds": round(self.elapsed, 1),
            "interrupted": self.interrupted,
            "total": len(res), "solved": solved, "accuracy": solved / len(res) if res else None,
            "ci95": [lo, hi],
            "mean_rating": sum(r["rating"] for r in res) / len(res) if res else None,
            "alternative_mates": sum(r["reason"] == "alternative mate" for r in res),
            "engine_errors": sum(r["reason"].startswith("engine error") for r in res),
            "engine_error_lines": self.error_lines,
            "bands": band_rows,
            "themes": {t: {"solved": k, "total": n, "accuracy": k / n}
                       for t, (k, n) in sorted(themes.items(), key=lambda kv: -kv[1][1])},
            "results": sorted(res, key=lambda r: r["id"]),
        }

    def print_report(self, s: dict[str, Any]) -> None:
        e = s["engine"]
        print(f"Puzzles: {s['puzzles_file']} ({s['total']} played"
              + (", interrupted" if s["interrupted"] else "") + f", {s['seconds']} s)")
        if e:
            print(f"Engine: {self.info.header_line()}")
        lim = ", ".join(f"{k} {v}" for k, v in s["limit"].items() if v is not None) or "none"
        print(f"Limit per move: {lim}; concurrency {s['concurrency']}; seed {s['seed']}")
        if not s["total"]:
            print("No puzzles finished.")
            return
        print(f"Accuracy: {s['solved']}/{s['total']} = {100 * s['accuracy']:.1f} % "
              f"(95% CI {100 * s['ci95'][0]:.1f}-{100 * s['ci95'][1]:.1f} %), "
              f"mean rating {s['mean_rating']:.0f}, alternative mates {s['alternative_mates']}, "
              f"engine errors {s['engine_errors']}")
        for line in s["engine_error_lines"][:3]:
            print(f"  engine reported: info string {line[:160]}")
        print(f"{'band':>11} {'solved':>7} {'total':>6} {'accuracy':>9}")
        for b in s["bands"]:
            print(f"{b['band']:>11} {b['solved']:>7} {b['total']:>6} {100 * b['accuracy']:>8.1f}%")


def plot(summary: dict[str, Any], path: str, title: str) -> None:
    """PNG: accuracy per rating band with 95 % Wilson intervals and puzzle counts."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bands = summary["bands"]
    x = [b["low"] + BAND / 2 for b in bands]
    y = [100 * b["accuracy"] for b in bands]
    err = [[max(0.0, 100 * (b["accuracy"] - b["ci95"][0])) for b in bands],
           [max(0.0, 100 * (b["ci95"][1] - b["accuracy"])) for b in bands]]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3)
    for xi, b in zip(x, bands):
        ax.text(xi, 2, str(b["total"]), ha="center", va="bottom", fontsize=7, color="gray")
    ax.set_xlabel(f"puzzle rating ({BAND}-point bands; gray: puzzles per band)")
    ax.set_ylabel("solved (%)")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="puzzles.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--engine", "--a", dest="engine", default="glimpse", metavar="SPEC",
                   help="engine: command or alias, optionally ':NAME=VALUE,...' (default glimpse)")
    p.add_argument("--a-option", "--option", dest="option", action="append", default=[],
                   metavar="NAME=VALUE", help="UCI option (repeatable)")
    p.add_argument("--a-options", "--options", dest="options", default="", metavar="LIST",
                   help="comma-separated NAME=VALUE options")
    p.add_argument("--puzzles", default=str(DEFAULT_PUZZLES), help="Lichess CSV (default %(default)s)")
    p.add_argument("--limit", type=int, default=0, help="number of puzzles (0 = all)")
    p.add_argument("--shuffle", action="store_true", help="random sample (with --seed) instead of file order")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-rating", type=int, default=0)
    p.add_argument("--max-rating", type=int, default=10_000)
    p.add_argument("--movetime", type=float, metavar="S",
                   help="time per move in seconds (default 0.1 when no limit is given)")
    p.add_argument("--nodes", type=int, help="nodes per move")
    p.add_argument("--depth", type=int, help="depth per move")
    p.add_argument("--concurrency", type=int, default=el.cpu_count(),
                   help="engines at once, Threads=1 each when > 1 (default: CPUs = %(default)s)")
    p.add_argument("--stall-timeout", type=float, default=60.0,
                   help="seconds beyond movetime before an engine counts as stalled")
    p.add_argument("--json", metavar="FILE", help="JSON output (default reports/puzzles-<time>.json)")
    p.add_argument("--png", metavar="FILE", help="PNG plot (default: next to the JSON)")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.movetime is None and args.nodes is None and args.depth is None:
        args.movetime = 0.1  # Glimpse answers after its one batched forward pass whatever the limit
    args.spec = el.EngineSpec.parse(args.engine, args.option + [o for o in args.options.split(",") if o.strip()])
    puzzles = load_puzzles(args.puzzles, args.limit, args.shuffle, args.seed, args.min_rating, args.max_rating)
    if not puzzles:
        parser.error("no puzzles selected")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    args.json = args.json or str(el.REPO_ROOT / "reports" / f"puzzles-{stamp}.json")
    args.png = args.png or str(Path(args.json).with_suffix(".png"))
    run = PuzzleRun(args, puzzles)
    try:
        asyncio.run(run.run())
    except KeyboardInterrupt:
        run.interrupted = True
    s = run.summary()
    run.print_report(s)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(s, indent=1) + "\n")
    print(f"JSON: {args.json}")
    if s["total"]:
        name = run.info.id_name if run.info else args.engine
        h = run.info.weights_sha256[:12] if run.info and run.info.weights_sha256 else "-"
        lim = ", ".join(f"{k} {v}" for k, v in s["limit"].items() if v is not None)
        plot(s, args.png, f"{name} (weights {h}), {lim}: {s['solved']}/{s['total']} = "
                          f"{100 * s['accuracy']:.1f} % of {Path(args.puzzles).name}")
        print(f"PNG: {args.png}")
    return 130 if s["interrupted"] else 0


if __name__ == "__main__":
    sys.exit(main())
