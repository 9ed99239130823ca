"""A seeded UCI protocol fuzzer with an oracle, against the real binary (``make test-uci``).

Each round sends a random command stream: valid commands (positions with random legal moves, every
kind of ``go``, ``stop``, ``isready``, option changes including ``Threads`` up to its maximum,
``SearchMode`` and ``WeightsFile``), malformed versions of them (bad FENs, illegal moves, bad option
values, invalid ``go`` limits) and junk bytes. The oracle checks, for every round:

- every ``go`` gets exactly one ``bestmove``, legal in the position last set;
- every ``isready`` gets ``readyok``, after the ``bestmove`` of any search stopped before it;
- ``stop`` is answered promptly (``STOP_BOUND``; the engine's own bound is 100 ms);
- stdout holds UCI lines only (``uci_harness.is_uci_output``), valid UTF-8;
- the process never dies before ``quit``, and the last round of each process ends its input
  right after a ``go`` (that ``go`` is still answered before the process exits).

Rounds run in batches per engine process (``ROUNDS_PER_PROCESS``), ``GLIMPSE_FUZZ_ROUNDS`` (200) per
search mode, seeded from ``GLIMPSE_FUZZ_SEED`` (printed, so a failure can be replayed). Seeds that
ever failed live in ``fuzz_regressions.txt`` and run first, every time.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

import chess

from uci_harness import BESTMOVE_RE, EngineFailure, RawEngine, glimpse_bin, is_uci_output, weights_options

SCALE = float(os.environ.get("GLIMPSE_TEST_TIME_SCALE", "1"))
ROUNDS = int(os.environ.get("GLIMPSE_FUZZ_ROUNDS", "200"))
ROUNDS_PER_PROCESS = 25
STOP_BOUND = 1.0 * SCALE  # seconds from `stop` to `bestmove` as seen through the pipes of a busy machine
REGRESSIONS = Path(__file__).with_name("fuzz_regressions.txt")

FENS = [
    chess.STARTING_FEN,
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
    "8/8/4k3/8/8/3K4/4P3/8 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "4k3/8/8/8/8/8/8/4K2R w K - 999 1000",
    "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2",
]
BAD_FENS = [
    "garbage", "rnbqkbnr/pppppppp/8/8 w KQkq - 0 1", "8/8/8/8/8/8/8/8 w - - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "4k3/4R3/8/8/8/8/8/4K3 w - - 0 1",
]
GOS = ["go nodes 1", "go nodes 8", "go movetime 30", "go depth 1", "go wtime 2000 btime 2000 winc 10 binc 10",
       "go movetime 0", "go nodes 0", "go movetime -5", "go movetime abc", "go depth -1", "go nodes -1",
       "go mate -2", "go movetime", "go wtime abc", "go mate 0", "go searchmoves zzzz nodes 4"]
OPTIONS = ["MultiPV value 3", "MultiPV value 1", "MultiPV value 0", "Threads value 1", "Threads value 256",
           "Threads value 2", "Threads value many", "UCI_ShowWDL value true", "Hash value 1",
           "Move Overhead value -1", "Temperature value nan", "Backend value quantum", "NoSuchOption value 1"]
JUNK_WORDS = ["foo", "xyzzy", "\u2028", "\x1b[31m", "\x07", "positionstartpos", "go!", "setoption", "\x85", "é",
              "register later", "debug on", "debug off", "ponderhit"]


def read_seeds() -> list[int]:
    if not REGRESSIONS.exists():
        return []
    return [int(l.split()[0]) for l in REGRESSIONS.read_text().splitlines() if l.strip() and not l.startswith("#")]


class Round:
    """One round's commands, built from its seed, and what the oracle expects of them."""

    def __init__(self, seed: int, mode: str, tmpdir: str):
        self.rng = random.Random(seed)
        self.seed, self.mode, self.tmpdir = seed, mode, tmpdir

    def position(self) -> tuple[str, chess.Board]:
        rng = self.rng
        fen = rng.choice(FENS)
        board = chess.Board(fen)
        moves = []
        for _ in range(rng.randrange(0, 6)):
            legal = list(board.legal_moves)
            if not legal:
                break
            mv = rng.choice(legal)
            moves.append(mv.uci())
            board.push(mv)
        head = "position startpos" if fen == chess.STARTING_FEN and rng.random() < 0.5 else f"position fen {fen}"
        return head + (" moves " + " ".join(moves) if moves else ""), board

    def junk(self) -> bytes:
        rng = self.rng
        kind = rng.randrange(5)
        if kind == 0:
            return f"position fen {rng.choice(BAD_FENS)}".encode()
        if kind == 1:
            return b"position startpos moves e2e4 e2e4"
        if kind == 2:
            return " ".join(rng.choice(JUNK_WORDS) for _ in range(rng.randrange(1, 5))).encode()
        if kind == 3:
            return bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 40))).replace(b"\n", b" ").replace(b"\r", b" ")
        return f"setoption name {rng.choice(OPTIONS)}".encode()


def _is_command(line: bytes) -> bool:
    """Whether a junk line could be read as a command the oracle tracks (it is then dropped)."""
    words = line.replace(b"\t", b" ").split()
    return bool(words) and words[0] in (b"go", b"stop", b"quit", b"isready", b"position", b"ucinewgame", b"uci")


