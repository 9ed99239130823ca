"""UCI protocol conformance of the engine under test (see uci_harness.py for the set-up).

Handshake and options, isready during a search, stop, ponder/ponderhit, MultiPV, searchmoves,
Chess960 castling as king-takes-rook, ``bestmove (none)``, the info line, and a python-chess client
session (python-chess's ``chess.engine`` is a real UCI client: it raises on illegal moves).
"""

from __future__ import annotations

import unittest

import chess
import chess.engine

from uci_harness import RawEngine, glimpse_bin, start_glimpse, weights_options

P1 = "position startpos moves e2e4 e7e5 g1f3"
P1_BOARD = chess.Board()
for _m in ("e2e4", "e7e5", "g1f3"):
    P1_BOARD.push_uci(_m)

REQUIRED_OPTIONS = ["WeightsFile", "Backend", "Threads", "MultiPV", "UCI_ShowWDL", "UCI_Chess960",
                    "Ponder", "Move Overhead", "Temperature", "TempDecayMoves", "Seed"]


def legal_ucis(board: chess.Board) -> set[str]:
    return {board.uci(m, chess960=board.chess960) for m in board.legal_moves}


def info_fields(line: str) -> dict[str, str]:
    """``info`` line tokens as a dict of the first value after each keyword (pv: all moves)."""
    tokens = line.split()[1:]
    keys = {"depth", "seldepth", "multipv", "score", "nodes", "nps", "time", "pv", "wdl", "hashfull",
            "tbhits", "currmove", "currmovenumber", "string", "cpuload", "refutation", "currline"}
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        key = tokens[i]
        if key == "pv":
            out["pv"] = " ".join(tokens[i + 1:])
            break
        if key == "string":
            out["string"] = " ".join(tokens[i + 1:])
            break
        if key == "score" and i + 2 < len(tokens):
            out["score"] = tokens[i + 1] + " " + tokens[i + 2]
            i += 3
            while i < len(tokens) and tokens[i] in ("lowerbound", "upperbound"):
                i += 1
            continue
        if key == "wdl" and i + 3 < len(tokens):
            out["wdl"] = " ".join(tokens[i + 1:i + 4])
            i += 4
            continue
        if key in keys and i + 1 < len(tokens):
            out[key] = tokens[i + 1]
            i += 2
            continue
        i += 1
    return out


