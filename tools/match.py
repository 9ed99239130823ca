#!/usr/bin/env python3
"""Engine-vs-engine match for Glimpse on python-chess (a small cutechess-cli for this project).

Engine A (Glimpse by default) plays engine B (any UCI engine, or a second Glimpse configuration).
Openings come from an EPD/PGN book; each opening is played twice with colours swapped. The script
keeps the clock itself: it measures each engine's wall time per move (``go`` to ``bestmove``),
subtracts it and adds the increment; a flag fall is a time forfeit, an illegal or missing move a
loss, a crash (engine exits) a loss. Results: a live line per game, then W/D/L from A's point of
view, score, Elo difference with a 95 % interval, LOS, illegal moves / time forfeits / crashes per
side, a PGN file (cutechess-style headers and ``{+0.35/1 0.12s}`` eval comments) and a JSON file.

Examples::

    tools/match.py --opponent 'stockfish:Skill Level=0' --tc 10+0.1 --games 20
    tools/match.py --a-option WeightsFile=weights/glimpse-av.onnx \\
        --b glimpse --b-option WeightsFile=target/test-models/tiny_av.onnx --nodes 1 --games 10
    tools/match.py --a stockfish --b 'stockfish:Skill Level=0' --tc 2+0.05 --sprt 0 50
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import math
import platform
import signal
import sys
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn

from glimpse_tools import enginelib as el
from glimpse_tools import match_cli
from glimpse_tools.match_game import TimeControl, Adjudication, EngineSlot, play_game
from glimpse_tools.match_results import GameResult, Tally
from glimpse_tools.match_cli import adjudication_from_args, b_time_control_from_args, time_control_from_args

# The names of match_game, match_results and match_cli that callers (gauntlet, scaling, endgames, soak, the
# tests) reach through this module.
from glimpse_tools.match_cli import (add_adjudication_args, add_b_limit_args, add_engine_args,  # noqa: F401,E402
                                     add_limit_args)
from glimpse_tools.match_game import DRAW_CLAIMS, INFO_FLAGS, game_outcome, side_of, tb_verdict  # noqa: F401,E402


# --------------------------------------------------------------------------------------------
# Match driver
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class MatchConfig:
    spec_a: el.EngineSpec
    spec_b: el.EngineSpec
    tc: TimeControl
    games: int
    book: str | None
    book_order: str = "random"
    seed: int = 1
    concurrency: int = 1
    adjudication: Adjudication = dataclasses.field(default_factory=Adjudication)
    sprt: tuple[float, float, float, float] | None = None
    chess960: bool = False
    pgn_out: str | None = None
    json_out: str | None = None
    event: str = "Glimpse match"
    timemargin: int = 0
    stall_timeout: float = 30.0
    quiet: bool = False
    stop_event: Any = None  # asyncio.Event set on Ctrl-C (filled in by Match.run_async)
    #: Engine B's own limit (None: the same as ``tc``), e.g. A at fixed nodes against B on a clock.
    tc_b: TimeControl | None = None
    #: When a threefold repetition or the 50-move rule ends a game (:func:`game_outcome`): "none"
    #: (the default: once it has happened, as cutechess-cli adjudicates), "both" (python-chess
    #: ``outcome(claim_draw=True)`` on every move, also by the move about to be made), or only "A" or
    #: "B" on its own move (the other side's turn then ends only on the automatic draws: fivefold, 75
    #: moves). tools/endgames.py uses "B", the defender, so that the strong side is not stopped for a
    #: repetition it could avoid.
    draw_claims: str = "none"
    #: Explicit games as (opening, A plays White) pairs instead of the book (then ``games`` must be
    #: their number); tools/endgames.py plays each test position once this way.
    jobs: list[tuple[el.Opening, bool]] | None = None


class Match:
    """Runs a match; ``run()`` returns the summary dict (also on Ctrl-C, with partial results)."""

    def __init__(self, cfg: MatchConfig):
        self.cfg = cfg
        self.tally = Tally()
        self.results: list[GameResult] = []
        self.infos: dict[str, el.EngineInfo] = {}
        self.started = dt.datetime.now()
        self.sprt_state: str | None = None
        self.interrupted = False
        self.pgn_file = None

    def log(self, text: str = "") -> None:
        if not self.cfg.quiet:
            print(text, flush=True)

    def extra_options(self) -> dict[str, str]:
        # With several games at once, each engine gets one thread (unless its spec says otherwise).
        return {"Threads": "1"} if self.cfg.concurrency > 1 else {}

    async def describe_engines(self) -> None:
        for key, spec in (("A", self.cfg.spec_a), ("B", self.cfg.spec_b)):
            transport, protocol = await el.start_engine(spec, self.extra_options())
            try:
                self.infos[key] = el.engine_info(spec, protocol)
            finally:
                await el.stop_engine(transport, protocol)
        self.names = {k: (spec.name or self.infos[k].id_name)
                      for k, spec in (("A", self.cfg.spec_a), ("B", self.cfg.spec_b))}
        if self.names["A"] == self.names["B"]:
            self.names = {"A": self.names["A"] + " (A)", "B": self.names["B"] + " (B)"}

    def header(self) -> list[str]:
        c = self.cfg
        lines = [
            f"Match {self.names['A']} vs {self.names['B']}  ({c.games} games, seed {c.seed})",
            f"  A: {self.infos['A'].header_line()}",
            f"  B: {self.infos['B'].header_line()}",
            f"  Time control: {c.tc.describe()}" + (f" (A), {c.tc_b.describe()} (B)" if c.tc_b else "")
            + f"; time margin {c.timemargin} ms",
            f"  Book: {c.book or 'startpos'} (order {c.book_order}, each opening with both colours)"
            + ("; Chess960" if c.chess960 else ""),
            f"  Concurrency: {c.concurrency}" + (" (Threads=1 per engine)" if c.concurrency > 1 else ""),
            f"  Adjudication: {c.adjudication.describe()}",
            f"  Host: {platform.node()} {platform.machine()}, {el.cpu_count()} CPUs; python-chess {chess.__version__}",
        ]
        if c.sprt:
            lines.append(f"  SPRT: elo0={c.sprt[0]:g} elo1={c.sprt[1]:g} alpha={c.sprt[2]:g} beta={c.sprt[3]:g}")
        return lines

    def summary_lines(self) -> list[str]:
        t = self.tally
        st = el.elo_stats(t.wins, t.draws, t.losses)
        a, b = self.names["A"], self.names["B"]
        lines = [
            f"Score of {a} vs {b}: {t.wins} - {t.losses} - {t.draws}  [{st.score:.3f}] {t.games}"
            if t.games else f"Score of {a} vs {b}: no finished games",
        ]
        if t.games:
            w = t.white
            bw, bd, bl = t.wins - w[0], t.draws - w[1], t.losses - w[2]
            lines += [
                f"...      {a} playing White: {w[0]} - {w[2]} - {w[1]}",
                f"...      {a} playing Black: {bw} - {bl} - {bd}",
                f"...      W/D/L (A): {t.wins}/{t.draws}/{t.losses}, score {100 * st.score:.1f} %",
                "...      " + st.format(),
            ]
        for side, name in (("A", a), ("B", b)):
            mt = t.move_time[side]
            avg = f"{1000 * mt[0] / mt[1]:.1f} ms/move" if mt[1] else "-"
            mc = t.min_clock[side]
            nd = t.nodes[side]
            lines.append(f"...      {name}: illegal moves {t.illegal[side]}, time forfeits "
                         f"{t.forfeits[side]}, crashes {t.crashes[side]}, stalls {t.stalls[side]}, "
                         f"'info string error' lines {t.engine_errors[side]}, mean {avg}"
                         + (f", {nd[0] / nd[1]:.1f} nodes/move (median {t.median_nodes(side):g})" if nd[1] else "")
                         + (f", lowest clock {mc:.3f} s" if mc is not None else ""))
            for text in t.error_samples[side][:3]:
                lines.append(f"...        e.g. {text[:160]}")
        if t.terminations:
            lines.append("...      Terminations: " + ", ".join(f"{k} {v}" for k, v in sorted(t.terminations.items())))
        if self.cfg.sprt:
            e0, e1, al, be = self.cfg.sprt
            llr = el.sprt_llr(t.wins, t.draws, t.losses, e0, e1)
            lo, hi = el.sprt_bounds(al, be)
            lines.append(f"...      SPRT: llr {llr:.3f} ({100 * llr / hi:.1f}%), lbound {lo:.2f}, "
                         f"ubound {hi:.2f}" + (f" - {self.sprt_state}" if self.sprt_state else ""))
        return lines

    def summary(self) -> dict[str, Any]:
        t = self.tally
        st = el.elo_stats(t.wins, t.draws, t.losses)
        c = self.cfg
        def fin(x):
            return x if isinstance(x, (int, float)) and math.isfinite(x) else None
        return {
            "engines": {k: v.as_dict() | {"label": self.names[k]} for k, v in self.infos.items()},
            "time_control": dataclasses.asdict(c.tc) | {"text": c.tc.describe()},
            "time_control_b": (dataclasses.asdict(c.tc_b) | {"text": c.tc_b.describe()}) if c.tc_b else None,
            "book": c.book, "book_order": c.book_order, "seed": c.seed, "games_planned": c.games,
            "concurrency": c.concurrency, "adjudication": dataclasses.asdict(c.adjudication),
            "chess960": c.chess960,
            "games": t.games, "wins": t.wins, "draws": t.draws, "losses": t.losses,
            "a_as_white": t.white, "score": fin(st.score), "elo": fin(st.elo),
            "elo_low": fin(st.elo_low), "elo_high": fin(st.elo_high), "los": fin(st.los),
            "illegal": t.illegal, "time_forfeits": t.forfeits, "crashes": t.crashes, "stalls": t.stalls,
            "engine_errors": t.engine_errors, "engine_error_samples": t.error_samples,
            "mean_move_ms": {k: (1000 * v[0] / v[1] if v[1] else None) for k, v in t.move_time.items()},
            "mean_nodes_per_move": {k: (v[0] / v[1] if v[1] else None) for k, v in t.nodes.items()},
            "median_nodes_per_move": {k: t.median_nodes(k) for k in t.nodes},
            "lowest_clock_s": t.min_clock, "terminations": t.terminations,
            "sprt": ({"elo0": c.sprt[0], "elo1": c.sprt[1], "alpha": c.sprt[2], "beta": c.sprt[3],
                      "llr": el.sprt_llr(t.wins, t.draws, t.losses, c.sprt[0], c.sprt[1]),
                      "state": self.sprt_state} if c.sprt else None),
            "interrupted": self.interrupted,
            "started": self.started.isoformat(timespec="seconds"),
            "pgn": c.pgn_out,
            "results": [{"game": g.number, "a_white": g.a_white, "result": g.result,
                         "a_points": g.a_points(), "termination": g.termination, "reason": g.reason,
                         "plies": g.plies, "opening": g.opening, "final_fen": g.final_fen}
                        for g in self.results],
        }

    def record(self, g: GameResult, total: int) -> None:
        c = self.cfg
        game: chess.pgn.Game = g.pgn_game  # type: ignore[attr-defined]
        white, black = (self.names["A"], self.names["B"]) if g.a_white else (self.names["B"], self.names["A"])
        h = game.headers
        h["Event"] = c.event
        h["Site"] = platform.node() or "?"
        h["Date"] = self.started.strftime("%Y.%m.%d")
        h["Round"] = str(g.number)
        h["White"], h["Black"] = white, black
        tc_white, tc_black = (c.tc, c.tc_b or c.tc) if g.a_white else (c.tc_b or c.tc, c.tc)
        if tc_white.pgn() == tc_black.pgn():
            h["TimeControl"] = tc_white.pgn()
        else:  # as cutechess-cli writes different time controls
            h["WhiteTimeControl"], h["BlackTimeControl"] = tc_white.pgn(), tc_black.pgn()
        h["Annotator"] = "glimpse tools/match.py"
        if self.pgn_file is not None:
            print(game.accept(chess.pgn.StringExporter(headers=True, variations=False, comments=True)),
                  file=self.pgn_file, end="\n\n", flush=True)
        self.results.append(g)
        self.tally.add(g)
        self.log_game(g, white, black, total)
        if c.sprt:
            e0, e1, al, be = c.sprt
            llr = el.sprt_llr(self.tally.wins, self.tally.draws, self.tally.losses, e0, e1)
            self.sprt_state = el.sprt_state(llr, al, be) or self.sprt_state

    def log_game(self, g: GameResult, white: str, black: str, total: int) -> None:
        """The progress lines after each game (tools/endgames.py prints its own)."""
        self.log(f"Finished game {g.number} ({white} vs {black}): {g.result} {{{g.reason}}}")
        self.log(f"Score of {self.names['A']} vs {self.names['B']}: {self.tally.short()}   "
                 f"({len(self.results)}/{total})")

    async def run_async(self) -> dict[str, Any]:
        c = self.cfg
        await self.describe_engines()
        for line in self.header():
            self.log(line)
        jobs: asyncio.Queue = asyncio.Queue()
        if c.jobs is not None:
            for i, (opening, a_white) in enumerate(c.jobs):
                jobs.put_nowait((i + 1, opening, a_white))
        else:
            pairs = (c.games + 1) // 2
            openings = el.load_openings(c.book, pairs, c.seed, c.book_order, c.chess960)
            for i in range(c.games):
                jobs.put_nowait((i + 1, openings[i // 2], i % 2 == 0))
        if c.pgn_out:
            Path(c.pgn_out).parent.mkdir(parents=True, exist_ok=True)
            self.pgn_file = open(c.pgn_out, "w", encoding="utf-8")
        stop = asyncio.Event()
        all_slots: list[dict[str, EngineSlot]] = []

        async def worker() -> None:
            slots = {"A": EngineSlot("A", c.spec_a, self.extra_options()),
                     "B": EngineSlot("B", c.spec_b, self.extra_options())}
            all_slots.append(slots)
            while not stop.is_set():
                try:
                    number, opening, a_white = jobs.get_nowait()
                except asyncio.QueueEmpty:
                    return
                before = {}
                for key, slot in slots.items():
                    try:
                        protocol = await slot.ensure()
                        before[key] = (protocol, protocol.error_count)
                    except Exception:  # noqa: BLE001 - play_game retries and records the failure
                        pass
                g = await play_game(number, opening, a_white, slots, self.names, c.tc, c.adjudication, c,
                                    c.tc_b)
                g.error_samples = {}  # type: ignore[attr-defined]
                for key, (protocol, count) in before.items():
                    g.engine_errors[key] = protocol.error_count - count
                    g.error_samples[key] = protocol.error_samples[:]  # type: ignore[attr-defined]
                if stop.is_set():
                    return
                self.record(g, c.games)
                if self.sprt_state:
                    stop.set()

        tasks = [asyncio.create_task(worker()) for _ in range(max(1, min(c.concurrency, c.games)))]
        interrupt = asyncio.Event()  # Ctrl-C only (SPRT's `stop` lets running games end normally)
        c.stop_event = interrupt
        loop = asyncio.get_running_loop()

        def on_sigint() -> None:
            self.interrupted = True
            interrupt.set()
            stop.set()
            for t in tasks:
                t.cancel()

        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            handler_installed = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
            handler_installed = False
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            self.interrupted = True
        finally:
            if handler_installed:
                loop.remove_signal_handler(signal.SIGINT)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(s.close() for slots in all_slots for s in slots.values()),
                                 return_exceptions=True)
            if self.pgn_file is not None:
                self.pgn_file.close()
            self.finish()
        return self.summary()

    def finish(self) -> None:
        if self.interrupted:
            self.log("Interrupted: partial result")
        for line in self.summary_lines():
            self.log(line)
        if self.cfg.pgn_out:
            self.log(f"PGN: {self.cfg.pgn_out}")
        if self.cfg.json_out:
            Path(self.cfg.json_out).parent.mkdir(parents=True, exist_ok=True)
            Path(self.cfg.json_out).write_text(json.dumps(self.summary(), indent=1) + "\n")
            self.log(f"JSON: {self.cfg.json_out}")


def run_match(cfg: MatchConfig, match_class: type[Match] = Match) -> dict[str, Any]:
    """Runs a match to the end (or Ctrl-C) and returns its summary.

    ``match_class`` may be a subclass of :class:`Match` with its own reporting (tools/endgames.py).
    """
    m = match_class(cfg)
    try:
        return asyncio.run(m.run_async())
    except KeyboardInterrupt:
        return m.summary()


def build_parser():
    """The match command line (``match_cli.build_parser``) with this module's docstring as its help."""
    return match_cli.build_parser(__doc__)


