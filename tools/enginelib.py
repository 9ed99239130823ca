"""Shared helpers of Glimpse's measuring tools (match, gauntlet, puzzles, suites).

Everything here is built on python-chess's asynchronous UCI client (`chess.engine`): engine
specifications from the command line, starting and stopping engines, the description of a build
that every report prints (``id name``, weights hash, options), opening books and Elo statistics.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import io
import logging
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

import chess
import chess.engine
import chess.pgn

# Elo and SPRT statistics live in elostats; the tools reach them as enginelib.X.
from glimpse_tools.elostats import (EloResult, _constrained_mle, elo_from_score, elo_stats,  # noqa: F401
                                    score_from_elo, sprt_bounds, sprt_llr, sprt_state)

# python-chess logs engine chatter it does not expect (e.g. `info string` during `isready`) as
# warnings; the tools record those lines themselves, so keep the terminal clean.
logging.getLogger("chess.engine").setLevel(logging.ERROR)

#: Root of the repository (tools/ is one level below it).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Shared data directory: ``$GLIMPSE_SHARED`` (``make test-uci`` points it at the in-repo slice
#: ``tests/data/shared/``), else ``../shared`` from the repository root (the full data for real runs).
SHARED = Path(os.environ.get("GLIMPSE_SHARED") or REPO_ROOT.parent / "shared")
DEFAULT_BOOK = SHARED / "data" / "openings" / "noob_3moves.epd"
DEFAULT_GLIMPSE = REPO_ROOT / "target" / "release" / "glimpse"

#: Names that stand for well-known engine commands in engine specifications.
def _apt_engine(*names: str) -> str:
    """Path of an engine installed from apt (in /usr/games, often not on PATH)."""
    for name in names:
        found = shutil.which(name) or (f"/usr/games/{name}" if os.path.exists(f"/usr/games/{name}") else None)
        if found:
            return found
    return f"/usr/games/{names[0]}"


ALIASES = {
    "glimpse": lambda: str(DEFAULT_GLIMPSE),
    "stockfish": lambda: _apt_engine("stockfish"),
    "ethereal": lambda: _apt_engine("ethereal-chess", "ethereal"),
    "ethereal-chess": lambda: _apt_engine("ethereal-chess"),
    "toga2": lambda: _apt_engine("toga2"),
    "glaurung": lambda: _apt_engine("glaurung"),
}
#: Engines from apt that a gauntlet may add (``--apt-engines``), by alias.
APT_ENGINES = ("ethereal", "toga2", "glaurung")

#: UCI options that hold a weights/network file whose sha256 the reports print.
WEIGHT_OPTIONS = ("weightsfile", "evalfile", "weightsfile2", "network", "nnue", "evalfilesmall")

HEX64 = re.compile(r"\b([0-9a-f]{64})\b")


def cpu_count() -> int:
    """Number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


# --------------------------------------------------------------------------------------------
# Engine specifications
# --------------------------------------------------------------------------------------------


def parse_options(text: str | Iterable[str] | None) -> dict[str, str]:
    """Parses ``NAME=VALUE`` pairs.

    ``text`` is either one string with pairs separated by commas (``"Skill Level=0,Hash=16"``) or an
    iterable of single pairs (values may then contain commas). Names keep their spaces; surrounding
    whitespace is stripped. Raises ``ValueError`` on a pair without ``=``.
    """
    if text is None:
        return {}
    items = [p for p in text.split(",")] if isinstance(text, str) else list(text)
    options: dict[str, str] = {}
    for item in items:
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"option {item!r} is not NAME=VALUE")
        name, value = item.split("=", 1)
        options[name.strip()] = value.strip()
    return options


