"""Labelled-position reader and the precomputed training arrays.

Input format (``shared/data/labels/*.tsv.gz`` and the campaign's own ``training/data/labels/**/*.tsv.gz`` shards):
one position per line, ``FEN<TAB>move=score move=score ...`` with every legal move; ``score`` is
centipawns from the mover's view or ``M<n>``/``M-<n>``. Win probability by the Lichess formula, mates → 1/0;
bucket = searchsorted(edges, p, 'left').

The dataset (``build_dataset``) is stored as ``.npy`` files in ``training/data/<name>/``:
``states`` uint8 [P, 77] (tokens of python-chess ``board.fen()``), ``val`` bool [P] (≈3 % of positions by
a hash of the first four FEN fields), ``row_pos`` int32 [N], ``row_action`` int16 [N],
``row_p`` float32 [N] (win prob), ``row_bucket`` uint8 [N], ``row_key`` float32 [N] (Stockfish order key:
mates above every cp score, shorter mates first), ``fens`` (canonical FENs, text).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import time

import numpy as np

# position_key and score_key belong to chessdata; readers of label files import them from here as well.
from .chessdata import (MOVE_TO_ACTION, bucket_of, canonical_fen, parse_score, position_key,  # noqa: F401
                        score_key, tokenize)

VAL_PER_MILLE = 30


def held_out_key(key: str) -> bool:
    """Whether a position key (``position_key``: the first four FEN fields) is in the held-out split: the lowest
    ``VAL_PER_MILLE`` per mille of its 8-byte blake2b hash."""
    h = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") % 1000 < VAL_PER_MILLE


def is_validation(fen: str) -> bool:
    """Whether the position of ``fen`` is in the held-out split (``held_out_key``)."""
    return held_out_key(position_key(fen))


def parse_line(line: str):
    """``FEN\\tm=s m=s`` → (fen, [(uci, score_str), ...]); raises ValueError on a malformed line."""
    line = line.rstrip("\n")
    if "\t" not in line:
        raise ValueError("no TAB")
    fen, rest = line.split("\t", 1)
    moves = []
    for item in rest.split():
        m, _, s = item.partition("=")
        if not s:
            raise ValueError(f"bad item {item!r}")
        moves.append((m, s))
    return fen, moves


def encode_line(line: str):
    """One label line → (canonical FEN, 77 tokens, action ids, win probabilities, Stockfish order keys);
    raises ValueError (malformed line or FEN) or KeyError (a move outside the action table)."""
    fen, moves = parse_line(line)
    cfen = canonical_fen(fen)
    return (cfen, tokenize(cfen), [MOVE_TO_ACTION[m] for m, _ in moves], [parse_score(s) for _, s in moves],
            [score_key(s) for _, s in moves])


def label_files(shared: str, extra_dirs: list[str] | None = None) -> list[str]:
    files = sorted(glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz")))
    for d in extra_dirs or []:
        files += sorted(glob.glob(os.path.join(d, "**", "*.tsv.gz"), recursive=True))
    return files


def build_dataset(files: list[str], out_dir: str, max_positions: int = 0, log=print) -> dict:
    """Read label files, dedup positions, tokenize, write the arrays; returns the summary dict."""
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.time()
    seen: set[str] = set()
    states, val, fens = [], [], []
    row_pos, row_action, row_p, row_key = [], [], [], []
    bad = 0
    for path in files:
        with gzip.open(path, "rt") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    cfen, toks, acts, ps, ks = encode_line(line)
                    key = position_key(cfen)
                    if key in seen:
                        continue
                except (ValueError, KeyError):
                    bad += 1
                    continue
                if not acts:
                    continue
                seen.add(key)
                idx = len(states)
                states.append(toks)
                val.append(is_validation(cfen))
                fens.append(cfen)
                row_pos.extend([idx] * len(acts))
                row_action.extend(acts)
                row_p.extend(ps)
                row_key.extend(ks)
                if max_positions and len(states) >= max_positions:
                    break
        if max_positions and len(states) >= max_positions:
            break
    arr = {
        "states": np.asarray(states, np.uint8).reshape(-1, 77),
        "val": np.asarray(val, bool),
        "row_pos": np.asarray(row_pos, np.int32),
        "row_action": np.asarray(row_action, np.int16),
        "row_p": np.asarray(row_p, np.float32),
        "row_key": np.asarray(row_key, np.float32),
    }
    arr["row_bucket"] = bucket_of(arr["row_p"].astype(np.float64)).astype(np.uint8)
    for k, v in arr.items():
        np.save(os.path.join(out_dir, f"{k}.npy"), v)
    with open(os.path.join(out_dir, "fens.txt"), "w") as f:
        f.write("\n".join(fens) + "\n")
    vrows = int(arr["val"][arr["row_pos"]].sum())
    summary = {
        "files": files, "positions": len(states), "rows": len(row_pos), "val_positions": int(arr["val"].sum()),
        "val_rows": vrows, "train_rows": len(row_pos) - vrows, "skipped_lines": bad,
        "seconds": round(time.time() - t0, 1), "max_positions": max_positions,
    }
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    log(f"dataset {out_dir}: {summary['positions']} positions, {summary['rows']} rows "
        f"({summary['val_rows']} validation), {bad} skipped, {summary['seconds']} s")
    return summary


class Dataset:
    """Memory-resident arrays of a built dataset."""

    def __init__(self, d: str):
        self.dir = d
        ld = lambda k: np.load(os.path.join(d, f"{k}.npy"))  # noqa: E731
        self.states = ld("states")
        self.val = ld("val")
        self.row_pos = ld("row_pos")
        self.row_action = ld("row_action")
        self.row_p = ld("row_p")
        self.row_bucket = ld("row_bucket")
        self.row_key = ld("row_key")
        is_val_row = self.val[self.row_pos]
        self.train_rows = np.nonzero(~is_val_row)[0]
        self.val_rows = np.nonzero(is_val_row)[0]
        self.summary = json.load(open(os.path.join(d, "summary.json")))

    def fens(self) -> list[str]:
        return open(os.path.join(self.dir, "fens.txt")).read().split("\n")[: len(self.states)]

    def tokens(self, rows: np.ndarray) -> np.ndarray:
        """AV network input int32 [len(rows), 79]: [0, 77 state tokens, action]."""
        out = np.zeros((len(rows), 79), np.int32)
        out[:, 1:78] = self.states[self.row_pos[rows]]
        out[:, 78] = self.row_action[rows]
        return out


def ensure_dataset(shared: str, out_dir: str, extra_dirs: list[str] | None = None, max_positions: int = 0,
                   log=print) -> Dataset:
    """Build the dataset when missing or when the list of label files changed; then load it."""
    files = label_files(shared, extra_dirs)
    if not files:
        raise FileNotFoundError(f"no label files under {shared}/data/labels")
    sp = os.path.join(out_dir, "summary.json")
    if os.path.exists(sp):
        s = json.load(open(sp))
        if s.get("files") == files and s.get("max_positions", 0) == max_positions:
            return Dataset(out_dir)
    build_dataset(files, out_dir, max_positions, log)
    return Dataset(out_dir)


# ---------------------------------------------------------------------- per-file cache (the campaign's data)
def _cache_path(path: str, cache_dir: str) -> str:
    st = os.stat(path)
    tag = hashlib.blake2b(f"{os.path.abspath(path)}:{st.st_size}:{st.st_mtime_ns}".encode(), digest_size=10).hexdigest()
    return os.path.join(cache_dir, f"{tag}.npz")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else every CPU)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def package_env() -> dict[str, str]:
    """This process's environment with the folder holding ``glimpse_train`` first on ``PYTHONPATH``: for a fresh
    interpreter that imports the package (``python -c``, ``python -m glimpse_train.X``) wherever it runs."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH")) if x))


