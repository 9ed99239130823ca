#!/usr/bin/env python3
"""Gauntlet: Glimpse against a ladder of opponents, with a table, a PNG and an anchored Elo.

The ladder is Stockfish 15.1 at ``Skill Level`` values (``--levels``), Stockfish with
``UCI_LimitStrength`` at ``UCI_Elo`` values (``--elos``), any further engine (``--opponent SPEC``,
repeatable) and, with ``--apt-engines``, whichever of Ethereal, Toga II and Glaurung are installed
from apt. Each opponent plays a tools/match.py match (same time control, book, seed).

The Elo estimate is a maximum-likelihood fit of one rating R to the results against the
``UCI_Elo`` opponents only, each taken at its nominal rating: expected score
``1/(1+10^((UCI_Elo−R)/400))`` per game, draws as half points; its 95 % interval comes from the
Fisher information. Scale: Stockfish documents UCI_Elo (README of 15.1, /usr/share/doc/stockfish)
as "calibrated at a time control of 60s+0.6s and anchored to CCRL 40/4", i.e. an engine rating
list scale, not FIDE or Lichess; at other time controls and on other hardware the anchor is
approximate. Skill Level opponents have no documented Elo: they are shown as scores only.

Examples::

    tools/gauntlet.py --levels 0 2 4 --elos 1350 1500 --games 20
    tools/gauntlet.py --elos 1350 1450 1550 --tc 10+0.1 --games 40 --concurrency 2
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import sys
from pathlib import Path
from typing import Any

from glimpse_tools import enginelib as el
from glimpse_tools import match as match_tool

# matplotlib is imported inside the plotting function alone: the rest of the module works without it.

LN10_400 = math.log(10) / 400


@dataclasses.dataclass
class Rung:
    label: str
    spec: el.EngineSpec
    kind: str            # "skill", "elo" or "engine"
    level: float | None  # Skill Level or UCI_Elo


def fit_rating(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """ML rating from (anchor Elo, points, games) rows; None without anchored games.

    Returns {"elo", "low", "high", "se"}; ``elo`` is ±inf (with the bound in low/high) when every
    anchored game was won or every one lost (no finite maximum).
    """
    rows = [r for r in rows if r["games"] > 0]
    if not rows:
        return None
    points = sum(r["points"] for r in rows)
    games = sum(r["games"] for r in rows)
    lo_anchor = min(r["anchor"] for r in rows)
    hi_anchor = max(r["anchor"] for r in rows)
    if points <= 0:
        return {"elo": -math.inf, "low": -math.inf, "high": lo_anchor, "se": None}
    if points >= games:
        return {"elo": math.inf, "low": hi_anchor, "high": math.inf, "se": None}

    def grad(r: float) -> float:  # d logL / dR, up to the factor ln10/400; decreasing in r
        return sum(x["points"] - x["games"] * el.score_from_elo(r - x["anchor"]) for x in rows)

    lo, hi = lo_anchor - 2000.0, hi_anchor + 2000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if grad(mid) > 0:
            lo = mid
        else:
            hi = mid
    r = (lo + hi) / 2
    info = sum(x["games"] * el.score_from_elo(r - x["anchor"]) * (1 - el.score_from_elo(r - x["anchor"]))
               for x in rows) * LN10_400 ** 2
    se = 1 / math.sqrt(info)
    return {"elo": r, "low": r - 1.959964 * se, "high": r + 1.959964 * se, "se": se}


def build_ladder(args) -> list[Rung]:
    ladder: list[Rung] = []
    sf = args.stockfish
    extra = [o for o in args.sf_options.split(",") if o.strip()]
    for level in args.levels or []:
        spec = el.EngineSpec.parse(sf, extra + [f"Skill Level={level}"], name=f"Stockfish skill {level}")
        ladder.append(Rung(f"skill {level}", spec, "skill", float(level)))
    for elo in args.elos or []:
        spec = el.EngineSpec.parse(sf, extra + ["UCI_LimitStrength=true", f"UCI_Elo={elo}"],
                                   name=f"Stockfish UCI_Elo {elo}")
        ladder.append(Rung(f"UCI_Elo {elo}", spec, "elo", float(elo)))
    for text in args.opponent or []:
        spec = el.EngineSpec.parse(text)
        ladder.append(Rung(Path(spec.command[0]).name + (f" ({spec.describe_options()})" if spec.options else ""),
                           spec, "engine", None))
    if args.apt_engines:
        for alias in el.APT_ENGINES:
            path = el.ALIASES[alias]()
            if Path(path).exists():
                ladder.append(Rung(alias, el.EngineSpec([path]), "engine", None))
    return ladder


def plot(rows: list[dict[str, Any]], fit: dict | None, path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    anchored = [r for r in rows if r["kind"] == "elo" and r["games"]]
    ncols = 2 if anchored else 1
    fig, axes = plt.subplots(1, ncols, figsize=(6 * ncols + 1, 4.5), dpi=110, squeeze=False)
    ax = axes[0][0]
    xs = list(range(len(rows)))
    ys = [100 * r["score"] if r["games"] else float("nan") for r in rows]
    err = [[max(0.0, 100 * (r["score"] - r["score_low"])) if r["games"] else 0 for r in rows],
           [max(0.0, 100 * (r["score_high"] - r["score"])) if r["games"] else 0 for r in rows]]
    ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=3)
    ax.axhline(50, color="gray", lw=0.8, ls="--")
    ax.set_xticks(xs, [r["label"] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("engine A score (%)")
    ax.set_ylim(-2, 102)
    ax.set_title("score per opponent (95% interval)", fontsize=9)
    ax.grid(alpha=0.3)
    if anchored:
        ax = axes[0][1]
        ex = [r["level"] for r in anchored]
        ax.errorbar(ex, [100 * r["score"] for r in anchored],
                    yerr=[[max(0.0, 100 * (r["score"] - r["score_low"])) for r in anchored],
                          [max(0.0, 100 * (r["score_high"] - r["score"])) for r in anchored]],
                    fmt="o", capsize=3, label="measured")
        if fit and math.isfinite(fit["elo"]):
            lo, hi = min(ex) - 200, max(ex) + 200
            grid = [lo + i * (hi - lo) / 100 for i in range(101)]
            ax.plot(grid, [100 * el.score_from_elo(fit["elo"] - g) for g in grid],
                    label=f"fit: R = {fit['elo']:.0f} ± {1.96 * fit['se']:.0f}")
        ax.set_xlabel("Stockfish UCI_Elo (CCRL 40/4-anchored scale)")
        ax.set_ylabel("engine A score (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("score vs UCI_Elo", fontsize=9)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gauntlet.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    match_tool.add_engine_args(p)
    p.add_argument("--levels", nargs="*", type=int, default=None, metavar="N",
                   help="Stockfish Skill Level rungs (0..20)")
    p.add_argument("--elos", nargs="*", type=int, default=None, metavar="ELO",
                   help="Stockfish UCI_LimitStrength+UCI_Elo rungs (15.1: 1350..2850)")
    p.add_argument("--opponent", action="append", metavar="SPEC", help="further opponent (repeatable)")
    p.add_argument("--apt-engines", action="store_true",
                   help="add Ethereal, Toga II and Glaurung where installed (apt-get install "
                        "ethereal-chess toga2 glaurung)")
    p.add_argument("--stockfish", default="stockfish", help="Stockfish command (default: alias stockfish)")
    p.add_argument("--sf-options", default="", metavar="LIST",
                   help="extra Stockfish options for every rung, e.g. Hash=16")
    match_tool.add_limit_args(p, "10+0.1")
    p.add_argument("--games", type=int, default=20, help="games per opponent (default 20)")
    p.add_argument("--book", default=str(el.DEFAULT_BOOK))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=el.cpu_count(),
                   help="games at once, Threads=1 per engine when > 1 (default: CPUs = %(default)s)")
    p.add_argument("--timemargin", type=int, default=0, metavar="MS")
    p.add_argument("--out", metavar="PREFIX",
                   help="output prefix: PREFIX.json, PREFIX.png, PREFIX-<rung>.pgn "
                        "(default reports/gauntlet-<time>)")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.tc_is_default = not any(a == "--tc" or a.startswith("--tc=") for a in argv)
    if args.levels is None and args.elos is None and not args.opponent and not args.apt_engines:
        args.levels, args.elos = [0, 3, 6], [1350, 1500]
    ladder = build_ladder(args)
    if not ladder:
        parser.error("empty ladder")
    spec_a = el.EngineSpec.parse(args.a, args.a_option + [o for o in args.a_options.split(",") if o.strip()],
                                 args.a_name)
    tc = match_tool.time_control_from_args(args)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or str(el.REPO_ROOT / "reports" / f"gauntlet-{stamp}")
    rows: list[dict[str, Any]] = []
    engine_a: dict | None = None
    interrupted = False
    for i, rung in enumerate(ladder):
        print(f"=== {i + 1}/{len(ladder)}: {rung.label}", flush=True)
        slug = "".join(c if c.isalnum() else "_" for c in rung.label)
        cfg = match_tool.MatchConfig(spec_a, rung.spec, tc, args.games,
                                     None if args.book.lower() == "none" else args.book, "random",
                                     args.seed, args.concurrency, pgn_out=f"{out}-{slug}.pgn",
                                     json_out=f"{out}-{slug}.json", event=f"Glimpse gauntlet: {rung.label}",
                                     timemargin=args.timemargin, quiet=args.quiet)
        s = match_tool.run_match(cfg)
        engine_a = engine_a or s["engines"].get("A")
        st = el.elo_stats(s["wins"], s["draws"], s["losses"])
        n = s["games"]
        se = math.sqrt(max(0.0, (s["wins"] * (1 - st.score) ** 2 + s["draws"] * (0.5 - st.score) ** 2
                                 + s["losses"] * st.score ** 2) / n / n)) if n else 0.0
        rows.append({
            "label": rung.label, "kind": rung.kind, "level": rung.level,
            "opponent": s["engines"].get("B"), "games": n, "wins": s["wins"], "draws": s["draws"],
            "losses": s["losses"], "points": s["wins"] + 0.5 * s["draws"],
            "score": st.score if n else None,
            "score_low": max(0.0, st.score - 1.959964 * se) if n else None,
            "score_high": min(1.0, st.score + 1.959964 * se) if n else None,
            "elo_diff": st.elo if n and math.isfinite(st.elo) else None,
            "elo_low": st.elo_low if n and math.isfinite(st.elo_low) else None,
            "elo_high": st.elo_high if n and math.isfinite(st.elo_high) else None,
            "illegal": s["illegal"], "time_forfeits": s["time_forfeits"], "crashes": s["crashes"],
            "pgn": cfg.pgn_out,
        })
        if s["interrupted"]:
            interrupted = True
            break

    fit = fit_rating([{"anchor": r["level"], "points": r["points"], "games": r["games"]}
                      for r in rows if r["kind"] == "elo"])
    name = (engine_a or {}).get("label") or (engine_a or {}).get("id_name") or "engine A"
    print()
    print(f"Gauntlet of {name}" + (" (interrupted)" if interrupted else ""))
    if engine_a:
        print(f"  Engine: {engine_a['id_name']}, options {engine_a['options'] or '(defaults)'}, "
              f"weights {engine_a.get('weights') or '-'} sha256 {engine_a.get('weights_sha256') or '-'}")
    print(f"  Time control {tc.describe()}, {args.games} games per opponent, book {args.book}, "
          f"seed {args.seed}, concurrency {args.concurrency}")
    print(f"{'opponent':<28} {'version':<18} {'W':>4} {'D':>4} {'L':>4} {'score':>7} {'Elo diff':>18} {'implied':>8}")
    for r in rows:
        if not r["games"]:
            continue
        st = el.elo_stats(r["wins"], r["draws"], r["losses"])

        def f(x: float) -> str:
            return f"{x + 0.0:+.0f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")
        diff = f"{f(st.elo)} [{f(st.elo_low)},{f(st.elo_high)}]"
        implied = f"{r['level'] + r['elo_diff']:.0f}" if r["kind"] == "elo" and r["elo_diff"] is not None else ""
        version = (r["opponent"] or {}).get("id_name", "")
        print(f"{r['label']:<28} {version:<18} {r['wins']:>4} {r['draws']:>4} {r['losses']:>4} "
              f"{100 * r['score']:>6.1f}% {diff:>18} {implied:>8}")
    if fit is None:
        print("Elo estimate: none (no UCI_Elo opponents; Skill Level has no documented Elo).")
        estimate = None
    elif math.isfinite(fit["elo"]):
        print(f"Elo estimate: {fit['elo']:.0f} (95% {fit['low']:.0f}..{fit['high']:.0f}) on Stockfish's "
              "UCI_Elo scale (approximate at other time controls and hardware).")
        estimate = fit
    else:
        bound = f"above {fit['low']:.0f}" if fit["elo"] > 0 else f"below {fit['high']:.0f}"
        print(f"Elo estimate: {bound} (every anchored game {'won' if fit['elo'] > 0 else 'lost'}); "
              "add stronger/weaker UCI_Elo rungs.")
        estimate = fit
    print("Scale: Stockfish 15.1 documents UCI_Elo as calibrated at 60s+0.6s and anchored to CCRL 40/4 "
          "(an engine rating-list scale, not FIDE or Lichess).")
    doc = {
        "engine": engine_a, "time_control": tc.describe(), "games_per_opponent": args.games,
        "book": args.book, "seed": args.seed, "concurrency": args.concurrency, "interrupted": interrupted,
        "rows": rows,
        "estimate": ({k: (v if v is None or math.isfinite(v) else str(v)) for k, v in estimate.items()}
                     if estimate else None),
        "scale": "Stockfish 15.1 UCI_Elo: calibrated at 60s+0.6s, anchored to CCRL 40/4 (Stockfish README)",
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out + ".json").write_text(json.dumps(doc, indent=1) + "\n")
    if any(r["games"] for r in rows):
        title = f"{name}: gauntlet at {tc.describe()}, {args.games} games per opponent"
        if fit and math.isfinite(fit["elo"]):
            title += f"; estimate {fit['elo']:.0f} ± {1.96 * fit['se']:.0f} (UCI_Elo scale)"
        plot(rows, fit, out + ".png", title)
        print(f"PNG: {out}.png")
    print(f"JSON: {out}.json")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