@dataclasses.dataclass
class EngineSpec:
    """How to start one engine configuration.

    ``command`` is the argv list; ``options`` are UCI options sent with ``setoption`` after the
    handshake (values as strings, python-chess converts them to the option's type); ``name`` is the
    label used in reports and PGN (defaults to the engine's ``id name``). An option the engine does
    not declare after ``uci`` is an error (python-chess refuses it), unless ``send_unknown_options``:
    then it is sent as a raw ``setoption`` line and the engine answers as it likes (Glimpse:
    ``info string error: unknown option``); :func:`engine_info` lists such options.
    """

    command: list[str]
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    name: str | None = None
    send_unknown_options: bool = False

    @staticmethod
    def parse(spec: str, extra_options: Iterable[str] = (), name: str | None = None) -> "EngineSpec":
        """Parses ``CMD[:NAME=VALUE,NAME=VALUE...]``.

        ``CMD`` is a command line (split like a shell would) or one of the aliases ``glimpse``,
        ``stockfish``, ``ethereal``, ``toga2``, ``glaurung``. Example: ``"stockfish:Skill Level=0"``.
        ``extra_options`` are further ``NAME=VALUE`` strings (from repeated ``--x-option``).
        """
        command_part, options_part = spec, ""
        if ":" in spec:
            head, tail = spec.split(":", 1)
            if "=" in tail or not tail.strip():
                command_part, options_part = head, tail
        argv = shlex.split(command_part)
        if not argv:
            raise ValueError(f"empty engine command in {spec!r}")
        if argv[0] in ALIASES:
            argv[0] = ALIASES[argv[0]]()
        options = parse_options(options_part)
        options.update(parse_options(list(extra_options)))
        return EngineSpec(argv, options, name)

    def describe_options(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.options.items()) or "(defaults)"


class RecordingUciProtocol(chess.engine.UciProtocol):
    """UCI protocol that keeps the engine's ``info string`` lines and stderr for the reports."""

    def __init__(self) -> None:
        super().__init__()
        self.info_strings: list[str] = []
        self.stderr_lines: list[str] = []
        self.error_count = 0
        self.error_samples: list[str] = []
        #: The latest ``info string error…`` lines (the samples above are the first ones).
        self.recent_errors: collections.deque[str] = collections.deque(maxlen=20)

    def line_received(self, line: str) -> None:  # noqa: D401 - python-chess hook
        if line.startswith("info string"):
            text = line[len("info string"):].strip()
            if len(self.info_strings) < 200:
                self.info_strings.append(text)
            if text.lower().startswith("error"):
                # Glimpse reports every failure as `info string error: ...`.
                self.error_count += 1
                self.recent_errors.append(text)
                if len(self.error_samples) < 5:
                    self.error_samples.append(text)

    def error_line_received(self, line: str) -> None:
        if len(self.stderr_lines) < 200:
            self.stderr_lines.append(line)


@dataclasses.dataclass
class EngineInfo:
    """What the reports say about a started engine: ``id name``, options, weights hash."""

    id_name: str
    command: list[str]
    options: dict[str, str]
    weights: str | None = None
    weights_sha256: str | None = None
    #: Options of the spec that the engine did not declare (sent raw; see EngineSpec).
    unsupported_options: list[str] = dataclasses.field(default_factory=list)
    #: ``info string error…`` lines the engine printed while starting and taking its options.
    startup_errors: list[str] = dataclasses.field(default_factory=list)

    def label(self) -> str:
        return self.id_name

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def header_line(self) -> str:
        weights = ""
        if self.weights_sha256:
            weights = f", weights {self.weights or 'embedded'} sha256 {self.weights_sha256}"
        unsupported = ""
        if self.unsupported_options:
            unsupported = f"; NOT declared by the engine (sent anyway): {', '.join(self.unsupported_options)}"
        if self.startup_errors:
            unsupported += f"; start-up errors: {' | '.join(self.startup_errors)}"
        return (f"{self.id_name} [{' '.join(self.command)}] options: "
                f"{', '.join(f'{k}={v}' for k, v in self.options.items()) or '(defaults)'}{weights}"
                f"{unsupported}")


def default_net() -> Path | None:
    """``weights/<name>`` of the default net, ``name`` being the one line of ``weights/DEFAULT`` (the file
    ``build.rs`` embeds); ``None`` when ``weights/DEFAULT`` is missing or empty."""
    try:
        name = (REPO_ROOT / "weights" / "DEFAULT").read_text().strip()
    except OSError:
        return None
    return REPO_ROOT / "weights" / name if name else None


