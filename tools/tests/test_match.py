"""Tests of tools/match.py and tools/enginelib.py (short: Stockfish and a faulty fake engine)."""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import chess
import chess.pgn

TOOLS = Path(__file__).resolve().parent.parent

from glimpse_tools import enginelib as el
from glimpse_tools import match as match_tool

PY = sys.executable
FAKE = [PY, str(TOOLS / "tests" / "fake_engine.py")]
STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"


def fake(*args: str, name: str = "Fake") -> el.EngineSpec:
    return el.EngineSpec(FAKE + ["--name", name, *args])


def quick_match(spec_a, spec_b, tc, games=2, **kw) -> dict:
    tmp = tempfile.mkdtemp()
    cfg = match_tool.MatchConfig(spec_a, spec_b, tc, games, kw.pop("book", str(el.DEFAULT_BOOK)),
                                 pgn_out=f"{tmp}/m.pgn", json_out=f"{tmp}/m.json", quiet=True, **kw)
    summary = match_tool.run_match(cfg)
    summary["_pgn_text"] = Path(cfg.pgn_out).read_text()
    return summary


class StatisticsTest(unittest.TestCase):
    def test_default_net_is_the_file_weights_default_names(self) -> None:
        net = el.default_net()
        self.assertIsNotNone(net, "weights/DEFAULT is missing or empty")
        self.assertEqual(net.parent, el.REPO_ROOT / "weights")
        self.assertEqual(net.name, (el.REPO_ROOT / "weights" / "DEFAULT").read_text().strip())
        self.assertTrue(net.is_file(), f"weights/DEFAULT names {net.name}, which is not in weights/")
        self.assertEqual(net.suffix, ".onnx")

    def test_tally_median_nodes(self) -> None:
        """The median nodes a move pools every game's moves; one huge count moves the mean, not the median."""
        t = match_tool.Tally()
        self.assertIsNone(t.median_nodes("A"))
        for i, counts in enumerate(([100, 120, 5000], [110, 130])):
            g = match_tool.GameResult(i + 1, True, "1/2-1/2", "normal", "", 10, "")
            g.node_counts["A"] = counts
            g.nodes["A"] = [sum(counts), len(counts)]
            t.add(g)
        self.assertEqual(t.median_nodes("A"), 120.0)
        self.assertEqual(t.nodes["A"], [5460, 5])
        self.assertIsNone(t.median_nodes("B"))

    def test_elo_from_score(self) -> None:
        self.assertAlmostEqual(el.elo_from_score(0.5), 0.0)
        self.assertAlmostEqual(el.elo_from_score(0.75), 190.848, places=2)
        self.assertAlmostEqual(el.elo_from_score(0.25), -190.848, places=2)
        self.assertEqual(el.elo_from_score(1.0), math.inf)
        self.assertAlmostEqual(el.score_from_elo(el.elo_from_score(0.63)), 0.63)

    def test_elo_stats_interval_and_los(self) -> None:
        st = el.elo_stats(60, 20, 20)
        self.assertAlmostEqual(st.score, 0.7)
        self.assertAlmostEqual(st.elo, 147.19, places=1)
        # var per game = (60·0.09 + 20·0.04 + 20·0.49)/100 = 0.16; se = 0.04
        self.assertAlmostEqual(st.elo_low, el.elo_from_score(0.7 - 1.959964 * 0.04), places=6)
        self.assertAlmostEqual(st.elo_high, el.elo_from_score(0.7 + 1.959964 * 0.04), places=6)
        self.assertAlmostEqual(st.los, 0.5 * (1 + math.erf(40 / math.sqrt(2 * 80))))
        even = el.elo_stats(10, 5, 10)
        self.assertAlmostEqual(even.elo, 0.0)
        self.assertAlmostEqual(even.los, 0.5)
        self.assertLess(el.elo_stats(1, 0, 9).elo, -300)

    def test_sprt(self) -> None:
        lo, hi = el.sprt_bounds(0.05, 0.05)
        self.assertAlmostEqual(hi, math.log(19))
        self.assertAlmostEqual(lo, -math.log(19))
        self.assertGreater(el.sprt_llr(60, 20, 20, 0, 50), hi)      # clearly stronger
        self.assertLess(el.sprt_llr(20, 20, 60, 0, 50), lo)         # clearly weaker
        self.assertLess(abs(el.sprt_llr(1, 0, 0, 0, 10)), 0.5)      # one game says little
        self.assertEqual(el.sprt_llr(0, 0, 0, 0, 10), 0.0)
        # Symmetry: swapping W and L and the hypotheses' signs negates the LLR.
        self.assertAlmostEqual(el.sprt_llr(30, 40, 20, 0, 20), -el.sprt_llr(20, 40, 30, -20, 0), places=6)


