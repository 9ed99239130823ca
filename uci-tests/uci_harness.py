"""Test harness of the UCI conformance suite: which engine to test and a raw-pipe UCI driver.

Environment:
  GLIMPSE_BIN      engine under test (default: target/release/glimpse of this repository)
  GLIMPSE_WEIGHTS  ``embedded`` (use the net built into the binary) or an ONNX path for WeightsFile.
                   Default: the embedded net if the binary plays a move with it, otherwise
                   ``target/test-models/tiny_av.onnx`` (from ``make test-models``).
  STOCKFISH        opponent for the games (default: ``stockfish`` on PATH or /usr/games/stockfish)

``RawEngine`` talks to the engine over pipes without any UCI library, so that the tests see every
byte the engine writes: each stdout line must be UCI (``id``, ``uciok``, ``readyok``, ``bestmove``,
``info``, ``option``, ``copyprotection``, ``registration``) and valid UTF-8.
"""

from __future__ import annotations

import functools
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import chess

REPO_ROOT = Path(__file__).resolve().parent.parent

TINY_AV = REPO_ROOT / "target" / "test-models" / "tiny_av.onnx"
UCI_OUTPUT = {"id", "uciok", "readyok", "bestmove", "copyprotection", "registration", "info", "option"}
BESTMOVE_RE = re.compile(r"^bestmove (\(none\)|[a-h][1-8][a-h][1-8][qrbn]?)( ponder [a-h][1-8][a-h][1-8][qrbn]?)?$")


def glimpse_bin() -> str:
    return os.environ.get("GLIMPSE_BIN", str(REPO_ROOT / "target" / "release" / "glimpse"))


def stockfish_bin() -> str:
    return os.environ.get("STOCKFISH") or shutil.which("stockfish") or "/usr/games/stockfish"


class EngineFailure(AssertionError):
    """The engine did not answer as UCI requires (timeout, exit, malformed output)."""


class RawEngine:
    """A UCI engine process driven over raw pipes.

    Every stdout line is kept (``self.lines``), checked for UCI validity when read, and handed to
    ``expect``/``read_until``. stderr goes to a background collector (``self.stderr``).
    """

    def __init__(self, command: list[str] | None = None, check_output: bool = True):
        self.command = command or [glimpse_bin()]
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self.check_output = check_output
        self.lines: list[str] = []
        self.stderr: list[str] = []
        self.bad_output: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                line = repr(raw)
                self.bad_output.append(f"not UTF-8: {line}")
            if not is_uci_output(line):
                self.bad_output.append(line if len(line) < 300 else line[:300] + "...")
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace").rstrip("\r\n"))

    # -- sending -------------------------------------------------------------------------------

    def send(self, line: str | bytes) -> None:
        data = line if isinstance(line, bytes) else line.encode("utf-8")
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as err:
            raise EngineFailure(f"engine closed its input after {self.lines[-5:]}: {err}; "
                                f"stderr: {self.stderr[-5:]}")

    # -- reading -------------------------------------------------------------------------------

    def read_line(self, timeout: float) -> str | None:
        """Next stdout line, or None on timeout. Raises EngineFailure when the engine exited."""
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            self._queue.put(None)
            raise EngineFailure(f"engine exited (code {self.proc.wait()}); last output "
                                f"{self.lines[-5:]}; stderr {self.stderr[-5:]}")
        return line

    def read_until(self, predicate, timeout: float = 10.0, what: str = "") -> list[str]:
        """Lines up to and including the first one for which ``predicate`` holds."""
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EngineFailure(f"timeout after {timeout} s waiting for {what or predicate}; "
                                    f"got {seen[-8:]}; stderr {self.stderr[-5:]}")
            line = self.read_line(left)
            if line is None:
                continue
            seen.append(line)
            if predicate(line):
                return seen

    def drain(self, quiet: float = 0.2) -> list[str]:
        """Lines that arrive until none has come for ``quiet`` seconds."""
        out = []
        while True:
            line = self.read_line(quiet)
            if line is None:
                return out
            out.append(line)

    def uci(self) -> list[str]:
        self.send("uci")
        return self.read_until(lambda l: l.strip() == "uciok", 30, "uciok")

    def isready(self, timeout: float = 30.0) -> list[str]:
        self.send("isready")
        return self.read_until(lambda l: l.strip() == "readyok", timeout, "readyok")

    def bestmove(self, timeout: float = 30.0) -> tuple[str, list[str]]:
        """Waits for ``bestmove``; returns its move token and all lines up to it."""
        lines = self.read_until(lambda l: l.startswith("bestmove"), timeout, "bestmove")
        return lines[-1].split()[1], lines

    def go(self, args: str = "nodes 1", timeout: float = 30.0) -> tuple[str, list[str]]:
        self.send(f"go {args}")
        return self.bestmove(timeout)

    def quit(self, timeout: float = 10.0) -> int:
        try:
            self.send("quit")
        except EngineFailure:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise EngineFailure(f"engine did not exit within {timeout} s of 'quit'")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def alive(self) -> bool:
        return self.proc.poll() is None


def is_uci_output(line: str) -> bool:
    """True when ``line`` is something a UCI engine may write to stdout."""
    tokens = line.split()
    if not tokens or tokens[0] not in UCI_OUTPUT:
        return False
    if tokens[0] == "bestmove":
        return BESTMOVE_RE.match(" ".join(tokens)) is not None
    return True


@functools.lru_cache(maxsize=None)
def weights_options() -> tuple[tuple[str, str], ...]:
    """UCI options that give the tested engine a net: () for the embedded one, else WeightsFile."""
    choice = os.environ.get("GLIMPSE_WEIGHTS", "")
    if choice == "embedded":
        return ()
    if choice:
        return (("WeightsFile", choice),)
    # Probe: does the binary play a legal move with its embedded net, without reporting an error
    # (a build without a net answers with a fallback move and an `info string error`)?
    engine = RawEngine(check_output=False)
    try:
        engine.uci()
        engine.isready(60)
        engine.send("position startpos")
        move, _ = engine.go("nodes 1", 60)
        errors = [l for l in engine.lines if l.startswith("info string error")]
        if move in {m.uci() for m in chess.Board().legal_moves} and not errors:
            return ()
    except EngineFailure:
        pass
    finally:
        engine.kill()
    if not TINY_AV.exists():
        raise EngineFailure(f"{glimpse_bin()} does not play with an embedded net and {TINY_AV} is "
                            "missing (run `make test-models`)")
    return (("WeightsFile", str(TINY_AV)),)


def start_glimpse(extra: dict[str, str] | None = None) -> RawEngine:
    """Starts the engine under test, does ``uci``, sets the weights and ``extra`` options, and
    waits for ``readyok``."""
    engine = RawEngine()
    engine.uci()
    for name, value in list(weights_options()) + list((extra or {}).items()):
        engine.send(f"setoption name {name} value {value}")
    engine.isready(60)
    return engine