def sha256_file(path: str | Path) -> str | None:
    """Hex sha256 of a file, or None if it cannot be read."""
    try:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


async def start_engine(spec: EngineSpec, extra_options: dict[str, str] | None = None,
                       stderr=None) -> tuple[asyncio.SubprocessTransport, RecordingUciProtocol]:
    """Starts an engine, does the UCI handshake, sets its options and waits for ``readyok``.

    The process is put in its own process group, so that a Ctrl-C in the terminal reaches only this
    script (which then shuts the engines down cleanly). ``extra_options`` (e.g. ``Threads=1``) are
    applied only where the engine has the option and the spec does not set it itself.
    Raises ``chess.engine.EngineError``/``EngineTerminatedError``/``OSError`` on failure.
    """
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        RecordingUciProtocol, *spec.command, process_group=0,
        stderr=stderr if stderr is not None else subprocess.PIPE)
    try:
        await awake_wait_for(protocol.initialize(), 30)
        options = {}
        lower = {k.lower() for k in spec.options}
        for name, value in (extra_options or {}).items():
            if name in protocol.options and name.lower() not in lower:
                options[name] = value
        options.update(spec.options)
        unknown = {}
        if spec.send_unknown_options:
            unknown = {k: v for k, v in options.items() if k not in protocol.options}
            options = {k: v for k, v in options.items() if k not in unknown}
        if options:
            await protocol.configure(options)
        for name, value in unknown.items():
            protocol.send_line(f"setoption name {name} value {value}")
        await awake_wait_for(protocol.ping(), 60)
    except BaseException:
        transport.close()
        raise
    return transport, protocol


#: :func:`awake_wait_for`'s clock tick (s) and the lateness (s) beyond it that counts as a suspension.
AWAKE_TICK, AWAKE_JUMP = 0.25, 2.0


class AwakeTimeout(asyncio.TimeoutError):
    """:func:`awake_wait_for` ran out of time; ``awake`` is the seconds counted (suspensions left out)."""

    def __init__(self, awake: float):
        super().__init__(f"no result after {awake:.1f} s")
        self.awake = awake


