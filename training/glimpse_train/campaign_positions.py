"""Where the campaign's new positions come from (``campaign``, step 1): Stockfish self-play games (Ray
tasks), files under ``../shared/data/`` walked by a cursor (``SOURCE_FILES``: opening books, the positions of
Lichess games, and the popular Lichess positions and endgame starts labelled to the end by now), and DAgger
games of the engine against Stockfish (``tools/match.py``); deduplicated on ``chessdata.position_key`` against
every labelled position; candidates left unlabelled by a phase are kept in ``runs/<run>/pending.tsv`` for the
next.
"""

from __future__ import annotations

import glob
import os
import random
import subprocess
import sys
import tempfile
import time

import chess
import chess.pgn

from . import labelstore, raylabel
from .campaign_config import REPO, SOURCE_FILES, dagger_games, dagger_opponent, parse_mix
from .data import package_env
from .onnx_graph import onnx_meta

def run_until_stopped(cmd: list[str], stop, cwd: str | None = None, poll: float = 0.5) -> tuple[int | None, str]:
    """Runs ``cmd`` (stdout discarded, stderr kept) until it exits or ``stop()`` turns true; then it is sent
    SIGTERM (SIGKILL 10 s later). Returns (exit code, or None when stopped; stderr). A campaign stopped during
    its DAgger match thus stops within seconds instead of after the whole match (up to ~20 minutes)."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=cwd)
        stopped = False
        while p.poll() is None:
            if stop():
                stopped = True
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                break
            time.sleep(poll)
        err.seek(0)
        text = err.read().decode(errors="replace")
    return (None if stopped else p.returncode), text


def epd_source(path: str, seed: int) -> list[str]:
    """Canonical 6-field FENs of an EPD file in a fixed shuffled order (the cursor walks through it)."""
    fens = []
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                fens.append(" ".join(parts[:4]) + " 0 1")
    random.Random(seed).shuffle(fens)
    out = []
    for raw in fens:
        try:
            b = chess.Board(raw)
        except ValueError:
            continue
        if b.is_valid() and not b.is_game_over(claim_draw=False):
            out.append(b.fen())
    return out


def pgn_positions(path: str) -> list[str]:
    """Every position of every game of a PGN file, after each move (canonical FENs; games in file order,
    plies in game order; a finished game's final position left out, as it has no move to label)."""
    out = []
    with open(path, errors="replace") as f:
        while (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            for mv in game.mainline_moves():
                board.push(mv)
                if not board.is_game_over():
                    out.append(board.fen())
    return out


def file_source(shared: str, name: str, seed: int = 7) -> list[str]:
    """The FENs of file source ``name`` (``SOURCE_FILES``) under ``shared/data/`` in the fixed order its cursor
    walks: one EPD file as ``epd_source``; several files, or PGN games (``pgn_positions``), pooled and shuffled
    with ``seed``. Files that are not there contribute nothing."""
    paths = [p for pat in SOURCE_FILES[name] for p in sorted(glob.glob(os.path.join(shared, "data", pat)))]
    if len(paths) == 1 and paths[0].endswith(".epd"):
        return epd_source(paths[0], seed)
    fens = [f for p in paths for f in (pgn_positions(p) if p.endswith(".pgn") else epd_source(p, seed))]
    random.Random(seed).shuffle(fens)
    return fens


PENDING_MAX = 200_000  # unlabelled candidates kept between label phases


def shuffle_runs(found: list[tuple[str, list[str]]], run: int, seed: int) -> list[tuple[str, str]]:
    """``(source, FEN)`` pairs of ``found`` (``(source, FENs in the order found)`` each) in runs of ``run``
    consecutive positions of one source, the runs in a seeded random order: the sources are mixed, while each
    label chunk (``run`` = the chunk size; ``raylabel.label_chunk`` keeps its Stockfish's hash and histories
    through a chunk) takes the plies of a game in order, each search starting from what the last one found:
    less CPU and deeper labels than positions shuffled one by one (``glimpse_train.label_order``; figures in
    CHANGELOG.md)."""
    runs = [(src, fens[i:i + max(1, run)]) for src, fens in found for i in range(0, len(fens), max(1, run))]
    random.Random(seed).shuffle(runs)
    return [(src, f) for src, fens in runs for f in fens]


def take_new(fens, start: int, n: int, known: set[str]) -> tuple[list[str], int]:
    """Up to ``n`` FENs from ``fens[start:]`` whose key is not in ``known`` (added to it); returns them
    and the new cursor."""
    out, i = [], start
    while i < len(fens) and len(out) < n:
        k = labelstore.position_key(fens[i])
        i += 1
        if k not in known:
            known.add(k)
            out.append(fens[i - 1])
    return out, i


def source_fingerprint(shared: str, name: str) -> list[list]:
    """``[[path under shared/data/, bytes], ...]`` of file source ``name``'s files (``SOURCE_FILES``): the same
    fingerprint means the same positions in the same order (``file_source`` is deterministic)."""
    root = os.path.join(shared, "data")
    return [[os.path.relpath(p, root), os.path.getsize(p)]
            for pat in SOURCE_FILES[name] for p in sorted(glob.glob(os.path.join(root, pat)))]


def allot(n: int, shares: dict[str, float], spent: set[str]) -> dict[str, int]:
    """Positions each source is asked for out of ``n``: ``shares`` (``parse_mix``) without the ``spent``
    sources, renormalised, so that a spent source's share goes to the others in proportion to theirs; each
    rounded, the rounding's remainder to the largest share (the wants sum to ``n``). Empty when every source
    is spent."""
    live = {k: v for k, v in shares.items() if k not in spent and v > 0}
    tot = sum(live.values())
    if tot <= 0 or n <= 0:
        return {k: 0 for k in live}
    out = {k: int(n * v / tot) for k, v in live.items()}
    out[max(live, key=live.get)] += n - sum(out.values())
    return out


class CampaignPositions:
    """The position-finding part of ``campaign.Campaign`` (a mixin: it uses the campaign's ``cfg``, ``state``,
    ``shared``, ``run_dir``, ``stockfish``, ``stop``, ``log``, ``known()``, ``files()``, ``label_round`` and
    ``checkpoint_onnx``)."""

    def file_source_of(self, name: str) -> list[str]:
        """File source ``name``'s FENs in cursor order (``file_source``), parsed once a process; its size is
        kept in the state with the files' fingerprint (``source_fingerprint``) for ``spent_sources``."""
        if name not in self._epd:
            self._epd[name] = file_source(self.shared, name)
            self.state.setdefault("source_size", {})[name] = [source_fingerprint(self.shared, name), len(self._epd[name])]
        return self._epd[name]

    def spent_sources(self, names) -> set[str]:
        """The file sources among ``names`` whose cursor has reached the end (or that have no positions). A size
        recorded for the same files (names and byte sizes) is trusted, so a spent source is not parsed again
        after a restart (the Lichess games take a minute); other files are parsed."""
        cur, sizes, out = self.state.get("cursor", {}), self.state.get("source_size", {}), set()
        for name in names:
            if name not in SOURCE_FILES:
                continue
            rec = sizes.get(name)
            size = rec[1] if rec and rec[0] == source_fingerprint(self.shared, name) else len(self.file_source_of(name))
            if cur.get(name, 0) >= size:
                out.add(name)
        return out

    def candidates(self, n: int) -> list[tuple[str, str]]:
        """``n`` new (source, FEN) pairs by the mix (``allot``: a spent file source's share goes to the others);
        the file sources are walked first, and what they fall short of in this phase is asked of the
        unbounded sources (self-play, DAgger). Self-play games are played as Ray tasks."""
        shares = parse_mix(self.cfg.mix)
        spent = self.spent_sources(shares)
        if spent:
            self.log(f"mix: {', '.join(sorted(spent))} at the end; "
                     f"its share goes to {', '.join(k for k in shares if k not in spent) or 'nothing'}")
        wants = allot(n, shares, spent)
        known, cur = self.known(), self.state.setdefault("cursor", {})
        out: list[tuple[str, list[str]]] = []
        unbounded = [k for k in wants if k not in SOURCE_FILES]
        short = 0
        for name in [k for k in wants if k in SOURCE_FILES] + unbounded:
            want = wants[name]
            if name in unbounded and short:
                want += allot(short, {k: shares[k] for k in unbounded}, set())[name]
            if want <= 0 or self.stop():
                continue
            if name == "dagger":
                fens = self.dagger_positions(want)
                new, _ = take_new(fens, 0, want, known)
            elif name == "selfplay":
                games = max(1, want // 25)
                seed0 = cur.get("selfplay", 0)
                seeds = [seed0 + i for i in range(games)]
                chunks = [seeds[i:i + 4] for i in range(0, len(seeds), 4)]
                res = raylabel.run_chunks(raylabel.selfplay_chunk, chunks, (self.stockfish, self.cfg.nice), stop=self.stop)
                cur["selfplay"] = seed0 + games
                fens = [f for r in res for f in r["fens"]]
                self.state["core_seconds_selfplay"] = self.state.get("core_seconds_selfplay", 0.0) + sum(
                    r["core_seconds"] for r in res)
                new, _ = take_new(fens, 0, want, known)
            else:
                fens = self.file_source_of(name)
                new, cur[name] = take_new(fens, cur.get(name, 0), want, known)
                if len(new) < want:
                    short += want - len(new)
                    self.log(f"{name}: {len(new)} of {want} new positions; the source is at its end "
                             f"({cur[name]:,} of {len(fens):,}); the rest goes to {', '.join(unbounded) or 'nothing'}")
            out.append((name, new))
        return shuffle_runs(out, self.cfg.chunk, self.label_round)

    def dagger_net(self) -> str | None:
        """The net the engine plays its DAgger games with: the int8 twin (:meth:`int8_twin`) of the campaign's
        best candidate, else of the committed checkpoint, else ``None`` (the engine's embedded default)."""
        for p in (os.path.join(self.run_dir, "best.onnx"), self.checkpoint_onnx):
            if os.path.exists(p):
                return self.int8_twin(os.path.abspath(p))
        return None

    def int8_twin(self, net: str) -> str:
        """``<run>/dagger-int8.onnx``: the int8 twin of the float32 ``net``, as ``make quantize`` makes the shipped
        default (``python -m glimpse_train.quantize``, about 2 s), made again whenever its
        ``glimpse.source_sha256`` is not ``net``'s digest; ``net`` itself, with a log line, when it cannot be
        made. The engine ships its nets in int8, and at DAgger's movetime the twin's faster runs buy it wider
        successor batches and more playouts: its games are the shipped engine's, at its strength (``CHANGELOG.md``)."""
        twin = os.path.join(self.run_dir, "dagger-int8.onnx")
        digest = labelstore.file_sha256(net)
        if os.path.exists(twin):
            try:
                meta = onnx_meta(twin)
            except Exception:  # noqa: BLE001 - onnx raises protobuf's DecodeError and others for a bad file
                meta = {}
            if meta.get("glimpse.source_sha256") == digest:
                return twin
        cmd = ["nice", "-n", str(self.cfg.nice), sys.executable, "-m", "glimpse_train.quantize", "--net", net,
               "--out", twin, "--check", "0"]
        p = subprocess.run(cmd, env=package_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0 or not os.path.exists(twin):
            self.log(f"dagger: no int8 twin of {net} (quantize rc {p.returncode}: {p.stderr.strip()[-300:]}); "
                     "the games use that net as it is")
            return net
        self.log(f"dagger: int8 twin {twin} of {net}")
        return twin

    def dagger_positions(self, want: int) -> list[str]:
        """FENs (one ply in ``dagger_every``, by default every ply) from games of the engine (current net;
        searchless, and MCTS in every other pass over the levels) against Stockfish at ``dagger_levels``, played
        by ``tools/match.py``: the states the learner actually visits (DAgger, Ross, Gordon & Bagnell 2011).
        ``dagger_games`` sizes the match for ``want`` positions. Empty, with a log line, when the engine is not
        built or a stop is requested during the match (``run_until_stopped``)."""
        engine = os.path.join(REPO, "target", "release", "glimpse")
        if not os.path.exists(engine):
            self.log("dagger: target/release/glimpse not built (make build); source skipped this cycle")
            return []
        every = max(1, self.cfg.dagger_every)
        games = dagger_games(want, every)
        levels = [int(x) for x in self.cfg.dagger_levels.split(",")]
        cyc = self.label_round
        spec, opponent = dagger_opponent(levels[cyc % len(levels)])
        pgn = os.path.join(self.run_dir, f"dagger-{cyc:04d}.pgn")
        # Stockfish gets its full movetime: its limited strength picks at depth 1 + int(level) but reads a hash
        # that the rest of each search filled. Capped at that depth (--b-depth 2 for UCI_Elo 1500) it was far
        # weaker: the engine's MCTS games scored 40.0 % (224 games) against 18.4-18.8 % at 20 ms (2026-11-29).
        # The engine gets dagger_engine_movetime, so that its own moves, not its time-out fallback, make the games.
        net = self.dagger_net()
        cmd = [os.path.join(REPO, ".venv", "bin", "python"), os.path.join(REPO, "tools", "match.py"), "--a", engine,
               "--b", spec, "--tc", "none", "--movetime", str(self.cfg.dagger_engine_movetime),
               "--b-movetime", str(self.cfg.dagger_movetime),
               "--games", str(games), "--concurrency", str(self.cfg.workers), "--seed", str(1000 + cyc),
               "--book", os.path.join(self.shared, "data", "openings", "noob_3moves.epd"), "--maxmoves", "150",
               "--pgn", pgn, "--json", pgn[:-4] + ".json", "--quiet"]
        # Every other pass over the levels the engine plays with MCTS (the positions its search leads to, at
        # ~20 ms a move), so each opponent meets both modes.
        mode = "mcts" if (cyc // len(levels)) % 2 else "searchless"
        cmd[4:4] = ["--a-option", f"SearchMode={mode}"]
        if net:
            cmd[4:4] = ["--a-option", f"WeightsFile={net}"]
        t0 = time.time()
        rc, err = run_until_stopped(["nice", "-n", str(self.cfg.nice)] + cmd, self.stop, cwd=REPO)
        if rc is None:
            self.log(f"dagger: match stopped after {time.time() - t0:.0f} s (stop requested); no positions")
            return []
        if rc != 0 or not os.path.exists(pgn):
            self.log(f"dagger: match.py failed (rc {rc}): {err.strip()[-300:]}")
            return []
        fens, rng = pgn_positions(pgn), random.Random(cyc)
        if every > 1:
            fens = [f for f in fens if rng.random() < 1 / every]
        self.log(f"dagger: {games} {mode} games vs {opponent} with {net or 'the embedded net'} "
                 f"({time.time() - t0:.0f} s): {len(fens)} positions")
        return fens  # in game order: shuffle_runs keeps the plies of a game together in a label chunk

    @property
    def pending_path(self) -> str:
        return os.path.join(self.run_dir, "pending.tsv")

    def load_pending(self) -> list[tuple[str, str]]:
        """Candidates found by an earlier label phase that its deadline (or a kill) left unlabelled:
        ``(source, FEN)`` pairs, minus any whose position the store has labelled since. Finding them
        cost games (self-play, DAgger), so they are labelled before new ones are looked for."""
        if not os.path.exists(self.pending_path):
            return []
        labelled = labelstore.known_keys(self.files())
        out, seen = [], set()
        with open(self.pending_path) as f:
            for line in f:
                src, _, fen = line.rstrip("\n").partition("\t")
                if not fen:
                    continue
                k = labelstore.position_key(fen)
                if k not in labelled and k not in seen:
                    seen.add(k)
                    out.append((src, fen))
        self.known().update(seen)
        return out

    def save_pending(self, left: list[tuple[str, str]]) -> None:
        """Writes the unlabelled candidates (at most ``PENDING_MAX``) atomically; removes the file when none."""
        if not left:
            if os.path.exists(self.pending_path):
                os.remove(self.pending_path)
            return
        tmp = self.pending_path + ".tmp"
        with open(tmp, "w") as f:
            f.writelines(f"{s}\t{fen}\n" for s, fen in left[:PENDING_MAX])
        os.replace(tmp, self.pending_path)
