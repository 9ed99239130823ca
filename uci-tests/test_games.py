"""Full games against Stockfish 15.1 with a clock.

Plays ``UCI_TESTS_GAMES`` (default 10) complete games, Glimpse against Stockfish at ``Skill Level``
0, at ``UCI_TESTS_TC`` (default 10+0.1), from ``noob_3moves.epd`` openings (each with both colours),
``UCI_TESTS_CONCURRENCY`` (default 2) games at once with one thread per engine, no adjudication.
The match runner is tools/match.py (python-chess client; clock kept by the runner: wall time per
move is charged to the mover, a flag fall is a time forfeit). Asserts, for Glimpse: 0 illegal moves,
0 time forfeits, 0 crashes, 0 stalls; every game finished by the rules (or by a Stockfish fault)
no ``info string error`` from Glimpse; and the PGN replays legally. The PGN is kept in reports/uci-tests-games.pgn.
"""

from __future__ import annotations

import io
import os
import unittest
from pathlib import Path

import chess
import chess.pgn

from uci_harness import REPO_ROOT, glimpse_bin, stockfish_bin, weights_options

from glimpse_tools import enginelib as el
from glimpse_tools import match as match_tool
GAMES = int(os.environ.get("UCI_TESTS_GAMES", "10"))
TC = os.environ.get("UCI_TESTS_TC", "10+0.1")
CONCURRENCY = int(os.environ.get("UCI_TESTS_CONCURRENCY", "2"))


class GamesAgainstStockfishTest(unittest.TestCase):
    def test_complete_games_with_clock(self) -> None:
        self.assertTrue(Path(stockfish_bin()).exists(),
                        f"Stockfish not found at {stockfish_bin()} (apt-get install -y stockfish)")
        out = REPO_ROOT / "reports" / "uci-tests-games"
        spec_a = el.EngineSpec([glimpse_bin()], dict(weights_options()))
        spec_b = el.EngineSpec([stockfish_bin()], {"Skill Level": "0"})
        cfg = match_tool.MatchConfig(
            spec_a, spec_b, match_tool.TimeControl.parse_clock(TC), GAMES, str(el.DEFAULT_BOOK),
            "random", seed=2024, concurrency=CONCURRENCY, pgn_out=str(out) + ".pgn",
            json_out=str(out) + ".json", event="Glimpse uci-tests games")
        summary = match_tool.run_match(cfg)
        self.assertFalse(summary["interrupted"])
        self.assertTrue(summary["engines"]["B"]["id_name"].startswith("Stockfish"))
        self.assertEqual(summary["games"], GAMES, "not every game was played")
        self.assertEqual(summary["illegal"]["A"], 0, "Glimpse played an illegal move")
        self.assertEqual(summary["time_forfeits"]["A"], 0, "Glimpse lost on time")
        self.assertEqual(summary["crashes"]["A"], 0, "Glimpse crashed")
        self.assertEqual(summary["stalls"]["A"], 0, "Glimpse stopped answering")
        self.assertEqual(summary["engine_errors"]["A"], 0,
                         f"Glimpse reported errors: {summary['engine_error_samples']['A']}")
        lowest = summary["lowest_clock_s"]["A"]
        self.assertIsNotNone(lowest)
        self.assertGreater(lowest, 0.0)
        for g in summary["results"]:
            self.assertIn(g["result"], ("1-0", "0-1", "1/2-1/2"))
            # A game ends by the rules, or by a fault of Stockfish (never one of Glimpse's, above).
            self.assertIn(g["termination"], ("normal", "time forfeit", "abandoned", "rules infraction",
                                             "stalled connection"), g)
        # The PGN replays legally and holds every game.
        text = Path(cfg.pgn_out).read_text()
        games = []
        stream = io.StringIO(text)
        while (game := chess.pgn.read_game(stream)) is not None:
            self.assertEqual(game.errors, [], game.headers)
            board = game.board()
            for move in game.mainline_moves():
                self.assertIn(move, board.legal_moves)
                board.push(move)
            games.append(game)
        self.assertEqual(len(games), GAMES)
        for game in games:
            for tag in ("Event", "Site", "Date", "Round", "White", "Black", "Result", "Termination",
                        "TimeControl"):
                self.assertIn(tag, game.headers)
        print(f"\n  {summary['games']} games: +{summary['wins']} ={summary['draws']} "
              f"-{summary['losses']} for Glimpse; mean {summary['mean_move_ms']['A']:.1f} ms/move, "
              f"lowest clock {lowest:.2f} s; PGN {cfg.pgn_out}", end=" ")


if __name__ == "__main__":
    unittest.main()
