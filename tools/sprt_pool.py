#!/usr/bin/env python3
"""Pool the runs of one SPRT: several ``glimpse-match --sprt`` result files (and, optionally, the score of
a run still playing) counted as one sequence of games.

A match that a stop cuts short is taken up again with a new seed; the runs' W/D/L add up, and the pooled
log-likelihood ratio is the one SPRT's (the generalised SPRT of ``elostats.sprt_llr``, fishtest's model).
This is sound as long as every run was stopped for a reason of its own (the clock, a stop) and never
because of its result, and none is left out.

    glimpse-sprt-pool tools/results/sprt/mcts-fpu-reduction-0.15-vs-0.3*.json
    glimpse-sprt-pool runs/*.json --add 12 5 9        # plus a run still playing (its "Score of" line)
    glimpse-sprt-pool runs/*.json --json pooled.json

The runs must agree on the SPRT (elo0, elo1, α, β), on both sides' UCI options and on the time
control; otherwise the tool names the file and the field that differ and pools nothing (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from glimpse_tools import elostats


class PoolError(ValueError):
    """A result file that cannot be read or does not belong to the same SPRT as the first one."""


@dataclass(frozen=True)
class Run:
    """One run: its file, W/D/L from A's side and what must match across runs."""

    path: str
    wins: int
    draws: int
    losses: int
    sprt: tuple[float, float, float, float]
    setup: dict
    seed: int | None = None
    started: str | None = None

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses


def load_run(path: str | Path) -> Run:
    """Reads one ``glimpse-match --json`` file. Raises :class:`PoolError` when it is unreadable, not a
    match result, or has no SPRT."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PoolError(f"{path}: cannot read a match result: {e}") from None
    if not isinstance(doc, dict):
        raise PoolError(f"{path}: not a match result (a JSON object is expected)")
    try:
        wins, draws, losses = (int(doc[k]) for k in ("wins", "draws", "losses"))
    except (KeyError, TypeError, ValueError):
        raise PoolError(f"{path}: not a match result (no wins/draws/losses)") from None
    if min(wins, draws, losses) < 0:
        raise PoolError(f"{path}: negative game counts")
    s = doc.get("sprt")
    if not isinstance(s, dict):
        raise PoolError(f"{path}: the match ran without --sprt")
    try:
        sprt = tuple(float(s[k]) for k in ("elo0", "elo1", "alpha", "beta"))
    except (KeyError, TypeError, ValueError):
        raise PoolError(f"{path}: its sprt block lacks elo0/elo1/alpha/beta") from None
    engines = doc.get("engines") if isinstance(doc.get("engines"), dict) else {}
    tc = doc.get("time_control") if isinstance(doc.get("time_control"), dict) else {}
    tc_b = doc.get("time_control_b") if isinstance(doc.get("time_control_b"), dict) else {}
    setup = {
        "options A": (engines.get("A") or {}).get("options"),
        "options B": (engines.get("B") or {}).get("options"),
        "time control": tc.get("text"),
        "time control B": tc_b.get("text"),
    }
    seed = doc.get("seed") if isinstance(doc.get("seed"), int) else None
    started = doc.get("started") if isinstance(doc.get("started"), str) else None
    return Run(str(path), wins, draws, losses, sprt, setup, seed, started)  # type: ignore[arg-type]


def check_same_test(runs: list[Run]) -> None:
    """Raises :class:`PoolError` naming the first run whose SPRT, options or clock differ from the first
    run's."""
    first = runs[0]
    for r in runs[1:]:
        if r.sprt != first.sprt:
            raise PoolError(f"{r.path}: SPRT (elo0, elo1, alpha, beta) {r.sprt} differs from "
                            f"{first.path}'s {first.sprt}")
        for field, value in r.setup.items():
            if value != first.setup[field]:
                raise PoolError(f"{r.path}: {field} {value!r} differs from {first.path}'s "
                                f"{first.setup[field]!r}")


def pool(runs: list[Run], add: tuple[int, int, int] | None = None) -> dict:
    """The pooled result: per-run rows (file, seed, start time, W/D/L, LLR), the summed W/D/L, score, Elo
    with its 95 % interval, LLR, the bounds and the verdict (``H1 accepted``, ``H0 accepted`` or
    ``continue``). ``add`` is the W/D/L of a run not yet in a file. Raises :class:`PoolError` on no runs or
    runs of different tests."""
    if not runs:
        raise PoolError("no result files")
    check_same_test(runs)
    elo0, elo1, alpha, beta = runs[0].sprt
    w = sum(r.wins for r in runs)
    d = sum(r.draws for r in runs)
    loss = sum(r.losses for r in runs)
    if add:
        if min(add) < 0:
            raise PoolError("--add: negative game counts")
        w, d, loss = w + add[0], d + add[1], loss + add[2]
    lo, hi = elostats.sprt_bounds(alpha, beta)
    llr = elostats.sprt_llr(w, d, loss, elo0, elo1)
    verdict = elostats.sprt_state(llr, alpha, beta) or "continue"
    stats = elostats.elo_stats(w, d, loss)
    return {
        "runs": [{"file": r.path, "seed": r.seed, "started": r.started, "games": r.games, "wins": r.wins,
                  "draws": r.draws, "losses": r.losses,
                  "llr": elostats.sprt_llr(r.wins, r.draws, r.losses, elo0, elo1)} for r in runs],
        "added": list(add) if add else None,
        "sprt": {"elo0": elo0, "elo1": elo1, "alpha": alpha, "beta": beta},
        "setup": runs[0].setup,
        "games": stats.games, "wins": w, "draws": d, "losses": loss, "score": stats.score,
        "elo": stats.elo, "elo_low": stats.elo_low, "elo_high": stats.elo_high,
        "llr": llr, "lbound": lo, "ubound": hi, "verdict": verdict,
    }


def report(p: dict) -> str:
    """The pooled result as text: one line a run, then the sum."""
    lines = [f"{r['games']:>5} games  +{r['wins']} ={r['draws']} -{r['losses']}  LLR {r['llr']:+.2f}  {r['file']}"
             for r in p["runs"]]
    if p["added"]:
        w, d, loss = p["added"]
        lines.append(f"{w + d + loss:>5} games  +{w} ={d} -{loss}  (--add)")
    s = p["sprt"]
    lines.append(f"pooled: {p['games']} games, +{p['wins']} ={p['draws']} -{p['losses']} "
                 f"({100 * p['score']:.1f} %), Elo {p['elo']:+.1f} (95 % {p['elo_low']:+.1f} .. {p['elo_high']:+.1f})")
    lines.append(f"SPRT({s['elo0']:g}, {s['elo1']:g}) alpha {s['alpha']:g} beta {s['beta']:g}: LLR {p['llr']:.3f} "
                 f"in [{p['lbound']:.3f}, {p['ubound']:.3f}]: {p['verdict']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="glimpse-sprt-pool", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="glimpse-match --json result files of the one SPRT")
    ap.add_argument("--add", nargs=3, type=int, metavar=("W", "D", "L"),
                    help="W/D/L (A's side) of a run still playing, e.g. from its 'Score of' line")
    ap.add_argument("--json", metavar="OUT", help="also write the pooled result here")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        p = pool([load_run(f) for f in args.files], tuple(args.add) if args.add else None)
    except PoolError as e:
        print(f"glimpse-sprt-pool: {e}", file=sys.stderr)
        return 2
    print(report(p))
    if args.json:
        Path(args.json).write_text(json.dumps(p, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
