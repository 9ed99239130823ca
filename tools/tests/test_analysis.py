"""Tests of tools/puzzles.py, tools/suites.py and tools/gauntlet.py (short runs on Stockfish)."""

from __future__ import annotations

import asyncio
import csv
import json
import math
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import chess
import chess.engine

TOOLS = Path(__file__).resolve().parent.parent

from glimpse_tools import enginelib as el
from glimpse_tools import gauntlet
from glimpse_tools import puzzles
from glimpse_tools import suites

PY = sys.executable
STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"
HAVE_SF = Path(STOCKFISH).exists()


class ScriptedEngine:
    """Stands in for a UCI protocol: plays the given moves in order."""

    def __init__(self, moves: list[str]):
        self.moves = list(moves)
        self.seen: list[str] = []

    async def play(self, board: chess.Board, limit, game=None, **kw):
        self.seen.append(board.fen())
        return chess.engine.PlayResult(chess.Move.from_uci(self.moves.pop(0)), None)


def run_solve(puzzle: puzzles.Puzzle, moves: list[str]) -> dict:
    return asyncio.run(puzzles.solve(ScriptedEngine(moves), puzzle, chess.engine.Limit(nodes=1), 5))


class PuzzleRulesTest(unittest.TestCase):
    # Back-rank position: after the opponent plays ...Nb6 (Moves[0]) both Rd8# and Qe8# mate;
    # only Rd8# is listed.
    FEN = "n5k1/5ppp/8/8/8/8/5PPP/3RQ1K1 b - - 0 1"

    def test_whole_solution_must_match(self) -> None:
        # Moves[0] = opponent's move; solver must play Moves[1], Moves[3].
        p = puzzles.Puzzle("t1", chess.STARTING_FEN, ["e2e4", "e7e5", "g1f3", "b8c6"], 1500, [])
        self.assertTrue(run_solve(p, ["e7e5", "b8c6"])["solved"])
        r = run_solve(p, ["e7e5", "g8f6"])
        self.assertFalse(r["solved"])
        self.assertEqual(r["reason"], "expected b8c6")
        self.assertFalse(run_solve(p, ["d7d5"])["solved"])

    def test_engine_sees_position_after_opponent_move(self) -> None:
        p = puzzles.Puzzle("t2", chess.STARTING_FEN, ["e2e4", "e7e5"], 1500, [])
        eng = ScriptedEngine(["e7e5"])
        asyncio.run(puzzles.solve(eng, p, chess.engine.Limit(nodes=1), 5))
        board = chess.Board()
        board.push_uci("e2e4")
        self.assertEqual(eng.seen, [board.fen()])

    def test_alternative_mate_counts(self) -> None:

        p = puzzles.Puzzle("t3", self.FEN, ["a8b6", "d1d8"], 1000, ["mateIn1"])
        self.assertTrue(run_solve(p, ["d1d8"])["solved"])
        r = run_solve(p, ["e1e8"])
        self.assertTrue(r["solved"])
        self.assertEqual(r["reason"], "alternative mate")
        self.assertFalse(run_solve(p, ["g2g3"])["solved"])

    def test_illegal_answer_fails(self) -> None:
        p = puzzles.Puzzle("t4", chess.STARTING_FEN, ["e2e4", "e7e5"], 1500, [])
        self.assertFalse(run_solve(p, ["e2e4"])["solved"])

    def test_loading_and_bands(self) -> None:
        ps = puzzles.load_puzzles(puzzles.DEFAULT_PUZZLES, limit=25)
        self.assertEqual(len(ps), 25)
        for p in ps:
            board = chess.Board(p.fen)
            board.push_uci(p.moves[0])  # Moves[0] is legal in FEN: the opponent's move
            self.assertTrue(board.is_valid())
        # Every data row of the file is loaded (2,893 in ../shared; 60 in the tests' slice).
        with open(puzzles.DEFAULT_PUZZLES, newline="") as f:
            rows = sum(1 for row in csv.reader(f) if row) - 1
        self.assertGreaterEqual(rows, 25)
        self.assertEqual(len(puzzles.load_puzzles(puzzles.DEFAULT_PUZZLES)), rows)
        self.assertEqual(puzzles.band_of(1399), 1200)
        self.assertEqual(puzzles.band_of(1400), 1400)
        lo, hi = puzzles.wilson(8, 10)
        self.assertTrue(0.44 < lo < 0.5 and 0.94 < hi < 0.97)