def warm_cache(files: list[str], cache_dir: str, workers: int | None = None) -> int:
    """Tokenizes the label files that have no entry in ``cache_dir`` yet (``_file_arrays``), on ``workers``
    Python processes (default: the CPUs this process may use; 1 = in this process), the files shared out
    by size. Returns how many files it tokenized. Tokenizing costs about 0.2 ms a position on one core
    (python-chess reads each FEN), so a fresh machine's first pass over millions of positions takes minutes
    on every core it has. The workers are fresh interpreters (``python -c``), not forks of this process
    (which may hold Ray's and JAX's threads) nor multiprocessing's spawn (which re-runs the caller's
    script). Raises ``RuntimeError`` with a worker's last error line when one fails."""
    missing = [f for f in files if not os.path.exists(_cache_path(f, cache_dir))]
    workers = max(1, min(usable_cpus() if workers is None else workers, len(missing)))
    if workers == 1:
        for f in missing:
            _file_arrays(f, cache_dir)
        return len(missing)
    import subprocess
    import sys

    groups: list[list[str]] = [[] for _ in range(workers)]
    load = [0] * workers
    for f in sorted(missing, key=os.path.getsize, reverse=True):
        i = load.index(min(load))
        groups[i].append(f)
        load[i] += os.path.getsize(f)
    env = package_env()
    code = "import sys\nfrom glimpse_train.data import _file_arrays\nfor f in sys.argv[2:]: _file_arrays(f, sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, cache_dir, *g], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for g in groups]
    errors = [err.strip().splitlines()[-1:] for p in procs for err in [p.communicate()[1]] if p.returncode]
    if errors:
        raise RuntimeError(f"tokenizing label files into {cache_dir} failed: {errors}")
    return len(missing)