class ParsingTest(unittest.TestCase):
    def test_time_control(self) -> None:
        tc = match_tool.TimeControl.parse_clock("10+0.1")
        self.assertEqual((tc.base, tc.inc, tc.moves), (10.0, 0.1, 0))
        self.assertEqual(tc.pgn(), "10+0.1")
        tc = match_tool.TimeControl.parse_clock("40/60+0.6")
        self.assertEqual((tc.base, tc.inc, tc.moves), (60.0, 0.6, 40))
        self.assertEqual(match_tool.TimeControl.parse_clock("1:30").base, 90.0)
        with self.assertRaises(ValueError):
            match_tool.TimeControl.parse_clock("0+1")
        self.assertEqual(match_tool.TimeControl(movetime=0.5).pgn(), "0.5/move")

    def test_engine_spec(self) -> None:
        s = el.EngineSpec.parse("stockfish:Skill Level=0,Hash=16")
        self.assertTrue(s.command[0].endswith("stockfish"))
        self.assertEqual(s.options, {"Skill Level": "0", "Hash": "16"})
        s = el.EngineSpec.parse("glimpse", ["WeightsFile=a,b.onnx"])
        self.assertEqual(s.command, [str(el.DEFAULT_GLIMPSE)])
        self.assertEqual(s.options, {"WeightsFile": "a,b.onnx"})
        s = el.EngineSpec.parse("/opt/x/engine --uci:Threads=2")
        self.assertEqual(s.command, ["/opt/x/engine", "--uci"])
        self.assertEqual(s.options, {"Threads": "2"})
        with self.assertRaises(ValueError):
            el.parse_options("NoEquals")

    def test_books(self) -> None:
        a = el.load_openings(el.DEFAULT_BOOK, 5, seed=7)
        b = el.load_openings(el.DEFAULT_BOOK, 5, seed=7)
        c = el.load_openings(el.DEFAULT_BOOK, 5, seed=8)
        self.assertEqual([o.fen for o in a], [o.fen for o in b])
        self.assertNotEqual([o.fen for o in a], [o.fen for o in c])
        self.assertEqual(len({o.fen for o in a}), 5)
        for o in a:
            self.assertTrue(o.board().is_valid())
        seq = el.load_openings(el.DEFAULT_BOOK, 2, seed=1, order="sequential")
        first = Path(el.DEFAULT_BOOK).read_text().splitlines()[0]
        self.assertEqual(seq[0].board().board_fen(), chess.Board(first).board_fen())
        pgn = el.load_openings(el.SHARED / "data" / "openings" / "8moves_v3.pgn", 3, seed=1)
        for o in pgn:
            self.assertEqual(o.fen, chess.STARTING_FEN)
            self.assertEqual(len(o.moves), 16)
            self.assertTrue(o.board().is_valid())
        c960 = el.load_openings(None, 3, seed=1, chess960=True)
        self.assertTrue(all(o.chess960 for o in c960))
        board, ops = el.parse_epd("8/8/8/8/8/8/8/K6k w - - 5 40 bm Kb2; id \"x\";")
        self.assertEqual((board.halfmove_clock, board.fullmove_number, ops["id"]), (5, 40, "x"))