class SuitesTest(unittest.TestCase):
    def test_every_shared_suite_parses(self) -> None:
        for path in sorted(suites.EPD_DIR.glob("*.epd")):
            positions, skipped = suites.load_suite(path)
            self.assertGreater(len(positions), 20, path.name)
            self.assertEqual(skipped, [], path.name)
            for pos in positions:
                board = chess.Board(pos.fen)
                legal = {m.uci() for m in board.legal_moves}
                self.assertTrue(set(pos.bm) <= legal and set(pos.am) <= legal, pos.id)
                self.assertTrue(set(pos.sts) <= legal, pos.id)
        sts, _ = suites.load_suite(suites.EPD_DIR / "STS1-STS15_LAN_v3.epd")
        self.assertEqual(len(sts), 1500)
        self.assertEqual(len({p.theme_key for p in sts}), 15)
        self.assertEqual(sts[0].sts["f4f5"], 10)
        spread, _ = suites.load_suite(suites.EPD_DIR / "STS1-STS15_LAN_v3.epd", limit=15)
        self.assertEqual(len({p.theme_key for p in spread}), 15)

    def test_scoring(self) -> None:
        pos = suites.Position("s", 0, "x", chess.STARTING_FEN, ["e2e4"], [], {})
        self.assertTrue(suites.score(pos, "e2e4")["solved"])
        self.assertFalse(suites.score(pos, "d2d4")["solved"])
        am = suites.Position("s", 0, "x", chess.STARTING_FEN, [], ["g2g4"], {})
        self.assertTrue(suites.score(am, "e2e4")["solved"])
        self.assertFalse(suites.score(am, "g2g4")["solved"])
        sts = suites.Position("s", 0, "x", chess.STARTING_FEN, ["e2e4"], [], {"e2e4": 10, "d2d4": 7})
        self.assertEqual(suites.score(sts, "d2d4")["points"], 7)
        self.assertEqual(suites.score(sts, "a2a3")["points"], 0)
        self.assertEqual(suites.score(sts, None)["points"], 0)


class GauntletFitTest(unittest.TestCase):
    def test_fit_rating(self) -> None:
        f = gauntlet.fit_rating([{"anchor": 1500, "points": 10, "games": 20}])
        self.assertAlmostEqual(f["elo"], 1500, places=3)
        f = gauntlet.fit_rating([{"anchor": 1400, "points": 15, "games": 20},
                                 {"anchor": 1600, "points": 5, "games": 20}])
        self.assertAlmostEqual(f["elo"], 1500, places=3)
        # 75 % against 1500 -> 1500 + 190.85
        f = gauntlet.fit_rating([{"anchor": 1500, "points": 30, "games": 40}])
        self.assertAlmostEqual(f["elo"], 1500 + el.elo_from_score(0.75), places=2)
        self.assertAlmostEqual(f["se"], 1 / math.sqrt(40 * 0.75 * 0.25 * (math.log(10) / 400) ** 2), places=6)
        self.assertEqual(gauntlet.fit_rating([{"anchor": 1500, "points": 4, "games": 4}])["elo"], math.inf)
        self.assertIsNone(gauntlet.fit_rating([]))


@unittest.skipUnless(HAVE_SF, "Stockfish not installed")
class CommandLineTest(unittest.TestCase):
    def run_tool(self, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
        out = subprocess.run([PY, *args], capture_output=True, text=True, timeout=timeout)
        self.assertEqual(out.returncode, 0, out.stdout[-2000:] + out.stderr[-2000:])
        return out

    def test_puzzles_cli(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = self.run_tool(str(TOOLS / "puzzles.py"), "--engine", "stockfish", "--depth", "6",
                                "--limit", "8", "--json", f"{tmp}/p.json")
            self.assertIn("Accuracy:", out.stdout)
            s = json.loads(Path(f"{tmp}/p.json").read_text())
            self.assertEqual(s["total"], 8)
            self.assertGreater(s["solved"], 3)  # Stockfish at depth 6 solves most easy puzzles
            self.assertEqual(sum(b["total"] for b in s["bands"]), 8)
            self.assertTrue(s["engine"]["id_name"].startswith("Stockfish"))
            self.assertGreater(Path(f"{tmp}/p.png").stat().st_size, 1000)

    def test_suites_cli(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = self.run_tool(str(TOOLS / "suites.py"), "--engine", "stockfish", "--depth", "6",
                                "--limit", "4", "--suites", "bk_senjo", "STS1-STS15_LAN_v3",
                                "--json", f"{tmp}/s.json")
            self.assertIn("STS1-STS15_LAN_v3", out.stdout)
            s = json.loads(Path(f"{tmp}/s.json").read_text())
            rows = {r["suite"]: r for r in s["suites"]}
            self.assertEqual(rows["bk_senjo"]["done"], 4)
            self.assertEqual(rows["STS1-STS15_LAN_v3"]["sts_max"], 40)
            self.assertGreater(rows["STS1-STS15_LAN_v3"]["sts_points"], 0)

    def test_gauntlet_cli(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = self.run_tool(str(TOOLS / "gauntlet.py"), "--a", "stockfish:Skill Level=2",
                                "--levels", "0", "--elos", "1350", "--depth", "3", "--games", "2",
                                "--out", f"{tmp}/g", "--quiet")
            self.assertIn("Elo estimate", out.stdout)
            self.assertIn("CCRL 40/4", out.stdout)
            doc = json.loads(Path(f"{tmp}/g.json").read_text())
            self.assertEqual([r["games"] for r in doc["rows"]], [2, 2])
            self.assertEqual(doc["rows"][1]["kind"], "elo")
            self.assertTrue(Path(f"{tmp}/g.png").exists())
            self.assertTrue(Path(f"{tmp}/g-skill_0.pgn").exists())


if __name__ == "__main__":
    unittest.main()
