"""The versioned label store: Stockfish-labelled positions committed to the repository.

Layout (``data/labels/`` at the repository root by default):

* ``<prefix>-<NNNNN>.tsv.gz`` — gzip text shards (at most ``MAX_SHARD_BYTES``, 16 MB), one position per
  line in the shared format ``FEN<TAB>move=score move=score …`` with **every legal move**; ``score`` is
  Stockfish's MultiPV root score in centipawns from the mover's point of view, or ``M<n>``/``M-<n>``
  (``../shared/data/README``, ``docs/searchless-conventions.md``).
* ``MANIFEST.json`` — one record per shard: file, sha256, positions, labelled moves, positions per
  source, Stockfish name and settings (depth, MultiPV, threads, hash), cost in core-seconds, time
  written; and the totals. Written atomically after the shard it describes, so a kill between the two
  leaves a shard the next ``LabelStore.open`` adopts (its cost recorded as unknown).

Deduplication is on the first four FEN fields (placement, side to move, castling, en passant), against
every file in the store and in ``../shared/data/labels/`` (``known_keys``).
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import hashlib
import io
import json
import os
import re
import time
from typing import Iterable, Iterator

from .chessdata import position_key

MAX_SHARD_BYTES = 16 * 1024 * 1024
MANIFEST = "MANIFEST.json"
_SCORE = re.compile(r"^(-?\d+|M-?\d+)$")
_UCI = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?$")


class LabelFormatError(ValueError):
    """A line that is not ``FEN<TAB>move=score …`` (message says which part is wrong)."""


def format_line(fen: str, moves: Iterable[tuple[str, str]]) -> str:
    """One store line (no newline) from a FEN and ``(uci, score)`` pairs; raises ``LabelFormatError``."""
    items = []
    for m, s in moves:
        if not _UCI.match(m) or not _SCORE.match(s):
            raise LabelFormatError(f"bad move/score {m}={s}")
        items.append(f"{m}={s}")
    if len(fen.split()) != 6 or "\t" in fen:
        raise LabelFormatError(f"bad FEN {fen!r}")
    if not items:
        raise LabelFormatError("no moves")
    return fen + "\t" + " ".join(items)


def parse_line(line: str) -> tuple[str, list[tuple[str, str]]]:
    """``FEN\\tm=s m=s …`` → ``(fen, [(uci, score), …])``; raises ``LabelFormatError``."""
    line = line.rstrip("\n")
    fen, tab, rest = line.partition("\t")
    if not tab:
        raise LabelFormatError("no TAB")
    if len(fen.split()) != 6:
        raise LabelFormatError(f"FEN needs 6 fields: {fen!r}")
    moves = []
    for item in rest.split():
        m, _, s = item.partition("=")
        if not _UCI.match(m) or not _SCORE.match(s):
            raise LabelFormatError(f"bad item {item!r}")
        moves.append((m, s))
    if not moves:
        raise LabelFormatError("no moves")
    return fen, moves


def read_file(path: str) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Every well-formed record of a ``.tsv.gz`` label file (malformed lines are skipped)."""
    with gzip.open(path, "rt") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                yield parse_line(line)
            except LabelFormatError:
                continue


