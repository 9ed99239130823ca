#!/usr/bin/env python3
"""Ladder (``make ladder``): the strength of a Glimpse net on Stockfish's ``UCI_Elo`` scale, searchless
and with MCTS, from one gauntlet per search mode.

Each mode plays ``tools/gauntlet.py`` against Stockfish 15.1 at ``UCI_Elo`` 1500, 1700, 1900, 2100
(``--elos``) and ``Skill Level`` 0 (``--levels``, for continuity with older figures; no Elo), at 10+0.1,
``Threads 1`` on both sides, paired openings (each opening with both colours) from the book, concurrency
≤ 2. Per mode the rating is the gauntlet's maximum-likelihood fit over its ``UCI_Elo`` games (one rating
R, expected score ``1/(1+10^((UCI_Elo−R)/400))``, draws as half points, 95 % interval from the Fisher
information). The summary ``<out>/ladder.json`` holds both estimates and MCTS − searchless; each mode's
gauntlet writes ``<out>/<mode>.json`` and ``<out>/<mode>.png`` and the PGNs beside them. ``--option NAME=VALUE``
sets a UCI option of Glimpse's in every mode (to put a setting on the scale); the defaults otherwise.

The fit depends on the machine: MCTS searches fewer nodes on a slower one, and ONNX Runtime's int8 kernels differ
with the CPU (VNNI or not). So before the games ``ladder.json`` records the net's ``glimpse bench`` on this machine
(``bench``: searchless evaluations/s, its signature, the CPU model and whether it has VNNI); ``--no-bench`` skips it.

Example::

    python -m glimpse_tools.ladder --games 40 --out tools/results/ladder
    python -m glimpse_tools.ladder --net training/runs/x/best.onnx --games 4 --modes searchless
    python -m glimpse_tools.ladder --games 100 --modes mcts --elos 1900 --levels --option PolicySoftmaxTemp=1
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import subprocess
import sys
from pathlib import Path

from glimpse_tools import bench_results
from glimpse_tools import enginelib as el
from glimpse_tools import gauntlet

MODES = ("searchless", "mcts")


def difference(a: dict | None, b: dict | None) -> dict | None:
    """``b − a`` of two finite gauntlet estimates (``{"elo", "se", …}``) with a 95 % interval from the two
    standard errors taken as independent; ``None`` when either is missing or unbounded."""
    if not a or not b or a.get("se") is None or b.get("se") is None:
        return None
    if not (math.isfinite(float(a["elo"])) and math.isfinite(float(b["elo"]))):
        return None
    d = float(b["elo"]) - float(a["elo"])
    se = math.hypot(float(a["se"]), float(b["se"]))
    return {"elo": d, "se": se, "low": d - 1.959964 * se, "high": d + 1.959964 * se}


def machine_bench(engine: str, net: str | None, bench=bench_results.run_bench) -> dict | None:
    """The net's searchless ``glimpse bench`` here (one repetition, no batch table): ``evaluations_per_s``,
    ``signature``, ``cpu``, ``vnni``; ``None`` (with a warning on stderr) when the bench fails. ``bench(engine,
    args)`` returns the report's ``Key : value`` lines (:func:`bench_results.run_bench`)."""
    args = ["--no-batches", "--reps", "1"] + (["--weights", str(Path(net).resolve())] if net else [])
    try:
        rep = bench(engine, args)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"ladder: no bench figure recorded: {e}", file=sys.stderr)
        return None
    return {"evaluations_per_s": bench_results.number(rep.get("Evaluations/s", "")),
            "signature": rep.get("Bench signature"), "cpu": bench_results.cpu_model(),
            "vnni": bench_results.cpu_has_vnni()}


