"""The command line of ``match.py`` (and of the tools built on it: gauntlet, scaling, endgames, soak):
engine, limit and adjudication arguments and the parser.
"""

from __future__ import annotations

import argparse
from pathlib import Path


from glimpse_tools import enginelib as el

from glimpse_tools.match_game import TimeControl, Adjudication

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


def build_parser(doc: str = __doc__) -> argparse.ArgumentParser:
    """The parser; ``doc`` (the module docstring of ``match.py`` when called from there) gives its help text."""
    p = argparse.ArgumentParser(
        prog="match.py", description="\n\n".join(doc.split("\n\n")[:2]),
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
