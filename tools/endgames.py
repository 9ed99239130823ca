#!/usr/bin/env python3
"""Converting won endgames: can Glimpse mate a bare king with a queen, a rook, bishop and knight, or a pawn?

The script builds N random legal positions of each material (K+Q, K+R, K+B+N, K+P against a bare king;
seeded), the strong side to move; K+B+N and K+P starts are kept only when the Syzygy tables say the
strong side wins (the tables vendored in tests/data/syzygy, or ``--position-tables``). It plays each once from its FEN with engine A (Glimpse by default, any options) as the strong
side against engine B (Stockfish at full strength by default) defending the bare king. Games are
played by tools/match.py (same clock, fault handling and PGN), one game per position. A game ends at
checkmate, stalemate, insufficient material (the lone piece was lost), a draw that the defender
claims on its move (50-move rule, threefold repetition: python-chess ``outcome(claim_draw=True)``,
which includes a claim with the move about to be made), or a fault (time forfeit, illegal move,
crash, stall). The strong side never claims: a position where its next move *could* repeat a third
time does not end the game (``--claims any`` lets either side claim, as match.py does). Only
checkmate counts as converted. Output: a line per position, a table, a summary per material (mated x/N, mean, median
and max moves to mate, failures by reason), a JSON file and a PGN file.

Examples::

    tools/endgames.py                                       # Glimpse vs Stockfish, 20+20 positions, 10+0.1
    tools/endgames.py --a-option SearchMode=mcts --positions 10 --materials KRK
    tools/endgames.py --tc none --nodes 400 --b-tc 10+0.1  # Glimpse at go nodes 400, Stockfish on a clock
    tools/endgames.py --list --positions 5                  # print the positions only
    tools/endgames.py --syzygy ../shared/data/syzygy        # Glimpse with SyzygyPath set
    tools/endgames.py --syzygy ../shared/data/syzygy --compare  # without, then with tables: both tables
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import platform
import random
import statistics
import sys
from pathlib import Path
from typing import Any

import chess
import chess.syzygy

from glimpse_tools import enginelib as el
from glimpse_tools import match as match_tool

#: Material name -> the strong side's pieces besides its king.
MATERIALS: dict[str, tuple[chess.PieceType, ...]] = {
    "KQK": (chess.QUEEN,), "KRK": (chess.ROOK,), "KBNK": (chess.BISHOP, chess.KNIGHT), "KPK": (chess.PAWN,)}

#: Materials whose random starts are kept only when the tables say the strong side wins (every legal
#: K+Q or K+R start with the piece safe is a win; K+B+N and K+P starts may be draws).
NEEDS_TABLES = ("KBNK", "KPK")

#: Tables for choosing winning starts: the ones vendored with the tests (K+B+N, K+P vs K among them).
POSITION_TABLES = el.REPO_ROOT / "tests" / "data" / "syzygy"

#: Outcome keys, in table order. ``mate`` is the only success.
OUTCOMES = {
    "mate": "checkmate",
    "fifty_moves": "draw: 50-move rule",
    "repetition": "draw: threefold repetition",
    "stalemate": "draw: stalemate",
    "lost_piece": "draw: piece lost (insufficient material)",
    "time_forfeit": "strong side lost on time",
    "illegal_move": "strong side made an illegal move",
    "crash": "strong side crashed",
    "stall": "strong side stalled",
    "opponent_fault": "defender's fault (forfeit/illegal/crash/stall)",
    "adjudicated": "adjudicated",
    "other": "other",
}


# --------------------------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Position:
    """One test position: ``id`` like ``KQK-03``, its FEN and the strong side's colour."""

    id: str
    material: str
    fen: str
    strong: chess.Color

    def board(self) -> chess.Board:
        return chess.Board(self.fen)


def piece_hangs(board: chess.Board, strong: chess.Color) -> bool:
    """True when the bare king attacks the strong side's piece and the strong king does not defend it."""
    weak_king = board.king(not strong)
    for square, piece in board.piece_map().items():
        if piece.color == strong and piece.piece_type != chess.KING:
            if weak_king is not None and square in board.attacks(weak_king) \
                    and not board.is_attacked_by(strong, square):
                return True
    return False


def acceptable(board: chess.Board, strong: chess.Color) -> bool:
    """A test position: legal (python-chess ``is_valid``: kings apart, the side not to move not in
    check), the strong side to move, not over (no stalemate, no mate), the piece not hanging."""
    return (board.is_valid() and board.turn == strong and not board.is_game_over()
            and not piece_hangs(board, strong))


