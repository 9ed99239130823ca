"""Generates the tablebase fixtures: python-chess's Syzygy reader (an independent implementation of
the probing code) on random positions with up to 4 pieces.

- ``syzygy_cases.jsonl``: 1,200 positions of the materials vendored in ``syzygy/`` (K+Q, K+R, K+P,
  K+B+N against K; either side strong, either side to move), probed on ``syzygy/``.
- ``syzygy_cases_shared.jsonl``: 1,400 positions, 40 of each of the 35 materials with up to 4 pieces,
  probed on ``../shared/data/syzygy`` (the Rust test skips them when ``../shared`` is absent).

Each line: ``{"fen", "wdl", "dtz"}`` (python-chess ``probe_wdl`` and ``probe_dtz``, side to move's
view). The engine's probes must agree on the WDL and the sign of DTZ (``tests/syzygy.rs``);
``tools/tests/test_syzygy.py`` checks that the file still matches python-chess.
Run from tests/data: ``python gen_syzygy_cases.py``.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import chess
import chess.syzygy

HERE = Path(__file__).resolve().parent
VENDORED = ["KQvK", "KRvK", "KPvK", "KBNvK"]
LETTERS = {"K": chess.KING, "Q": chess.QUEEN, "R": chess.ROOK, "B": chess.BISHOP, "N": chess.KNIGHT,
           "P": chess.PAWN}


def shared_materials() -> list[str]:
    return sorted(p.stem for p in (HERE.parent.parent.parent / "shared" / "data" / "syzygy").glob("*.rtbw"))


def random_board(rng: random.Random, material: str) -> chess.Board:
    """A valid position with ``material`` (e.g. ``KBNvK``), colours and side to move at random."""
    strong_side, weak_side = material.split("v")
    while True:
        strong = rng.choice([chess.WHITE, chess.BLACK])
        board = chess.Board(None)
        squares = rng.sample(chess.SQUARES, len(strong_side) + len(weak_side))
        for sq, (letter, color) in zip(squares, [(c, strong) for c in strong_side]
                                       + [(c, not strong) for c in weak_side]):
            board.set_piece_at(sq, chess.Piece(LETTERS[letter], color))
        board.turn = rng.choice([chess.WHITE, chess.BLACK])
        if board.is_valid() and not board.is_checkmate() and not board.is_stalemate():
            return board


def cases(materials: list[str], per_material: int, directory: Path, seed: str) -> list[dict]:
    rng = random.Random(seed)
    out, seen = [], set()
    with chess.syzygy.open_tablebase(str(directory)) as tb:
        for material in materials:
            n = 0
            while n < per_material:
                board = random_board(rng, material)
                if board.fen() in seen:
                    continue
                seen.add(board.fen())
                out.append({"fen": board.fen(), "wdl": tb.probe_wdl(board), "dtz": tb.probe_dtz(board)})
                n += 1
    return out


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    write(HERE / "syzygy_cases.jsonl", cases(VENDORED, 300, HERE / "syzygy", "glimpse-syzygy-vendored"))
    write(HERE / "syzygy_cases_shared.jsonl",
          cases(shared_materials(), 40, HERE.parent.parent.parent / "shared" / "data" / "syzygy",
                "glimpse-syzygy-shared"))