def gauntlet_args(args: argparse.Namespace, mode: str, out: Path) -> list[str]:
    """The ``tools/gauntlet.py`` command line of one mode."""
    argv = ["--a", args.engine, "--a-option", f"SearchMode={mode}", "--a-option", "Threads=1",
            "--elos", *map(str, args.elos), "--tc", args.tc, "--games", str(args.games),
            "--concurrency", str(args.concurrency), "--book", args.book, "--seed", str(args.seed),
            "--out", str(out / mode), "--quiet"]
    if args.levels:
        argv[argv.index("--elos"):argv.index("--elos")] = ["--levels", *map(str, args.levels)]
    if args.net:
        argv += ["--a-option", f"WeightsFile={Path(args.net).resolve()}"]
    for opt in args.option:
        argv += ["--a-option", opt]
    return argv


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ladder.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--engine", default=str(el.REPO_ROOT / "target" / "release" / "glimpse"))
    p.add_argument("--net", help="WeightsFile for Glimpse (default: the embedded net)")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a UCI option for Glimpse in every mode (repeatable), e.g. PolicySoftmaxTemp=1")
    p.add_argument("--no-bench", action="store_true", help="record no glimpse bench figure of the machine")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--elos", nargs="+", type=int, default=[1500, 1700, 1900, 2100])
    p.add_argument("--levels", nargs="*", type=int, default=[0], help="Skill Levels (shown as scores only)")
    p.add_argument("--tc", default="10+0.1")
    p.add_argument("--games", type=int, default=40, help="games per opponent (even: paired openings)")
    p.add_argument("--concurrency", type=int, default=2, choices=(1, 2))
    p.add_argument("--book", default=str(el.DEFAULT_BOOK))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=str(el.REPO_ROOT / "tools" / "results" / "ladder"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.games % 2:
        build_parser().error("--games must be even (each opening with both colours)")
    for opt in args.option:
        name, eq, _ = opt.partition("=")
        if not eq or not name.strip():
            build_parser().error(f"--option {opt!r}: expected NAME=VALUE")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"date": dt.date.today().isoformat(), "time_control": args.tc, "games_per_opponent": args.games,
                     "elos": args.elos, "levels": args.levels, "net": args.net or "<embedded>",
                     "options": args.option,
                     "command": "python -m glimpse_tools.ladder " + " ".join(argv if argv is not None else sys.argv[1:]),
                     "modes": {}}
    if not args.no_bench:
        summary["bench"] = machine_bench(args.engine, args.net)
        if summary["bench"]:
            print(f"ladder: this machine's glimpse bench: {summary['bench']['evaluations_per_s']} evaluations/s "
                  f"(searchless), VNNI {summary['bench']['vnni']}", flush=True)
    code = 0
    for mode in args.modes:
        print(f"##### ladder: {mode}", flush=True)
        rc = gauntlet.main(gauntlet_args(args, mode, out))
        code = code or rc
        doc = json.loads((out / f"{mode}.json").read_text())
        summary["modes"][mode] = {"estimate": doc["estimate"], "json": f"{mode}.json", "png": f"{mode}.png",
                                  "rows": [{k: r[k] for k in ("label", "games", "wins", "draws", "losses", "score")}
                                           for r in doc["rows"]]}
        if rc:
            break
    est = {m: summary["modes"].get(m, {}).get("estimate") for m in MODES}
    summary["mcts_minus_searchless"] = difference(est["searchless"], est["mcts"])
    try:
        summary["engine_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                  text=True, cwd=el.REPO_ROOT).stdout.strip() or None
    except OSError:
        summary["engine_commit"] = None
    (out / "ladder.json").write_text(json.dumps(summary, indent=1) + "\n")
    print()
    for m in args.modes:
        e = est.get(m)
        if e and e.get("se") is not None:
            print(f"{m:>10}: {float(e['elo']):.0f} (95 % {float(e['low']):.0f}..{float(e['high']):.0f}) UCI_Elo")
        elif e:
            print(f"{m:>10}: {e}")
    d = summary["mcts_minus_searchless"]
    if d:
        print(f"MCTS − searchless: {d['elo']:+.0f} (95 % {d['low']:+.0f}..{d['high']:+.0f})")
    print(f"JSON: {out / 'ladder.json'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