def random_position(rng: random.Random, pieces: tuple[chess.PieceType, ...] | chess.PieceType,
                    strong: chess.Color) -> chess.Board:
    """A random acceptable position with K + ``pieces`` (for ``strong``) against a bare king.

    Squares are drawn uniformly (distinct squares) and redrawn until :func:`acceptable` holds (a pawn
    never on its first or last rank). Half-move clock 0, full-move number 1, no castling or en passant.
    """
    pieces = (pieces,) if isinstance(pieces, int) else pieces
    while True:
        strong_king, *piece_squares, weak_king = rng.sample(chess.SQUARES, len(pieces) + 2)
        board = chess.Board(None)
        board.set_piece_at(strong_king, chess.Piece(chess.KING, strong))
        for piece_type, square in zip(pieces, piece_squares):
            board.set_piece_at(square, chess.Piece(piece_type, strong))
        board.set_piece_at(weak_king, chess.Piece(chess.KING, not strong))
        board.turn = strong
        if acceptable(board, strong):
            return board


def strong_side_wins(tables: chess.syzygy.Tablebase, board: chess.Board) -> bool:
    """Whether the side to move wins within the 50-move rule (python-chess WDL 2)."""
    return tables.probe_wdl(board) == 2


def make_positions(material: str, count: int, seed: int, strong: str = "random",
                   tables: str | Path | None = None) -> list[Position]:
    """``count`` distinct positions of ``material`` (a key of :data:`MATERIALS`), reproducible from ``seed``.

    For :data:`NEEDS_TABLES` materials only winning starts are kept, by the Syzygy tables in ``tables``
    (default :data:`POSITION_TABLES`).

    ``strong`` is ``white``, ``black`` or ``random`` (each position's strong side drawn with equal
    chance). Each material has its own random stream, so the KQK set does not depend on whether KRK
    is played too, and the first k positions of a larger ``count`` are the same as with ``count=k``.
    """
    if material not in MATERIALS:
        raise ValueError(f"unknown material {material!r} (known: {', '.join(MATERIALS)})")
    if strong not in ("white", "black", "random"):
        raise ValueError(f"strong side must be white, black or random, not {strong!r}")
    rng = random.Random(f"glimpse-endgames:{material}:{seed}")
    seen: set[str] = set()
    positions: list[Position] = []
    tb = chess.syzygy.open_tablebase(str(tables or POSITION_TABLES)) if material in NEEDS_TABLES else None
    try:
        while len(positions) < count:
            color = {"white": chess.WHITE, "black": chess.BLACK}.get(strong)
            if color is None:
                color = chess.WHITE if rng.random() < 0.5 else chess.BLACK
            board = random_position(rng, MATERIALS[material], color)
            key = board.board_fen() + (" w" if board.turn else " b")
            if key in seen:
                continue
            seen.add(key)
            if tb is not None and not strong_side_wins(tb, board):
                continue
            positions.append(Position(f"{material}-{len(positions) + 1:02d}", material, board.fen(), color))
    finally:
        if tb is not None:
            tb.close()
    return positions


# --------------------------------------------------------------------------------------------
# Classification
# --------------------------------------------------------------------------------------------


def classify(g: match_tool.GameResult) -> dict[str, Any]:
    """What happened in one game, engine A being the strong side.

    Returns ``outcome`` (a key of :data:`OUTCOMES`), ``mated`` (A checkmated the bare king),
    ``moves`` (A's moves played) and ``moves_to_mate`` (the same when mated, else None).
    """
    a_moves = (g.plies + 1) // 2 if g.a_white == _first_mover_is_white(g) else g.plies // 2
    term = g.termination
    if term == "normal":
        outcome = {
            "CHECKMATE": "mate" if g.a_points() == 1.0 else "other",
            "FIFTY_MOVES": "fifty_moves", "SEVENTYFIVE_MOVES": "fifty_moves",
            "THREEFOLD_REPETITION": "repetition", "FIVEFOLD_REPETITION": "repetition",
            "STALEMATE": "stalemate", "INSUFFICIENT_MATERIAL": "lost_piece",
        }.get(g.outcome or "", "other")
    elif term == "adjudication":
        outcome = "adjudicated"
    else:
        faults = {"time forfeit": ("forfeits", "time_forfeit"), "rules infraction": ("illegal", "illegal_move"),
                  "abandoned": ("crashes", "crash"), "stalled connection": ("stalls", "stall")}
        if term in faults:
            field, key = faults[term]
            outcome = key if getattr(g, field)["A"] else "opponent_fault"
        else:
            outcome = "other"
    mated = outcome == "mate"
    return {"outcome": outcome, "mated": mated, "moves": a_moves, "moves_to_mate": a_moves if mated else None}


