#!/usr/bin/env python3
"""Reliability soak: many fast games of Glimpse in a row, with its memory sampled through each game.

Glimpse plays a weak Stockfish and itself, searchless and MCTS mixed, on the project's match runner
(``match.play_game``: the same clock keeping, illegal-move, forfeit and crash rules as ``make match``).
Game ``i`` uses pairing ``i % 4`` (so every stretch of games has the same mix):

====  ======================  ======================  ============================
 #     engine A                engine B                limit
====  ======================  ======================  ============================
 0     Glimpse searchless      Stockfish (weak)        clock ``--tc`` (1+0.1)
 1     Glimpse MCTS            Stockfish (weak)        clock ``--tc``
 2     Glimpse searchless      Glimpse MCTS            clock ``--tc`` (self-play)
 3     Glimpse MCTS            Glimpse searchless      fixed ``--nodes`` (8) per move
====  ======================  ======================  ============================

Each of the ``--concurrency`` workers keeps one long-lived process per configuration (searchless,
MCTS, Stockfish) for all its games, as a tournament manager does, so that a leak shows as growth of
that process's resident memory (RSS, ``/proc/PID/status`` ``VmRSS``, sampled every
``--rss-interval`` s). Per game and Glimpse process the peak RSS is kept; the growth of a
configuration is the mean peak over the last ``--rss-window`` (10 %) of games against the first 10 %.

Counted as failures, for Glimpse's processes: crashes (process gone, or a failed start), illegal
moves, time forfeits (beyond ``--timemargin``), stalls, and protocol warnings (``info string error…`` lines, anything Glimpse writes to stderr
such as a panic message, and output python-chess cannot parse or did not expect outside
``info string``). The report (``OUT.json``, ``OUT.png`` of RSS against games, ``OUT.pgn``) lists
them; the exit status is 1 when any count is non-zero or a configuration's RSS grew by more than
``--max-rss-growth`` (10 %). The opponent's own faults (Stockfish losing on time on a loaded
machine) are reported apart and do not fail the soak.

Example::

    tools/soak.py --games 1000 --concurrency 2 --out reports/soak
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import logging
import platform
import signal
import sys
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine

from glimpse_tools import enginelib as el
from glimpse_tools import match as mt

# matplotlib is imported inside the plotting function alone: the rest of the module works without it.

#: Configurations that each worker keeps running: name → (engine, UCI options).
GLIMPSE_CONFIGS = {"searchless": {"SearchMode": "searchless"}, "mcts": {"SearchMode": "mcts"}}
#: Pairings by ``game_index % 4``: (A, B, limit kind).
PAIRINGS = [("searchless", "stockfish", "clock"), ("mcts", "stockfish", "clock"),
            ("searchless", "mcts", "clock"), ("mcts", "searchless", "nodes")]
#: Counters that must all be zero.
FAULTS = ("crashes", "illegal", "time_forfeits", "stalls", "protocol_warnings")


def read_rss_kib(pid: int) -> int | None:
    """Resident set size of a process in KiB (``VmRSS``), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def growth(values: list[float], fraction: float = 0.1) -> tuple[float | None, float | None, float | None]:
    """(mean of the first ``fraction``, mean of the last ``fraction``, relative growth last/first - 1).

    Each part holds at least one value; None when there are no values.
    """
    if not values:
        return None, None, None
    k = max(1, round(len(values) * fraction))
    first = sum(values[:k]) / k
    last = sum(values[-k:]) / k
    return first, last, (last / first - 1.0) if first > 0 else None


