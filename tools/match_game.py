"""One game of ``match.py``: the time control, adjudication (resign, draw, Syzygy), the engine slots
and ``play_game``, which plays an opening to its end and returns the result with its PGN.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import chess
import chess.engine
import chess.pgn
import chess.syzygy

from glimpse_tools import enginelib as el

from glimpse_tools.match_results import GameResult

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
        await el.awake_wait_for(protocol.ping(), 60)

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
        try:
            # Seconds this process ran: a suspended match (kill -STOP) charges nobody for the pause.
            played, elapsed = await el.awake_wait_for(
                protocol.play(board, limit, info=INFO_FLAGS, game=game_id), timeout)
        except el.AwakeTimeout as out:
            slot.broken = True
            elapsed = out.awake
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
            res.node_counts[key].append(info["nodes"])
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