def gzip_bytes(lines: list[str]) -> bytes:
    """Deterministic gzip (mtime 0) of the lines joined with newlines."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(("\n".join(lines) + "\n").encode() if lines else b"")
    return buf.getvalue()


def _atomic_write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def file_sha256(path: str) -> str:
    """Hex SHA-256 of the file at ``path`` (read in 1 MB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclasses.dataclass
class ShardInfo:
    """Manifest record of one shard."""

    file: str
    sha256: str
    positions: int
    moves: int
    sources: dict
    stockfish: dict
    core_seconds: float | None
    written: str


class LabelStore:
    """A folder of label shards with a manifest (see the module docstring)."""

    def __init__(self, root: str, prefix: str = "glimpse"):
        self.root, self.prefix = root, prefix
        os.makedirs(root, exist_ok=True)
        self.shards: list[ShardInfo] = []
        mp = os.path.join(root, MANIFEST)
        if os.path.exists(mp):
            with open(mp) as f:
                self.shards = [ShardInfo(**s) for s in json.load(f).get("shards", [])]
        self._adopt_orphans()

    # ------------------------------------------------------------------ reading
    def files(self) -> list[str]:
        """Shard paths in manifest order."""
        return [os.path.join(self.root, s.file) for s in self.shards]

    def totals(self) -> dict:
        known = [s.core_seconds for s in self.shards if s.core_seconds is not None]
        return {"shards": len(self.shards), "positions": sum(s.positions for s in self.shards),
                "moves": sum(s.moves for s in self.shards), "core_seconds": round(sum(known), 1)}

    def verify(self) -> list[str]:
        """Problems found (missing file, checksum mismatch, over-size shard); empty when all is well."""
        out = []
        for s in self.shards:
            p = os.path.join(self.root, s.file)
            if not os.path.exists(p):
                out.append(f"{s.file}: missing")
            elif file_sha256(p) != s.sha256:
                out.append(f"{s.file}: sha256 mismatch")
            elif os.path.getsize(p) > MAX_SHARD_BYTES:
                out.append(f"{s.file}: over {MAX_SHARD_BYTES} bytes")
        return out

    # ------------------------------------------------------------------ writing
    def next_name(self) -> str:
        used = {s.file for s in self.shards} | {os.path.basename(p) for p in glob.glob(os.path.join(self.root, "*.tsv.gz"))}
        n = 0
        while f"{self.prefix}-{n:05d}.tsv.gz" in used:
            n += 1
        return f"{self.prefix}-{n:05d}.tsv.gz"

    def add(self, records: list[tuple[str, str, list[tuple[str, str]]]], stockfish: dict,
            core_seconds: float | None) -> list[ShardInfo]:
        """Writes ``records`` (``(source, fen, moves)``) as one or more shards of at most 16 MB each, then
        the manifest; returns the new shard records. Lines that fail ``format_line`` are dropped."""
        lines, sources = [], []
        for src, fen, moves in records:
            try:
                lines.append(format_line(fen, moves))
                sources.append(src)
            except LabelFormatError:
                continue
        if not lines:
            return []
        # Split so that every shard stays well under the size limit (gzip text is ~8 bytes per move).
        parts, start, est = [], 0, 0
        for i, ln in enumerate(lines):
            est += len(ln) // 3
            if est > MAX_SHARD_BYTES // 2:
                parts.append((start, i + 1))
                start, est = i + 1, 0
        if start < len(lines):
            parts.append((start, len(lines)))
        total_moves = sum(ln.count("=") for ln in lines)
        new = []
        for a, b in parts:
            chunk = lines[a:b]
            data = gzip_bytes(chunk)
            if len(data) > MAX_SHARD_BYTES:
                raise RuntimeError("shard over the size limit")  # cannot happen with the split above
            name = self.next_name()
            path = os.path.join(self.root, name)
            _atomic_write(path, data)
            moves = sum(ln.count("=") for ln in chunk)
            srcs: dict[str, int] = {}
            for s in sources[a:b]:
                srcs[s] = srcs.get(s, 0) + 1
            cost = None if core_seconds is None else round(core_seconds * moves / max(total_moves, 1), 1)
            info = ShardInfo(name, hashlib.sha256(data).hexdigest(), len(chunk), moves, srcs, dict(stockfish), cost,
                             time.strftime("%Y-%m-%dT%H:%M:%S"))
            self.shards.append(info)
            new.append(info)
        self._write_manifest()
        return new

    def _write_manifest(self) -> None:
        body = {"format": "FEN<TAB>move=score ... (every legal move; cp from the mover's view or M<n>/M-<n>)",
                "totals": self.totals(), "shards": [dataclasses.asdict(s) for s in self.shards]}
        _atomic_write(os.path.join(self.root, MANIFEST), (json.dumps(body, indent=1) + "\n").encode())

    def _adopt_orphans(self) -> None:
        """Shards on disk but not in the manifest (a kill between the two writes) join it, cost unknown;
        leftover ``.tmp`` files are removed."""
        for tmp in glob.glob(os.path.join(self.root, "*.tmp")):
            os.remove(tmp)
        listed = {s.file for s in self.shards}
        orphans = sorted(os.path.basename(p) for p in glob.glob(os.path.join(self.root, f"{self.prefix}-*.tsv.gz"))
                         if os.path.basename(p) not in listed)
        for name in orphans:
            path = os.path.join(self.root, name)
            recs = list(read_file(path))
            self.shards.append(ShardInfo(name, file_sha256(path), len(recs), sum(len(m) for _, m in recs),
                                         {"unknown": len(recs)}, {}, None, time.strftime("%Y-%m-%dT%H:%M:%S")))
        if orphans:
            self._write_manifest()


def label_files(shared: str | None, store_root: str | None) -> list[str]:
    """Every label file to train from: ``<shared>/data/labels/*.tsv.gz`` (all of them: the folder grows),
    then the store's shards in manifest order."""
    files = sorted(glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz"))) if shared else []
    if store_root and os.path.isdir(store_root):
        files += LabelStore(store_root).files()
    return files


def known_keys(files: Iterable[str]) -> set[str]:
    """Deduplication keys (first four FEN fields) of every position in ``files``."""
    keys: set[str] = set()
    for path in files:
        with gzip.open(path, "rt") as f:
            for line in f:
                fen = line.split("\t", 1)[0]
                if fen.strip():
                    keys.add(position_key(fen))
    return keys
