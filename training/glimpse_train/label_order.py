"""Labelling cost and quality by the order of a chunk's positions: a game's plies in order, or shuffled.

``raylabel.label_chunk`` keeps one Stockfish's hash and histories through a chunk (``ucinewgame`` only at its
start), so a chunk that holds consecutive plies of one game starts each search with what the previous ply's
search found. This labels the same positions both ways (the campaign's scheme, ``--chunk`` positions a chunk,
``--repeats`` times each, alternately, one process) and reports the CPU of each order, then how often each
order's top move is the top move of a fresh deeper search (``--reference-depth``, ``ucinewgame`` before every
position), with McNemar's z over the positions where exactly one order agrees with it. The campaign keeps the
plies of a game together (``campaign_positions.shuffle_runs``); CHANGELOG.md has the figures that decided it.

    PYTHONPATH=training .venv/bin/python -m glimpse_train.label_order GAMES.pgn [--positions 960]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time

from . import raylabel, uci_pipe
from .campaign_positions import pgn_positions
from .chessdata import find_stockfish, score_key
from .labelstore import position_key


def game_positions(path: str, positions: int) -> list[str]:
    """The first ``positions`` distinct positions (``position_key``) of the PGN file ``path``, games in file
    order and plies in game order, a finished game's final position left out (``pgn_positions``)."""
    out: list[str] = []
    seen: set[str] = set()
    for fen in pgn_positions(path):
        if len(out) >= positions:
            break
        if (k := position_key(fen)) not in seen:
            seen.add(k)
            out.append(fen)
    return out


def top_move(moves: list[tuple[str, str]]) -> str:
    """The move with the best score of one labelled position (``(UCI move, score)`` pairs)."""
    return max(moves, key=lambda m: score_key(m[1]))[0]


def mcnemar_z(a_only: int, b_only: int) -> float:
    """McNemar's z for paired outcomes: positions only order A got right against those only B got right."""
    return (a_only - b_only) / math.sqrt(a_only + b_only) if a_only + b_only else 0.0


def measure(fens: list[str], stockfish: str, chunk: int = 24, repeats: int = 2, reference_depth: int = 16,
            seed: int = 1, log=print) -> dict:
    """Labels ``fens`` in their order and shuffled (``seed``), ``chunk`` a chunk, ``repeats`` times each;
    returns ``{"core_seconds": {"ordered": [...], "shuffled": [...]}, "positions", "reference_depth",
    "agree": {"ordered", "shuffled"}, "only": {"ordered", "shuffled"}, "mcnemar_z"}`` (agreement with the
    reference's top move, from each order's first repetition; ``reference_depth`` 0 skips that part)."""
    shuffled = list(fens)
    random.Random(seed).shuffle(shuffled)
    scheme = raylabel.LabelScheme()
    cpu: dict[str, list[float]] = {"ordered": [], "shuffled": []}
    labels: dict[str, dict[str, list]] = {}
    for rep in range(repeats):
        for name, lst in (("ordered", fens), ("shuffled", shuffled)):
            core, t0, got = 0.0, time.time(), {}
            for i in range(0, len(lst), chunk):
                r = raylabel.label_chunk(lst[i:i + chunk], scheme, stockfish, nice=0)
                core += r["core_seconds"]
                got.update((f, m) for f, m in r["records"])
            cpu[name].append(round(core, 2))
            labels.setdefault(name, got)
            log(f"{name} #{rep + 1}: {len(lst)} positions, {core:.1f} core-s, {time.time() - t0:.1f} s")
    out: dict = {"positions": len(fens), "chunk": chunk, "core_seconds": cpu, "reference_depth": reference_depth}
    if reference_depth > 0:
        eng = uci_pipe.UciPipe(stockfish, scheme.hash_mb)
        agree = {"ordered": 0, "shuffled": 0}
        only = {"ordered": 0, "shuffled": 0}
        try:
            for fen in fens:
                if fen not in labels["ordered"] or fen not in labels["shuffled"]:
                    continue
                eng.new_game()
                best = next(iter(eng.multipv(fen, reference_depth, 1)))
                hit = {k: top_move(labels[k][fen]) == best for k in agree}
                for k in agree:
                    agree[k] += hit[k]
                    only[k] += hit[k] and not all(hit.values())
        finally:
            eng.close()
        out.update(agree=agree, only=only, mcnemar_z=round(mcnemar_z(only["ordered"], only["shuffled"]), 2))
        log(f"top move as depth {reference_depth}'s: ordered {agree['ordered']}, shuffled {agree['shuffled']} "
            f"(McNemar z {out['mcnemar_z']})")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pgn", help="games whose positions are labelled (e.g. ../shared/data/games/*.pgn)")
    ap.add_argument("--positions", type=int, default=960)
    ap.add_argument("--chunk", type=int, default=24, help="positions a chunk (the campaign's --chunk)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--reference-depth", type=int, default=16, help="0: time only")
    ap.add_argument("--stockfish", default=None, help="default: chessdata.find_stockfish()")
    a = ap.parse_args(argv)
    fens = game_positions(a.pgn, a.positions)
    res = measure(fens, a.stockfish or find_stockfish(), a.chunk, a.repeats, a.reference_depth)
    uci_pipe.close_shared()
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
