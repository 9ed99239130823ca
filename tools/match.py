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

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import math
import platform
import signal
import sys
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn

from glimpse_tools import enginelib as el

INFO_FLAGS = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE


# --------------------------------------------------------------------------------------------
# Time control
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class TimeControl:
    """Per-move limits: a Fischer clock (``[moves/]base[+inc]``) or fixed movetime/nodes/depth.

    Times are in seconds. ``moves`` is the number of moves per period (0 = whole game).
    """

    base: float | None = None
    inc: float = 0.0
    moves: int = 0
    movetime: float | None = None
    nodes: int | None = None
    depth: int | None = None

    @staticmethod
    def parse_clock(text: str) -> "TimeControl":
        """Parses ``10+0.1``, ``60``, ``40/60+0.6``, ``1:30+1`` (base in s or m:ss)."""
        moves = 0
        rest = text.strip()
        if "/" in rest:
            m, rest = rest.split("/", 1)
            moves = int(m)
        inc = 0.0
        if "+" in rest:
            rest, i = rest.split("+", 1)
            inc = float(i)
        if ":" in rest:
            mins, secs = rest.split(":", 1)
            base = 60 * float(mins) + float(secs)
        else:
            base = float(rest)
        if base <= 0 or inc < 0 or moves < 0:
            raise ValueError(f"bad time control {text!r}")
        return TimeControl(base=base, inc=inc, moves=moves)

    @property
    def clock(self) -> bool:
        return self.base is not None

    def pgn(self) -> str:
        """TimeControl tag value as cutechess writes it."""
        if self.clock:
            t = f"{self.base:g}" + (f"+{self.inc:g}" if self.inc else "")
            return f"{self.moves}/{t}" if self.moves else t
        if self.movetime is not None:
            return f"{self.movetime:g}/move"
        return "-"

    def describe(self) -> str:
        parts = []
        if self.clock:
            parts.append(f"clock {self.pgn()} s")
        if self.movetime is not None:
            parts.append(f"movetime {self.movetime:g} s")
        if self.nodes is not None:
            parts.append(f"nodes {self.nodes}")
        if self.depth is not None:
            parts.append(f"depth {self.depth}")
        return ", ".join(parts) or "none"


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class GameResult:
    """One finished game. ``a_white``: engine A had White. ``result`` is "1-0", "0-1", "1/2-1/2"."""

    number: int
    a_white: bool
    result: str
    termination: str
    reason: str
    plies: int
    opening: str
    pgn: str = ""
    illegal: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    forfeits: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    crashes: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    stalls: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    engine_errors: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    move_time: dict = dataclasses.field(default_factory=lambda: {"A": [0.0, 0], "B": [0.0, 0]})
    min_clock: dict = dataclasses.field(default_factory=lambda: {"A": None, "B": None})
    #: Sum of the ``nodes`` the engine reported and the number of its moves that reported any.
    nodes: dict = dataclasses.field(default_factory=lambda: {"A": [0, 0], "B": [0, 0]})
    #: python-chess ``Termination`` name (``CHECKMATE``, ``FIFTY_MOVES``, ...) when the rules ended
    #: the game (termination "normal"), else None.
    outcome: str | None = None
    #: FEN of the final position.
    final_fen: str = ""

    def a_points(self) -> float:
        if self.result == "1/2-1/2":
            return 0.5
        white_won = self.result == "1-0"
        return 1.0 if white_won == self.a_white else 0.0