class FaultyEngineTest(unittest.TestCase):
    """Faults are attributed to the right side and end the game as cutechess-cli would."""

    def test_illegal_move_is_a_loss(self) -> None:
        s = quick_match(fake("--illegal-after", "2", name="Bad"), fake(name="Good"),
                        match_tool.TimeControl(depth=1), games=2)
        self.assertEqual(s["illegal"], {"A": 2, "B": 0})
        self.assertEqual(s["losses"], 2)
        self.assertEqual({g["termination"] for g in s["results"]}, {"rules infraction"})

    def test_crash_is_a_loss_and_engine_restarts(self) -> None:
        s = quick_match(fake(name="Good"), fake("--crash-after", "3", name="Crashy"),
                        match_tool.TimeControl(depth=1), games=4)
        self.assertEqual(s["crashes"], {"A": 0, "B": 4})
        self.assertEqual((s["wins"], s["games"]), (4, 4))

    def test_bestmove_none_with_legal_moves_is_illegal(self) -> None:
        s = quick_match(fake("--none-after", "1", name="Null"), fake(name="Good"),
                        match_tool.TimeControl(depth=1), games=2)
        self.assertEqual(s["illegal"]["A"], 2)

    def test_flag_fall_is_a_time_forfeit(self) -> None:
        s = quick_match(fake("--sleep-after", "1", "--sleep", "2", name="Slow"), fake(name="Good"),
                        match_tool.TimeControl.parse_clock("0.5+0"), games=2)
        self.assertEqual(s["time_forfeits"], {"A": 2, "B": 0})
        self.assertEqual(s["losses"], 2)

    def test_stall_without_clock(self) -> None:
        cfg_kw = {"stall_timeout": 1.0}
        s = quick_match(fake("--sleep-after", "0", "--sleep", "3", name="Stall"), fake(name="Good"),
                        match_tool.TimeControl(movetime=0.01), games=1, **cfg_kw)
        self.assertEqual(s["stalls"]["A"], 1)

    def test_a_suspended_match_charges_nobody_for_the_pause(self) -> None:
        # The campaign pauses its DAgger matches with kill -STOP on their session, engines included; a game
        # in progress then ended as a stall (or a time forfeit) the moment it resumed.
        tmp = tempfile.mkdtemp()
        cmd = [PY, str(TOOLS / "match.py"), "--a", f"{PY} {TOOLS}/tests/fake_engine.py --name A --sleep-after 0 "
               "--sleep 0.05", "--b", f"{PY} {TOOLS}/tests/fake_engine.py --name B --seed 3 --sleep-after 0 "
               "--sleep 0.05", "--tc", "none", "--movetime", "0.01", "--games", "2", "--maxmoves", "40",
               "--stall-timeout", "1", "--json", f"{tmp}/m.json", "--pgn", f"{tmp}/m.pgn", "--quiet"]
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def session(sig: int) -> None:  # every process of the match's session (engines have groups of their own)
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[3]) == proc.pid:  # field 6 of /proc/PID/stat: the session id
                    try:
                        os.kill(int(stat.parent.name), sig)
                    except ProcessLookupError:
                        pass

        deadline = time.time() + 60
        while not Path(f"{tmp}/m.pgn").exists() and time.time() < deadline:  # the first game has started
            time.sleep(0.1)
        time.sleep(0.5)
        session(signal.SIGSTOP)
        time.sleep(4.0)
        session(signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err.decode()[-500:])
        s = json.loads(Path(f"{tmp}/m.json").read_text())
        self.assertEqual((s["games"], s["stalls"], s["time_forfeits"]), (2, {"A": 0, "B": 0}, {"A": 0, "B": 0}))

    def test_awake_wait_for_times_out_and_returns_the_awake_seconds(self) -> None:
        async def go():
            got, awake = await el.awake_wait_for(asyncio.sleep(0.3, result="done"), 5.0)
            self.assertEqual(got, "done")
            self.assertGreaterEqual(awake, 0.29)
            with self.assertRaises(asyncio.TimeoutError) as out:
                await el.awake_wait_for(asyncio.sleep(10), 0.6)
            self.assertGreaterEqual(out.exception.awake, 0.6)

        asyncio.run(go())

    def test_max_moves_adjudication(self) -> None:
        s = quick_match(fake(name="R1"), fake("--seed", "5", name="R2"), match_tool.TimeControl(depth=1),
                        games=2, adjudication=match_tool.Adjudication(max_moves=5))
        self.assertEqual(s["draws"], 2)
        self.assertTrue(all(g["plies"] <= 10 for g in s["results"]))  # 5 moves = 10 engine plies
        self.assertIn("maximum of 5 moves", s["_pgn_text"])


