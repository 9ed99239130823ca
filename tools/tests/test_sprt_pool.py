"""Pooling the runs of one SPRT (``glimpse-sprt-pool``): the sum of W/D/L and its LLR, the verdict that no
single run reaches, and the refusals (another test, other options, another clock, unreadable files)."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import unittest
from pathlib import Path

from glimpse_tools import elostats, sprt_pool


def result(w: int, d: int, loss: int, *, elo1: float = 10.0, a_opts: dict | None = None, tc: str = "clock 10+0.1 s",
           sprt: bool = True, seed: int = 1) -> dict:
    """A ``glimpse-match --json`` result as the match tool writes it (the fields the pool reads)."""
    doc = {"engines": {"A": {"command": ["/tmp/x/glimpse"], "options": a_opts or {"SearchMode": "mcts", "X": "1"}},
                       "B": {"command": ["glimpse"], "options": {"SearchMode": "mcts"}}},
           "time_control": {"base": 10.0, "inc": 0.1, "text": tc}, "time_control_b": None,
           "games": w + d + loss, "wins": w, "draws": d, "losses": loss, "seed": seed}
    if sprt:
        doc["sprt"] = {"elo0": 0.0, "elo1": elo1, "alpha": 0.05, "beta": 0.05, "llr": 0.0, "state": None}
    return doc


class SprtPoolTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def write(self, name: str, doc: object) -> str:
        p = self.dir / name
        p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return str(p)

    def run_main(self, argv: list[str]) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = sprt_pool.main(argv)
        return rc, out.getvalue(), err.getvalue()

    def test_the_pool_sums_the_runs_and_decides_where_no_run_alone_does(self) -> None:
        files = [self.write("a.json", result(150, 50, 100)), self.write("b.json", result(150, 50, 100))]
        runs = [sprt_pool.load_run(f) for f in files]
        alone = sprt_pool.pool(runs[:1])
        self.assertEqual(alone["verdict"], "continue")
        p = sprt_pool.pool(runs)
        self.assertEqual((p["games"], p["wins"], p["draws"], p["losses"]), (600, 300, 100, 200))
        self.assertAlmostEqual(p["llr"], elostats.sprt_llr(300, 100, 200, 0, 10))
        self.assertGreater(p["llr"], p["ubound"])
        self.assertEqual(p["verdict"], "H1 accepted")
        self.assertAlmostEqual(p["elo"], elostats.elo_stats(300, 100, 200).elo)
        self.assertEqual([r["games"] for r in p["runs"]], [300, 300])

    def test_a_losing_pool_accepts_h0_and_added_games_count(self) -> None:
        f = self.write("a.json", result(40, 20, 60))
        p = sprt_pool.pool([sprt_pool.load_run(f)], add=(40, 20, 60))
        self.assertEqual((p["wins"], p["draws"], p["losses"]), (80, 40, 120))
        self.assertAlmostEqual(p["llr"], elostats.sprt_llr(80, 40, 120, 0, 10))
        self.assertEqual(p["verdict"], "continue")
        p = sprt_pool.pool([sprt_pool.load_run(f)], add=(120, 60, 180))
        self.assertLess(p["llr"], p["lbound"])
        self.assertEqual(p["verdict"], "H0 accepted")
        with self.assertRaises(sprt_pool.PoolError):
            sprt_pool.pool([sprt_pool.load_run(f)], add=(1, -1, 0))

    def test_runs_of_another_test_are_refused_by_name(self) -> None:
        base = self.write("base.json", result(10, 5, 10))
        for name, doc, field in [("bounds.json", result(10, 5, 10, elo1=5.0), "SPRT"),
                                 ("opts.json", result(10, 5, 10, a_opts={"SearchMode": "mcts", "X": "2"}),
                                  "options A"),
                                 ("clock.json", result(10, 5, 10, tc="clock 5+0.05 s"), "time control")]:
            other = self.write(name, doc)
            with self.assertRaises(sprt_pool.PoolError) as cm:
                sprt_pool.pool([sprt_pool.load_run(base), sprt_pool.load_run(other)])
            self.assertIn(name, str(cm.exception))
            self.assertIn(field, str(cm.exception))

    def test_bad_files_are_clear_errors_and_nothing_is_printed(self) -> None:
        good = self.write("good.json", result(10, 5, 10))
        bad = {"junk.json": "{not json", "list.json": [1, 2], "nocounts.json": {"sprt": {}},
               "nosprt.json": result(10, 5, 10, sprt=False)}
        for name, doc in bad.items():
            rc, out, err = self.run_main([good, self.write(name, doc)])
            self.assertEqual(rc, 2, name)
            self.assertEqual(out, "", name)
            self.assertIn(name, err)
        rc, out, err = self.run_main([str(self.dir / "missing.json")])
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("missing.json", err)

    def test_main_prints_each_run_and_writes_the_pooled_json(self) -> None:
        files = [self.write("a.json", result(150, 50, 100, seed=7)),
                 self.write("b.json", result(150, 50, 100, seed=8))]
        out_json = self.dir / "pooled.json"
        rc, out, _ = self.run_main(files + ["--add", "1", "0", "0", "--json", str(out_json)])
        self.assertEqual(rc, 0)
        self.assertIn("a.json", out)
        self.assertIn("b.json", out)
        self.assertIn("601 games", out)
        self.assertIn("H1 accepted", out)
        doc = json.loads(out_json.read_text())
        self.assertEqual((doc["wins"], doc["draws"], doc["losses"]), (301, 100, 200))
        self.assertEqual(doc["verdict"], "H1 accepted")
        self.assertEqual([r["seed"] for r in doc["runs"]], [7, 8])  # each run's seed, for the record


if __name__ == "__main__":
    unittest.main()