@dataclasses.dataclass
class Tally:
    wins: int = 0
    draws: int = 0
    losses: int = 0
    white: list = dataclasses.field(default_factory=lambda: [0, 0, 0])  # A's W/D/L as White
    illegal: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    forfeits: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    crashes: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    stalls: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    engine_errors: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    error_samples: dict = dataclasses.field(default_factory=lambda: {"A": [], "B": []})
    move_time: dict = dataclasses.field(default_factory=lambda: {"A": [0.0, 0], "B": [0.0, 0]})
    min_clock: dict = dataclasses.field(default_factory=lambda: {"A": None, "B": None})
    nodes: dict = dataclasses.field(default_factory=lambda: {"A": [0, 0], "B": [0, 0]})
    terminations: dict = dataclasses.field(default_factory=dict)

    def add(self, g: GameResult) -> None:
        p = g.a_points()
        k = 0 if p == 1.0 else 1 if p == 0.5 else 2
        if k == 0:
            self.wins += 1
        elif k == 1:
            self.draws += 1
        else:
            self.losses += 1
        if g.a_white:
            self.white[k] += 1
        for side in ("A", "B"):
            self.illegal[side] += g.illegal[side]
            self.forfeits[side] += g.forfeits[side]
            self.crashes[side] += g.crashes[side]
            self.stalls[side] += g.stalls[side]
            self.engine_errors[side] += g.engine_errors[side]
            for text in getattr(g, "error_samples", {}).get(side, []):
                if len(self.error_samples[side]) < 5:
                    self.error_samples[side].append(text)
            self.move_time[side][0] += g.move_time[side][0]
            self.move_time[side][1] += g.move_time[side][1]
            self.nodes[side][0] += g.nodes[side][0]
            self.nodes[side][1] += g.nodes[side][1]
            mc = g.min_clock[side]
            if mc is not None and (self.min_clock[side] is None or mc < self.min_clock[side]):
                self.min_clock[side] = mc
        self.terminations[g.termination] = self.terminations.get(g.termination, 0) + 1

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def short(self) -> str:
        n = self.games
        s = (self.wins + 0.5 * self.draws) / n if n else 0.0
        return f"+{self.wins} ={self.draws} -{self.losses} [{s:.3f}] {n}"


# --------------------------------------------------------------------------------------------
# Playing
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Adjudication:
    """cutechess-cli style adjudication (all off when the counts are 0)."""

    resign_moves: int = 0
    resign_score: int = 0
    draw_moves: int = 0
    draw_score: int = 0
    draw_after: int = 0
    max_moves: int = 0
    #: Syzygy tables for adjudication (cutechess-cli ``-tb``); empty: off.
    tb_path: str = ""
    #: Adjudicate only positions with at most this many pieces (cutechess-cli ``-tbpieces``; 0: any).
    tb_pieces: int = 0
    #: A win or loss that the 50-move rule turns into a draw stays a win (cutechess-cli ``-tbignore50``).
    tb_ignore50: bool = False

    def describe(self) -> str:
        parts = []
        if self.tb_path:
            parts.append(f"Syzygy tables {self.tb_path}" + (f" (<= {self.tb_pieces} pieces)" if self.tb_pieces else "")
                         + (", 50-move rule ignored" if self.tb_ignore50 else ""))
        if self.resign_moves:
            parts.append(f"resign {self.resign_moves} moves >= {self.resign_score} cp (both sides)")
        if self.draw_moves:
            parts.append(f"draw {self.draw_moves} moves |score| <= {self.draw_score} cp after move {self.draw_after}")
        if self.max_moves:
            parts.append(f"max {self.max_moves} moves")
        return ", ".join(parts) or "off"


class EngineSlot:
    """One running engine process, restarted after a crash, stall or time forfeit."""

    def __init__(self, key: str, spec: el.EngineSpec, extra: dict[str, str]):
        self.key, self.spec, self.extra = key, spec, extra
        self.transport = None
        self.protocol: el.RecordingUciProtocol | None = None
        self.broken = True

    async def ensure(self) -> el.RecordingUciProtocol:
        if self.broken or self.protocol is None or self.protocol.returncode.done():
            await self.close()
            self.transport, self.protocol = await el.start_engine(self.spec, self.extra)
            self.broken = False
        return self.protocol

    async def new_game(self, game_id: object) -> None:
        protocol = await self.ensure()
        # Send ucinewgame + isready before the clock starts (python-chess would otherwise do it
        # inside the first `play`, charging the engine's clock for it).
        protocol._ucinewgame()
        protocol.game = game_id
        await asyncio.wait_for(protocol.ping(), 60)

    async def close(self) -> None:
        if self.transport is not None and self.protocol is not None:
            await el.stop_engine(self.transport, self.protocol, 3.0)
        self.transport = self.protocol = None


def side_of(color: chess.Color, a_white: bool) -> str:
    return "A" if (color == chess.WHITE) == a_white else "B"