class DrawRuleTest(unittest.TestCase):
    """match.game_outcome: cutechess-cli's rule by default, python-chess claims on request."""

    @staticmethod
    def shuffle(plies: int) -> chess.Board:
        b = chess.Board("6k1/8/8/8/8/8/8/3Q2K1 w - - 0 1")
        cycle = ["g1h1", "g8h8", "h1g1", "h8g8"]
        for i in range(plies):
            b.push_uci(cycle[i % 4])
        return b

    def test_threefold_only_once_it_happened(self) -> None:
        # After 7 plies Black can claim with Kg8 (a third occurrence), but nothing has repeated thrice.
        b = self.shuffle(7)
        self.assertTrue(b.can_claim_threefold_repetition())
        self.assertIsNone(match_tool.game_outcome(b))
        self.assertIsNone(match_tool.game_outcome(b, "none", "A"))
        claimed = match_tool.game_outcome(b, "both", "A")
        self.assertEqual(claimed.termination, chess.Termination.THREEFOLD_REPETITION)
        self.assertEqual(match_tool.game_outcome(b, "A", "A").termination,
                         chess.Termination.THREEFOLD_REPETITION)
        self.assertIsNone(match_tool.game_outcome(b, "B", "A"), "only B claims")
        # One ply later the start position stands for the third time: a draw under every rule.
        b.push_uci("h8g8")
        out = match_tool.game_outcome(b)
        self.assertEqual(out.termination, chess.Termination.THREEFOLD_REPETITION)
        self.assertEqual(out.result(), "1/2-1/2")

    def test_fifty_moves_at_the_hundredth_half_move(self) -> None:
        b = chess.Board("6k1/8/8/8/8/8/1Q6/6K1 w - - 99 80")
        self.assertIsNone(match_tool.game_outcome(b), "the 100th half-move is still to be played")
        self.assertEqual(match_tool.game_outcome(b, "both", "A").termination, chess.Termination.FIFTY_MOVES)
        b.push_uci("b2b3")
        self.assertEqual(match_tool.game_outcome(b).termination, chess.Termination.FIFTY_MOVES)
        mate = chess.Board("6k1/5ppp/8/8/8/8/8/1R4K1 w - - 99 80")
        mate.push_uci("b1b8")
        self.assertEqual(match_tool.game_outcome(mate).termination, chess.Termination.CHECKMATE,
                         "mate on the 100th half-move stands")

    def test_bad_rule(self) -> None:
        with self.assertRaises(ValueError):
            match_tool.game_outcome(chess.Board(), "sometimes")

    def test_cli_default_is_cutechess(self) -> None:
        args = match_tool.build_parser().parse_args(["--b", "stockfish"])
        self.assertEqual(match_tool.config_from_args(args).draw_claims, "none")
        args = match_tool.build_parser().parse_args(["--draw-claims", "both"])
        self.assertEqual(match_tool.config_from_args(args).draw_claims, "both")


