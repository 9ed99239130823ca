"""Tests of tools/scaling.py (per-N aggregation, outputs) and of match.py's per-side limits.

The engines are tests/fake_engine.py: engine A declares ``SearchMode`` and plays an illegal move
unless ``SearchMode=mcts`` was set and ``go nodes`` is at least 4, so the outcome of each point
shows that the options and the node count reached the engine.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import chess.pgn

TOOLS = Path(__file__).resolve().parent.parent

from glimpse_tools import enginelib as el
from glimpse_tools import match as match_tool
from glimpse_tools import scaling

PY = sys.executable
FAKE = " ".join([PY, str(TOOLS / "tests" / "fake_engine.py")])


def summary(w: int, d: int, l: int, **kw) -> dict:
    s = {"games": w + d + l, "wins": w, "draws": d, "losses": l, "mean_move_ms": {"A": 12.0, "B": 3.0},
         "mean_nodes_per_move": {"A": 100.0, "B": 1.0}, "illegal": {"A": 0, "B": 0},
         "time_forfeits": {"A": 0, "B": 0}, "crashes": {"A": 0, "B": 0}, "stalls": {"A": 0, "B": 0},
         "engine_errors": {"A": 0, "B": 0}, "terminations": {}, "interrupted": False, "pgn": "x.pgn"}
    s.update(kw)
    return s


def read_pgn(path: str) -> list[chess.pgn.Game]:
    stream = io.StringIO(Path(path).read_text())
    games = []
    while (g := chess.pgn.read_game(stream)) is not None:
        games.append(g)
    return games


class AggregationTest(unittest.TestCase):
    def test_row_matches_match_statistics(self) -> None:
        r = scaling.row_from_summary(400, summary(5, 2, 1))
        st = el.elo_stats(5, 2, 1)
        self.assertEqual((r["playouts"], r["games"], r["wins"], r["draws"], r["losses"]), (400, 8, 5, 2, 1))
        self.assertAlmostEqual(r["score"], 6 / 8)
        self.assertAlmostEqual(r["elo"], st.elo)
        self.assertAlmostEqual(r["elo_low"], st.elo_low)
        self.assertAlmostEqual(r["elo_high"], st.elo_high)
        self.assertLess(r["elo_low"], r["elo"])
        self.assertLess(r["elo"], r["elo_high"])
        self.assertEqual((r["a_nodes_per_move"], r["a_ms_per_move"]), (100.0, 12.0))

    def test_infinite_elo_is_null_and_json_safe(self) -> None:
        r = scaling.row_from_summary(25, summary(4, 0, 0))
        self.assertEqual((r["score"], r["elo"], r["elo_low"], r["elo_high"]), (1.0, None, None, None))
        json.dumps(r, allow_nan=False)
        self.assertEqual(scaling.elo_text(r), "+inf [+inf, +inf]")
        even = scaling.row_from_summary(25, summary(0, 4, 0))
        self.assertEqual(even["elo"], 0.0)
        self.assertEqual(math.copysign(1, even["elo"]), 1.0)  # no "-0"
        # Low score: finite Elo, interval reaching a score of 0 -> no lower end.
        low = scaling.row_from_summary(25, summary(0, 1, 9))
        self.assertIsNotNone(low["elo"])
        self.assertIsNone(low["elo_low"])

    def test_warnings(self) -> None:
        rows = [scaling.row_from_summary(400, summary(1, 0, 1, mean_nodes_per_move={"A": 1.0, "B": 1.0})),
                scaling.row_from_summary(25, summary(1, 0, 1, mean_nodes_per_move={"A": 25.0, "B": 1.0}))]
        w = scaling.warnings_for(rows, {"unsupported_options": ["SearchMode"]})
        self.assertEqual(len(w), 2)
        self.assertIn("SearchMode", w[0])
        self.assertIn("go nodes 400", w[1])
        self.assertEqual(scaling.warnings_for(rows[1:], {"unsupported_options": []}), [])

    def test_plot_writes_png(self) -> None:
        rows = [scaling.row_from_summary(n, summary(*wdl)) for n, wdl in
                ((25, (0, 0, 4)), (100, (1, 2, 1)), (400, (3, 1, 0)), (1600, (4, 0, 0)))]
        with tempfile.TemporaryDirectory() as tmp:
            scaling.plot(rows, f"{tmp}/p.png", "title", "searchless")
            data = Path(f"{tmp}/p.png").read_bytes()
            self.assertTrue(data.startswith(b"\x89PNG\r\n\x1a\n"))
            self.assertGreater(len(data), 5000)


class ScalingRunTest(unittest.TestCase):
    A = FAKE + " --name Searcher --declare SearchMode --illegal-unless SearchMode=mcts --illegal-below-nodes 4"
    B = FAKE + " --name Base"

    def run_tool(self, tmp: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
        out = subprocess.run([PY, str(TOOLS / "scaling.py"), "--a", self.A, "--b", self.B, "--playouts", "1", "4",
                              "16", "--games", "2", "--maxmoves", "3", "--seed", "2", "--out", f"{tmp}/s",
                              "--quiet", *extra], capture_output=True, text=True, timeout=180)
        doc = json.loads(Path(f"{tmp}/s.json").read_text()) if Path(f"{tmp}/s.json").exists() else {}
        return out, doc

    def test_points_json_png_pgn(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out, doc = self.run_tool(tmp)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(doc["playouts"], [1, 4, 16])
            rows = {r["playouts"]: r for r in doc["rows"]}
            # N=1: below A's threshold -> an illegal move in every game -> score 0, Elo -inf (null).
            self.assertEqual((rows[1]["losses"], rows[1]["illegal"]["A"], rows[1]["score"], rows[1]["elo"]),
                             (2, 2, 0.0, None))
            # N>=4 with SearchMode=mcts: legal random moves, drawn by --maxmoves 3 -> Elo 0.
            for n in (4, 16):
                self.assertEqual((rows[n]["draws"], rows[n]["score"], rows[n]["elo"]), (2, 0.5, 0.0))
                self.assertEqual(rows[n]["illegal"], {"A": 0, "B": 0})
                self.assertAlmostEqual(rows[n]["a_nodes_per_move"], n)   # the fake reports go nodes
            self.assertEqual(doc["engines"]["A"]["options"], {"SearchMode": "mcts"})
            self.assertEqual(doc["engines"]["B"]["options"], {})
            self.assertEqual(doc["warnings"], [])
            self.assertTrue(doc["command"].startswith("python -m glimpse_tools.scaling --a "))
            self.assertIn("--playouts 1 4 16 --games 2", doc["command"])
            self.assertTrue(Path(f"{tmp}/s.png").read_bytes().startswith(b"\x89PNG"))
            for n in (1, 4, 16):
                games = read_pgn(f"{tmp}/s-n{n}.pgn")
                self.assertEqual(len(games), 2)
                self.assertEqual(games[0].headers["FEN"], games[1].headers["FEN"])  # each opening twice
                self.assertEqual(games[0].headers["White"], games[1].headers["Black"])
            # The same seed gives the same openings at every N.
            self.assertEqual(read_pgn(f"{tmp}/s-n1.pgn")[0].headers["FEN"], read_pgn(f"{tmp}/s-n16.pgn")[0].headers["FEN"])
            self.assertRegex(out.stdout, r"(?m)^\s+4\s+2\s+0\s+2\s+0\s+50\.0%")

    def test_reuse_takes_a_point_from_an_earlier_match(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            earlier = Path(tmp) / "m400.json"
            earlier.write_text(json.dumps(summary(30, 60, 10)))
            out, doc = self.run_tool(tmp, "--reuse", f"16={earlier}")
            self.assertEqual(out.returncode, 0, out.stderr)
            rows = {r["playouts"]: r for r in doc["rows"]}
            self.assertEqual((rows[16]["wins"], rows[16]["draws"], rows[16]["losses"]), (30, 60, 10))
            self.assertGreater(rows[16]["elo"], 0)
            self.assertFalse(Path(f"{tmp}/s-n16.pgn").exists(), "the reused point is not played")
            self.assertEqual(rows[4]["games"], 2)
        with self.assertRaises(SystemExit):
            scaling.parse_reuse(["400=/nonexistent.json"])

    def test_undeclared_option_is_sent_with_a_warning_or_refused(self) -> None:
        a = FAKE + " --name Old --illegal-unless SearchMode=mcts --illegal-below-nodes 4"
        with tempfile.TemporaryDirectory() as tmp:
            self.A = a
            out, doc = self.run_tool(tmp)
            self.assertEqual(out.returncode, 0, out.stderr)
            # Sent raw: the fake saw SearchMode=mcts, so no illegal moves at N >= 4.
            self.assertEqual([r["illegal"]["A"] for r in doc["rows"]], [2, 0, 0])
            self.assertEqual(doc["engines"]["A"]["unsupported_options"], ["SearchMode"])
            self.assertIn("WARNING: engine A does not declare SearchMode", out.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            out, doc = self.run_tool(tmp, "--strict-options")
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("SearchMode", out.stderr)
            self.assertEqual(doc, {})

    def test_b_clock(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out, doc = self.run_tool(tmp, "--b-tc", "30+0.5")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(doc["b_limit"], "clock 30+0.5 s")
            g = read_pgn(f"{tmp}/s-n4.pgn")[0]
            tcs = {g.headers["WhiteTimeControl"], g.headers["BlackTimeControl"]}
            self.assertEqual(tcs, {"-", "30+0.5"})


class PerSideLimitTest(unittest.TestCase):
    def test_a_at_nodes_b_on_a_clock(self) -> None:
        """A plays at go nodes (no clock: never forfeits); B's own clock runs out."""
        a = el.EngineSpec.parse(FAKE + " --name A --illegal-below-nodes 5")
        b = el.EngineSpec.parse(FAKE + " --name B --sleep-after 1 --sleep 1.5")
        with tempfile.TemporaryDirectory() as tmp:
            cfg = match_tool.MatchConfig(a, b, match_tool.TimeControl(nodes=5), 1, str(el.DEFAULT_BOOK),
                                         pgn_out=f"{tmp}/m.pgn", json_out=f"{tmp}/m.json", quiet=True,
                                         tc_b=match_tool.TimeControl.parse_clock("1+0"))
            s = match_tool.run_match(cfg)
            self.assertEqual(s["time_forfeits"], {"A": 0, "B": 1})
            self.assertEqual((s["wins"], s["illegal"]["A"]), (1, 0))
            self.assertEqual(s["mean_nodes_per_move"]["A"], 5.0)
            self.assertEqual(s["time_control_b"]["base"], 1.0)
            g = read_pgn(f"{tmp}/m.pgn")[0]
            self.assertEqual((g.headers["WhiteTimeControl"], g.headers["BlackTimeControl"]), ("-", "1"))
            self.assertNotIn("TimeControl", g.headers)


if __name__ == "__main__":
    unittest.main()