async def play_game(number: int, opening: el.Opening, a_white: bool, slots: dict[str, EngineSlot],
                    names: dict[str, str], tc: TimeControl, adj: Adjudication, args,
                    tc_b: TimeControl | None = None) -> GameResult:
    """Plays one game from ``opening`` (a FEN plus book moves) and returns its result and PGN.

    ``tc`` is engine A's limit and ``tc_b`` engine B's (None: the same as A's). Each side's clock,
    when it has one, is kept from its own time control. ``args`` supplies ``timemargin``,
    ``stall_timeout`` and the optional Ctrl-C ``stop_event`` (a :class:`MatchConfig` does).
    """
    tcs = {"A": tc, "B": tc_b or tc}
    board = opening.board()
    root = chess.Board(opening.fen, chess960=opening.chess960)
    game = chess.pgn.Game()
    game.setup(root)
    if opening.chess960:
        game.headers["Variant"] = "Chess960"
    node: chess.pgn.GameNode = game
    for move in opening.moves:
        node = node.add_variation(move, comment="book")
    white_key, black_key = ("A", "B") if a_white else ("B", "A")
    res = GameResult(number, a_white, "*", "unterminated", "", 0, opening.label or opening.fen)
    game_id = object()
    for key in ("A", "B"):
        try:
            await slots[key].new_game(game_id)
        except Exception as err:  # noqa: BLE001 - engine failed to (re)start
            slots[key].broken = True
            res.crashes[key] += 1
            return _finish(res, game, node, board,
                           "0-1" if key == white_key else "1-0", "abandoned",
                           f"{names[key]} failed to start: {err}")

    clocks = {chess.WHITE: tcs[white_key].base, chess.BLACK: tcs[black_key].base}
    moves_in_period = {chess.WHITE: 0, chess.BLACK: 0}
    scores: list[int | None] = []  # white-POV cp of each engine move, in order
    engine_plies = 0
    while True:
        stop_event = getattr(args, "stop_event", None)
        if stop_event is not None and stop_event.is_set():
            # Ctrl-C: a cancellation that Python 3.11's wait_for can lose (it returns the result when
            # the engine answers in the same instant) must still end the game.
            raise asyncio.CancelledError()
        outcome = game_outcome(board, getattr(args, "draw_claims", "none"), side_of(board.turn, a_white))
        if outcome is not None:
            res.outcome = outcome.termination.name
            return _finish(res, game, node, board, outcome.result(), "normal", _outcome_text(outcome))
        if adj.max_moves and engine_plies >= 2 * adj.max_moves:
            return _finish(res, game, node, board, "1/2-1/2", "adjudication",
                           f"Draw by adjudication: maximum of {adj.max_moves} moves")
        color = board.turn
        key = side_of(color, a_white)
        tc = tcs[key]
        slot = slots[key]
        protocol = slot.protocol
        assert protocol is not None
        mover = "White" if color == chess.WHITE else "Black"
        win_for_other = "0-1" if color == chess.WHITE else "1-0"
        if tc.clock:
            remaining = None
            if tc.moves:
                remaining = tc.moves - moves_in_period[color] % tc.moves
            other = tcs[side_of(not color, a_white)]
            own_clock, own_inc = max(clocks[color], 0.001), tc.inc
            # The opponent's clock is sent too when it has one (with a fixed limit it has none).
            opp_clock = max(clocks[not color], 0.001) if other.clock else None
            opp_inc = other.inc if other.clock else None
            white = (own_clock, own_inc) if color == chess.WHITE else (opp_clock, opp_inc)
            black = (opp_clock, opp_inc) if color == chess.WHITE else (own_clock, own_inc)
            limit = chess.engine.Limit(white_clock=white[0], black_clock=black[0],
                                       white_inc=white[1], black_inc=black[1], remaining_moves=remaining,
                                       nodes=tc.nodes, depth=tc.depth)
            timeout = clocks[color] + args.timemargin / 1000 + 0.2
        else:
            limit = chess.engine.Limit(time=tc.movetime, nodes=tc.nodes, depth=tc.depth)
            timeout = (tc.movetime or 0) + args.stall_timeout
        t0 = time.perf_counter()
        try:
            played = await asyncio.wait_for(protocol.play(board, limit, info=INFO_FLAGS, game=game_id),
                                            timeout)
        except asyncio.TimeoutError:
            slot.broken = True
            elapsed = time.perf_counter() - t0
            if tc.clock:
                res.forfeits[key] += 1
                result = "1/2-1/2" if not _can_mate(board, not color) else win_for_other
                return _finish(res, game, node, board, result, "time forfeit",
                               f"{mover} loses on time (no move after {elapsed:.2f} s)")
            res.stalls[key] += 1
            return _finish(res, game, node, board, win_for_other, "stalled connection",
                           f"{mover}'s connection stalls (no move after {elapsed:.1f} s)")
        except chess.engine.EngineTerminatedError as err:
            slot.broken = True
            res.crashes[key] += 1
            return _finish(res, game, node, board, win_for_other, "abandoned",
                           f"{mover} disconnects ({err})")
        except chess.engine.EngineError as err:
            slot.broken = True
            res.illegal[key] += 1
            return _finish(res, game, node, board, win_for_other, "rules infraction",
                           f"{mover} makes an illegal move ({err})")
        elapsed = time.perf_counter() - t0
        res.move_time[key][0] += elapsed
        res.move_time[key][1] += 1
        if tc.clock:
            clocks[color] -= elapsed
            mc = res.min_clock[key]
            res.min_clock[key] = clocks[color] if mc is None else min(mc, clocks[color])
            if clocks[color] < -args.timemargin / 1000:
                res.forfeits[key] += 1
                result = "1/2-1/2" if not _can_mate(board, not color) else win_for_other
                return _finish(res, game, node, board, result, "time forfeit",
                               f"{mover} loses on time ({-clocks[color]:.3f} s over)")
            clocks[color] += tc.inc
            moves_in_period[color] += 1
            if tc.moves and moves_in_period[color] % tc.moves == 0:
                clocks[color] += tc.base
        move = played.move
        if move is None or move not in board.legal_moves:
            slot.broken = True  # restart it for the next game, as after any fault
            res.illegal[key] += 1
            return _finish(res, game, node, board, win_for_other, "rules infraction",
                           f"{mover} makes an illegal move: {move.uci() if move else '(none)'}")
        info = played.info
        score = info.get("score")
        depth = info.get("depth")
        if info.get("nodes") is not None:
            res.nodes[key][0] += info["nodes"]
            res.nodes[key][1] += 1
        comment = ""
        if score is not None:
            comment = f"{el.format_eval(score, color)}/{depth if depth is not None else 0} "
        comment += f"{round(elapsed, 3):g}s"
        node = node.add_variation(move, comment=comment)
        board.push(move)
        engine_plies += 1
        scores.append(el.score_to_cp(score.white()) if score is not None else None)
        verdict = _adjudicate(scores, board, adj)
        if verdict is not None:
            return _finish(res, game, node, board, verdict[0], "adjudication", verdict[1])