class TablebaseAdjudicationTest(unittest.TestCase):
    """--tb: a position in the Syzygy tables ends the game with the tables' result (cutechess-cli -tb)."""

    TABLES = str(TOOLS.parent / "tests" / "data" / "syzygy")

    def verdict(self, fen: str, **kw) -> tuple[str, str] | None:
        return match_tool.tb_verdict(chess.Board(fen), match_tool.Adjudication(tb_path=self.TABLES, **kw))

    def test_verdicts(self) -> None:
        self.assertEqual(self.verdict("8/8/8/4k3/8/8/8/KQ6 b - - 0 1")[0], "1-0")
        self.assertEqual(self.verdict("8/8/8/4K3/8/8/8/kq6 w - - 0 1")[0], "0-1")
        self.assertEqual(self.verdict("k7/8/8/8/8/8/P7/K7 w - - 0 1")[0], "1/2-1/2")
        # 95 half-moves played: the mate is further than the 50-move rule allows, unless ignored.
        self.assertEqual(self.verdict("8/8/8/4k3/8/8/8/KQ6 w - - 95 1")[0], "1/2-1/2")
        self.assertEqual(self.verdict("8/8/8/4k3/8/8/8/KQ6 w - - 95 1", tb_ignore50=True)[0], "1-0")
        self.assertIsNone(self.verdict("8/8/8/4k3/8/8/8/KQ6 w - - 0 1", tb_pieces=2))
        self.assertIsNone(self.verdict("r3k3/8/8/8/8/8/8/4K3 w q - 0 1"))     # castling rights
        self.assertIsNone(self.verdict("8/8/8/4k3/8/8/8/KQR5 w - - 0 1"))  # no KQRvK table vendored
        self.assertIsNone(match_tool.tb_verdict(chess.Board(), match_tool.Adjudication()))

    def test_match_records_the_adjudication(self) -> None:
        book = Path(tempfile.mkdtemp()) / "kqk.epd"
        book.write_text("8/8/8/4k3/8/8/8/KQ6 w - - 0 1\n")
        s = quick_match(fake(name="R1"), fake("--seed", "5", name="R2"), match_tool.TimeControl(depth=1),
                        games=2, book=str(book),
                        adjudication=match_tool.Adjudication(tb_path=self.TABLES))
        # Adjudicated after the first move, with the tables' verdict on the final position.
        self.assertEqual(s["terminations"], {"adjudication": 2}, s["results"])
        adj = match_tool.Adjudication(tb_path=self.TABLES)
        for r in s["results"]:
            self.assertEqual(r["plies"], 1, r)
            self.assertEqual(r["result"], match_tool.tb_verdict(chess.Board(r["final_fen"]), adj)[0], r)
        self.assertIn("by tablebase adjudication", s["_pgn_text"])