class Fuzz:
    """Drives one engine process through rounds and applies the oracle; ``failures`` collects the
    seeds that broke a rule, with the reason."""

    def __init__(self, mode: str, tmpdir: str):
        self.mode, self.tmpdir = mode, tmpdir
        self.failures: list[str] = []
        self.engine: RawEngine | None = None
        self.stop_times: list[float] = []

    def start(self) -> RawEngine:
        e = RawEngine()
        e.uci()
        for name, value in weights_options():
            e.send(f"setoption name {name} value {value}")
        e.send(f"setoption name SearchMode value {self.mode}")
        e.isready(60)
        return e

    def go_and_check(self, e: RawEngine, go: str, board: chess.Board, infinite: bool, rng: random.Random) -> None:
        e.send(go)
        if infinite:
            time.sleep(rng.choice([0.0, 0.005, 0.05, 0.2]))
            t0 = time.monotonic()
            e.send("stop")
            move, lines = e.bestmove(timeout=30 * SCALE)
            took = time.monotonic() - t0
            self.stop_times.append(took)
            if took > STOP_BOUND:
                raise AssertionError(f"stop answered after {took:.2f} s")
        else:
            move, lines = e.bestmove(timeout=60 * SCALE)
        legal = {m.uci() for m in board.legal_moves}
        if move not in legal and not (move == "(none)" and not legal):
            raise AssertionError(f"{go}: bestmove {move} not legal in {board.fen()}")

    def run_round(self, seed: int, last: bool) -> None:
        r = Round(seed, self.mode, self.tmpdir)
        rng = r.rng
        e = self.engine
        if e is None:
            e = self.engine = self.start()
        pos, board = r.position()
        e.send(pos)
        for _ in range(rng.randrange(2, 8)):
            kind = rng.random()
            if kind < 0.30:
                pos, board = r.position()
                e.send(pos)
            elif kind < 0.55:
                self.go_and_check(e, rng.choice(GOS), board, False, rng)
            elif kind < 0.65:
                self.go_and_check(e, rng.choice(["go infinite", "go ponder"]), board, True, rng)
            elif kind < 0.75:
                e.isready(30 * SCALE)
            elif kind < 0.95:
                line = r.junk()
                if not _is_command(line):
                    e.send(line)
            else:
                choice = rng.choice(["<embedded>", "/no/such.onnx", self.tmpdir])
                if choice == "<embedded>" and weights_options():
                    choice = weights_options()[0][1]
                e.send(f"setoption name WeightsFile value {choice}")
        # Stop sent with no search running, then isready: readyok must come, no bestmove.
        e.send("stop")
        lines = e.isready(30 * SCALE)
        extra = [l for l in lines if l.startswith("bestmove")]
        if extra:
            raise AssertionError(f"bestmove without a go: {extra}")
        if e.bad_output:
            raise AssertionError(f"non-UCI output: {e.bad_output[:3]}")
        if last:
            # End of input right after a go: the answer must still come before the exit.
            e.send(pos)
            e.send(rng.choice(["go nodes 4", "go movetime 20", "go infinite"]))
            assert e.proc.stdin is not None
            e.proc.stdin.close()
            try:
                code = e.proc.wait(30 * SCALE)
            except subprocess.TimeoutExpired:
                raise AssertionError("no exit within 30 s of the end of input")
            e.read_line(1.0)  # let the reader thread finish
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and (not e.lines or not e.lines[-1].startswith("bestmove")):
                time.sleep(0.02)
            after = len(e.lines) - e.lines[::-1].index("readyok")  # the lines after the round's last readyok
            tail = [l for l in e.lines[after:] if l.startswith("bestmove")]
            if code != 0 or len(tail) != 1 or not BESTMOVE_RE.match(tail[0]):
                raise AssertionError(f"end of input after go: exit {code}, last lines {e.lines[-4:]}")
            legal = {m.uci() for m in board.legal_moves}
            move = tail[0].split()[1]
            if move not in legal and not (move == "(none)" and not legal):
                raise AssertionError(f"end of input after go: {tail[0]} not legal in {board.fen()}")
            self.engine = None

    def run(self, seeds: list[int]) -> None:
        for i, seed in enumerate(seeds):
            last = (i + 1) % ROUNDS_PER_PROCESS == 0 or i == len(seeds) - 1
            try:
                self.run_round(seed, last)
            except (AssertionError, EngineFailure) as err:
                self.failures.append(f"{seed} {self.mode}: {err}"[:600])
                if self.engine is not None:
                    self.engine.kill()
                self.engine = None
        if self.engine is not None:
            self.engine.quit()


class FuzzTest(unittest.TestCase):
    def check_mode(self, mode: str) -> None:
        base = int(os.environ.get("GLIMPSE_FUZZ_SEED", str(random.SystemRandom().randrange(1 << 30))))
        print(f"\nfuzz {mode}: GLIMPSE_FUZZ_SEED={base}, {ROUNDS} rounds (+{len(read_seeds())} regression seeds)",
              flush=True)
        seeds = read_seeds() + [base + i for i in range(ROUNDS)]
        with tempfile.TemporaryDirectory() as tmp:
            f = Fuzz(mode, tmp)
            t0 = time.monotonic()
            f.run(seeds)
        worst = max(f.stop_times, default=0.0)
        print(f"fuzz {mode}: {len(seeds)} rounds in {time.monotonic() - t0:.0f} s, {len(f.stop_times)} stops, "
              f"slowest stop {worst * 1000:.0f} ms", flush=True)
        self.assertEqual(f.failures, [], "failing seeds (add them to fuzz_regressions.txt):\n" + "\n".join(f.failures))

    def test_searchless(self):
        self.check_mode("searchless")

    def test_mcts(self):
        self.check_mode("mcts")


if __name__ == "__main__":
    unittest.main()
