"""Label positions with Stockfish 15.1 MultiPV over all legal moves (the shared labels format).

Positions: ``shared/data/positions/*.epd``, ``shared/data/games/*.pgn`` (sampled plies),
``shared/data/openings/*.epd``, ``8moves_v3.pgn`` (end of each line) and ``lichess_openings.tsv`` (EPD
column); canonicalised with python-chess ``board.fen()``, deduplicated on the first four FEN fields
(also against the positions already in ``shared/data/labels``), shuffled per source with a fixed seed and
interleaved round-robin across sources; the first ``--positions`` are labelled.

Output: ``<out>/shard-NNNNN.tsv.gz`` (``FEN<TAB>move=score ...`` with every legal move, score in cp from
the mover's view or ``M<n>``/``M-<n>``), written atomically per shard, so a rerun skips finished shards
(resumable); ``<out>/settings.json`` records the Stockfish version and settings.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import io
import json
import multiprocessing as mp
import os
import random
import time

import chess
import chess.engine
import chess.pgn
from tqdm import tqdm

from .chessdata import find_stockfish, score_str
from .data import label_files, parse_line, position_key

def _epd_fens(path: str) -> list[str]:
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                out.append(" ".join(parts[:4]) + " 0 1")
    return out


def _pgn_fens(path: str, sample: float, rng: random.Random, final_only: bool = False, max_games: int = 0) -> list[str]:
    out = []
    with open(path, errors="replace") as f:
        n = 0
        while True:
            game = chess.pgn.read_game(f)
            if game is None:
                break
            n += 1
            board = game.board()
            for mv in game.mainline_moves():
                board.push(mv)
                if not final_only and rng.random() < sample:
                    out.append(board.fen())
            if final_only:
                out.append(board.fen())
            if max_games and n >= max_games:
                break
    return out


def _tsv_epds(path: str) -> list[str]:
    out = []
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        col = header.index("epd") if "epd" in header else None
        if col is None:
            return out
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) > col:
                out.append(parts[col] + " 0 1")
    return out


def collect_positions(shared: str, limit: int, seed: int = 0, game_sample: float = 0.3) -> list[str]:
    """Deduplicated canonical FENs, interleaved across sources, at most ``limit`` (0 = all).

    With a limit, PGN sources are read only up to a number of games proportional to it (parsing PGN is
    the slow part); the selection is deterministic for a given (limit, seed).
    """
    rng = random.Random(seed)
    d = os.path.join(shared, "data")
    sources: dict[str, list[str]] = {}
    for p in sorted(glob.glob(os.path.join(d, "positions", "*.epd"))):
        sources[os.path.relpath(p, d)] = _epd_fens(p)
    for p in sorted(glob.glob(os.path.join(d, "games", "*.pgn"))):
        sources[os.path.relpath(p, d)] = _pgn_fens(p, game_sample, rng, max_games=max(100, limit // 4) if limit else 0)
    for p in sorted(glob.glob(os.path.join(d, "openings", "*.epd"))):
        sources[os.path.relpath(p, d)] = _epd_fens(p)
    for p in sorted(glob.glob(os.path.join(d, "openings", "*.pgn"))):
        sources[os.path.relpath(p, d)] = _pgn_fens(p, 0.0, rng, final_only=True, max_games=max(100, limit) if limit else 0)
    for p in sorted(glob.glob(os.path.join(d, "openings", "*.tsv"))):
        sources[os.path.relpath(p, d)] = _tsv_epds(p)
    seen: set[str] = set()
    for lf in label_files(shared):
        with gzip.open(lf, "rt") as f:
            for line in f:
                try:
                    seen.add(position_key(parse_line(line)[0]))
                except ValueError:
                    pass
    for name in sources:
        random.Random(f"{seed}:{name}").shuffle(sources[name])
    iters = {k: iter(v) for k, v in sources.items()}
    out: list[str] = []
    while iters and (not limit or len(out) < limit):
        for name in list(iters):
            if limit and len(out) >= limit:
                break
            for raw in iters[name]:
                try:
                    board = chess.Board(raw)
                except ValueError:
                    continue
                if not board.is_valid() or board.is_game_over(claim_draw=False):
                    continue
                fen = board.fen()
                key = position_key(fen)
                if key in seen:
                    continue
                seen.add(key)
                out.append(fen)
                break
            else:
                del iters[name]
    return out


_ENGINE = None


def _worker_init(sf: str, threads: int, hash_mb: int, nice: int):
    global _ENGINE
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    _ENGINE = chess.engine.SimpleEngine.popen_uci(sf)
    _ENGINE.configure({"Threads": threads, "Hash": hash_mb})


def _label_one(args) -> str | None:
    fen, depth, nodes = args
    board = chess.Board(fen)
    legal = list(board.legal_moves)
    if not legal:
        return None
    limit = chess.engine.Limit(nodes=nodes) if nodes else chess.engine.Limit(depth=depth)
    infos = _ENGINE.analyse(board, limit, multipv=len(legal))
    items, seen = [], set()
    for info in infos:
        if "pv" not in info or not info["pv"] or "score" not in info:
            continue
        mv = info["pv"][0]
        if mv in seen:
            continue
        seen.add(mv)
        items.append(f"{mv.uci()}={score_str(info['score'])}")
    if len(seen) != len(legal):
        return None
    return fen + "\t" + " ".join(items)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="data/labels/sf15-d8")
    ap.add_argument("--positions", type=int, default=200, help="number of positions (0 = all collected)")
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--nodes", type=int, default=0, help="node limit instead of depth")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--hash", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nice", type=int, default=5)
    ap.add_argument("--stockfish", default=None)
    a = ap.parse_args(argv)
    try:
        sf = find_stockfish(a.stockfish)
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    fens = collect_positions(a.shared, a.positions, a.seed)
    print(f"{len(fens)} positions to label ({time.time() - t0:.1f} s to collect)", flush=True)
    with chess.engine.SimpleEngine.popen_uci(sf) as eng:
        sf_name = eng.id.get("name", "?")
    settings = {"stockfish": sf_name, "path": sf, "depth": None if a.nodes else a.depth, "nodes": a.nodes or None,
                "threads": a.threads, "hash_mb": a.hash, "multipv": "all legal moves", "positions": len(fens),
                "seed": a.seed, "shard_size": a.shard_size, "score": "cp or M<n>/M-<n>, mover's point of view",
                "sources": "shared/data/positions/*.epd, games/*.pgn (30% of plies), openings/*",
                "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    shards = [(i, fens[s:s + a.shard_size]) for i, s in enumerate(range(0, len(fens), a.shard_size))]
    todo = [(i, chunk) for i, chunk in shards if not os.path.exists(os.path.join(a.out, f"shard-{i:05d}.tsv.gz"))]
    done_positions = len(fens) - sum(len(c) for _, c in todo)
    with mp.Pool(a.workers, _worker_init, (sf, a.threads, a.hash, a.nice)) as pool, \
            tqdm(total=len(fens), initial=done_positions, unit="pos", smoothing=0.05) as bar:
        for i, chunk in todo:
            lines = []
            for res in pool.imap(_label_one, [(f, a.depth, a.nodes) for f in chunk], chunksize=4):
                if res:
                    lines.append(res)
                bar.update(1)
            path = os.path.join(a.out, f"shard-{i:05d}.tsv.gz")
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
                gz.write(("\n".join(lines) + "\n").encode() if lines else b"")
            with open(path + ".tmp", "wb") as f:
                f.write(buf.getvalue())
            os.replace(path + ".tmp", path)
    settings["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    settings["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(a.out, "settings.json"), "w") as f:
        json.dump(settings, f, indent=1)
    print(f"labels in {a.out} ({len(shards)} shards); settings.json written", flush=True)


if __name__ == "__main__":
    main()
