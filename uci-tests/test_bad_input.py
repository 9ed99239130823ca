"""Malformed input: the engine survives every case.

For each bad input, after a valid position has been set: the engine prints an ``info string``
explaining the error, still answers ``isready`` with ``readyok``, still plays a legal move from the
previous valid position (and keeps its previous option values), and writes nothing to stdout that
is not UCI (checked on the raw byte stream).
"""

from __future__ import annotations

import os
import tempfile
import unittest
from pathlib import Path

import chess

from uci_harness import TINY_AV, RawEngine, start_glimpse

# The valid state every case starts from: Black to move, so a move legal here is never legal in
# the White-to-move positions the bad commands would set (a partial application is detected).
VALID = "position startpos moves e2e4 e7e5 g1f3"
VALID_BOARD = chess.Board()
for _m in ("e2e4", "e7e5", "g1f3"):
    VALID_BOARD.push_uci(_m)
LEGAL = {m.uci() for m in VALID_BOARD.legal_moves}

UNKNOWN_COMMANDS = [
    "foo", "xyzzy bar baz", "positionstartpos", "setoption", "go!", "position moves e2e4",
    "position",
]

MALFORMED_FENS = [
    "position fen",
    "position fen garbage",
    "position fen rnbqkbnr/pppppppp/8/8 w KQkq - 0 1",                            # 4 ranks
    "position fen rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",      # 9 files
    "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1",      # bad piece
    "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",      # bad side
    "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1",     # bad e.p.
    "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - -3 1",     # bad clock
    "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 abc",    # bad move no.
    "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w XYZ - 0 1",       # bad castling
]

IMPOSSIBLE_POSITIONS = [
    "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKKNR w - - 0 1",         # two white kings
    "position fen rnbq1bnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQ - 0 1",        # no black king
    "position fen 8/8/8/8/8/8/8/8 w - - 0 1",                                     # empty board
    "position fen 4k3/4R3/8/8/8/8/8/4K3 w - - 0 1",                               # side not to move in check
    "position fen 4k3/8/8/8/8/8/8/P3K3 w - - 0 1",                                # pawn on 1st rank
    "position fen P3k3/8/8/8/8/8/8/4K3 w - - 0 1",                                # pawn on 8th rank
    "position fen 4k3/pppppppp/p7/8/8/8/8/4K3 w - - 0 1",                         # 9 black pawns
]

ILLEGAL_MOVES = [
    "position startpos moves e2e5",
    "position startpos moves d2d4 d7d5 e2e5",           # illegal third move after two legal ones
    "position startpos moves d2d4 d7d5 zzzz",           # not a move
    "position startpos moves e2e4 e2e4",
    "position startpos moves e1g1",                     # castling through pieces
    "position startpos moves e7e5",                     # wrong side
    "position startpos moves e2e4 e7e5 g1f3 b8c6 e1g1",  # castling with pieces in between
    "position fen 4k3/8/8/8/8/8/8/4K2R w K - 0 1 moves h1h8 e8e7 h8h1 e7e8 e1g1",  # lost right
    "position startpos moves a7a8q",
    "position startpos moves e2e4q",                    # promotion suffix on a non-promotion
]

BAD_OPTIONS = [
    "setoption name MultiPV value 0",
    "setoption name MultiPV value 100000",
    "setoption name MultiPV value -3",
    "setoption name MultiPV value abc",
    "setoption name MultiPV value 2.5",
    "setoption name MultiPV value",
    "setoption name MultiPV",
    "setoption name Threads value 0",
    "setoption name Threads value 100000",
    "setoption name Threads value many",
    "setoption name Move Overhead value -1",
    "setoption name Move Overhead value 999999999999999999999",
    "setoption name Move Overhead value fast",
    "setoption name Temperature value hot",
    "setoption name Temperature value -1",
    "setoption name Temperature value nan",
    "setoption name TempDecayMoves value -5",
    "setoption name TempDecayMoves value x",
    "setoption name Seed value seed",
    "setoption name UCI_Chess960 value maybe",
    "setoption name UCI_ShowWDL value 2",
    "setoption name Ponder value yes please",
    "setoption name Backend value quantum",
    "setoption name NoSuchOption value 1",
    "setoption name",
    "setoption value 3",
]

BAD_GO = [
    "go wtime abc btime 1000",
    "go nodes -5",
    "go nodes many",
    "go depth x",
    "go depth -1",
    "go movetime",
    "go movetime -100",
    "go movetime 99999999999999999999999",
    "go mate x",
    "go searchmoves zzzz",
    "go searchmoves e2e4",        # not legal in the valid position (White's move)
    "go frobnicate 7",
]

# Odd but seen in practice (a GUI sends a negative clock after an overstep): must not break the
# engine; an info string is welcome but not required.
ODD_GO = [
    "go wtime -1000 btime -1000 winc -5 binc -5",
    "go wtime 0 btime 0",
    "go movestogo 0 wtime 1000 btime 1000",
]


def short(text: str | bytes, limit: int = 80) -> str:
    """Abbreviated repr for messages (some inputs are 100 kB long)."""
    r = repr(text)
    return r if len(r) <= limit else f"{r[:limit]}... ({len(text)} chars)"


