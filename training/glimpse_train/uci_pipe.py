"""A lean UCI client for labelling: one Stockfish process over pipes, kept for the life of the worker.

``raylabel.label_chunk`` used python-chess's ``SimpleEngine`` with a new Stockfish for each chunk. On a
2-core machine that cost about a third of the labelling CPU: python-chess parses every ``info`` line of a
MultiPV search in Python (tokens, PV moves replayed on a board), and Stockfish 15.1 takes ≈ 0.15 s of CPU to
start (its network and hash), once per 24-position chunk. This client reads the lines as text and parses
only the last line of each MultiPV index, and a worker keeps its Stockfish between chunks (``shared``); each
chunk starts with ``ucinewgame``, which clears the hash and histories as a new process would, so a chunk's
labels still depend only on its positions. ``tests/test_labelling.py`` checks the scores against
python-chess's ``engine.analyse``.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading

#: seconds an engine may take to answer ``uci`` and ``isready`` at start-up (python-chess's default, 10 s, was
#: exceeded on a 2-core machine under load: niced workers beside builds and matches).
STARTUP_TIMEOUT = 300.0

#: one engine per (path, hash MB, role) in this process; see ``shared``.
_ENGINES: dict[tuple[str, int, str], "UciPipe"] = {}


class UciError(RuntimeError):
    """Stockfish quit, or answered something a UCI engine should not."""


class UciPipe:
    """One Stockfish (any UCI engine) process, ``Threads`` 1, talked to over its standard input and output.

    ``path``: the engine binary; ``hash_mb``: its ``Hash`` option in MB. Raises ``UciError`` when the
    engine exits or does not answer ``uci`` with ``uciok`` and ``isready`` with ``readyok`` within
    ``startup_timeout`` seconds (it is then killed); ``OSError`` when it cannot be started."""

    def __init__(self, path: str, hash_mb: int = 64, startup_timeout: float = STARTUP_TIMEOUT):
        self.path, self.hash_mb = path, hash_mb
        self.owner = os.getpid()  # a forked child must not talk to (or quit) its parent's engine
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self._multipv = 1
        self._options: dict[str, str] = {}
        self._charged = 0.0
        hung: list[bool] = []
        timer = threading.Timer(startup_timeout, lambda: (hung.append(True), self.proc.kill()))
        timer.start()
        try:
            self._send("uci")
            self._until("uciok")
            self._send(f"setoption name Threads value 1\nsetoption name Hash value {hash_mb}")
            self.new_game()
        except UciError as e:
            why = f"no uciok/readyok within {startup_timeout:g} s, killed" if hung else str(e)
            raise UciError(f"{path} did not start as a UCI engine ({why})") from e
        finally:
            timer.cancel()

    def _send(self, text: str) -> None:
        try:
            self.proc.stdin.write(text + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as e:
            raise UciError(f"{self.path} is not running (exit status {self.proc.poll()})") from e

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise UciError(f"{self.path} quit (exit status {self.proc.wait()})")
        return line

    def _until(self, word: str) -> None:
        while not self._line().startswith(word):
            pass

    def new_game(self) -> None:
        """``ucinewgame`` then ``isready``: Stockfish clears its hash and histories, as a new process has."""
        self._send("ucinewgame\nisready")
        self._until("readyok")

    def set_option(self, name: str, value: object) -> None:
        """``setoption name <name> value <value>``, sent only when the value changes."""
        if self._options.get(name) != str(value):
            self._send(f"setoption name {name} value {value}")
            self._options[name] = str(value)

    def clear_hash(self) -> None:
        """Stockfish's ``Clear Hash`` button (its hash only; ``new_game`` clears the histories too)."""
        self._send("setoption name Clear Hash")

    def bestmove(self, moves: list[str], depth: int) -> str:
        """``go depth <depth>`` from the start position after ``moves`` (UCI strings, so that Stockfish sees
        the game's history, as for repetitions): the ``bestmove`` it answers. The position must have a legal
        move."""
        self._send(f"position startpos moves {' '.join(moves)}\ngo depth {depth}" if moves
                   else f"position startpos\ngo depth {depth}")
        while True:
            line = self._line()
            if line.startswith("bestmove"):
                return line.split()[1]

    def multipv(self, fen: str, depth: int, k: int) -> dict[str, str]:
        """``go depth <depth>`` on ``fen`` with MultiPV ``k``: ``{first PV move (UCI): score}`` of the last
        line Stockfish printed for each MultiPV index, in index order; scores as ``chessdata.score_str``
        writes them (cp from the mover's view, ``M<n>``/``M-<n>``). ``fen`` must be a legal position (the
        caller checks it: Stockfish may crash on an illegal one)."""
        if k != self._multipv:
            self._send(f"setoption name MultiPV value {k}")
            self._multipv = k
        self._send(f"position fen {fen}\ngo depth {depth}")
        last: dict[int, str] = {}
        while True:
            line = self._line()
            if line.startswith("bestmove"):
                break
            i = line.find(" multipv ")
            if i < 0 or not line.startswith("info") or " pv " not in line:
                continue
            j = line.find(" ", i + 9)
            last[int(line[i + 9:j])] = line
        out: dict[str, str] = {}
        for idx in sorted(last):
            tok = last[idx].split()
            s = tok.index("score")
            pv = tok.index("pv")
            v = int(tok[s + 2])
            score = str(v) if tok[s + 1] == "cp" else (f"M{v}" if v > 0 else f"M-{abs(v)}")
            out.setdefault(tok[pv + 1], score)
        return out

    def cpu_seconds(self) -> float | None:
        """CPU seconds (user + system) the engine has used so far, from ``/proc/<pid>/stat``; ``None`` where
        that cannot be read (not Linux, or the engine has been reaped)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        except (OSError, IndexError, ValueError):
            return None

    def take_cpu_seconds(self) -> float | None:
        """CPU seconds the engine has used since the last call (since it started, on the first): what a
        chunk costs, its start-up included when it started the engine; ``None`` where ``cpu_seconds`` is."""
        now = self.cpu_seconds()
        if now is None:
            return None
        spent, self._charged = now - self._charged, now
        return spent

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """``quit``, then waits for the engine (so that its CPU time reaches this process's children's).
        Does nothing in a forked child: the engine is its parent's."""
        if self.owner == os.getpid() and self.alive():
            try:
                self._send("quit")
                self.proc.wait(timeout=10)
            except (UciError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def shared(path: str, hash_mb: int, role: str = "label") -> UciPipe:
    """This process's engine for ``(path, hash_mb, role)``, started on first use and again if it has quit.
    A Ray worker runs many chunks, so it starts Stockfish once; when the worker ends, Stockfish reads the end
    of its input and quits (and ``close_shared`` quits it at interpreter exit). ``role`` keeps engines whose
    options differ apart (self-play sets ``Skill Level``, which labelling must never inherit)."""
    key = (path, hash_mb, role)
    eng = _ENGINES.get(key)
    if eng is None or eng.owner != os.getpid() or not eng.alive():
        eng = _ENGINES[key] = UciPipe(path, hash_mb)
    return eng


def discard(eng: UciPipe) -> None:
    """Closes ``eng`` and forgets it (after an error left it in an unknown state)."""
    for key, e in list(_ENGINES.items()):
        if e is eng:
            del _ENGINES[key]
    eng.close()


@atexit.register
def close_shared() -> None:
    """Quits every shared engine of this process."""
    for eng in list(_ENGINES.values()):
        eng.close()
    _ENGINES.clear()
