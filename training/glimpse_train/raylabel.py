"""Position generation and Stockfish labelling as Ray tasks (local by default, a cluster with ``RAY_ADDRESS``).

Two kinds of task, each a chunk of work that depends only on its arguments, so that a lost worker costs only
its own unfinished chunk (Ray retries it, ``max_retries``):

* ``selfplay_chunk(seeds)`` — Stockfish self-play games at a random ``Skill Level`` (0–20) per side with
  ``go depth 1–5`` moves, 2–10 random opening plies and 5 % random moves later; about one ply in three is
  kept (``../shared/docs/strength-notes.md``: diverse, deduplicated positions). Returns FENs.
* ``label_chunk(fens, scheme)`` — labels every legal move of each FEN with the worker's Stockfish, kept
  between chunks and talked to by ``uci_pipe`` (``ucinewgame`` at each chunk's start). Schemes
  (``LabelScheme``):
  ``all``: ``go depth D`` with MultiPV over all legal moves (the shared labels' scheme at D = 8);
  ``two-tier``: ``go depth D`` with MultiPV ``k`` for the top moves, then ``go depth d`` (d ≥ 1, so with
  Stockfish's capture search) with MultiPV over all moves for the rest; a shallow score is capped just
  below the k-th deep score, so the deep tier keeps the top of the ranking.

On 2 idle cores (one Stockfish 15.1 thread per task, 64 MB hash) the two-tier scheme labelled 88 of the
campaign's positions a second (2026-11-29, 21.7 ms of CPU each; CHANGELOG.md); each label phase logs its own
rate (``training/runs/<run>/campaign.log``).
"""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
import time

import chess

from . import uci_pipe
from .chessdata import score_key

# Ray is imported inside the functions that start or use it: the labelling functions run without it.

#: the self-play engine's hash in MB (a process of its own beside the labelling engine's ``LabelScheme.hash_mb``).
SELFPLAY_HASH_MB = 16


@dataclasses.dataclass(frozen=True)
class LabelScheme:
    """How a position is labelled; ``settings()`` is what the manifest records."""

    name: str = "two-tier"
    depth: int = 8
    top_k: int = 4
    shallow_depth: int = 2
    hash_mb: int = 64

    def settings(self, sf_name: str) -> dict:
        s = {"name": sf_name, "threads": 1, "hash_mb": self.hash_mb, "scheme": self.name, "depth": self.depth}
        if self.name == "two-tier":
            s.update({"multipv": self.top_k, "shallow_depth": self.shallow_depth, "shallow_multipv": "all"})
        else:
            s["multipv"] = "all"
        return s


def _below(s: str) -> str:
    """A score string just below ``s`` (ties for mate scores, where no value lies between)."""
    return s if s.startswith("M") else str(int(s) - 1)


def merge_tiers(deep: dict[str, str], shallow: dict[str, str]) -> dict[str, str]:
    """Deep scores for the top moves, shallow ones (capped below the worst deep score) for the rest."""
    if not deep:
        return dict(shallow)
    floor = min(deep.values(), key=score_key)
    out = dict(deep)
    for m, s in shallow.items():
        if m not in out:
            out[m] = s if score_key(s) < score_key(floor) else _below(floor)
    return out


def label_position(engine: uci_pipe.UciPipe, fen: str, scheme: LabelScheme) -> list[tuple[str, str]] | None:
    """``[(uci, score), …]`` for every legal move of ``fen`` in the scheme's order (best first), or
    ``None`` when Stockfish did not report every legal move or the position is illegal (never sent to
    Stockfish, which may crash on one); the position is then skipped. Raises ``ValueError`` for a malformed
    FEN."""
    board = chess.Board(fen)
    if not board.is_valid():
        return None
    legal = {m.uci() for m in board.legal_moves}
    if not legal:
        return None
    if scheme.name == "two-tier" and len(legal) > scheme.top_k:
        scores = merge_tiers(engine.multipv(fen, scheme.depth, scheme.top_k),
                             engine.multipv(fen, scheme.shallow_depth, len(legal)))
    else:
        scores = engine.multipv(fen, scheme.depth, len(legal))
    if set(scores) != legal:
        return None
    return sorted(scores.items(), key=lambda kv: -score_key(kv[1]))


def stockfish_name(stockfish: str) -> str:
    """The ``id name`` Stockfish reports to ``uci`` (e.g. ``Stockfish 15.1``); ``?`` when it reports none.
    Raises ``OSError`` when it cannot be started, ``subprocess.TimeoutExpired`` after
    ``uci_pipe.STARTUP_TIMEOUT`` seconds."""
    out = subprocess.run([stockfish], input="uci\nquit\n", capture_output=True, text=True,
                         timeout=uci_pipe.STARTUP_TIMEOUT).stdout
    names = [line[len("id name "):].strip() for line in out.splitlines() if line.startswith("id name ")]
    return names[0] if names else "?"


def _renice(level: int) -> None:
    try:
        cur = os.nice(0)
        if cur < level:
            os.nice(level - cur)
    except OSError:
        pass