def _file_arrays(path: str, cache_dir: str) -> dict:
    """Tokenized arrays of one label file, cached in ``cache_dir/<hash of path, size, mtime>.npz``:
    ``states`` uint8 [P, 77], ``keys`` (first four FEN fields, str) [P], ``counts`` int32 [P] (moves per
    position), ``action`` int16 [N], ``p`` float32 [N] (win prob), ``key`` float32 [N] (Stockfish order)."""
    cp = _cache_path(path, cache_dir)
    if os.path.exists(cp):
        z = np.load(cp, allow_pickle=False)
        return {k: z[k] for k in z.files}
    states, keys, counts, act, ps, ks = [], [], [], [], [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                cfen, toks, a, p, k = encode_line(line)
            except (ValueError, KeyError):
                continue
            if not a:
                continue
            states.append(toks)
            keys.append(position_key(cfen))
            counts.append(len(a))
            act.extend(a)
            ps.extend(p)
            ks.extend(k)
    out = {"states": np.asarray(states, np.uint8).reshape(-1, 77), "keys": np.asarray(keys, dtype=str),
           "counts": np.asarray(counts, np.int32), "action": np.asarray(act, np.int16),
           "p": np.asarray(ps, np.float32), "key": np.asarray(ks, np.float32)}
    os.makedirs(cache_dir, exist_ok=True)
    tmp = cp + ".tmp.npz"
    np.savez(tmp, **out)
    os.replace(tmp, cp)
    return out


class MemDataset:
    """The arrays of ``Dataset`` built in memory from label files (first occurrence of a position wins),
    plus ``source`` int16 [P] (index of the file each position came from) and ``files``. Files not yet in
    ``cache_dir`` are tokenized first on ``workers`` processes (``warm_cache``; default every CPU)."""

    def __init__(self, files: list[str], cache_dir: str, log=print, workers: int | None = None):
        t0 = time.time()
        self.files = list(files)
        built = warm_cache(self.files, cache_dir, workers)
        # Peak memory stays near the result's (about 25 bytes a labelled move: 14 M positions with 406 M moves
        # fit in 24 GiB): positions' keys leave as the held-out bit, and each field is joined and freed alone.
        seen: set[str] = set()
        fields: dict[str, list[np.ndarray]] = {f: [] for f in
                                               ("states", "counts", "source", "val", "action", "p", "key")}
        for fi, path in enumerate(self.files):
            a = _file_arrays(path, cache_dir)
            keep = np.zeros(len(a["counts"]), bool)
            for i, k in enumerate(a["keys"].tolist()):
                if k not in seen:
                    seen.add(k)
                    keep[i] = True
            idx = np.flatnonzero(keep)
            rows = np.repeat(keep, a["counts"])  # the labelled moves of the positions kept
            fields["states"].append(a["states"][idx])
            fields["counts"].append(a["counts"][idx])
            fields["source"].append(np.full(len(idx), fi, np.int16))
            fields["val"].append(np.asarray([held_out_key(k) for k in a["keys"][idx].tolist()], bool))
            fields["action"].append(a["action"][rows])
            fields["p"].append(a["p"][rows])
            fields["key"].append(a["key"][rows])
            del a, rows
        del seen
        empty = {"states": np.zeros((0, 77), np.uint8), "counts": np.zeros(0, np.int32),
                 "source": np.zeros(0, np.int16), "val": np.zeros(0, bool), "action": np.zeros(0, np.int16),
                 "p": np.zeros(0, np.float32), "key": np.zeros(0, np.float32)}

        def join(name: str) -> np.ndarray:
            parts = fields.pop(name)
            return np.concatenate(parts) if parts else empty[name]

        self.states, counts, self.source, self.val = join("states"), join("counts"), join("source"), join("val")
        self.row_action, self.row_p, self.row_key = join("action"), join("p"), join("key")
        self.row_pos = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        self.row_bucket = np.empty(len(self.row_p), np.uint8)
        for lo in range(0, len(self.row_p), 1 << 24):  # in slices: bucket_of wants float64 and gives int64
            self.row_bucket[lo:lo + (1 << 24)] = bucket_of(self.row_p[lo:lo + (1 << 24)].astype(np.float64))
        is_val_row = self.val[self.row_pos]
        self.train_rows = np.nonzero(~is_val_row)[0]
        self.val_rows = np.nonzero(is_val_row)[0]
        del is_val_row
        self.summary = {"files": self.files, "positions": int(len(counts)), "rows": int(len(self.row_pos)),
                        "val_positions": int(self.val.sum())}
        log(f"data: {len(counts)} positions, {len(self.row_pos)} labelled moves from {len(files)} files "
            f"({built} tokenized now; {time.time() - t0:.1f} s)")

    def p_values_index(self, chunk: int = 1 << 24) -> tuple[np.ndarray, np.ndarray]:
        """``(values, index)`` as ``np.unique(row_p, return_inverse=True)`` gives them (distinct win probabilities
        ascending, float32; each row's int32 position among them), in slices of ``chunk`` rows: ``np.unique``
        of the whole store's 400 M rows needs about 10 GB beside the dataset, this the int32 index alone."""
        p = self.row_p
        if np.isnan(p).any():
            values, index = np.unique(p, return_inverse=True)
            return values, index.astype(np.int32).reshape(-1)
        values = np.unique(np.concatenate([np.unique(p[lo:lo + chunk]) for lo in range(0, len(p), chunk)]
                                          or [np.zeros(0, p.dtype)]))
        index = np.empty(len(p), np.int32)
        for lo in range(0, len(p), chunk):
            index[lo:lo + chunk] = np.searchsorted(values, p[lo:lo + chunk])
        return values, index

    def tokens(self, rows: np.ndarray) -> np.ndarray:
        """AV network input int32 [len(rows), 79]: [0, 77 state tokens, action]."""
        out = np.zeros((len(rows), 79), np.int32)
        out[:, 1:78] = self.states[self.row_pos[rows]]
        out[:, 78] = self.row_action[rows]
        return out

    def subset_rows(self, positions: np.ndarray) -> np.ndarray:
        """Row ids of the given positions (sorted)."""
        return np.flatnonzero(np.isin(self.row_pos, positions))