def _can_mate(board: chess.Board, color: chess.Color) -> bool:
    return not board.has_insufficient_material(color)


#: ``draw_claims`` values: "none" (cutechess-cli's rule), "both", or the side letter "A" / "B".
DRAW_CLAIMS = ("none", "both", "A", "B")


def game_outcome(board: chess.Board, draw_claims: str = "none", mover: str = "") -> chess.Outcome | None:
    """How the game stands before the move of ``board.turn`` (``mover``: "A" or "B"): ``None`` while it
    goes on.

    Always over: mate, stalemate, insufficient material, fivefold repetition, the 75-move rule. The
    threefold repetition and the 50-move rule, by ``draw_claims``:

    - ``"none"`` (the default, cutechess-cli's rule): a draw once they have happened, that is the
      current position occurred three times (python-chess ``is_repetition(3)``) or 100 half-moves
      passed without a capture or pawn move; nobody claims ahead of time, so a side that could repeat
      a position with its next move but plays on is not stopped.
    - ``"both"``: the side to move claims whenever it can, also with the move it is about to make
      (python-chess ``outcome(claim_draw=True)``; FIDE's claim, made by every side on every move).
    - ``"A"`` / ``"B"``: only that side claims so, on its own move (tools/endgames.py: the defender).
    """
    if draw_claims not in DRAW_CLAIMS:
        raise ValueError(f"draw_claims must be one of {', '.join(DRAW_CLAIMS)}, not {draw_claims!r}")
    if draw_claims == "both" or draw_claims == mover:
        return board.outcome(claim_draw=True)
    outcome = board.outcome(claim_draw=False)
    if outcome is not None or draw_claims != "none":
        return outcome
    if board.is_repetition(3):
        return chess.Outcome(chess.Termination.THREEFOLD_REPETITION, None)
    if board.halfmove_clock >= 100:
        return chess.Outcome(chess.Termination.FIFTY_MOVES, None)
    return None


