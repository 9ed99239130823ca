#!/usr/bin/env python3
"""Elo against playouts: Glimpse's MCTS mode at ``go nodes N`` against the searchless engine.

For each playout count N (``--playouts``, default 25 100 400 1600) the script plays a tools/match.py
match of G games (``--games``, default 20): engine A is Glimpse with ``SearchMode=mcts`` (the
``--mode-options``) searching ``go nodes N``; engine B is Glimpse with its default options (the
searchless policy), also sent ``go nodes N`` (which the searchless policy ignores: it always scores
every legal move once) unless ``--b-tc``/``--b-movetime``/``--b-nodes``/``--b-depth`` give it its
own limit. Openings come from the book as in match.py, each played with both colours; the same seed
gives the same openings at every N. Per N: W/D/L, score, Elo difference with a 95 % interval
(match.py's statistics), A's reported nodes per move and time per move. Outputs: a table,
``PREFIX.json``, ``PREFIX.png`` (Elo ± interval against playouts on a log axis, the searchless
baseline at 0) and a PGN + JSON per N (``PREFIX-n<N>.pgn``).

Examples::

    tools/scaling.py                                    # 25 100 400 1600 playouts, 20 games each
    tools/scaling.py --playouts 1 4 16 --games 10 --concurrency 2
    tools/scaling.py --both-option WeightsFile=weights/glimpse-av.onnx --b-tc 10+0.1
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import shlex
import sys
from pathlib import Path
from typing import Any

import chess.engine

from glimpse_tools import enginelib as el
from glimpse_tools import match as match_tool

# matplotlib is imported inside the plotting function alone: the rest of the module works without it.

DEFAULT_PLAYOUTS = [25, 100, 400, 1600]


def _finite(x: float | None) -> float | None:
    return x + 0.0 if x is not None and math.isfinite(x) else None  # + 0.0: no -0.0


def row_from_summary(playouts: int, s: dict[str, Any]) -> dict[str, Any]:
    """One point of the curve from a match.py summary (engine A's point of view).

    ``elo``, ``elo_low`` and ``elo_high`` are None where infinite (a score of 0 or 1, or an interval
    end beyond it); ``score`` then says which.
    """
    st = el.elo_stats(s["wins"], s["draws"], s["losses"])
    n = s["games"]
    return {
        "playouts": playouts, "games": n, "wins": s["wins"], "draws": s["draws"], "losses": s["losses"],
        "score": st.score if n else None,
        "elo": _finite(st.elo) if n else None,
        "elo_low": _finite(st.elo_low) if n else None,
        "elo_high": _finite(st.elo_high) if n else None,
        "los": st.los if n else None,
        "a_nodes_per_move": (s.get("mean_nodes_per_move") or {}).get("A"),
        "a_ms_per_move": s["mean_move_ms"]["A"], "b_ms_per_move": s["mean_move_ms"]["B"],
        "illegal": s["illegal"], "time_forfeits": s["time_forfeits"], "crashes": s["crashes"],
        "stalls": s["stalls"], "engine_errors": s["engine_errors"], "terminations": s["terminations"],
        "interrupted": s["interrupted"], "pgn": s.get("pgn"),
    }


def elo_text(row: dict[str, Any]) -> str:
    """``+35 [-20, +92]`` with ±inf where the interval is unbounded."""
    if not row["games"]:
        return "-"
    st = el.elo_stats(row["wins"], row["draws"], row["losses"])

    def f(x: float) -> str:
        return f"{x + 0.0:+.0f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")
    return f"{f(st.elo)} [{f(st.elo_low)}, {f(st.elo_high)}]"


def plot(rows: list[dict[str, Any]], path: str, title: str, baseline: str) -> None:
    """Elo ± 95 % interval against playouts (log x axis), with the baseline B at 0.

    Infinite values (all games won or lost, or an interval reaching a score of 0 or 1) are drawn at
    the edge of the plot, a point as a triangle pointing outwards.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    done = [r for r in rows if r["games"]]
    stats = [el.elo_stats(r["wins"], r["draws"], r["losses"]) for r in done]
    finite = [abs(v) for st in stats for v in (st.elo, st.elo_low, st.elo_high) if math.isfinite(v)]
    clip = max(400.0, 1.15 * max(finite, default=0.0))

    def c(v: float) -> float:
        return max(-clip, min(clip, v))

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    ax.axhline(0, color="gray", lw=1, ls="--", label=f"baseline: {baseline}")
    xs = [r["playouts"] for r in done]
    ys = [c(st.elo) for st in stats]
    low = [max(0.0, c(st.elo) - c(st.elo_low)) for st in stats]
    high = [max(0.0, c(st.elo_high) - c(st.elo)) for st in stats]
    if done:
        ax.errorbar(xs, ys, yerr=[low, high], fmt="-", color="C0", capsize=4, lw=1.2)
        for x, y, st, r in zip(xs, ys, stats, done):
            marker = "^" if st.elo == math.inf else "v" if st.elo == -math.inf else "o"
            ax.plot([x], [y], marker=marker, color="C0", ms=7)
            ax.annotate(f"{100 * st.score:.0f}% ({r['games']})", (x, y), textcoords="offset points",
                        xytext=(6, 6), fontsize=7)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # only the measured N are labelled
    if xs:
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlim(min(xs) / 1.5, max(xs) * 1.5)
    ax.set_ylim(-clip * 1.05, clip * 1.05)
    ax.set_xlabel("MCTS playouts per move (go nodes N)")
    ax.set_ylabel("Elo difference vs baseline (95% interval)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def warnings_for(rows: list[dict[str, Any]], engine_a: dict | None) -> list[str]:
    """Signs that the measurement is not what it claims: undeclared options, ignored node limits."""
    out = []
    if engine_a and engine_a.get("unsupported_options"):
        said = "; it said: " + " | ".join(engine_a["startup_errors"]) if engine_a.get("startup_errors") else ""
        out.append(f"engine A does not declare {', '.join(engine_a['unsupported_options'])}: the options "
                   f"were sent anyway, and the engine probably ignored them{said}")
    for r in rows:
        nodes = r.get("a_nodes_per_move")
        if nodes is not None and r["playouts"] > 1 and nodes < 0.5 * r["playouts"]:
            out.append(f"at go nodes {r['playouts']} engine A reported {nodes:.1f} nodes per move: "
                       "the node limit does not seem to drive its search")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scaling.py", description=__doc__.split("\n\n")[0] + "\n\n"
                                + __doc__.split("\n\n")[1], epilog=__doc__.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    match_tool.add_engine_args(p)
    p.add_argument("--mode-options", default="SearchMode=mcts", metavar="LIST",
                   help="options that put engine A in search mode (default %(default)s; before --a-options)")
    p.add_argument("--b", default="glimpse", metavar="SPEC", help="baseline engine B (default: glimpse, "
                   "searchless by default)")
    p.add_argument("--b-option", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for engine B (repeatable)")
    p.add_argument("--b-options", default="", metavar="LIST", help="comma-separated options for engine B")
    p.add_argument("--b-name", help="label of engine B")
    p.add_argument("--both-option", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for both engines (repeatable), e.g. WeightsFile=weights/glimpse-av.onnx")
    p.add_argument("--both-options", default="", metavar="LIST", help="comma-separated options for both engines")
    p.add_argument("--playouts", nargs="+", type=int, default=DEFAULT_PLAYOUTS, metavar="N",
                   help="playout counts, A gets 'go nodes N' (default: %(default)s)")
    p.add_argument("--games", type=int, default=20, help="games per playout count (default 20)")
    match_tool.add_b_limit_args(p)
    p.add_argument("--book", default=str(el.DEFAULT_BOOK),
                   help="EPD or PGN opening book, or 'none' (default: %(default)s)")
    p.add_argument("--book-order", choices=("random", "sequential"), default="random")
    p.add_argument("--seed", type=int, default=1, help="seed for the openings (default 1; the same at every N)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="games at once (default 1); with >1 each engine gets Threads=1 unless set")
    match_tool.add_adjudication_args(p)
    p.add_argument("--timemargin", type=int, default=0, metavar="MS",
                   help="allowed clock overrun in ms (only when B has a clock)")
    p.add_argument("--stall-timeout", type=float, default=300.0, metavar="S",
                   help="seconds without a move before an engine at fixed nodes loses (default 300)")
    p.add_argument("--strict-options", action="store_true",
                   help="refuse options an engine does not declare (default: send them anyway and warn)")
    p.add_argument("--reuse", metavar="N=JSON", nargs="*", default=[],
                   help="take the point for N playouts from an earlier match.py JSON (same engines and "
                        "limits, e.g. a longer match) instead of playing it")
    p.add_argument("--out", metavar="PREFIX",
                   help="PREFIX.json, PREFIX.png, PREFIX-n<N>.pgn/.json (default reports/scaling-<time>)")
    p.add_argument("--quiet", action="store_true", help="no per-game lines")
    return p


def specs_from_args(args) -> tuple[el.EngineSpec, el.EngineSpec]:
    """Engine A (mode options, both-options, A's options, in that order) and engine B."""
    def split(text: str) -> list[str]:
        return [o for o in text.split(",") if o.strip()]
    both = split(args.both_options) + args.both_option
    spec_a = el.EngineSpec.parse(args.a, split(args.mode_options) + both + split(args.a_options) + args.a_option,
                                 args.a_name)
    spec_b = el.EngineSpec.parse(args.b, both + split(args.b_options) + args.b_option, args.b_name)
    spec_a.send_unknown_options = spec_b.send_unknown_options = not args.strict_options
    return spec_a, spec_b


def parse_reuse(items: list[str]) -> dict[int, str]:
    """``N=match.json`` pairs: points taken from an earlier match.py JSON instead of played."""
    out: dict[int, str] = {}
    for item in items:
        n, sep, path = item.partition("=")
        if not sep or not n.strip().isdigit() or not Path(path).is_file():
            raise SystemExit(f"scaling.py: error: --reuse wants N=existing-match.json, got {item!r}")
        out[int(n)] = path
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.games < 1 or args.concurrency < 1 or any(n < 1 for n in args.playouts):
        parser.error("--games, --concurrency and --playouts must be >= 1")
    spec_a, spec_b = specs_from_args(args)
    tc_b = match_tool.b_time_control_from_args(args)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or str(el.REPO_ROOT / "reports" / f"scaling-{stamp}")
    book = None if args.book.lower() in ("none", "") else args.book
    rows: list[dict[str, Any]] = []
    engines: dict[str, Any] = {}
    interrupted = False
    reuse = parse_reuse(args.reuse)
    for i, n in enumerate(args.playouts):
        if n in reuse:
            s = json.loads(Path(reuse[n]).read_text())
            print(f"=== {i + 1}/{len(args.playouts)}: {n} playouts: {s['games']} games from {reuse[n]}", flush=True)
            engines = engines or s.get("engines", {})
            rows.append(row_from_summary(n, s))
            continue
        print(f"=== {i + 1}/{len(args.playouts)}: {n} playouts (go nodes {n}), {args.games} games", flush=True)
        cfg = match_tool.MatchConfig(
            spec_a, spec_b, match_tool.TimeControl(nodes=n), args.games, book, args.book_order, args.seed,
            args.concurrency, match_tool.adjudication_from_args(args), pgn_out=f"{out}-n{n}.pgn",
            json_out=f"{out}-n{n}.json", event=f"Glimpse scaling: {n} playouts",
            timemargin=args.timemargin, stall_timeout=args.stall_timeout, quiet=args.quiet, tc_b=tc_b)
        try:
            s = match_tool.run_match(cfg)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, OSError, asyncio.TimeoutError) as err:
            el.eprint(f"scaling.py: error: an engine failed to start or be configured: {err}")
            return 2
        engines = engines or s["engines"]
        rows.append(row_from_summary(n, s))
        if s["interrupted"]:
            interrupted = True
            break

    name_a = (engines.get("A") or {}).get("label", "engine A")
    name_b = (engines.get("B") or {}).get("label", "engine B")
    b_limit = tc_b.describe() if tc_b else "go nodes N (as A)"
    counts = sorted({r["games"] for r in rows if r["games"]})
    per_point = f"{counts[0]} games per point" if len(counts) == 1 else "games per point as labelled"
    warnings = warnings_for(rows, engines.get("A"))
    print()
    print(f"Scaling of {name_a} ({spec_a.describe_options()}) against {name_b} ({spec_b.describe_options().strip('()')})"
          + (" (interrupted)" if interrupted else ""))
    print(f"  A: go nodes N; B: {b_limit}; {per_point.replace('point', 'N')}, book {book or 'startpos'}, "
          f"seed {args.seed}, concurrency {args.concurrency}")
    print(f"{'playouts':>8} {'games':>5} {'W':>4} {'D':>4} {'L':>4} {'score':>7} {'Elo [95%]':>22} "
          f"{'A nodes/mv':>10} {'A ms/mv':>8} {'B ms/mv':>8}")
    for r in rows:
        if not r["games"]:
            continue

        def num(x: float | None, fmt: str) -> str:
            return format(x, fmt) if x is not None else "-"
        print(f"{r['playouts']:>8} {r['games']:>5} {r['wins']:>4} {r['draws']:>4} {r['losses']:>4} "
              f"{100 * r['score']:>6.1f}% {elo_text(r):>22} {num(r['a_nodes_per_move'], '.1f'):>10} "
              f"{num(r['a_ms_per_move'], '.0f'):>8} {num(r['b_ms_per_move'], '.0f'):>8}")
        faults = {k: r[k] for k in ("illegal", "time_forfeits", "crashes", "stalls") if any(r[k].values())}
        if faults:
            print(f"{'':>8} faults: " + "; ".join(f"{k} A {v['A']} B {v['B']}" for k, v in faults.items()))
    for w in warnings:
        print(f"WARNING: {w}")
    doc = {
        "engines": engines, "engine_a_spec": {"command": spec_a.command, "options": spec_a.options},
        "engine_b_spec": {"command": spec_b.command, "options": spec_b.options},
        "playouts": args.playouts, "games_per_point": args.games, "a_limit": "go nodes N",
        "b_limit": b_limit, "book": book, "book_order": args.book_order, "seed": args.seed,
        "concurrency": args.concurrency, "interrupted": interrupted, "rows": rows, "warnings": warnings,
        "elo_model": "logistic Elo, 95 % interval from the trinomial normal approximation (tools/enginelib.py "
                     "elo_stats); null where infinite",
        "started": stamp,
        "command": "python -m glimpse_tools.scaling " + shlex.join(argv),
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    if any(r["games"] for r in rows):
        title = (f"{name_a} ({spec_a.describe_options()}) vs {name_b}\n"
                 f"{per_point}, B at {b_limit}, book {Path(book).name if book else 'startpos'}")
        plot(rows, out + ".png", title, name_b + (f" ({spec_b.describe_options()})" if spec_b.options else ""))
        doc["png"] = out + ".png"
        print(f"PNG: {out}.png")
    Path(out + ".json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"JSON: {out}.json")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