class WarningCounter(logging.Handler):
    """Counts python-chess's complaints about engine output (parse errors, unexpected lines).

    ``Unexpected engine output`` about an ``info string`` line (Glimpse's load message during
    ``isready``) is expected chatter and not counted.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.samples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed log record is itself worth counting
            text = str(record.msg)
        if "Unexpected engine output" in text and "'info string" in text:
            return
        self.count += 1
        if len(self.samples) < 10:
            self.samples.append(text[:300])


@dataclasses.dataclass
class SoakGame:
    """One finished soak game: the match runner's result plus RSS peaks and warnings."""

    number: int
    pairing: int
    a: str
    b: str
    result: mt.GameResult
    #: Peak RSS in MiB during the game of each Glimpse process that played, by configuration.
    rss_peak_mib: dict[str, float]
    warnings: int
    warning_samples: list[str]
    seconds: float


class Soak:
    """Runs the soak; ``run()`` returns the report dict."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.games: list[SoakGame] = []
        self.started = dt.datetime.now(dt.timezone.utc)
        self.t0 = time.perf_counter()
        self.chess_warnings = WarningCounter()
        logger = logging.getLogger("chess.engine")
        logger.setLevel(logging.WARNING)
        logger.addHandler(self.chess_warnings)
        logger.propagate = False
        engine = str(Path(args.engine).resolve())
        self.specs = {name: el.EngineSpec([engine], dict(opts) | el.parse_options(args.glimpse_options),
                                          f"Glimpse-{name}")
                      for name, opts in GLIMPSE_CONFIGS.items()}
        self.specs["stockfish"] = el.EngineSpec.parse(args.stockfish, name="Stockfish")
        self.clock = mt.TimeControl.parse_clock(args.tc)
        self.fixed = mt.TimeControl(nodes=args.nodes)
        self.adj = mt.Adjudication(max_moves=args.maxmoves)
        self.play_cfg = argparse.Namespace(timemargin=args.timemargin, stall_timeout=args.stall_timeout,
                                           stop_event=None, draw_claims="both")
        self.pgn = None
        #: Set by SIGINT/SIGTERM: no new games start; the games in progress end and are reported.
        self.stop = asyncio.Event()

    def log(self, text: str) -> None:
        if not self.args.quiet:
            print(text, flush=True)

    async def worker(self, jobs: asyncio.Queue) -> None:
        extra = {"Threads": "1"}
        slots = {name: mt.EngineSlot(name, spec, extra) for name, spec in self.specs.items()}
        peaks: dict[str, int] = {}
        stop = asyncio.Event()

        def pid_of(slot: mt.EngineSlot) -> int | None:
            t = slot.transport
            return t.get_pid() if t is not None and slot.protocol is not None else None

        async def sampler() -> None:
            while not stop.is_set():
                for name in GLIMPSE_CONFIGS:
                    pid = pid_of(slots[name])
                    rss = read_rss_kib(pid) if pid else None
                    if rss is not None:
                        peaks[name] = max(peaks.get(name, 0), rss)
                try:
                    await asyncio.wait_for(stop.wait(), self.args.rss_interval)
                except asyncio.TimeoutError:
                    pass

        sample_task = asyncio.create_task(sampler())
        try:
            while not self.stop.is_set():
                try:
                    number, opening = jobs.get_nowait()
                except asyncio.QueueEmpty:
                    return
                pairing = (number - 1) % len(PAIRINGS)
                a, b, limit = PAIRINGS[pairing]
                a_white = ((number - 1) // len(PAIRINGS)) % 2 == 0
                game_slots = {"A": slots[a], "B": slots[b]}
                before = {}
                for key, slot in game_slots.items():
                    try:
                        p = await slot.ensure()
                        before[key] = (p, p.error_count, len(p.stderr_lines))
                    except Exception:  # noqa: BLE001 - play_game retries and records the failure
                        pass
                warn0 = self.chess_warnings.count
                for name in GLIMPSE_CONFIGS:
                    peaks.pop(name, None)
                t0 = time.perf_counter()
                tc = self.clock if limit == "clock" else self.fixed
                names = {"A": self.specs[a].name, "B": self.specs[b].name}
                g = await mt.play_game(number, opening, a_white, game_slots, names, tc, self.adj,
                                       self.play_cfg)
                # One last sample, so that a short game still has one.
                for name in (a, b):
                    pid = pid_of(slots[name]) if name in GLIMPSE_CONFIGS else None
                    rss = read_rss_kib(pid) if pid else None
                    if rss is not None:
                        peaks[name] = max(peaks.get(name, 0), rss)
                warnings, samples = 0, []
                for key, (p, errors, stderr) in before.items():
                    name = a if key == "A" else b
                    g.engine_errors[key] = p.error_count - errors
                    warnings += p.error_count - errors
                    recent = list(getattr(p, "recent_errors", p.error_samples))
                    fresh = min(p.error_count - errors, len(recent))
                    samples += [f"{name}: info string {s}" for s in recent[-fresh:][:3]] if fresh else []
                    if name in GLIMPSE_CONFIGS:
                        new = p.stderr_lines[stderr:]
                        warnings += len(new)
                        samples += [f"{name} stderr: {s}" for s in new[:3]]
                    if p.returncode.done() and not g.crashes[key]:
                        # The process died after its last move (e.g. while being told the result).
                        g.crashes[key] += 1
                        slot = game_slots[key]
                        slot.broken = True
                chess_w = self.chess_warnings.count - warn0
                warnings += chess_w
                if chess_w:
                    samples += self.chess_warnings.samples[-chess_w:][:3]
                rss = {name: peaks[name] / 1024 for name in (a, b) if name in GLIMPSE_CONFIGS and name in peaks}
                self.record(SoakGame(number, pairing, a, b, g, rss, warnings, samples,
                                     time.perf_counter() - t0))
        finally:
            stop.set()
            await asyncio.gather(sample_task, return_exceptions=True)
            await asyncio.gather(*(s.close() for s in slots.values()), return_exceptions=True)

    def record(self, s: SoakGame) -> None:
        self.games.append(s)
        g = s.result
        if self.pgn is not None:
            game = g.pgn_game  # type: ignore[attr-defined]
            h = game.headers
            h["Event"] = "Glimpse soak"
            h["Round"] = str(s.number)
            white, black = (s.a, s.b) if g.a_white else (s.b, s.a)
            h["White"], h["Black"] = self.specs[white].name, self.specs[black].name
            print(game, file=self.pgn, end="\n\n", flush=True)
        faults = sum(sum(d.values()) for d in (g.crashes, g.illegal, g.forfeits, g.stalls)) + s.warnings
        rss = ", ".join(f"{k} {v:.0f} MiB" for k, v in s.rss_peak_mib.items())
        if self.args.out and len(self.games) % 20 == 0:
            # A partial report now and then, so that an interrupted soak still leaves one.
            write_report(self.report(), self.args.out, plot_png=False)
        self.log(f"game {s.number:4d}/{self.args.games} {s.a} vs {s.b} ({PAIRINGS[s.pairing][2]}): "
                 f"{g.result} {g.termination} ({g.plies} plies, {s.seconds:.1f} s) RSS {rss}"
                 + (f"  FAULTS {faults}: {g.reason}; {s.warning_samples[:2]}" if faults else ""))

    async def run_async(self) -> dict[str, Any]:
        a = self.args
        openings = el.load_openings(a.book, a.games, a.seed)
        jobs: asyncio.Queue = asyncio.Queue()
        for i in range(a.games):
            jobs.put_nowait((i + 1, openings[i]))
        if a.out:
            Path(a.out).parent.mkdir(parents=True, exist_ok=True)
            self.pgn = open(f"{a.out}.pgn", "w", encoding="utf-8")
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.stop.set)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                pass
        try:
            await asyncio.gather(*(self.worker(jobs) for _ in range(max(1, min(a.concurrency, a.games)))))
        finally:
            if self.pgn is not None:
                self.pgn.close()
        return self.report()

    def report(self) -> dict[str, Any]:
        a = self.args
        games = sorted(self.games, key=lambda s: s.number)
        counts = {k: 0 for k in FAULTS}
        opponent = {k: 0 for k in FAULTS if k != "protocol_warnings"}
        by_side: dict[str, dict[str, int]] = {}
        samples: list[str] = []
        for s in games:
            g = s.result
            for key, name in (("A", s.a), ("B", s.b)):
                side = by_side.setdefault(name, {k: 0 for k in FAULTS})
                for field, attr in (("crashes", "crashes"), ("illegal", "illegal"),
                                    ("time_forfeits", "forfeits"), ("stalls", "stalls")):
                    n = getattr(g, attr)[key]
                    side[field] += n
                    if name in GLIMPSE_CONFIGS:
                        counts[field] += n
                    else:
                        opponent[field] += n
            counts["protocol_warnings"] += s.warnings
            if any(getattr(g, attr)[k] for attr in ("crashes", "illegal", "forfeits", "stalls") for k in "AB"):
                samples.append(f"game {s.number}: {g.reason}")
            samples += [f"game {s.number}: {w}" for w in s.warning_samples]
        rss: dict[str, Any] = {}
        for name in GLIMPSE_CONFIGS:
            series = [(s.number, s.rss_peak_mib[name]) for s in games if name in s.rss_peak_mib]
            first, last, grown = growth([v for n, v in series if n > a.warmup], a.rss_window)
            rss[name] = {"games": len(series), "window": a.rss_window, "first_mib": first, "last_mib": last,
                         "growth": grown, "max_mib": max((v for _, v in series), default=None),
                         "series": series}
        failures = [f"{k} {v}" for k, v in counts.items() if v]
        failures += [f"RSS of {n} grew {100 * r['growth']:.1f} % (limit {100 * a.max_rss_growth:g} %)"
                     for n, r in rss.items() if r["growth"] is not None and r["growth"] > a.max_rss_growth]
        if len(games) < a.games:
            failures.append(f"only {len(games)} of {a.games} games finished")
        pairings = []
        for i, (pa, pb, limit) in enumerate(PAIRINGS):
            gs = [s.result for s in games if s.pairing == i]
            pts = sum(r.a_points() for r in gs)
            pairings.append({"a": pa, "b": pb, "limit": a.tc if limit == "clock" else f"nodes {a.nodes}",
                             "games": len(gs), "a_points": pts,
                             "mean_plies": (sum(r.plies for r in gs) / len(gs)) if gs else None})
        terminations: dict[str, int] = {}
        for s in games:
            terminations[s.result.termination] = terminations.get(s.result.termination, 0) + 1
        return {
            "tool": "tools/soak.py", "started_utc": self.started.isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - self.t0, 1),
            "host": f"{platform.node()} {platform.machine()}, {el.cpu_count()} CPUs",
            "engine": str(Path(a.engine).resolve()), "glimpse_options": a.glimpse_options,
            "stockfish": a.stockfish, "tc": a.tc, "nodes": a.nodes, "concurrency": a.concurrency,
            "timemargin_ms": a.timemargin, "maxmoves": a.maxmoves, "book": a.book, "seed": a.seed,
            "games_planned": a.games, "games": len(games), "plies": sum(s.result.plies for s in games),
            "counts": counts, "opponent_counts": opponent, "counts_by_config": by_side,
            "rss_warmup_games": a.warmup, "fault_samples": samples[:30],
            "python_chess_warnings": self.chess_warnings.samples,
            "rss": rss, "max_rss_growth": a.max_rss_growth, "pairings": pairings,
            "terminations": terminations, "stopped_early": self.stop.is_set(),
            "passed": not failures, "failures": failures,
        }


def write_report(report: dict[str, Any], out: str, plot_png: bool = True) -> None:
    """Writes ``OUT.json`` and (``plot_png``) ``OUT.png``."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{out}.json.tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    tmp.replace(f"{out}.json")
    if plot_png:
        try:
            plot(report, f"{out}.png")
        except ImportError:
            print("matplotlib missing: no PNG", file=sys.stderr)