async def awake_wait_for(aw, timeout: float, tick: float = AWAKE_TICK, jump: float = AWAKE_JUMP):
    """``asyncio.wait_for`` on a clock that leaves out the time this process was suspended (``kill -STOP``
    and ``-CONT``, Ctrl-Z and ``fg``, a paused virtual machine): returns ``(result, awake seconds)``.

    The clock ticks every ``tick`` s; a tick that comes more than ``jump`` s late counts as ``tick``, since the
    process did not run in between (the engines it waits on, stopped with it, did not either). Without this, a
    match paused for a minute ends its running games as stalls or time forfeits the moment it resumes. A process
    starved of CPU for over ``jump`` s is taken as suspended too, which only gives an engine longer.

    Raises :class:`AwakeTimeout` (an ``asyncio.TimeoutError``) after ``timeout`` awake seconds, having cancelled
    ``aw``; a cancellation of the caller cancels ``aw`` as well."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(aw)
    awake, last = 0.0, loop.time()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=max(0.0, min(tick, timeout - awake)))
            now = loop.time()
            gap, last = now - last, now
            awake += gap if gap <= tick + jump else tick
            if done:
                return task.result(), awake
            if awake >= timeout:
                raise AwakeTimeout(awake)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)


async def stop_engine(transport: asyncio.SubprocessTransport, protocol: chess.engine.UciProtocol,
                      timeout: float = 5.0) -> None:
    """Sends ``quit`` and waits; kills the process if it does not exit within ``timeout`` s."""
    try:
        await asyncio.wait_for(protocol.quit(), timeout)
    except Exception:
        pass
    finally:
        try:
            transport.kill()
        except Exception:
            pass
        transport.close()


def engine_info(spec: EngineSpec, protocol: RecordingUciProtocol) -> EngineInfo:
    """Describes a started engine for the report header.

    The weights hash is the sha256 of the file named by a weights option (``WeightsFile``,
    ``EvalFile`` …) when one is set; otherwise a 64-hex-digit hash the engine itself printed in an
    ``info string`` at start-up (Glimpse reports its embedded net that way), if any.
    """
    id_name = protocol.id.get("name", Path(spec.command[0]).name)
    weights = None
    digest = None
    for name, value in spec.options.items():
        if name.lower() in WEIGHT_OPTIONS and value and value.lower() not in ("<default>", "<empty>",
                                                                               "<embedded>", ""):
            weights = value
            digest = sha256_file(value)
            break
    if digest is None and not weights and id_name.lower().startswith("glimpse"):
        # The default net (named by weights/DEFAULT) is embedded at build time: name that file's hash
        # unless the engine reports one itself (below).
        net = default_net()
        if net is not None and net.exists() and Path(spec.command[0]).resolve().is_relative_to(REPO_ROOT):
            weights = f"embedded (weights/{net.name} at build time)"
            digest = sha256_file(net)
    if not weights or weights.startswith("embedded"):
        for line in protocol.info_strings:
            if "sha256" in line.lower() or "net" in line.lower() or "weights" in line.lower():
                m = HEX64.search(line.lower())
                if m:
                    digest = m.group(1)
                    weights = weights or "embedded"
                    break
    unsupported = [k for k in spec.options if k not in protocol.options]
    errors = [line for line in protocol.info_strings if line.lower().startswith("error")][:5]
    return EngineInfo(id_name, list(spec.command), dict(spec.options), weights, digest, unsupported, errors)


async def run_pool(spec: EngineSpec, items: list, task, concurrency: int, on_result,
                   on_error=None, info_out: list | None = None,
                   error_lines: list | None = None) -> bool:
    """Runs ``await task(protocol, item)`` for every item on ``concurrency`` engines at once.

    Each engine gets ``Threads=1`` when ``concurrency > 1`` (unless the spec sets Threads).
    ``on_result(item, result)`` is called as results arrive. An engine error, crash or timeout
    (``asyncio.TimeoutError`` from the task) gives ``on_error(item, err)`` as the item's result and
    restarts that engine. ``info_out`` receives the first engine's :class:`EngineInfo`;
    ``error_lines`` the engines' ``info string error`` lines (up to 5 per engine process).
    Returns False when interrupted (Ctrl-C / cancellation), True when every item was done.
    """
    extra = {"Threads": "1"} if concurrency > 1 else {}
    queue: asyncio.Queue = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        transport, protocol = await start_engine(spec, extra)
        if info_out is not None and not info_out:
            info_out.append(engine_info(spec, protocol))
        try:
            while True:
                try:
                    item = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    result = await task(protocol, item)
                except (chess.engine.EngineError, chess.engine.EngineTerminatedError,
                        asyncio.TimeoutError) as err:
                    result = on_error(item, err) if on_error else None
                    if error_lines is not None:
                        error_lines.extend(protocol.error_samples)
                    await stop_engine(transport, protocol, 2)
                    transport, protocol = await start_engine(spec, extra)
                on_result(item, result)
        finally:
            if error_lines is not None:
                error_lines.extend(protocol.error_samples)
            await stop_engine(transport, protocol)

    tasks = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(items))))]
    try:
        await asyncio.gather(*tasks)
        return True
    except asyncio.CancelledError:
        return False
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def progress_bar(total: int, unit: str, quiet: bool = False):
    """A tqdm bar on stderr (disabled when stderr is not a terminal or ``quiet``), or None."""
    if quiet:
        return None
    try:  # optional: glimpse_tools depends on python-chess alone (pyproject.toml)
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return None
    return tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True, disable=None,
                mininterval=0.5)


# --------------------------------------------------------------------------------------------
# Opening books
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Opening:
    """A start position: the root board (FEN) plus book moves played from it."""

    fen: str
    moves: list[chess.Move]
    chess960: bool = False
    label: str = ""

    def board(self) -> chess.Board:
        board = chess.Board(self.fen, chess960=self.chess960)
        for move in self.moves:
            board.push(move)
        return board


def parse_epd(line: str, chess960: bool = False) -> tuple[chess.Board, dict]:
    """Parses an EPD record, or a full FEN (with move counters) followed by optional operations.

    Returns the board and the operations dict (python-chess ``set_epd`` semantics). Raises
    ``ValueError`` on a malformed record.
    """
    fields = line.strip().split(None, 6)
    if len(fields) >= 6 and fields[4].isdigit() and fields[5].isdigit():
        epd = " ".join(fields[:4] + fields[6:])
        board, ops = chess.Board.from_epd(epd, chess960=chess960)
        board.halfmove_clock = int(fields[4])
        board.fullmove_number = max(1, int(fields[5]))
        return board, ops
    return chess.Board.from_epd(line.strip(), chess960=chess960)


def _epd_opening(line: str, chess960: bool) -> Opening:
    board, ops = parse_epd(line, chess960)
    return Opening(board.fen(), [], chess960, str(ops.get("id", "")))


def load_openings(path: str | Path | None, count: int, seed: int, order: str = "random",
                  chess960: bool = False) -> list[Opening]:
    """Picks ``count`` openings from an EPD or PGN book.

    ``order`` is ``random`` (seeded, without repetition while the book lasts) or ``sequential``
    (from the start of the file). ``path`` None or ``"none"`` gives the standard start position
    (or, with ``chess960``, random Chess960 start positions from ``seed``). Only the chosen records are
    parsed, so large books cost little. Raises ``ValueError`` on an empty or unreadable book.
    """
    rng = random.Random(seed)
    if path is None or str(path).lower() in ("", "none", "startpos"):
        if chess960:
            return [Opening(chess.Board.from_chess960_pos(rng.randrange(960)).fen(), [], True,
                            "chess960") for _ in range(count)]
        return [Opening(chess.STARTING_FEN, [], False, "startpos") for _ in range(count)]
    path = Path(path)
    if not path.exists():
        raise ValueError(f"opening book {path} not found")

    def pick(n_records: int) -> list[int]:
        if n_records == 0:
            raise ValueError(f"opening book {path} has no positions")
        if order == "sequential":
            return [i % n_records for i in range(count)]
        idx: list[int] = []
        while len(idx) < count:
            idx.extend(rng.sample(range(n_records), min(n_records, count - len(idx))))
        return idx

    if path.suffix.lower() == ".pgn":
        data = path.read_text(encoding="utf-8", errors="replace")
        starts = [m.start() for m in re.finditer(r"(?m)^\[Event ", data)] or [0]
        starts.append(len(data))
        result = []
        for i in pick(len(starts) - 1):
            game = chess.pgn.read_game(io.StringIO(data[starts[i]:starts[i + 1]]))
            if game is None:
                raise ValueError(f"cannot read game {i} of {path}")
            root = game.board()
            result.append(Opening(root.fen(), list(game.mainline_moves()), chess960 or root.chess960,
                                  game.headers.get("Opening", game.headers.get("ECO", ""))))
        return result

    lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    return [_epd_opening(lines[i], chess960) for i in pick(len(lines))]


def score_to_cp(score: chess.engine.Score | None, mate_cp: int = 100_000) -> int | None:
    """Centipawns of a python-chess ``Score`` (mates as ±(mate_cp − plies))."""
    if score is None:
        return None
    return score.score(mate_score=mate_cp)


def format_eval(pov: chess.engine.PovScore | None, color: chess.Color) -> str:
    """cutechess-style evaluation text from ``color``'s point of view: ``+0.35``, ``-M3``."""
    if pov is None:
        return ""
    score = pov.pov(color)
    mate = score.mate()
    if mate is not None:
        return f"+M{mate}" if mate > 0 else f"-M{-mate}"
    cp = score.score()
    return f"{cp / 100:+.2f}" if cp is not None else ""


def eprint(*args, **kwargs) -> None:
    print(*args, file=sys.stderr, **kwargs)