class ProtocolTest(unittest.TestCase):
    engine: RawEngine

    def setUp(self) -> None:
        self.engine = start_glimpse()

    def tearDown(self) -> None:
        engine = self.engine
        try:
            if engine.alive():
                self.assertEqual(engine.quit(), 0, "engine should exit with status 0 on quit")
        finally:
            engine.kill()
        self.assertEqual(engine.bad_output, [], "engine wrote non-UCI lines to stdout")
        errors = [l for l in engine.lines if l.startswith("info string error")]
        self.assertEqual(errors, [], "the engine reported errors on valid input")

    # -- handshake -----------------------------------------------------------------------------

    def test_handshake_lists_id_and_options(self) -> None:
        lines = self.engine.uci()
        ids = [l for l in lines if l.startswith("id name ")]
        self.assertTrue(ids and ids[0][len("id name "):].strip(), f"no 'id name' in {lines}")
        self.assertTrue(any(l.startswith("id author ") for l in lines), "no 'id author'")
        names = {l.split(" type ")[0][len("option name "):].strip().lower()
                 for l in lines if l.startswith("option name ") and " type " in l}
        for opt in REQUIRED_OPTIONS:
            self.assertIn(opt.lower(), names, f"option {opt} missing from the uci listing")
        self.assertEqual(lines[-1], "uciok")

    def test_commands_accepted(self) -> None:
        e = self.engine
        for cmd in ("debug on", "debug off", "ucinewgame", "register later", "position startpos",
                    "position startpos moves", "setoption name UCI_ShowWDL value true",
                    "setoption name Ponder value false"):
            e.send(cmd)
            e.isready()
        move, _ = e.go("nodes 1")
        self.assertIn(move, legal_ucis(chess.Board()))

    # -- search control ------------------------------------------------------------------------

    def test_isready_during_go_infinite_then_stop(self) -> None:
        e = self.engine
        e.send(P1)
        e.send("go infinite")
        lines = e.isready(5)
        self.assertFalse(any(l.startswith("bestmove") for l in lines),
                         "bestmove before stop in 'go infinite'")
        more = e.drain(0.5)
        self.assertFalse(any(l.startswith("bestmove") for l in more), "bestmove before stop in 'go infinite'")
        e.send("stop")
        move, _ = e.bestmove(5)
        self.assertIn(move, legal_ucis(P1_BOARD))
        # Exactly one bestmove per go; the engine is ready for the next one.
        e.isready()
        self.assertEqual(sum(1 for l in e.lines if l.startswith("bestmove")), 1)
        move, _ = e.go("nodes 1")
        self.assertIn(move, legal_ucis(P1_BOARD))

    def test_stop_during_long_movetime(self) -> None:
        e = self.engine
        e.send(P1)
        e.send("go movetime 60000")
        before = e.isready(5)
        e.send("stop")
        # A searchless engine may answer a movetime early (its network pass is all it does), even
        # before `isready` is answered: that bestmove counts; otherwise `stop` must bring one at once.
        early = [l for l in before if l.startswith("bestmove")]
        move = early[0].split()[1] if early else e.bestmove(5)[0]
        self.assertIn(move, legal_ucis(P1_BOARD))
        e.isready()
        self.assertEqual(sum(1 for l in e.lines if l.startswith("bestmove")), 1, "one bestmove per go")

    def test_stop_and_quit_when_idle_are_harmless(self) -> None:
        e = self.engine
        e.send("stop")
        e.send("ponderhit")
        e.isready()
        self.assertFalse(any(l.startswith("bestmove") for l in e.drain(0.3)))

    def test_quit_during_infinite(self) -> None:
        e = self.engine
        e.send("position startpos")
        e.send("go infinite")
        e.isready(5)
        self.assertEqual(e.quit(10), 0)

    def test_ponder_then_ponderhit(self) -> None:
        e = self.engine
        e.send("setoption name Ponder value true")
        e.send(P1)
        e.send("go ponder wtime 5000 btime 5000 winc 0 binc 0")
        lines = e.isready(5) + e.drain(0.5)
        self.assertFalse(any(l.startswith("bestmove") for l in lines), "bestmove while pondering")
        e.send("ponderhit")
        move, _ = e.bestmove(10)
        self.assertIn(move, legal_ucis(P1_BOARD))

    def test_ponder_then_stop(self) -> None:
        e = self.engine
        e.send("setoption name Ponder value true")
        e.send(P1)
        e.send("go ponder wtime 5000 btime 5000")
        e.isready(5)
        e.send("stop")
        move, _ = e.bestmove(5)
        self.assertIn(move, legal_ucis(P1_BOARD))
        # The GUI then sends the real position and a new go.
        e.send("position startpos moves e2e4 e7e5 b1c3")
        board = chess.Board()
        for m in ("e2e4", "e7e5", "b1c3"):
            board.push_uci(m)
        move, _ = e.go("wtime 5000 btime 5000")
        self.assertIn(move, legal_ucis(board))

    # -- output --------------------------------------------------------------------------------

    def test_info_line_and_wdl(self) -> None:
        e = self.engine
        e.send("setoption name UCI_ShowWDL value true")
        e.send(P1)
        move, lines = e.go("movetime 200")
        infos = [info_fields(l) for l in lines if l.startswith("info") and " pv " in l]
        self.assertTrue(infos, f"no info line with a pv before bestmove: {lines}")
        last = infos[-1]
        for key in ("depth", "score", "nodes", "time", "pv"):
            self.assertIn(key, last, f"info line lacks {key}: {lines}")
        self.assertRegex(last["score"], r"^(cp -?\d+|mate -?\d+)$")
        self.assertIn("wdl", last, "UCI_ShowWDL true but no wdl in the info line")
        w, d, l = (int(x) for x in last["wdl"].split())
        self.assertTrue(min(w, d, l) >= 0 and abs(w + d + l - 1000) <= 1, last["wdl"])
        self.assertEqual(last["pv"].split()[0], move, "bestmove differs from the last pv")
        self.assertIn(move, legal_ucis(P1_BOARD))

    def test_multipv_3(self) -> None:
        e = self.engine
        e.send("setoption name MultiPV value 3")
        e.send(P1)
        move, lines = e.go("movetime 200")
        by_pv: dict[int, str] = {}
        for line in lines:
            if line.startswith("info") and " multipv " in line and " pv " in line:
                f = info_fields(line)
                by_pv[int(f["multipv"])] = f["pv"].split()[0]
        self.assertEqual(sorted(by_pv), [1, 2, 3], f"multipv lines: {lines}")
        firsts = list(by_pv.values())
        self.assertEqual(len(set(firsts)), 3, f"the 3 PVs should start with different moves: {firsts}")
        for m in firsts:
            self.assertIn(m, legal_ucis(P1_BOARD))
        self.assertEqual(by_pv[1], move, "bestmove should be the first PV's move")

    def test_multipv_more_than_legal_moves(self) -> None:
        e = self.engine
        e.send("setoption name MultiPV value 5")
        e.send("position fen k7/8/1K6/8/8/8/8/7R b - - 0 1")  # one legal move: a8b8
        move, _ = e.go("movetime 1000")
        self.assertEqual(move, "a8b8")

    # -- move restriction, no legal moves, Chess960 ----------------------------------------------

    def test_searchmoves_restricts_the_move(self) -> None:
        e = self.engine
        e.send("position startpos")
        move, _ = e.go("nodes 1 searchmoves a2a3")
        self.assertEqual(move, "a2a3")
        move, _ = e.go("nodes 1 searchmoves h2h4 b1a3")
        self.assertIn(move, {"h2h4", "b1a3"})
        e.send("setoption name MultiPV value 3")
        move, lines = e.go("movetime 1000 searchmoves g2g3 b2b3")
        self.assertIn(move, {"g2g3", "b2b3"})
        pvs = {info_fields(l)["pv"].split()[0] for l in lines if l.startswith("info") and " pv " in l}
        self.assertTrue(pvs <= {"g2g3", "b2b3"}, f"PVs outside searchmoves: {pvs}")

    def test_bestmove_none_on_mate_and_stalemate(self) -> None:
        e = self.engine
        for fen in ("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",
                    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"):
            e.send(f"position fen {fen}")
            move, _ = e.go("wtime 10000 btime 10000")
            self.assertEqual(move, "(none)", fen)
            move, _ = e.go("nodes 1")
            self.assertEqual(move, "(none)", fen)
        e.send("position startpos moves f2f3 e7e5 g2g4 d8h4")  # fool's mate via moves
        move, _ = e.go("depth 1")
        self.assertEqual(move, "(none)")

    def test_standard_castling_notation(self) -> None:
        e = self.engine
        e.send("position fen r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1")
        move, _ = e.go("nodes 1 searchmoves e1g1")
        self.assertEqual(move, "e1g1")
        move, _ = e.go("nodes 1 searchmoves e1c1")
        self.assertEqual(move, "e1c1")

    def test_chess960_castling_is_king_takes_rook(self) -> None:
        e = self.engine
        e.send("setoption name UCI_Chess960 value true")
        fen = "rk5r/pppppppp/8/8/8/8/PPPPPPPP/RK5R w HAha - 0 1"
        board = chess.Board(fen, chess960=True)
        e.send(f"position fen {fen}")
        for castle in ("b1h1", "b1a1"):
            move, _ = e.go(f"nodes 1 searchmoves {castle}")
            self.assertEqual(move, castle)
            self.assertTrue(board.is_castling(board.parse_uci(move)))
        # Unrestricted: whatever it plays is legal in Chess960 rules.
        move, _ = e.go("nodes 1")
        self.assertIn(move, legal_ucis(board))
        # Castling given in `position ... moves` as king-takes-rook is understood.
        e.send(f"position fen {fen} moves b1h1")
        board.push_uci("b1h1")
        move, _ = e.go("nodes 1")
        self.assertIn(move, legal_ucis(board))


class PythonChessClientTest(unittest.TestCase):
    """The engine through python-chess's UCI client (what GUIs and match runners do)."""

    def setUp(self) -> None:
        self.engine = chess.engine.SimpleEngine.popen_uci([glimpse_bin()], timeout=60)
        opts = dict(weights_options())
        if opts:
            self.engine.configure(opts)

    def tearDown(self) -> None:
        self.engine.quit()

    def test_id_and_options(self) -> None:
        self.assertTrue(self.engine.id.get("name"))
        for opt in REQUIRED_OPTIONS:
            self.assertIn(opt, self.engine.options)

    def test_self_play_with_ponder(self) -> None:
        board = chess.Board()
        limit = chess.engine.Limit(white_clock=5, black_clock=5, white_inc=0.05, black_inc=0.05)
        for _ in range(16):
            if board.is_game_over():
                break
            result = self.engine.play(board, limit, ponder=True, game="ponder-game")
            self.assertIsNotNone(result.move)
            self.assertIn(result.move, board.legal_moves)
            board.push(result.move)

    def test_analysis_multipv(self) -> None:
        infos = self.engine.analyse(P1_BOARD, chess.engine.Limit(time=1.0), multipv=3)
        self.assertEqual(len(infos), 3)
        firsts = [i["pv"][0] for i in infos]
        self.assertEqual(len(set(firsts)), 3)
        for m in firsts:
            self.assertIn(m, P1_BOARD.legal_moves)

    def test_chess960_games(self) -> None:
        """Self-play from Chess960 start positions: every move legal under Chess960 rules
        (python-chess sets UCI_Chess960 and raises on an illegal or wrongly written castling)."""
        castles = 0
        for n in (0, 518, 959, 333):
            board = chess.Board.from_chess960_pos(n)
            for _ in range(40):
                if board.is_game_over():
                    break
                result = self.engine.play(board, chess.engine.Limit(nodes=1), game=f"960-{n}")
                self.assertIn(result.move, board.legal_moves)
                castles += board.is_castling(result.move)
                board.push(result.move)
        print(f"\n  chess960 self-play: {castles} castling moves", end=" ")


if __name__ == "__main__":
    unittest.main()