@unittest.skipUnless(Path(STOCKFISH).exists(), "Stockfish not installed")
class StockfishMatchTest(unittest.TestCase):
    def test_two_game_cli_match(self) -> None:
        """The command line: a 2-game Stockfish-vs-Stockfish match at a fast clock, both at once."""
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(
                [PY, str(TOOLS / "match.py"), "--a", "stockfish:Hash=8", "--b", "stockfish:Skill Level=0",
                 "--tc", "4+0.1", "--games", "2", "--concurrency", "2", "--seed", "3",
                 "--pgn", f"{tmp}/g.pgn", "--json", f"{tmp}/g.json"],
                capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("Finished game 1", out.stdout)
            self.assertIn("Finished game 2", out.stdout)
            self.assertIn("Elo difference", out.stdout)
            self.assertIn("LOS", out.stdout)
            self.assertIn("Stockfish 15", out.stdout)  # the id name in the header
            s = json.loads(Path(f"{tmp}/g.json").read_text())
            self.assertEqual(s["games"], 2)
            self.assertEqual(s["illegal"], {"A": 0, "B": 0})
            self.assertEqual(s["concurrency"], 2)
            for side in ("A", "B"):  # Stockfish reports nodes on every move
                self.assertGreater(s["median_nodes_per_move"][side], 0)
            stream = io.StringIO(Path(f"{tmp}/g.pgn").read_text())
            games = []
            while (g := chess.pgn.read_game(stream)) is not None:
                games.append(g)
            self.assertEqual(len(games), 2)
            self.assertEqual(games[0].headers["White"], games[1].headers["Black"])  # colours swapped
            self.assertEqual(games[0].headers["FEN"], games[1].headers["FEN"])      # same opening
            self.assertEqual(games[0].headers["TimeControl"], "4+0.1")
            node = games[0].next()
            self.assertRegex(node.comment, r"^[+-](\d+\.\d\d|M\d+)/\d+ \d+(\.\d+)?s")

    def test_help(self) -> None:
        out = subprocess.run([PY, str(TOOLS / "match.py"), "--help"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0)
        for flag in ("--tc", "--nodes", "--movetime", "--book", "--concurrency", "--sprt",
                     "--resign-movecount", "--draw-movecount", "--maxmoves", "--seed"):
            self.assertIn(flag, out.stdout)

    def test_sprt_stops_early(self) -> None:
        s = quick_match(el.EngineSpec.parse("stockfish"), fake(name="Random"),
                        match_tool.TimeControl(depth=2), games=40, sprt=(0.0, 200.0, 0.05, 0.05))
        self.assertEqual(s["sprt"]["state"], "H1 accepted")
        self.assertLess(s["games"], 40)

    def _book(self, *fens: str) -> str:
        path = Path(tempfile.mkdtemp()) / "book.epd"
        path.write_text("".join(f"{f}\n" for f in fens))
        return str(path)

    def test_resign_adjudication(self) -> None:
        # Queen odds: both engines agree within a few moves that White is winning. Mate cannot come
        # before the 2-move resign window closes, so every game must end by adjudication.
        book = self._book("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
        s = quick_match(el.EngineSpec.parse("stockfish"), el.EngineSpec.parse("stockfish"),
                        match_tool.TimeControl(depth=6), games=2, book=book,
                        adjudication=match_tool.Adjudication(resign_moves=2, resign_score=300))
        self.assertEqual(s["terminations"], {"adjudication": 2}, s["results"])
        for r in s["results"]:
            self.assertEqual(r["result"], "1-0", r)  # White has the queen in both games
            self.assertIn("Black resigns", r["reason"])

    def test_draw_adjudication(self) -> None:
        # Blocked symmetric pawns, bare kings: the score stays near 0 and no capture is possible
        # within three moves, so the draw rule ends both games.
        book = self._book("4k3/8/8/p1p1p1p1/P1P1P1P1/8/8/4K3 w - - 0 1")
        s = quick_match(el.EngineSpec.parse("stockfish"), el.EngineSpec.parse("stockfish"),
                        match_tool.TimeControl(depth=6), games=2, book=book,
                        adjudication=match_tool.Adjudication(draw_moves=3, draw_score=40, draw_after=1))
        self.assertEqual(s["terminations"], {"adjudication": 2}, s["results"])
        for r in s["results"]:
            self.assertEqual(r["result"], "1/2-1/2", r)

    def test_ctrl_c_prints_partial_result(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.Popen([PY, str(TOOLS / "match.py"), "--a", "stockfish", "--b", "stockfish",
                                  "--tc", "30+0.5", "--games", "4", "--pgn", f"{tmp}/c.pgn"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not Path(f"{tmp}/c.pgn").exists():
                time.sleep(0.2)
            time.sleep(1.0)
            p.send_signal(signal.SIGINT)
            try:
                out, err = p.communicate(timeout=120)  # generous: CI machines may be loaded
            except subprocess.TimeoutExpired:
                p.kill()
                raise
            self.assertEqual(p.returncode, 130, err)
            self.assertIn("Interrupted: partial result", out)
            self.assertIn("Score of", out)
            self.assertTrue(json.loads(Path(f"{tmp}/c.json").read_text())["interrupted"])


if __name__ == "__main__":
    unittest.main()
