"""The tablebase fixtures the engine's Rust tests compare against (tests/data/syzygy_cases*.jsonl) still
match python-chess's Syzygy reader on the tables they were made from, so the Rust test
(tests/syzygy.rs) compares the engine with python-chess and not with a stale file."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

import chess
import chess.syzygy

REPO = Path(__file__).resolve().parent.parent.parent
DATA = REPO / "tests" / "data"
SHARED = REPO.parent / "shared" / "data" / "syzygy"


def check(test: unittest.TestCase, fixture: str, tables: Path, at_least: int) -> None:
    rows = [json.loads(line) for line in (DATA / fixture).read_text().splitlines()]
    test.assertGreaterEqual(len(rows), at_least)
    test.assertGreater(len({r["wdl"] for r in rows}), 1)  # wins, draws and losses, not one value
    with chess.syzygy.open_tablebase(str(tables)) as tb:
        for r in rows:
            board = chess.Board(r["fen"])
            test.assertTrue(board.is_valid(), r["fen"])
            test.assertLessEqual(chess.popcount(board.occupied), 4)
            test.assertEqual((tb.probe_wdl(board), tb.probe_dtz(board)), (r["wdl"], r["dtz"]), r["fen"])


class FixtureTest(unittest.TestCase):
    def test_vendored_fixture_matches_python_chess(self) -> None:
        check(self, "syzygy_cases.jsonl", DATA / "syzygy", 1000)

    @unittest.skipUnless(SHARED.is_dir(), "no ../shared/data/syzygy")
    def test_shared_fixture_matches_python_chess(self) -> None:
        check(self, "syzygy_cases_shared.jsonl", SHARED, 1000)


if __name__ == "__main__":
    unittest.main()
