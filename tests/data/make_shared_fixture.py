"""Builds ``tests/data/shared/``: the small slice of ``../shared`` that ``make test`` needs, so a clone
of the repository tests on its own. Deterministic: the same ``../shared`` gives the same bytes.

Run from the repository root with the project venv: ``.venv/bin/python tests/data/make_shared_fixture.py
[--shared ../shared]``. What is taken from where, and under which licence, is in
``tests/data/shared/SOURCES.md`` (written by hand; keep it in step with this script).

The layout mirrors ``../shared`` (``golden/``, ``data/perft/``, ``data/puzzles/``, ``data/openings/``,
``data/epd/``, ``data/labels/``), so every test reads it through the same ``--shared`` /
``GLIMPSE_SHARED`` path it would use for the full folder.
"""

from __future__ import annotations

import argparse
import gzip
import io
import itertools
import os
import shutil

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "shared")

# golden/: copied whole (tokenizer vectors, action list, tiny models' configs and golden outputs).
GOLDEN_COPY = ["README.md", "actions.txt", "environment.txt", "tokenizer_golden.jsonl", "tokenizer_errors.jsonl",
               "tokenizer_vocab.json"] + [f"tiny_{k}_{f}" for k in ("av", "sv", "bc")
                                          for f in ("config.json", "outputs.jsonl")]
# Perft: every suite whole (0.8 MB; tests/perft_suite.rs checks every count at depth <= 3, > 7000 positions).
PERFT_LINES = {"cpw_perft_positions_generated.epd": None, "perftsuite_senjo.epd": None, "whittington_perft.epd": None,
               "whittington_perft-ferdy-double-checks.epd": None, "whittington_perft-marcel.epd": None}
EPD_LINES = {"STS1-STS15_LAN_v3.epd": None, "bk_senjo.epd": None, "wac_arasan_wacnew.epd": 40}
PUZZLES = 60
NOOB_LINES = 300
PGN_GAMES = 20
LABELS_PER_FILE = 150


def head_lines(src: str, n: int | None) -> bytes:
    with open(src, "rb") as f:
        data = f.read()
    if n is None:
        return data
    return b"".join(data.splitlines(keepends=True)[:n])


def write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def gzip_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as g:
        g.write(text.encode())
    return buf.getvalue()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    a = ap.parse_args(argv)
    src = os.path.abspath(a.shared)
    for sub in ("golden", "data"):
        shutil.rmtree(os.path.join(OUT, sub), ignore_errors=True)

    g = os.path.join(src, "golden")
    for name in GOLDEN_COPY:
        write(os.path.join(OUT, "golden", name), head_lines(os.path.join(g, name), None))
    for k in ("av", "sv", "bc"):
        # Only the `params/` tree (the `params_ema/` twin is read by the converter tests only).
        z = np.load(os.path.join(g, f"tiny_{k}_params.npz"))
        arrays = {name: z[name] for name in sorted(z.files) if name.startswith("params/")}
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        write(os.path.join(OUT, "golden", f"tiny_{k}_params.npz"), buf.getvalue())

    d = os.path.join(src, "data")
    for name, n in PERFT_LINES.items():
        write(os.path.join(OUT, "data", "perft", name), head_lines(os.path.join(d, "perft", name), n))
    for name, n in EPD_LINES.items():
        write(os.path.join(OUT, "data", "epd", name), head_lines(os.path.join(d, "epd", name), n))
    write(os.path.join(OUT, "data", "puzzles", "lichess_puzzles.csv"),
          head_lines(os.path.join(d, "puzzles", "lichess_puzzles.csv"), PUZZLES + 1))
    write(os.path.join(OUT, "data", "openings", "noob_3moves.epd"),
          head_lines(os.path.join(d, "openings", "noob_3moves.epd"), NOOB_LINES))
    with open(os.path.join(d, "openings", "8moves_v3.pgn"), "rb") as f:
        games, cur = [], []
        for line in f:
            if line.startswith(b"[Event ") and cur:
                games.append(b"".join(cur))
                cur = []
                if len(games) == PGN_GAMES:
                    break
            cur.append(line)
    write(os.path.join(OUT, "data", "openings", "8moves_v3.pgn"), b"".join(games))
    for name in ("sf15-d8-selfplay.tsv.gz", "sf15-d8-mix.tsv.gz"):
        with gzip.open(os.path.join(d, "labels", name), "rt") as f:
            lines = list(itertools.islice(f, LABELS_PER_FILE))
        write(os.path.join(OUT, "data", "labels", name.replace(".tsv.gz", "-head.tsv.gz")), gzip_bytes("".join(lines)))
    for rel in ("epd/LICENSE.SenjoUCIAdapter.txt", "epd/LICENSE.arasan-chess", "epd/LICENSE.fsmosca-STS-Rating",
                "epd/README.ChrisWhittington-Chess-EPDs.md", "perft/LICENSE.SenjoUCIAdapter.txt",
                "perft/README.ChrisWhittington-Chess-EPDs.md", "openings/LICENSE.official-stockfish-books"):
        write(os.path.join(OUT, "data", rel), head_lines(os.path.join(d, rel), None))
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(OUT) for f in fs)
    print(f"wrote {OUT}: {total / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