class BadInputTest(unittest.TestCase):
    engine: RawEngine

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def setUp(self) -> None:
        self.engine = start_glimpse()
        self.engine.send(VALID)
        self.engine.isready()

    def tearDown(self) -> None:
        engine = self.engine
        try:
            if engine.alive():
                self.assertEqual(engine.quit(), 0, "engine should exit with status 0 on quit")
        finally:
            engine.kill()
        self.assertEqual(engine.bad_output, [], "engine wrote non-UCI lines to stdout")

    def survive(self, bad: str | bytes, expect_info: bool = True, allow_bestmove: bool = False) -> None:
        """Sends ``bad`` and checks: info string, readyok, legal move from VALID, engine alive."""
        e = self.engine
        e.send(VALID)  # each case starts from the valid state (a failed case does not cascade)
        e.isready()
        name = short(bad)
        start = len(e.lines)
        e.send(bad)
        if allow_bestmove:
            # A bad `go` may be refused or run with what could be parsed; either way it must not
            # hang: stop it, then read whatever bestmove it produced.
            e.drain(0.3)
            e.send("stop")
            e.drain(0.5)
        e.isready(30)
        e.drain(0.1)
        new = e.lines[start:]
        shown = [short(l, 200) for l in new]
        self.assertTrue(e.alive(), f"engine died after {name}; stderr {e.stderr[-5:]}")
        if expect_info:
            self.assertTrue(any(l.startswith("info string") for l in new),
                            f"no 'info string' explaining the error after {name}: {shown}")
        bestmoves = [l for l in new if l.startswith("bestmove")]
        if allow_bestmove:
            self.assertLessEqual(len(bestmoves), 1, f"{name}: {shown}")
            for l in bestmoves:
                self.assertIn(l.split()[1], LEGAL, f"{name}: {l} not legal in the valid position")
        else:
            self.assertEqual(bestmoves, [], f"unexpected bestmove after {name}")
        move, lines = e.go("nodes 1")
        self.assertIn(move, LEGAL, f"after {name} the engine does not play from the previous valid "
                                   f"position: bestmove {move}")

    def run_cases(self, cases, **kw) -> None:
        for bad in cases:
            with self.subTest(bad=short(bad)):
                self.survive(bad, **kw)

    def test_unknown_commands(self) -> None:
        self.run_cases(UNKNOWN_COMMANDS)

    def test_garbage_bytes_and_long_lines(self) -> None:
        self.run_cases([b"\xff\xfe\x00garbage\x80", b"\x1b[31mred\x1b[0m", "x" * 100_000,
                        "position startpos moves " + "e2e4 e7e5 " * 5000], expect_info=False)
        for blank in ("", "   ", "\t"):
            self.survive(blank, expect_info=False)

    def test_malformed_fen(self) -> None:
        self.run_cases(MALFORMED_FENS)

    def test_impossible_positions(self) -> None:
        self.run_cases(IMPOSSIBLE_POSITIONS)

    def test_illegal_move_in_position(self) -> None:
        self.run_cases(ILLEGAL_MOVES)

    def test_bad_option_values_keep_previous_values(self) -> None:
        e = self.engine
        self.run_cases(BAD_OPTIONS)
        # MultiPV is still 1: one PV per go. (1 s: the one-pass net must answer with its info lines
        # well inside the limit even on a busy 2-core machine.)
        move, lines = e.go("movetime 1000")
        multipvs = {l.split(" multipv ")[1].split()[0] for l in lines
                    if l.startswith("info") and " multipv " in l}
        self.assertTrue(multipvs <= {"1"}, f"MultiPV changed by a rejected value: {lines}")
        # A valid value after the bad ones still works.
        e.send("setoption name MultiPV value 2")
        move, lines = e.go("movetime 1000")
        multipvs = {l.split(" multipv ")[1].split()[0] for l in lines
                    if l.startswith("info") and " multipv " in l}
        self.assertEqual(multipvs, {"1", "2"})

    def test_bad_go_values(self) -> None:
        self.run_cases(BAD_GO, allow_bestmove=True)

    def test_odd_go_values(self) -> None:
        self.run_cases(ODD_GO, allow_bestmove=True, expect_info=False)

    def test_missing_weights_file(self) -> None:
        self.run_cases(["setoption name WeightsFile value /nonexistent/dir/net.onnx",
                        f"setoption name WeightsFile value {self.tmp.name}"])  # a directory

    def test_corrupt_weights_files(self) -> None:
        tmp = Path(self.tmp.name)
        cases = []
        (tmp / "random.onnx").write_bytes(os.urandom(4096))
        cases.append(tmp / "random.onnx")
        (tmp / "empty.onnx").write_bytes(b"")
        cases.append(tmp / "empty.onnx")
        (tmp / "text.onnx").write_text("this is not an ONNX model\n")
        cases.append(tmp / "text.onnx")
        if TINY_AV.exists():
            data = TINY_AV.read_bytes()
            (tmp / "truncated.onnx").write_bytes(data[: len(data) // 2])
            cases.append(tmp / "truncated.onnx")
        self.run_cases([f"setoption name WeightsFile value {p}" for p in cases])

    def test_bad_input_during_search(self) -> None:
        """Bad commands while `go infinite` runs neither crash nor disturb the search."""
        e = self.engine
        e.send("go infinite")
        for bad in ("foo", "position fen garbage", "setoption name MultiPV value abc", "go depth x"):
            e.send(bad)
        e.isready(10)
        e.send("stop")
        move, _ = e.bestmove(10)
        self.assertIn(move, LEGAL)
        e.isready()
        self.assertTrue(e.alive())


if __name__ == "__main__":
    unittest.main()
