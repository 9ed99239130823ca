#!/usr/bin/env python3
"""EPD test suites: solved counts (bm/am) and STS points of a UCI engine (Glimpse by default).

A position with ``bm`` is solved when the engine plays one of the best moves, with ``am`` when it
avoids every listed move (both when both are given). STS records (``c8`` points and ``c9`` UCI
moves) score the points of the move played (0 for an unlisted move); the report gives STS points
out of the maximum, overall and per STS theme. Each position is a fresh game (``ucinewgame``).

Suites are files in ``../shared/data/epd/`` (by name without ``.epd``) or paths. Default: WAC
(``wac_arasan_wacnew``), Bratko-Kopec (``bk_senjo``), STS 1-15 (``STS1-STS15_LAN_v3``, 10-point
scale) and Arasan 2024 (``arasan2024``); ``--suites all`` runs every file there.

Examples::

    tools/suites.py --limit 50
    tools/suites.py --suites wac_arasan_wacnew --engine stockfish --movetime 0.1
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine

from glimpse_tools import enginelib as el

EPD_DIR = el.SHARED / "data" / "epd"
DEFAULT_SUITES = ["wac_arasan_wacnew", "bk_senjo", "STS1-STS15_LAN_v3", "arasan2024"]


@dataclasses.dataclass
class Position:
    suite: str
    index: int
    id: str
    fen: str
    bm: list[str]            # UCI
    am: list[str]            # UCI
    sts: dict[str, int]      # UCI move -> points (STS only)

    @property
    def theme(self) -> str:
        """STS theme from the id (``STS(v1.0) Undermine.001`` -> ``Undermine``), else ''."""
        m = re.match(r"STS\(v[\d.]+\)\s+(.*)\.\d+$", self.id)
        return m.group(1) if m else ""

    @property
    def theme_key(self) -> str:
        """Theme with its '/'-separated parts sorted (one STS id lists them in another order)."""
        return "/".join(sorted(self.theme.split("/")))


def load_suite(path: Path, limit: int = 0) -> tuple[list[Position], list[str]]:
    """Parses an EPD suite; returns positions and a list of skipped-line messages.

    ``limit`` > 0 keeps that many positions evenly spaced over the file.
    """
    positions: list[Position] = []
    skipped: list[str] = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for n, raw in enumerate(lines, 1):
        line = raw.replace("\x00", "").strip()
        if not line or line.startswith("#"):
            continue
        try:
            board, ops = el.parse_epd(line)
        except ValueError as err:
            skipped.append(f"{path.name}:{n}: {err}")
            continue
        bm = [board.uci(m) for m in ops.get("bm", [])]
        am = [board.uci(m) for m in ops.get("am", [])]
        sts: dict[str, int] = {}
        if "c8" in ops and "c9" in ops:
            pts, mvs = str(ops["c8"]).split(), str(ops["c9"]).split()
            if len(pts) == len(mvs):
                sts = {board.uci(board.parse_uci(m)): int(p) for m, p in zip(mvs, pts)}
        if not (bm or am or sts):
            skipped.append(f"{path.name}:{n}: no bm/am/c8+c9")
            continue
        if not any(True for _ in board.legal_moves):
            skipped.append(f"{path.name}:{n}: no legal moves")
            continue
        positions.append(Position(path.stem, len(positions), str(ops.get("id", f"#{n}")), board.fen(),
                                  bm, am, sts))
    if limit and len(positions) > limit:
        # Evenly spaced over the file, so that a short run still covers every STS theme.
        positions = [positions[i * len(positions) // limit] for i in range(limit)]
        for i, pos in enumerate(positions):
            pos.index = i
    return positions, skipped


def resolve_suites(names: list[str]) -> list[Path]:
    if names == ["all"]:
        return sorted(EPD_DIR.glob("*.epd"))
    paths = []
    for name in names:
        p = Path(name)
        if not p.exists():
            p = EPD_DIR / (name if name.endswith(".epd") else name + ".epd")
        if not p.exists():
            raise SystemExit(f"suite {name} not found (looked in {EPD_DIR})")
        paths.append(p)
    return paths


def score(pos: Position, move: str | None) -> dict[str, Any]:
    solved = move is not None and (not pos.bm or move in pos.bm) and move not in pos.am
    if pos.sts and not pos.bm and not pos.am:
        solved = move is not None and pos.sts.get(move, 0) == max(pos.sts.values())
    return {"solved": bool(solved), "points": pos.sts.get(move, 0) if pos.sts else None,
            "max_points": max(pos.sts.values()) if pos.sts else None}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="suites.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--engine", "--a", dest="engine", default="glimpse", metavar="SPEC",
                   help="engine: command or alias, optionally ':NAME=VALUE,...' (default glimpse)")
    p.add_argument("--a-option", "--option", dest="option", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--a-options", "--options", dest="options", default="", metavar="LIST")
    p.add_argument("--suites", nargs="+", default=DEFAULT_SUITES,
                   help="suite names in ../shared/data/epd, paths, or 'all' (default: %(default)s)")
    p.add_argument("--limit", type=int, default=0,
                   help="positions per suite, evenly spaced over the file (0 = all)")
    p.add_argument("--movetime", type=float, metavar="S",
                   help="time per move in seconds (default 0.1 when no limit is given)")
    p.add_argument("--nodes", type=int)
    p.add_argument("--depth", type=int)
    p.add_argument("--concurrency", type=int, default=el.cpu_count(),
                   help="engines at once, Threads=1 each when > 1 (default: CPUs = %(default)s)")
    p.add_argument("--stall-timeout", type=float, default=60.0)
    p.add_argument("--json", metavar="FILE", help="JSON output (default reports/suites-<time>.json)")
    p.add_argument("--quiet", action="store_true")
    return p


def summarize(positions: list[Position], results: dict[tuple[str, int], dict]) -> list[dict[str, Any]]:
    suites: dict[str, dict[str, Any]] = {}
    labels: dict[str, str] = {}
    for pos in positions:
        r = results.get((pos.suite, pos.index))
        s = suites.setdefault(pos.suite, {"suite": pos.suite, "total": 0, "done": 0, "solved": 0,
                                          "sts_points": 0, "sts_max": 0, "themes": {}})
        s["total"] += 1
        if r is None:
            continue
        s["done"] += 1
        s["solved"] += r["solved"]
        if r["points"] is not None:
            s["sts_points"] += r["points"]
            s["sts_max"] += r["max_points"]
            if pos.theme:
                label = labels.setdefault(pos.theme_key, pos.theme)
                t = s["themes"].setdefault(label, {"points": 0, "max": 0, "solved": 0, "done": 0})
                t["points"] += r["points"]
                t["max"] += r["max_points"]
                t["solved"] += r["solved"]
                t["done"] += 1
    return list(suites.values())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if a.movetime is None and a.nodes is None and a.depth is None:
        a.movetime = 0.1
    spec = el.EngineSpec.parse(a.engine, a.option + [o for o in a.options.split(",") if o.strip()])
    positions: list[Position] = []
    skipped: list[str] = []
    paths = resolve_suites(a.suites)
    for path in paths:
        ps, sk = load_suite(path, a.limit)
        positions += ps
        skipped += sk
    if not positions:
        parser.error("no positions")
    limit = chess.engine.Limit(time=a.movetime, nodes=a.nodes, depth=a.depth)
    timeout = (a.movetime or 0) + a.stall_timeout
    results: dict[tuple[str, int], dict] = {}
    infos: list[el.EngineInfo] = []
    error_lines: list[str] = []
    bar = el.progress_bar(len(positions), "pos", a.quiet)

    async def task(protocol, pos: Position):
        board = chess.Board(pos.fen)
        played, _ = await el.awake_wait_for(protocol.play(board, limit, game=object()), timeout)
        move = played.move.uci() if played.move is not None and played.move in board.legal_moves else None
        return {"move": move} | score(pos, move)

    def on_error(pos: Position, err: Exception):
        return {"move": None, "error": repr(err)} | score(pos, None)

    def on_result(pos: Position, r: dict) -> None:
        results[(pos.suite, pos.index)] = r
        if bar is not None:
            bar.update(1)

    t0 = time.monotonic()
    interrupted = False
    try:
        interrupted = not asyncio.run(el.run_pool(spec, positions, task, a.concurrency, on_result,
                                                  on_error, infos, error_lines))
    except KeyboardInterrupt:
        interrupted = True
    if bar is not None:
        bar.close()
    elapsed = time.monotonic() - t0
    rows = summarize(positions, results)
    info = infos[0] if infos else None

    lim = ", ".join(f"{k} {v}" for k, v in (("movetime", a.movetime), ("nodes", a.nodes), ("depth", a.depth))
                    if v is not None)
    print(f"Suites: {', '.join(p.name for p in paths)} ({len(results)}/{len(positions)} positions"
          + (", interrupted" if interrupted else "") + f", {elapsed:.1f} s)")
    if info:
        print(f"Engine: {info.header_line()}")
    print(f"Limit per move: {lim}; concurrency {a.concurrency}" + (f"; {len(skipped)} lines skipped" if skipped else ""))
    for line in error_lines[:3]:
        print(f"  engine reported: info string {line[:160]}")
    print(f"{'suite':<24} {'solved':>7} {'done':>6} {'%':>6} {'STS points':>14}")
    for r in rows:
        pct = 100 * r["solved"] / r["done"] if r["done"] else 0.0
        sts = (f"{r['sts_points']}/{r['sts_max']} ({100 * r['sts_points'] / r['sts_max']:.1f}%)"
               if r["sts_max"] else "")
        print(f"{r['suite']:<24} {r['solved']:>7} {r['done']:>6} {pct:>5.1f}% {sts:>14}")
        for theme, t in r["themes"].items():
            print(f"  {theme:<32} {t['points']:>5}/{t['max']:<5} ({100 * t['points'] / t['max']:.1f}%)")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(a.json or el.REPO_ROOT / "reports" / f"suites-{stamp}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "engine": info.as_dict() if info else None,
        "limit": {"movetime": a.movetime, "nodes": a.nodes, "depth": a.depth},
        "suites": rows, "files": {p.stem: {"path": str(p), "sha256": el.sha256_file(p)} for p in paths},
        "limit_per_suite": a.limit, "concurrency": a.concurrency, "seconds": round(elapsed, 1),
        "interrupted": interrupted, "skipped": skipped, "engine_error_lines": error_lines,
        "positions": [{"suite": p.suite, "id": p.id, "fen": p.fen, "bm": p.bm, "am": p.am,
                       **results.get((p.suite, p.index), {})} for p in positions],
    }, indent=1) + "\n")
    print(f"JSON: {out}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
