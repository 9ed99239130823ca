"""The ladder (``make ladder``): its gauntlet command per mode, the MCTS − searchless difference, and the
Elo fit on synthetic results with a known answer."""

from __future__ import annotations

import math
import random
import unittest

from glimpse_tools import enginelib as el
from glimpse_tools import bench_results, gauntlet, ladder


class LadderTest(unittest.TestCase):
    def test_each_mode_runs_the_ladder_at_threads_1(self) -> None:
        args = ladder.build_parser().parse_args(["--net", "x.onnx", "--games", "4"])
        argv = ladder.gauntlet_args(args, "mcts", ladder.Path("/tmp/out"))
        self.assertIn("SearchMode=mcts", argv)
        self.assertIn("Threads=1", argv)
        self.assertEqual(argv[argv.index("--levels") + 1], "0")
        i = argv.index("--elos")
        self.assertEqual(argv[i + 1:i + 5], ["1500", "1700", "1900", "2100"])
        self.assertEqual(argv[argv.index("--tc") + 1], "10+0.1")
        self.assertTrue(argv[-1].startswith("WeightsFile=/") and argv[-1].endswith("x.onnx"))
        with self.assertRaises(SystemExit):
            ladder.main(["--games", "3"])

    def test_options_reach_glimpse_in_every_mode(self) -> None:
        args = ladder.build_parser().parse_args(["--option", "PolicySoftmaxTemp=1", "--option", "CPuct=1.2"])
        for mode in ladder.MODES:
            argv = ladder.gauntlet_args(args, mode, ladder.Path("/tmp/out"))
            given = [argv[i + 1] for i, a in enumerate(argv) if a == "--a-option"]
            self.assertEqual(given[-2:], ["PolicySoftmaxTemp=1", "CPuct=1.2"])
            self.assertIn(f"SearchMode={mode}", given)
        for bad in ("PolicySoftmaxTemp", "=1"):
            with self.assertRaises(SystemExit):
                ladder.main(["--option", bad, "--out", "/nonexistent/never-written"])

    def test_the_machine_bench_is_recorded_from_glimpse_bench(self) -> None:
        calls = []

        def fake(engine, args):
            calls.append((engine, args))
            return {"Evaluations/s": "282", "Bench signature": "806-9e047afeef4e2c13", "Median ms per move": "89.4"}

        got = ladder.machine_bench("glimpse", "x.onnx", bench=fake)
        self.assertEqual(got["evaluations_per_s"], 282.0)
        self.assertEqual(got["signature"], "806-9e047afeef4e2c13")
        self.assertIn("--no-batches", calls[0][1])
        self.assertTrue(calls[0][1][-1].endswith("x.onnx"))

        def broken(engine, args):
            raise RuntimeError("exit 1")

        self.assertIsNone(ladder.machine_bench("glimpse", None, bench=broken))

    def test_vnni_is_read_from_the_cpu_flags(self) -> None:
        self.assertTrue(bench_results.cpu_has_vnni("model name : X\nflags : fpu sse2 avx2 avx512f avx512_vnni\n"))
        self.assertTrue(bench_results.cpu_has_vnni("flags\t: avx2 avx_vnni\n"))
        self.assertFalse(bench_results.cpu_has_vnni("flags : fpu sse2 avx2 fma\n"))
        self.assertIsNone(bench_results.cpu_has_vnni("processor : 0\n"))

    def test_difference_of_two_estimates(self) -> None:
        d = ladder.difference({"elo": 1550, "se": 30}, {"elo": 1700, "se": 40})
        self.assertAlmostEqual(d["elo"], 150)
        self.assertAlmostEqual(d["se"], 50)
        self.assertAlmostEqual(d["low"], 150 - 1.959964 * 50)
        self.assertIsNone(ladder.difference({"elo": "inf", "se": None}, {"elo": 1700, "se": 40}))
        self.assertIsNone(ladder.difference(None, {"elo": 1700, "se": 40}))

    def test_the_fit_recovers_a_known_rating_from_simulated_games(self) -> None:
        """Games drawn from the logistic model at a true rating of 1780 against the ladder's rungs: the
        ML fit lands within its own 95 % interval of the truth, and the interval shrinks with more games."""
        rng = random.Random(3)
        true = 1780.0
        widths = []
        for games in (40, 400):
            rows = []
            for anchor in (1500, 1700, 1900, 2100):
                p = el.score_from_elo(true - anchor)
                pts = sum(1.0 if rng.random() < p else 0.0 for _ in range(games))
                rows.append({"anchor": anchor, "points": pts, "games": games})
            fit = gauntlet.fit_rating(rows)
            self.assertLessEqual(fit["low"], true)
            self.assertGreaterEqual(fit["high"], true)
            widths.append(fit["high"] - fit["low"])
        self.assertLess(widths[1], widths[0] / 2.5, "ten times the games: about a third of the width")
        self.assertTrue(math.isfinite(widths[1]))


if __name__ == "__main__":
    unittest.main()