def config_from_args(args) -> MatchConfig:
    spec_a = el.EngineSpec.parse(args.a, args.a_option + [o for o in args.a_options.split(",") if o.strip()],
                                 args.a_name)
    spec_b = el.EngineSpec.parse(args.b, args.b_option, args.b_name)
    tc = time_control_from_args(args)
    sprt = None
    if args.sprt:
        if len(args.sprt) not in (2, 4):
            raise SystemExit("--sprt takes ELO0 ELO1 [ALPHA BETA]")
        sprt = tuple(args.sprt) if len(args.sprt) == 4 else (args.sprt[0], args.sprt[1], 0.05, 0.05)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    pgn = args.pgn or str(el.REPO_ROOT / "reports" / f"match-{stamp}.pgn")
    js = args.json or str(Path(pgn).with_suffix(".json"))
    return MatchConfig(
        spec_a, spec_b, tc, args.games, None if args.book.lower() in ("none", "") else args.book,
        args.book_order, args.seed, args.concurrency,
        adjudication_from_args(args),
        sprt, args.chess960, pgn, js, args.event, args.timemargin, args.stall_timeout, args.quiet,
        tc_b=b_time_control_from_args(args), draw_claims=getattr(args, "draw_claims", "none"))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.tc_is_default = not any(a == "--tc" or a.startswith("--tc=") for a in argv)
    if args.games < 1:
        parser.error("--games must be >= 1")
    if args.concurrency < 1:
        parser.error("--concurrency must be >= 1")
    cfg = config_from_args(args)
    summary = run_match(cfg)
    return 130 if summary.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