def _outcome_text(outcome: chess.Outcome) -> str:
    t = outcome.termination
    winner = "White" if outcome.winner == chess.WHITE else "Black"
    return {
        chess.Termination.CHECKMATE: f"{winner} mates",
        chess.Termination.STALEMATE: "Draw by stalemate",
        chess.Termination.INSUFFICIENT_MATERIAL: "Draw by insufficient mating material",
        chess.Termination.SEVENTYFIVE_MOVES: "Draw by 75-move rule",
        chess.Termination.FIVEFOLD_REPETITION: "Draw by fivefold repetition",
        chess.Termination.FIFTY_MOVES: "Draw by fifty moves rule",
        chess.Termination.THREEFOLD_REPETITION: "Draw by 3-fold repetition",
    }.get(t, str(t))


_TABLES: dict[str, Any] = {}


def _tablebase(path: str):
    """The python-chess tables of ``path`` (opened once per process)."""
    if path not in _TABLES:
        import chess.syzygy
        _TABLES[path] = chess.syzygy.open_tablebase(path)
    return _TABLES[path]


def tb_verdict(board: chess.Board, adj: Adjudication) -> tuple[str, str] | None:
    """The result the Syzygy tables give ``board`` (cutechess-cli ``-tb``): ``(result, reason)``, or
    None when the tables are off, the position has castling rights, more pieces than the tables (or
    ``tb_pieces``) or a table is missing. With the 50-move rule (default), a win whose DTZ plus the
    half-move clock exceeds 100 plies is a draw, as is a cursed win."""
    if not adj.tb_path or board.castling_rights:
        return None
    pieces = chess.popcount(board.occupied)
    tables = _tablebase(adj.tb_path)
    largest = max((len(name) - 1 for name in tables.wdl), default=0)  # "KQvK": 4 pieces
    if pieces > (adj.tb_pieces or 7) or pieces > largest:
        return None
    try:
        wdl = tables.probe_wdl(board)
        dtz = tables.probe_dtz(board) if wdl in (-2, 2) and board.halfmove_clock else 0
    except (KeyError, chess.syzygy.MissingTableError, OSError, ValueError):
        return None
    if not adj.tb_ignore50 and (abs(wdl) == 1 or abs(dtz) + board.halfmove_clock > 100):
        wdl = 0
    if wdl == 0:
        return "1/2-1/2", "Draw by tablebase adjudication"
    mover_wins = wdl > 0
    white_wins = mover_wins == (board.turn == chess.WHITE)
    return ("1-0", "White wins by tablebase adjudication") if white_wins \
        else ("0-1", "Black wins by tablebase adjudication")


def _adjudicate(scores: list[int | None], board: chess.Board, adj: Adjudication):
    verdict = tb_verdict(board, adj)
    if verdict is not None:
        return verdict
    if adj.resign_moves:
        window = scores[-2 * adj.resign_moves:]
        if len(window) == 2 * adj.resign_moves and all(s is not None for s in window):
            if all(s >= adj.resign_score for s in window):
                return "1-0", "Black resigns (adjudication)"
            if all(s <= -adj.resign_score for s in window):
                return "0-1", "White resigns (adjudication)"
    if adj.draw_moves and board.fullmove_number > adj.draw_after:
        window = scores[-2 * adj.draw_moves:]
        if len(window) == 2 * adj.draw_moves and all(s is not None and abs(s) <= adj.draw_score
                                                     for s in window):
            return "1/2-1/2", "Draw by adjudication"
    return None