def label_chunk(fens: list[str], scheme: LabelScheme, stockfish: str, nice: int = 10) -> dict:
    """Labels ``fens`` with this worker's Stockfish (``uci_pipe.shared``; ``ucinewgame`` first, so the
    labels depend only on the chunk); ``{"records": [(fen, moves)], "fens": fens, "core_seconds": s}``
    (``fens``: the chunk as given, labelled or skipped; core-seconds = Stockfish's and this process's CPU
    time during the chunk, Stockfish's start-up included when the chunk started it). A chunk that fails
    (Stockfish quit, a malformed FEN) raises, and the engine is started afresh for the next."""
    _renice(nice)
    t0 = time.process_time()
    c0 = _children_cpu()
    eng = uci_pipe.shared(stockfish, scheme.hash_mb)
    out = []
    try:
        eng.new_game()
        for fen in fens:
            moves = label_position(eng, fen, scheme)
            if moves:
                out.append((fen, moves))
    except BaseException:
        uci_pipe.discard(eng)
        raise
    sf = eng.take_cpu_seconds()
    if sf is None:
        sf = _children_cpu() - c0
    return {"records": out, "fens": list(fens), "core_seconds": (time.process_time() - t0) + sf}


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def selfplay_positions(seed: int, stockfish: str, engine: uci_pipe.UciPipe | None = None, sample_every: int = 3,
                       max_plies: int = 200) -> list[str]:
    """FENs from one Stockfish self-play game (see the module docstring): the same seed gives the same
    opening, skills, depths and random moves; Stockfish's own moves vary, as its ``Skill Level`` picks with a
    clock-seeded generator. ``engine``: a ``uci_pipe.UciPipe`` to play with (default: a new one)."""
    rng = random.Random(seed)
    eng = engine or uci_pipe.UciPipe(stockfish, SELFPLAY_HASH_MB)
    try:
        skills = (rng.randint(0, 20), rng.randint(0, 20))
        board = chess.Board()
        for _ in range(rng.randint(2, 10)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        out = []
        offset = rng.randrange(sample_every)
        while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
            if board.ply() % sample_every == offset:
                out.append(board.fen())
            if rng.random() < 0.05:
                move = rng.choice(list(board.legal_moves))
            else:
                eng.set_option("Skill Level", skills[board.ply() % 2])
                move = chess.Move.from_uci(eng.bestmove([m.uci() for m in board.move_stack], rng.randint(1, 5)))
                if move not in board.legal_moves:
                    raise uci_pipe.UciError(f"{stockfish} played {move} in {board.fen()}")
            board.push(move)
        return out
    finally:
        if engine is None:
            eng.close()


def selfplay_chunk(seeds: list[int], stockfish: str, nice: int = 10) -> dict:
    """FENs of one game per seed, played by this worker's self-play Stockfish (``uci_pipe.shared``, 16 MB
    hash, cleared before each game); ``{"fens": [...], "core_seconds": s}``."""
    _renice(nice)
    t0, c0 = time.process_time(), _children_cpu()
    eng = uci_pipe.shared(stockfish, SELFPLAY_HASH_MB, role="selfplay")
    fens: list[str] = []
    try:
        for s in seeds:
            eng.clear_hash()
            fens.extend(selfplay_positions(s, stockfish, engine=eng))
    except BaseException:
        uci_pipe.discard(eng)
        raise
    sf = eng.take_cpu_seconds()
    if sf is None:
        sf = _children_cpu() - c0
    return {"fens": fens, "core_seconds": (time.process_time() - t0) + sf}


# ---------------------------------------------------------------------- Ray
def ray_init(workers: int, log=print) -> None:
    """Connects to ``RAY_ADDRESS`` when set (a cluster), else starts a local Ray with ``workers`` CPUs."""
    import ray

    if ray.is_initialized():
        return
    addr = os.environ.get("RAY_ADDRESS")
    if addr:
        ray.init(address=addr, log_to_driver=False)
        log(f"ray: connected to {addr} ({ray.cluster_resources().get('CPU', 0):.0f} CPUs)")
    else:
        # Local workers import this package from the driver's folder.
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        os.environ["PYTHONPATH"] = here + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
        # address="local": a new Ray of its own, never one that another process (a test's cluster) started.
        ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 object_store_memory=200 * 1024 * 1024, configure_logging=False)
        log(f"ray: local, {workers} CPUs")


def ray_shutdown() -> None:
    """Stops the local Ray (or disconnects from a cluster)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


def run_chunks(fn, chunks: list, args: tuple, on_result=None, max_retries: int = 3, stop=lambda: False,
               on_error=None, max_in_flight: int | None = None, deadline: float | None = None,
               clock=time.time) -> list:
    """Runs ``fn(chunk, *args)`` for every chunk as Ray tasks (``max_retries`` on a lost worker) and
    returns the results in completion order; ``on_result(result)`` is called as each arrives. A chunk
    that still fails after its retries is dropped (the caller sees it as a missing result). When
    ``stop()`` turns true the tasks not yet finished are cancelled (their positions are lost).
    ``on_error(exception)`` hears of every chunk that failed for good (default: printed to stderr).
    ``max_in_flight`` submits at most that many chunks at a time (None: all at once); with it, ``deadline``
    (a value of ``clock``, default ``time.time``) ends the run gracefully: no chunk is submitted after it, the
    ones running finish and are kept, the rest are never started (so a loaded machine shortens the phase
    instead of stretching it)."""
    import ray

    remote = ray.remote(num_cpus=1, max_retries=max_retries)(fn)
    todo = list(chunks)
    limit = max_in_flight or len(todo)
    pending: list = []
    results = []
    while todo or pending:
        if stop():
            for ref in pending:
                ray.cancel(ref, force=True)
            break
        if deadline is not None and clock() >= deadline:
            todo = []
        while todo and len(pending) < limit:
            pending.append(remote.remote(todo.pop(0), *args))
        if not pending:
            break
        done, pending = ray.wait(pending, num_returns=1, timeout=2.0)
        if not done:
            continue
        try:
            r = ray.get(done[0])
        except Exception as e:  # noqa: BLE001 - a chunk lost after its retries costs only itself
            (on_error or (lambda ex: print(f"raylabel: chunk failed: {ex!r}"[:2000], file=sys.stderr)))(e)
            continue
        results.append(r)
        if on_result:
            on_result(r)
    return results
