"""Tests of tools/endgames.py: position construction, result classification, the command line.

Games are played between scripted fake engines (tests/fake_engine.py), so the tests need neither
Glimpse nor Stockfish and take a few seconds.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import chess
import chess.pgn

TOOLS = Path(__file__).resolve().parent.parent

from glimpse_tools import endgames
from glimpse_tools import enginelib as el
from glimpse_tools import match as match_tool

PY = sys.executable
FAKE = [PY, str(TOOLS / "tests" / "fake_engine.py")]


def fake(*args: str, name: str = "Fake") -> el.EngineSpec:
    return el.EngineSpec(FAKE + ["--name", name, *args])


def play(fen: str, spec_a: el.EngineSpec, spec_b: el.EngineSpec,
         tc: match_tool.TimeControl | None = None, claims: str = "B") -> dict:
    """Plays one position with A as the side to move; returns the classified row.

    ``claims`` is MatchConfig.draw_claims: "B" (the defender only, endgames.py's default) or "both".
    """
    board = chess.Board(fen)
    pos = endgames.Position("T-01", "KQK", board.fen(), board.turn)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = match_tool.MatchConfig(spec_a, spec_b, tc or match_tool.TimeControl(depth=1), 1, None,
                                     pgn_out=f"{tmp}/e.pgn", json_out=f"{tmp}/e.json", quiet=True,
                                     draw_claims=claims)
        summary = endgames.run(cfg, [pos], 1, "random")
        on_disk = json.loads(Path(f"{tmp}/e.json").read_text())
    rows = summary["endgames"]["positions"]
    assert len(rows) == 1
    assert on_disk["endgames"]["positions"] == rows
    return rows[0]


class PositionTest(unittest.TestCase):
    def check_material(self, board: chess.Board, strong: chess.Color,
                       pieces: tuple[chess.PieceType, ...]) -> None:
        found = board.piece_map().values()
        self.assertEqual(sorted((p.color == strong, p.piece_type) for p in found),
                         sorted([(True, chess.KING), *((True, p) for p in pieces), (False, chess.KING)]))

    def test_positions_are_legal_and_right(self) -> None:
        for material, piece in endgames.MATERIALS.items():
            positions = endgames.make_positions(material, 40, seed=5)
            self.assertEqual(len(positions), 40)
            self.assertEqual(len({p.fen for p in positions}), 40)  # distinct
            for p in positions:
                b = p.board()
                self.assertEqual(b.fen(), p.fen)
                self.assertTrue(b.is_valid(), p.fen)
                self.assertEqual(b.turn, p.strong, p.fen)           # strong side to move
                self.check_material(b, p.strong, piece)
                self.assertFalse(b.is_game_over(), p.fen)          # no stalemate or mate
                self.assertFalse(b.is_check())
                self.assertFalse(endgames.piece_hangs(b, p.strong), p.fen)
                self.assertEqual((b.halfmove_clock, b.fullmove_number), (0, 1))
                self.assertEqual(p.material, material)
                self.assertTrue(p.id.startswith(material + "-"))
            # Random colours: both occur.
            self.assertEqual({p.strong for p in positions}, {chess.WHITE, chess.BLACK})

    def test_reproducible_by_seed(self) -> None:
        a = endgames.make_positions("KRK", 10, seed=3)
        b = endgames.make_positions("KRK", 10, seed=3)
        c = endgames.make_positions("KRK", 10, seed=4)
        self.assertEqual([p.fen for p in a], [p.fen for p in b])
        self.assertNotEqual([p.fen for p in a], [p.fen for p in c])
        # The first k positions do not depend on how many are asked for.
        self.assertEqual([p.fen for p in endgames.make_positions("KRK", 4, seed=3)], [p.fen for p in a[:4]])
        # Each material has its own stream.
        self.assertNotEqual([p.fen for p in endgames.make_positions("KQK", 10, seed=3)], [p.fen for p in a])

    def test_strong_colour_choice(self) -> None:
        for name, color in (("white", chess.WHITE), ("black", chess.BLACK)):
            ps = endgames.make_positions("KQK", 8, seed=1, strong=name)
            self.assertTrue(all(p.strong == color and p.board().turn == color for p in ps))
            for p in ps:
                self.assertEqual(len(p.board().pieces(chess.QUEEN, color)), 1)
        with self.assertRaises(ValueError):
            endgames.make_positions("KBBK", 1, seed=1)
        with self.assertRaises(ValueError):
            endgames.make_positions("KQK", 1, seed=1, strong="green")

    def test_table_materials_start_won(self) -> None:
        # K+B+N and K+P starts are kept only when the (vendored) tables say the strong side wins;
        # a K+P start drawn by the tables exists among the raw draws, so the filter does work.
        import chess.syzygy
        with chess.syzygy.open_tablebase(str(endgames.POSITION_TABLES)) as tb:
            for material in endgames.NEEDS_TABLES:
                for p in endgames.make_positions(material, 20, seed=1):
                    self.assertEqual(tb.probe_wdl(p.board()), 2, p.fen)
            self.assertEqual(tb.probe_wdl(chess.Board("8/8/8/8/8/k7/p7/K7 b - - 0 1")), 0)
            drawn = chess.Board("k7/8/8/8/8/8/P7/K7 w - - 0 1")  # rook pawn, the bare king in its corner
            self.assertEqual(tb.probe_wdl(drawn), 0)
            self.assertFalse(endgames.strong_side_wins(tb, drawn))

    def test_comparison_table(self) -> None:
        def summary(mated: int) -> dict:
            return {"endgames": {"per_material": {"KPK": {
                "mated": mated, "positions": 20, "moves_to_mate_mean": 12.0 if mated else None,
                "moves_to_mate_max": 30 if mated else None}}}}
        lines = endgames.comparison_lines([("without tables", summary(3)), ("with tables", summary(20))])
        self.assertIn("without tables", lines[1])
        self.assertIn("3/20, mean 12.0, max 30", lines[2])
        self.assertIn("20/20", lines[2])

    def test_rejected_positions(self) -> None:
        ok = chess.Board("7k/8/8/8/8/8/8/KQ6 w - - 0 1")
        self.assertTrue(endgames.acceptable(ok, chess.WHITE))
        # Rook diagonally next to the bare king, undefended: hangs; defended by the king: fine. (A
        # queen next to the bare king gives check, which is illegal with the strong side to move.)
        hanging = chess.Board("8/8/8/8/8/5k2/4R3/K7 w - - 0 1")
        self.assertTrue(hanging.is_valid())
        self.assertTrue(endgames.piece_hangs(hanging, chess.WHITE))
        self.assertFalse(endgames.acceptable(hanging, chess.WHITE))
        self.assertTrue(endgames.piece_hangs(hanging.mirror(), chess.BLACK))
        defended = chess.Board("8/8/8/8/8/5k2/4R3/3K4 w - - 0 1")
        self.assertFalse(endgames.piece_hangs(defended, chess.WHITE))
        self.assertTrue(endgames.acceptable(defended, chess.WHITE))
        # The bare king in check with the strong side to move is illegal.
        self.assertFalse(endgames.acceptable(chess.Board("7k/8/8/8/8/8/8/K6Q w - - 0 1"), chess.WHITE))
        # Kings side by side are illegal.
        self.assertFalse(endgames.acceptable(chess.Board("8/8/8/8/8/8/1k6/K1Q5 w - - 0 1"), chess.WHITE))
        # The weak side to move is not a test position.
        self.assertFalse(endgames.acceptable(chess.Board("7k/8/8/8/8/8/8/KQ6 b - - 0 1"), chess.WHITE))


class ClassificationTest(unittest.TestCase):
    """Real (scripted) games from a FEN: each way a game can end is classified correctly."""

    START = "7k/8/8/8/8/8/8/KQ6 w - - 0 1"   # Ka1 Qb1 against Kh8, White to move

    def test_mate_counts_moves(self) -> None:
        r = play("7k/8/6K1/8/8/8/8/1Q6 w - - 0 1", fake("--moves", "b1b8"), fake())
        self.assertEqual((r["outcome"], r["mated"], r["moves_to_mate"], r["result"]), ("mate", True, 1, "1-0"))
        # Black as the strong side: the mirrored position, mate in one as Black.
        r = play("1q6/8/8/8/8/6k1/8/7K b - - 0 1", fake("--moves", "b8b1"), fake())
        self.assertEqual((r["outcome"], r["moves_to_mate"], r["strong"], r["result"]), ("mate", 1, "black", "0-1"))
        # Mate on the third move: A's moves are counted, not plies.
        r = play("7k/8/6K1/8/8/8/8/1Q6 w - - 0 1", fake("--moves", "b1c1,c1b1,b1b8"),
                 fake("--moves", "h8g8,g8h8"))
        self.assertEqual((r["outcome"], r["moves_to_mate"], r["plies"]), ("mate", 3, 5))

    def test_fifty_move_rule(self) -> None:
        # Half-move clock 98: after Qc1 the defender can claim (python-chess claim_draw semantics).
        r = play("7k/8/8/8/8/8/8/KQ6 w - - 98 1", fake("--moves", "b1c1"), fake())
        self.assertEqual((r["outcome"], r["mated"], r["moves_to_mate"], r["result"]),
                         ("fifty_moves", False, None, "1/2-1/2"))
        self.assertEqual(r["moves"], 1)

    def test_repetition(self) -> None:
        r = play(self.START, fake("--moves", "b1c1,c1b1,b1c1,c1b1,b1c1"),
                 fake("--moves", "h8g8,g8h8,h8g8,g8h8,h8g8"))
        self.assertEqual((r["outcome"], r["result"]), ("repetition", "1/2-1/2"))
        self.assertLessEqual(r["plies"], 8)

    def test_only_the_defender_claims(self) -> None:
        # After these 8 plies White (the strong side) could claim a threefold with Qc1 (python-chess
        # counts a claim with the move about to be made), but it plays on: Qg6 stalemates.
        a = fake("--moves", "b1c1,a1a2,a2a1,c1b1,b1g6")
        b = fake("--moves", "h8h7,h7h8,h8g7,g7h8")
        r = play(self.START, a, b)
        self.assertEqual((r["outcome"], r["plies"]), ("stalemate", 9))
        # With claims by either side (match.py's rule) the game ends before White's 5th move.
        r = play(self.START, a, b, claims="both")
        self.assertEqual((r["outcome"], r["plies"]), ("repetition", 8))

    def test_stalemate(self) -> None:
        r = play(self.START, fake("--moves", "b1g6"), fake())
        self.assertEqual((r["outcome"], r["result"], r["plies"]), ("stalemate", "1/2-1/2", 1))

    def test_lost_piece(self) -> None:
        r = play(self.START, fake("--moves", "b1h7"), fake())   # Qh7+ Kxh7: only the kings are left
        self.assertEqual((r["outcome"], r["result"], r["plies"]), ("lost_piece", "1/2-1/2", 2))
        self.assertEqual(len(chess.Board(r["final_fen"]).piece_map()), 2)

    def test_faults_of_the_strong_side(self) -> None:
        r = play(self.START, fake("--illegal-after", "0"), fake())
        self.assertEqual((r["outcome"], r["mated"], r["result"]), ("illegal_move", False, "0-1"))
        r = play(self.START, fake("--crash-after", "1"), fake())
        self.assertEqual((r["outcome"], r["mated"]), ("crash", False))
        # A flag fall against a bare king is a draw (no mating material), still a failure.
        r = play(self.START, fake("--sleep-after", "0", "--sleep", "2"), fake(),
                 match_tool.TimeControl.parse_clock("0.5+0"))
        self.assertEqual((r["outcome"], r["result"]), ("time_forfeit", "1/2-1/2"))

    def test_defender_fault_is_not_a_mate(self) -> None:
        r = play(self.START, fake("--moves", "b1c1"), fake("--crash-after", "0"))
        self.assertEqual((r["outcome"], r["mated"], r["result"]), ("opponent_fault", False, "1-0"))

    def test_material_summary(self) -> None:
        rows = [{"material": "KRK", "mated": True, "moves_to_mate": m, "outcome": "mate"} for m in (10, 20, 33)]
        rows += [{"material": "KRK", "mated": False, "moves_to_mate": None, "outcome": "fifty_moves"},
                 {"material": "KQK", "mated": False, "moves_to_mate": None, "outcome": "stalemate"}]
        s = endgames.material_summary(rows)
        self.assertEqual(list(s), ["KQK", "KRK"])
        self.assertEqual((s["KRK"]["positions"], s["KRK"]["mated"]), (4, 3))
        self.assertAlmostEqual(s["KRK"]["moves_to_mate_mean"], 21.0)
        self.assertEqual((s["KRK"]["moves_to_mate_median"], s["KRK"]["moves_to_mate_max"]), (20, 33))
        self.assertEqual(s["KRK"]["outcomes"], {"mate": 3, "fifty_moves": 1})
        self.assertEqual((s["KQK"]["mated"], s["KQK"]["moves_to_mate_mean"]), (0, None))


class CommandLineTest(unittest.TestCase):
    def test_run_writes_table_json_and_pgn(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            a = " ".join(FAKE + ["--name", "Mater", "--mate-in-one"])
            b = " ".join(FAKE + ["--name", "Defender"])
            out = subprocess.run([PY, str(TOOLS / "endgames.py"), "--a", a, "--b", b, "--tc", "none",
                                  "--depth", "1", "--positions", "2", "--seed", "9", "--out", f"{tmp}/eg"],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            for material in endgames.MATERIALS:
                self.assertRegex(out.stdout, material + r": mated \d/2")
            doc = json.loads(Path(f"{tmp}/eg.json").read_text())
            planned = [p for m in endgames.MATERIALS for p in endgames.make_positions(m, 2, 9)]
            rows = doc["endgames"]["positions"]
            self.assertEqual([r["fen"] for r in rows], [p.fen for p in planned])
            self.assertEqual([r["id"] for r in rows], [f"{m}-0{i}" for m in endgames.MATERIALS for i in (1, 2)])
            for material in endgames.MATERIALS:
                m = doc["endgames"]["per_material"][material]
                self.assertEqual(sum(m["outcomes"].values()), 2)
                self.assertEqual(m["mated"], sum(r["mated"] for r in rows if r["material"] == material))
            for r in rows:
                self.assertIn(r["outcome"], endgames.OUTCOMES)
                self.assertEqual(r["mated"], r["outcome"] == "mate")
            self.assertEqual(doc["engines"]["A"]["id_name"], "Mater")
            stream = io.StringIO(Path(f"{tmp}/eg.pgn").read_text())
            games = []
            while (g := chess.pgn.read_game(stream)) is not None:
                games.append(g)
            self.assertEqual([g.headers["FEN"] for g in games], [p.fen for p in planned])
            for g, p in zip(games, planned):
                # Engine A (Mater) plays the strong side, whichever colour it is.
                self.assertEqual(g.headers["White" if p.strong else "Black"], "Mater")

    def test_list(self) -> None:
        out = subprocess.run([PY, str(TOOLS / "endgames.py"), "--list", "--positions", "3", "--materials", "KRK"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual([ln.split()[0] for ln in lines], ["KRK-01", "KRK-02", "KRK-03"])
        self.assertEqual([ln.split(None, 1)[1] for ln in lines],
                         [p.fen for p in endgames.make_positions("KRK", 3, 1)])


if __name__ == "__main__":
    unittest.main()