def _finish(res: GameResult, game: chess.pgn.Game, node: chess.pgn.GameNode, board: chess.Board,
            result: str, termination: str, reason: str) -> GameResult:
    res.result, res.termination, res.reason = result, termination, reason
    res.plies = len(board.move_stack)
    res.final_fen = board.fen()
    game.headers["Result"] = result
    game.headers["Termination"] = termination
    game.headers["PlyCount"] = str(len(list(game.mainline_moves())))
    if node is game:
        game.comment = reason
    else:
        node.comment = f"{node.comment}, {reason}" if node.comment else reason
    res.pgn_game = game  # type: ignore[attr-defined]
    return res


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
                         + (f", {nd[0] / nd[1]:.1f} nodes/move" if nd[1] else "")
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
            lo, hi = el.sprt_bounds(al, be)
            if llr >= hi:
                self.sprt_state = "H1 accepted"
            elif llr <= lo:
                self.sprt_state = "H0 accepted"

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


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--a", default="glimpse", metavar="SPEC",
                   help="engine A: command or alias, optionally ':NAME=VALUE,...' (default: glimpse = "
                        "target/release/glimpse)")
    p.add_argument("--a-option", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for engine A (repeatable), e.g. WeightsFile=weights/glimpse-av.onnx")
    p.add_argument("--a-options", default="", metavar="LIST",
                   help="comma-separated NAME=VALUE options for engine A (make's ENGINE_A_OPTS)")
    p.add_argument("--a-name", help="label of engine A in reports and PGN (default: its id name)")


def add_limit_args(p: argparse.ArgumentParser, default_tc: str | None) -> None:
    p.add_argument("--tc", default=default_tc, metavar="[MOVES/]BASE[+INC]",
                   help=f"Fischer clock in seconds, e.g. 10+0.1, 40/60+0.6 (default {default_tc}); "
                        "'none' for fixed limits only")
    p.add_argument("--movetime", type=float, metavar="S", help="fixed time per move in seconds")
    p.add_argument("--nodes", type=int, metavar="N", help="fixed nodes per move (Glimpse: network evaluations)")
    p.add_argument("--depth", type=int, metavar="D", help="fixed depth per move")


def add_b_limit_args(p: argparse.ArgumentParser) -> None:
    """Engine B's own limit (``--b-tc``, ``--b-movetime``, ``--b-nodes``, ``--b-depth``)."""
    g = p.add_argument_group("engine B's own limit (default: the same as engine A's)")
    g.add_argument("--b-tc", metavar="[MOVES/]BASE[+INC]", help="Fischer clock for engine B only")
    g.add_argument("--b-movetime", type=float, metavar="S", help="fixed time per move for engine B")
    g.add_argument("--b-nodes", type=int, metavar="N", help="fixed nodes per move for engine B")
    g.add_argument("--b-depth", type=int, metavar="D", help="fixed depth per move for engine B")


def b_time_control_from_args(args) -> TimeControl | None:
    """Engine B's limit from ``--b-*`` (None when none is given: B plays at A's limit)."""
    if not any(getattr(args, k, None) is not None for k in ("b_tc", "b_movetime", "b_nodes", "b_depth")):
        return None
    tc = TimeControl.parse_clock(args.b_tc) if args.b_tc and args.b_tc.lower() != "none" else TimeControl()
    tc.movetime, tc.nodes, tc.depth = args.b_movetime, args.b_nodes, args.b_depth
    if not tc.clock and tc.movetime is None and tc.nodes is None and tc.depth is None:
        raise SystemExit("--b-tc none needs --b-movetime, --b-nodes or --b-depth")
    return tc


def add_adjudication_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("adjudication (cutechess-cli style, off by default)")
    g.add_argument("--resign-movecount", type=int, default=0, metavar="M")
    g.add_argument("--resign-score", type=int, default=1000, metavar="CP",
                   help="resign when both engines' scores show >= CP for one side for M moves each")
    g.add_argument("--draw-movenumber", type=int, default=40, metavar="K")
    g.add_argument("--draw-movecount", type=int, default=0, metavar="M")
    g.add_argument("--draw-score", type=int, default=10, metavar="CP",
                   help="draw when |score| <= CP for M moves of both sides after full move K")
    g.add_argument("--maxmoves", type=int, default=0, metavar="N", help="draw after N moves of the engines")
    g.add_argument("--tb", metavar="PATH", default="",
                   help="adjudicate by Syzygy tables in PATH once a position is in them (cutechess-cli -tb); "
                        "the PGN records 'tablebase adjudication'")
    g.add_argument("--tbpieces", type=int, default=0, metavar="N",
                   help="with --tb: only positions with at most N pieces (default: the largest table)")
    g.add_argument("--tbignore50", action="store_true",
                   help="with --tb: a win or loss the 50-move rule would draw stays decisive")


def adjudication_from_args(args) -> Adjudication:
    tb = getattr(args, "tb", "") or ""
    if tb and not Path(tb).is_dir():
        raise SystemExit(f"--tb: no such directory {tb!r}")
    return Adjudication(args.resign_movecount, args.resign_score, args.draw_movecount, args.draw_score,
                        args.draw_movenumber, args.maxmoves, tb, getattr(args, "tbpieces", 0),
                        getattr(args, "tbignore50", False))


def time_control_from_args(args) -> TimeControl:
    fixed = args.movetime is not None or args.nodes is not None or args.depth is not None
    if args.tc and args.tc.lower() != "none" and not (fixed and getattr(args, "tc_is_default", False)):
        tc = TimeControl.parse_clock(args.tc)
    else:
        tc = TimeControl()
    tc.movetime, tc.nodes, tc.depth = args.movetime, args.nodes, args.depth
    if not tc.clock and not fixed:
        raise SystemExit("need a time control: --tc, --movetime, --nodes or --depth")
    return tc


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="match.py", description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Opponent specs: CMD[:NAME=VALUE,...]; aliases glimpse, stockfish, ethereal, toga2, "
               "glaurung. Example: --b 'stockfish:Skill Level=3,Hash=16'.")
    add_engine_args(p)
    p.add_argument("--b", "--opponent", dest="b", default="stockfish:Skill Level=0", metavar="SPEC",
                   help="engine B, same syntax (default: 'stockfish:Skill Level=0')")
    p.add_argument("--b-option", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for engine B (repeatable)")
    p.add_argument("--b-name", help="label of engine B")
    add_limit_args(p, "10+0.1")
    add_b_limit_args(p)
    p.add_argument("--games", type=int, default=20, help="number of games (default 20; even: each "
                   "opening with both colours)")
    p.add_argument("--book", default=str(el.DEFAULT_BOOK),
                   help="EPD or PGN opening book, or 'none' for the start position (default: %(default)s)")
    p.add_argument("--book-order", choices=("random", "sequential"), default="random")
    p.add_argument("--seed", type=int, default=1, help="seed for opening choice (default 1)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="games at once (default 1); with >1 each engine gets Threads=1 unless its "
                        "options set Threads")
    p.add_argument("--chess960", action="store_true",
                   help="Chess960 (book FENs read as Chess960; without a book: random start positions)")
    add_adjudication_args(p)
    p.add_argument("--sprt", nargs="+", type=float, metavar="X",
                   help="SPRT: ELO0 ELO1 [ALPHA BETA] (defaults 0.05 0.05); stops when a bound is hit")
    p.add_argument("--draw-claims", choices=("none", "both"), default="none",
                   help="threefold repetition and 50-move rule: 'none' (default) draws once they have "
                        "happened, as cutechess-cli does; 'both' lets the side to move claim, also with "
                        "the move it is about to make (python-chess claim_draw, the rule before 2026-11-26)")
    p.add_argument("--timemargin", type=int, default=0, metavar="MS",
                   help="allowed clock overrun in ms before a time forfeit (default 0)")
    p.add_argument("--stall-timeout", type=float, default=30.0, metavar="S",
                   help="without a clock: seconds (beyond movetime) before a silent engine loses")
    p.add_argument("--pgn", metavar="FILE", help="PGN output (default: reports/match-<time>.pgn)")
    p.add_argument("--json", metavar="FILE", help="JSON summary (default: next to the PGN)")
    p.add_argument("--event", default="Glimpse match")
    p.add_argument("--quiet", action="store_true")
    return p


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