def plot(report: dict[str, Any], path: str) -> None:
    """PNG of each Glimpse configuration's peak RSS per game against the game number."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, r in report["rss"].items():
        if not r["series"]:
            continue
        xs, ys = zip(*r["series"])
        w = 100 * r["window"]
        ax.plot(xs, ys, ".", ms=3, label=f"{name} (first {w:g} % {r['first_mib']:.0f} MiB, "
                                          f"last {w:g} % {r['last_mib']:.0f} MiB)")
    c = report["counts"]
    ax.set_title(f"Glimpse soak: {report['games']} games in {report['duration_s'] / 60:.0f} min; crashes "
                 f"{c['crashes']}, illegal {c['illegal']}, forfeits {c['time_forfeits']}, "
                 f"warnings {c['protocol_warnings']}", fontsize=9)
    ax.set_xlabel("game")
    ax.set_ylabel("peak RSS per game (MiB)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="soak.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", default=str(el.DEFAULT_GLIMPSE), help="Glimpse binary (default %(default)s)")
    p.add_argument("--glimpse-options", default="", metavar="LIST",
                   help="comma-separated NAME=VALUE options for every Glimpse process")
    p.add_argument("--stockfish", default="stockfish:Skill Level=0", metavar="SPEC",
                   help="the weak opponent (default %(default)r)")
    p.add_argument("--games", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--tc", default="1+0.1", help="clock of the clock pairings (default %(default)s)")
    p.add_argument("--nodes", type=int, default=8, help="nodes per move of the fixed pairing (default 8)")
    p.add_argument("--maxmoves", type=int, default=200, help="draw after N moves (default 200)")
    p.add_argument("--timemargin", type=int, default=100, metavar="MS",
                   help="allowed clock overrun before a forfeit (default 100: the runner itself shares the CPU)")
    p.add_argument("--stall-timeout", type=float, default=30.0, metavar="S")
    p.add_argument("--book", default=str(el.DEFAULT_BOOK))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rss-interval", type=float, default=0.2, metavar="S")
    p.add_argument("--max-rss-growth", type=float, default=0.10, metavar="FRACTION")
    p.add_argument("--rss-window", type=float, default=0.10, metavar="FRACTION",
                   help="share of the games (after the warm-up) whose mean peak RSS is compared, first against "
                        "last (default 0.1; a short soak needs a wider window, one game's peak is noise)")
    p.add_argument("--warmup", type=int, default=0, metavar="N",
                   help="leave the first N games out of the RSS growth (caches filling; default 0)")
    p.add_argument("--out", default="reports/soak", help="report prefix: OUT.json, OUT.png, OUT.pgn")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.games < 1 or args.concurrency < 1:
        raise SystemExit("--games and --concurrency must be >= 1")
    soak = Soak(args)
    report = asyncio.run(soak.run_async())
    write_report(report, args.out)
    c = report["counts"]
    print(f"soak: {report['games']} games, {report['plies']} plies in {report['duration_s']:.0f} s; Glimpse: "
          + ", ".join(f"{k} {v}" for k, v in c.items()) + "; opponent Stockfish: "
          + ", ".join(f"{k} {v}" for k, v in report["opponent_counts"].items()))
    for name, r in report["rss"].items():
        if r["growth"] is not None:
            w = 100 * r["window"]
            print(f"soak: RSS {name}: first {w:g} % {r['first_mib']:.1f} MiB, last {w:g} % "
                  f"{r['last_mib']:.1f} MiB ({100 * r['growth']:+.1f} %), max {r['max_mib']:.1f} MiB")
    print(f"soak: report {args.out}.json, {args.out}.png, {args.out}.pgn")
    print("soak: PASS" if report["passed"] else "soak: FAIL: " + "; ".join(report["failures"]))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