def _first_mover_is_white(g: match_tool.GameResult) -> bool:
    """Whether White made the game's first move (from the PGN's root position)."""
    game = getattr(g, "pgn_game", None)
    if game is None:
        return True
    return game.board().turn == chess.WHITE


def material_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-material totals of classified rows: mated count, moves-to-mate statistics, outcomes."""
    out: dict[str, Any] = {}
    for material in sorted({r["material"] for r in rows}, key=lambda m: list(MATERIALS).index(m)
                           if m in MATERIALS else 99):
        mine = [r for r in rows if r["material"] == material]
        mates = [r["moves_to_mate"] for r in mine if r["mated"]]
        counts: dict[str, int] = {}
        for r in mine:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        out[material] = {
            "positions": len(mine), "mated": len(mates),
            "mated_fraction": len(mates) / len(mine) if mine else None,
            "moves_to_mate_mean": statistics.fmean(mates) if mates else None,
            "moves_to_mate_median": statistics.median(mates) if mates else None,
            "moves_to_mate_max": max(mates) if mates else None,
            "outcomes": counts,
        }
    return out


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


class EndgameRun(match_tool.Match):
    """A tools/match.py match over explicit positions, reported as an endgame test."""

    def __init__(self, cfg: match_tool.MatchConfig, positions: list[Position], seed: int, strong: str):
        super().__init__(cfg)
        self.positions = positions  # game k plays positions[k - 1]
        self.seed, self.strong = seed, strong

    def header(self) -> list[str]:
        c = self.cfg
        counts = ", ".join(f"{m} x {sum(p.material == m for p in self.positions)}"
                           for m in dict.fromkeys(p.material for p in self.positions))
        return [
            f"Endgames: {self.names['A']} (strong side) vs {self.names['B']} (bare king): {counts}, "
            f"seed {self.seed}, strong side {self.strong}",
            f"  A: {self.infos['A'].header_line()}",
            f"  B: {self.infos['B'].header_line()}",
            f"  Time control: {c.tc.describe()}" + (f" (A), {c.tc_b.describe()} (B)" if c.tc_b else "")
            + f"; time margin {c.timemargin} ms",
            "  Ends: checkmate, stalemate, piece lost, a draw claimed by "
            + ("the side to move" if c.draw_claims == "both" else "the defender on its move")
            + " (50-move rule, threefold repetition), or a fault",
            f"  Concurrency: {c.concurrency}" + (" (Threads=1 per engine)" if c.concurrency > 1 else ""),
            f"  Host: {platform.node()} {platform.machine()}, {el.cpu_count()} CPUs; python-chess {chess.__version__}",
        ]

    def row(self, g: match_tool.GameResult) -> dict[str, Any]:
        pos = self.positions[g.number - 1]
        c = classify(g)
        mt = g.move_time["A"]
        return {"id": pos.id, "material": pos.material, "fen": pos.fen,
                "strong": "white" if pos.strong == chess.WHITE else "black", "game": g.number,
                **c, "result": g.result, "termination": g.termination, "reason": g.reason,
                "plies": g.plies, "final_fen": g.final_fen,
                "a_mean_move_ms": 1000 * mt[0] / mt[1] if mt[1] else None,
                "a_errors": g.engine_errors["A"]}

    def record(self, g: match_tool.GameResult, total: int) -> None:
        pos = self.positions[g.number - 1]
        g.pgn_game.headers["Opening"] = f"{pos.id} (seed {self.seed})"  # type: ignore[attr-defined]
        super().record(g, total)

    def log_game(self, g: match_tool.GameResult, white: str, black: str, total: int) -> None:
        r = self.row(g)
        what = f"mated in {r['moves_to_mate']} moves" if r["mated"] else f"{r['outcome']} after {r['moves']} moves"
        self.log(f"{r['id']} ({r['strong']} to mate): {what}  {{{g.reason}}}   ({len(self.results)}/{total})")

    def rows(self) -> list[dict[str, Any]]:
        return [self.row(g) for g in sorted(self.results, key=lambda g: g.number)]

    def summary_lines(self) -> list[str]:
        rows = self.rows()
        lines = [f"{'position':<9} {'strong':<6} {'outcome':<15} {'moves':>5}  FEN"]
        for r in rows:
            lines.append(f"{r['id']:<9} {r['strong']:<6} {r['outcome']:<15} {r['moves']:>5}  {r['fen']}")
        for material, m in material_summary(rows).items():
            mates = (f"moves to mate mean {m['moves_to_mate_mean']:.1f}, median {m['moves_to_mate_median']:g}, "
                     f"max {m['moves_to_mate_max']}" if m["mated"] else "no mates")
            fails = ", ".join(f"{k} {v}" for k, v in m["outcomes"].items() if k != "mate") or "none"
            lines.append(f"{material}: mated {m['mated']}/{m['positions']} "
                         f"({100 * m['mated_fraction']:.0f} %); {mates}; failures: {fails}")
        t = self.tally
        for side in ("A", "B"):
            mt = t.move_time[side]
            avg = f"{1000 * mt[0] / mt[1]:.1f} ms/move" if mt[1] else "-"
            nd = t.nodes[side]
            lines.append(f"{self.names[side]}: illegal moves {t.illegal[side]}, time forfeits {t.forfeits[side]}, "
                         f"crashes {t.crashes[side]}, stalls {t.stalls[side]}, 'info string error' lines "
                         f"{t.engine_errors[side]}, mean {avg}"
                         + (f", {nd[0] / nd[1]:.1f} nodes/move" if nd[1] else ""))
            for text in t.error_samples[side][:3]:
                lines.append(f"  e.g. {text[:160]}")
        return lines

    def summary(self) -> dict[str, Any]:
        s = super().summary()
        for key in ("book", "book_order", "score", "elo", "elo_low", "elo_high", "los", "sprt", "chess960",
                    "adjudication"):
            s.pop(key, None)
        rows = self.rows()
        s["endgames"] = {
            "seed": self.seed, "strong": self.strong,
            "draw_claims": "defender" if self.cfg.draw_claims == "B" else "any",
            "positions_planned": [dataclasses.asdict(p) | {"strong": "white" if p.strong else "black"}
                                  for p in self.positions],
            "per_material": material_summary(rows),
            "positions": rows,
            "outcome_keys": OUTCOMES,
        }
        return s


def run(cfg: match_tool.MatchConfig, positions: list[Position], seed: int, strong: str) -> dict[str, Any]:
    """Plays every position once (A as the strong side) and returns the summary dict."""
    cfg.jobs = [(el.Opening(p.fen, [], False, p.id), p.strong == chess.WHITE) for p in positions]
    cfg.games = len(positions)
    return match_tool.run_match(cfg, lambda c: EndgameRun(c, positions, seed, strong))


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="endgames.py", description=__doc__.split("\n\n")[0] + "\n\n"
                                + __doc__.split("\n\n")[1], epilog=__doc__.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    match_tool.add_engine_args(p)
    p.add_argument("--b", "--opponent", dest="b", default="stockfish", metavar="SPEC",
                   help="defender, CMD[:NAME=VALUE,...] (default: stockfish at full strength)")
    p.add_argument("--b-option", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for the defender (repeatable)")
    p.add_argument("--b-name", help="label of the defender")
    match_tool.add_limit_args(p, "10+0.1")
    match_tool.add_b_limit_args(p)
    p.add_argument("--positions", type=int, default=20, metavar="N", help="positions per material (default 20)")
    p.add_argument("--materials", nargs="+", default=list(MATERIALS), choices=list(MATERIALS),
                   help="which endings (default: %(default)s)")
    p.add_argument("--strong", choices=("random", "white", "black"), default="random",
                   help="colour of the strong side (default: random per position)")
    p.add_argument("--seed", type=int, default=1, help="seed of the positions (default 1)")
    p.add_argument("--claims", choices=("defender", "any"), default="defender",
                   help="who may claim a threefold repetition or 50-move draw on its move: the defender only "
                        "(default), or either side (python-chess claim_draw=True on every move, as match.py --draw-claims both)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="games at once (default 1); with >1 each engine gets Threads=1 unless set")
    p.add_argument("--timemargin", type=int, default=0, metavar="MS",
                   help="allowed clock overrun in ms before a time forfeit (default 0)")
    p.add_argument("--stall-timeout", type=float, default=30.0, metavar="S",
                   help="without a clock: seconds (beyond movetime) before a silent engine loses")
    p.add_argument("--syzygy", metavar="PATH",
                   help="Syzygy tables for engine A (sets its SyzygyPath option), e.g. ../shared/data/syzygy")
    p.add_argument("--compare", action="store_true",
                   help="with --syzygy: play every position without the tables, then with them, and print "
                        "both results side by side (PREFIX-without.*, PREFIX-with.*)")
    p.add_argument("--position-tables", metavar="DIR", default=str(POSITION_TABLES),
                   help="Syzygy tables that pick the winning K+B+N and K+P starts (default: the vendored "
                        "test tables, tests/data/syzygy)")
    p.add_argument("--out", metavar="PREFIX", help="PREFIX.json and PREFIX.pgn (default reports/endgames-<time>)")
    p.add_argument("--list", action="store_true", help="print the positions and exit")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.tc_is_default = not any(a == "--tc" or a.startswith("--tc=") for a in argv)
    if args.positions < 1:
        parser.error("--positions must be >= 1")
    if args.concurrency < 1:
        parser.error("--concurrency must be >= 1")
    if args.compare and not args.syzygy:
        parser.error("--compare needs --syzygy PATH")
    if args.syzygy and not Path(args.syzygy).is_dir():
        parser.error(f"--syzygy: no such directory {args.syzygy!r}")
    positions = [p for m in dict.fromkeys(args.materials)
                 for p in make_positions(m, args.positions, args.seed, args.strong, args.position_tables)]
    if args.list:
        for p in positions:
            print(f"{p.id}  {p.fen}")
        return 0
    a_options = args.a_option + [o for o in args.a_options.split(",") if o.strip()]
    spec_b = el.EngineSpec.parse(args.b, args.b_option, args.b_name)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or str(el.REPO_ROOT / "reports" / f"endgames-{stamp}")
    runs = [(None, out)]
    if args.syzygy:
        tables = str(Path(args.syzygy).resolve())
        runs = [(None, out + "-without"), (tables, out + "-with")] if args.compare else [(tables, out)]
    results = []
    for tables, prefix in runs:
        options = a_options + ([f"SyzygyPath={tables}"] if tables else [])
        name = args.a_name
        if args.compare:
            name = (args.a_name or "glimpse") + (" +TB" if tables else "")
        spec_a = el.EngineSpec.parse(args.a, options, name)
        cfg = match_tool.MatchConfig(
            spec_a, spec_b, match_tool.time_control_from_args(args), len(positions), None,
            seed=args.seed, concurrency=args.concurrency, pgn_out=prefix + ".pgn", json_out=prefix + ".json",
            event="Glimpse endgames" + (" (Syzygy)" if tables else ""), timemargin=args.timemargin,
            stall_timeout=args.stall_timeout, quiet=args.quiet, tc_b=match_tool.b_time_control_from_args(args),
            draw_claims="B" if args.claims == "defender" else "both")
        summary = run(cfg, positions, args.seed, args.strong)
        if summary.get("interrupted"):
            return 130
        results.append(("with tables" if tables else "without tables", summary))
    if len(results) > 1:
        print("\n".join(comparison_lines(results)))
    return 0


def comparison_lines(results: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Mated x/N and moves to mate per material, one column per run (e.g. without and with tables)."""
    materials = list(dict.fromkeys(m for _, s in results for m in s["endgames"]["per_material"]))
    head = f"{'material':<9}" + "".join(f" {label:>28}" for label, _ in results)
    lines = ["Conversion (mated/positions, mean and max moves to mate):", head]
    for m in materials:
        cells = []
        for _, s in results:
            r = s["endgames"]["per_material"].get(m)
            if r is None:
                cells.append(f" {'-':>28}")
                continue
            moves = (f"mean {r['moves_to_mate_mean']:.1f}, max {r['moves_to_mate_max']}" if r["mated"]
                     else "no mates")
            cells.append(f" {str(r['mated']) + '/' + str(r['positions']) + ', ' + moves:>28}")
        lines.append(f"{m:<9}" + "".join(cells))
    return lines


if __name__ == "__main__":
    sys.exit(main())
