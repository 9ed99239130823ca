"""The campaign's train step and a labelling burst on a remote machine that has only what it is sent.

The GPU machine this targets starts bare, reaches nothing outside itself and receives at most
64 MiB of working tree per call. The campaign's own train phase reads the label files (68 MB of gzip text
for 533k positions) and tokenises them with python-chess; that neither fits nor is quick there. So:

* ``pack`` (here) writes the campaign's dataset as tokenised arrays, each an LZMA-compressed ``.npy``
  (``states`` uint8 [P, 77], ``val`` bool [P], ``counts`` uint8 [P] (labelled moves per position),
  ``row_action`` int16 [N], ``row_p`` float16 [N] (win probability), ``row_key`` float32 [N] (Stockfish
  order; validation rows only, 0 elsewhere: training never reads it)), about 78 bytes a position. The
  positions, in a seeded random order, are cut into slices (``slice-NN/``, ``--slice-positions`` each, ~31 MB
  for 400k), each a uniform sample of the whole and small enough for one call. Beside them: the start net
  (``start.onnx``), the trainer configuration (``config.json``, with ``pad_moves`` set for the whole
  dataset), python-chess (``py/``) and, optionally, FENs to label (``fens.txt``).
* ``train`` (there) trains from ``start.onnx`` (or resumes ``<work>/ckpt.pkl``) with the campaign's
  trainer and loss, for a wall-clock budget whose last ``--decay-frac`` decays the learning rate
  (warmup-stable-decay, as ``campaign.decay_scale``), exporting the EMA weights as ONNX every
  ``--snapshot-minutes`` to ``<work>/out/``. It starts on the slices it has; slices that later calls put in
  ``--more DIR`` join the dataset within seconds of landing, so the GPU trains while the rest of the data
  is still on its way.
* ``label`` (there) labels ``fens.txt`` and then Stockfish self-play positions with the campaign's
  two-tier scheme on a process pool (``--stockfish`` is a carried binary), writing shards of label lines
  with their source in front (``source<TAB>FEN<TAB>move=score …``, gzip) and ``label-summary.json``
  (core-seconds, settings) every few minutes.
* ``import`` (here, with the campaign stopped: its ``LabelStore`` holds the manifest in memory) adds such
  shards to the label store, dropping positions already labelled (first four FEN fields).

Held-out evaluation, gating and shipping stay here (``make quantize``, ``make sprt-candidate``): a
snapshot is a candidate like any campaign cycle's. ``training/CAMPAIGN.md`` has the commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import gzip
import io
import json
import lzma
import multiprocessing as mp
import os
import shutil
import threading
import time

import chess
import numpy as np

from . import labelstore, raylabel
from .campaign_config import CAMPAIGN_MODEL, TRAIN_BATCH_KEY, TRAIN_STEP_KEY, CampaignConfig, decay_scale
from .campaign_positions import epd_source, take_new
from .chessdata import bucket_of
from .data import MemDataset, usable_cpus
from .trainloop import log_line

# The trainer (kinds.multi_action_value, campaign_train, onnx_import: ONNX and JAX) is imported inside
# ``train`` and ``pack`` only: ``label`` runs on a bare machine's python3 with numpy and the carried
# python-chess, and JAX must not load before ``main`` sets its matmul precision.

ARRAYS = ("states", "val", "counts", "row_action", "row_p", "row_key")


# ---------------------------------------------------------------------------------------------- pack
def pack_arrays(ds) -> dict[str, np.ndarray]:
    """The compact arrays of a ``data.MemDataset`` (see the module docstring for dtypes and shapes).
    Raises ``ValueError`` when a position has more than 255 labelled moves (``counts`` is uint8)."""
    counts = np.bincount(ds.row_pos, minlength=len(ds.states))
    if len(counts) and counts.max() > 255:
        raise ValueError(f"a position has {counts.max()} labelled moves; counts is uint8")
    return {"states": np.ascontiguousarray(ds.states, np.uint8), "val": np.asarray(ds.val, bool),
            "counts": counts.astype(np.uint8), "row_action": np.asarray(ds.row_action, np.int16),
            "row_p": np.asarray(ds.row_p, np.float16),
            "row_key": np.where(ds.val[ds.row_pos], ds.row_key, 0.0).astype(np.float32)}


def slice_arrays(arrays: dict[str, np.ndarray], slice_positions: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """``arrays`` (``pack_arrays``) cut into slices of ``slice_positions`` positions each (the last one
    shorter), the positions in a seeded random order, so that every slice is a uniform sample of the whole
    and a trainer that has only some of them sees the same distribution. Each position keeps its rows."""
    counts = arrays["counts"].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    order = np.random.default_rng(seed).permutation(len(counts))
    out = []
    for lo in range(0, len(order), max(1, slice_positions)):
        idx = order[lo:lo + max(1, slice_positions)]
        c = counts[idx]
        rows = np.repeat(starts[idx] - np.concatenate([[0], np.cumsum(c)[:-1]]), c) + np.arange(int(c.sum()))
        out.append({k: (a[idx] if k in ("states", "val", "counts") else a[rows]) for k, a in arrays.items()})
    return out


def _array_files(d: str) -> bool:
    return all(os.path.exists(os.path.join(d, f"{k}.npy.xz")) for k in ARRAYS)


def slice_dirs(*dirs: str | None) -> list[str]:
    """The complete slice folders (``slice-*`` with every array file) directly under ``dirs``, by name."""
    found = [os.path.join(d, n) for d in dirs if d and os.path.isdir(d) for n in os.listdir(d) if n.startswith("slice-")]
    return sorted((p for p in found if _array_files(p)), key=os.path.basename)


#: Bytes of ``.npy`` a separate xz stream holds: the streams are compressed on every CPU at once (LZMA lets
#: go of the GIL) and written one after the other, which ``lzma.decompress`` (and ``xz -d``) read as one file.
XZ_STREAM_BYTES = 16 << 20


def _write_array(path: str, a: np.ndarray, preset: int = 6, workers: int | None = None) -> None:
    """``a`` as an LZMA-compressed ``.npy`` at ``path`` (written whole or not at all), in streams of
    ``XZ_STREAM_BYTES`` compressed on ``workers`` threads (default: one a CPU)."""
    from concurrent.futures import ThreadPoolExecutor

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    raw = buf.getbuffer()
    chunks = [raw[i:i + XZ_STREAM_BYTES] for i in range(0, len(raw), XZ_STREAM_BYTES)]
    workers = workers or usable_cpus()
    with ThreadPoolExecutor(max(1, min(workers, len(chunks)))) as ex:
        streams = list(ex.map(lambda c: lzma.compress(c, preset=preset), chunks))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        for s in streams:
            f.write(s)
    os.replace(tmp, path)


def _read_array(path: str) -> np.ndarray:
    with open(path, "rb") as f:
        return np.load(io.BytesIO(lzma.decompress(f.read())), allow_pickle=False)


class PackedDataset:
    """A packed dataset (``pack``) with the attributes the one-pass trainer reads from ``data.MemDataset``:
    ``states``, ``val``, ``row_pos``, ``row_action``, ``row_p`` (float32), ``row_key``, ``row_bucket``,
    ``train_rows``, ``val_rows``; built from one or more array sets (a flat pack folder, or its slices),
    concatenated in order. ``grown`` gives the dataset with slices that arrived later. Each part's own
    conversions (win probability to float32 and to its bucket) are made once, so a grown dataset costs little
    more than copying the arrays. Raises ``FileNotFoundError`` when an array file is missing."""

    def __init__(self, arrays: dict[str, np.ndarray] | list[dict[str, np.ndarray]], loaded: set[str] | None = None):
        self.parts = [self._prepared(p) for p in ([arrays] if isinstance(arrays, dict) else arrays)]
        self.loaded: set[str] = set(loaded or ())
        self._p_values_index = None
        cat = {k: np.concatenate([p[k] for p in self.parts])
               for k in ("states", "val", "counts", "row_action", "row_p", "row_key", "row_bucket")}
        self.states, self.val, self.row_action, self.row_key = cat["states"], cat["val"], cat["row_action"], cat["row_key"]
        self.row_p, self.row_bucket = cat["row_p"], cat["row_bucket"]
        self.counts = cat["counts"].astype(np.int64)
        self.row_pos = np.repeat(np.arange(len(self.counts), dtype=np.int32), self.counts)
        is_val_row = np.repeat(self.val, self.counts)
        self.train_rows = np.nonzero(~is_val_row)[0]
        self.val_rows = np.nonzero(is_val_row)[0]

    @staticmethod
    def _prepared(part: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if "row_bucket" in part:  # a part of an earlier dataset: converted already
            return part
        p16 = np.asarray(part["row_p"], np.float16)
        p = p16.astype(np.float32)
        return {**part, "row_p": p, "row_p16": p16, "row_bucket": bucket_of(p.astype(np.float64)).astype(np.uint8)}

    @staticmethod
    def _read(d: str) -> dict[str, np.ndarray]:
        return {k: _read_array(os.path.join(d, f"{k}.npy.xz")) for k in ARRAYS}

    @classmethod
    def load(cls, pack_dir: str, more: str | None = None) -> "PackedDataset":
        """The arrays directly in ``pack_dir`` (a pack written whole) and every complete slice in ``pack_dir``
        and ``more``; ``FileNotFoundError`` when there is neither."""
        parts, names = ([cls._read(pack_dir)] if _array_files(pack_dir) else []), []
        for d in slice_dirs(pack_dir, more):
            if os.path.basename(d) not in names:
                parts.append(cls._read(d))
                names.append(os.path.basename(d))
        if not parts:
            raise FileNotFoundError(f"{pack_dir}: no pack arrays and no complete slice-* folder")
        return cls(parts, set(names))

    def waiting(self, *dirs: str | None) -> list[str]:
        """Complete slice folders under ``dirs`` not loaded yet (a slice's name is loaded once, wherever it
        lands)."""
        out: dict[str, str] = {}
        for d in slice_dirs(*dirs):
            out.setdefault(os.path.basename(d), d)
        return [d for n, d in sorted(out.items()) if n not in self.loaded]

    def grown(self, slice_folders: list[str]) -> "PackedDataset":
        """A new dataset: this one's positions, then those of ``slice_folders`` (``waiting``)."""
        return PackedDataset(self.parts + [self._read(d) for d in slice_folders],
                             self.loaded | {os.path.basename(d) for d in slice_folders})

    def p_values_index(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, index)`` as ``np.unique(row_p, return_inverse=True)`` gives them (distinct win probabilities
        ascending, float32; each row's int32 position among them), in linear time: the packed values are float16,
        whose bit patterns sort as their values for p ≥ 0. Cached."""
        if self._p_values_index is None:
            codes = np.concatenate([p["row_p16"] for p in self.parts]).view(np.uint16)
            if len(codes) and codes.max() >= 0x8000:  # a negative value or -0.0: not a win probability's order
                values, index = np.unique(self.row_p, return_inverse=True)
                self._p_values_index = (values, index.astype(np.int32).reshape(-1))
            else:
                present = np.bincount(codes, minlength=1 << 16) > 0
                rank = (np.cumsum(present) - 1).astype(np.int32)
                values = np.flatnonzero(present).astype(np.uint16).view(np.float16).astype(np.float32)
                self._p_values_index = (values, rank[codes])
        return self._p_values_index


class SliceFeeder:
    """Watches ``dirs`` on a thread of its own for slices (``PackedDataset.waiting``) and builds the grown
    dataset there: reading (LZMA lets go of the GIL), concatenating, its ``PositionData`` and target index, so
    that the training loop only swaps it in (``take``). A slice that cannot be read is reported and skipped."""

    def __init__(self, ds: PackedDataset, dirs: list[str | None], log=print, poll: float = 5.0):
        from .position_batches import PositionData

        self._position_data = PositionData
        self.ds, self.dirs, self.log, self.poll = ds, dirs, log, poll
        self.ready: tuple | None = None
        self.bad: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="slice-feeder", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            if self.ready is not None:
                continue
            new = [d for d in self.ds.waiting(*self.dirs) if d not in self.bad]
            if not new:
                continue
            t0 = time.time()
            read: dict[str, dict] = {}
            for d in new:
                try:
                    read[os.path.basename(d)] = PackedDataset._read(d)
                except (OSError, ValueError, lzma.LZMAError) as e:
                    self.log(f"data: slice {d} not read ({e}); skipped")
                    self.bad.add(d)
            if not read:
                continue
            grown = PackedDataset(self.ds.parts + list(read.values()), self.ds.loaded | set(read))
            grown.p_values_index()
            self.ready = (grown, self._position_data(grown), len(read), time.time() - t0)

    def take(self) -> tuple | None:
        """``(dataset, PositionData, slices added, seconds it took)`` once a grown dataset is ready, else None."""
        r = self.ready
        if r is not None:
            self.ds = r[0]
            self.ready = None
        return r

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


#: Positions a pack slice holds by default: 31.3 MB at the store's 78 bytes a position (4,867,908 positions packed
#: to 9 slices of 600,000 in 381 MB, 2026-11-29), so that a slice fits one call beside both arms' start nets (14 + 15
#: MB) or beside lab.sh's Stockfish (22 MB) and FENs.
SLICE_POSITIONS = 400_000


def pack(out: str, shared: str, store: str, cache: str, start_onnx: str, config: dict, fens: list[str] | None,
         log=print, slice_positions: int = SLICE_POSITIONS) -> dict:
    """Writes the pack folder ``out`` (module docstring): the dataset as ``slice-NN/`` folders of
    ``slice_positions`` positions; returns its summary (positions, moves, slices, bytes)."""
    os.makedirs(out, exist_ok=True)
    ds = MemDataset(labelstore.label_files(shared, store), cache, log)
    arrays = pack_arrays(ds)
    for name in os.listdir(out):  # what an earlier pack left: its slices, or the arrays of a pack written whole
        if name.startswith("slice-"):
            shutil.rmtree(os.path.join(out, name))
        elif name.endswith(".npy.xz") or ".npy.xz.part-" in name:
            os.remove(os.path.join(out, name))
    slices = slice_arrays(arrays, slice_positions)
    for i, part in enumerate(slices):
        d = os.path.join(out, f"slice-{i:02d}")
        os.makedirs(d, exist_ok=True)
        for k, a in part.items():
            _write_array(os.path.join(d, f"{k}.npy.xz"), a)
    if config.get("pad_moves", -1) <= 0:  # one batch width for the whole dataset, whichever slices a run has
        config = {**config, "pad_moves": -(-max(16, int(arrays["counts"].max(initial=0))) // 16) * 16}
    shutil.copyfile(start_onnx, os.path.join(out, "start.onnx"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    py = os.path.join(out, "py")
    shutil.rmtree(py, ignore_errors=True)
    shutil.copytree(os.path.dirname(chess.__file__), os.path.join(py, "chess"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    if fens is not None:
        with open(os.path.join(out, "fens.txt"), "w") as f:
            f.writelines(x + "\n" for x in fens)
    size = sum(os.path.getsize(os.path.join(dp, n)) for dp, _, ns in os.walk(out) for n in ns)
    summary = {"positions": int(len(ds.states)), "moves": int(len(ds.row_pos)), "slices": len(slices), "bytes": size,
               "start": os.path.basename(start_onnx), "fens": 0 if fens is None else len(fens)}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


# ---------------------------------------------------------------------------------------------- train
#: Seconds ``train`` waits for a first slice in ``more`` when its pack folder has none.
FIRST_SLICE_WAIT = 900.0


def train(pack_dir: str, work: str, seconds: float, overrides: dict, snapshot_minutes: float,
          decay_frac: float, decay_to: float, log=print, start_net: str = "start.onnx", more: str | None = None) -> dict:
    """Trains the pack's net ``start_net`` (a file in ``pack_dir``: ``start.onnx``, or ``start-b.onnx`` for a
    second arm trained beside it) for ``seconds`` of wall clock (module docstring) on the pack's data and the
    slices in ``more``, adding slices that land in either while it runs; returns ``{"step", "snapshots",
    "positions"}`` (positions: the dataset's size at the end)."""
    from .campaign_train import StartNetTrainer
    from .kinds.multi_action_value import MAVTrainConfig, export, verify, with_start_architecture
    from .onnx_import import import_onepass

    t_start = time.time()
    while True:  # a pack whose slices all travel in later calls: wait for the first (at most FIRST_SLICE_WAIT s)
        try:
            ds = PackedDataset.load(pack_dir, more)
            break
        except FileNotFoundError:
            if not more or time.time() - t_start > FIRST_SLICE_WAIT:
                raise
            time.sleep(2.0)
    log(f"data: {len(ds.states)} positions, {len(ds.row_pos)} labelled moves, {len(ds.loaded)} slices "
        f"({time.time() - t_start:.1f} s)")
    cfg = {**json.load(open(os.path.join(pack_dir, "config.json"))),
           **{k: v for k, v in overrides.items() if not (k == "pad_moves" and v < 0)}}
    if cfg.get("pad_moves", -1) < 0:  # one batch shape for the whole run: the dataset's most moves, rounded up to 16
        most = int(np.bincount(ds.row_pos).max()) if len(ds.row_pos) else 16
        cfg["pad_moves"] = -(-most // 16) * 16
        log(f"train: moves padded to {cfg['pad_moves']} in every batch (the dataset's most: {most})")
    start = os.path.join(pack_dir, start_net)
    # The start net's shapes win over the pack's config.json: a net grown deeper (grow.py) trains as it is.
    tcfg = with_start_architecture(MAVTrainConfig(**cfg), import_onepass(start)[1])
    sg = f", smolgen G{tcfg.smolgen}" if tcfg.smolgen else ""
    log(f"train: {tcfg.layers} layers, width {tcfg.dim}{sg} (the start net's)")

    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    tr = StartNetTrainer(tcfg, work, ds, log, start)
    feeder = SliceFeeder(ds, [pack_dir, more], log)
    t0 = time.time()
    snaps: list[str] = []
    step = 0
    seg_end, done = t0, seconds <= 0
    while not done:
        if time.time() >= seg_end:
            seg_end = min(t0 + seconds, time.time() + snapshot_minutes * 60)
        st = tr.run(lambda: time.time() >= seg_end or feeder.ready is not None,
                    lr_scale=lambda: decay_scale(time.time() - t0, seconds, decay_frac, decay_to))
        step = st["step"]
        got = feeder.take()
        if got:
            ds, pd, n, took = got
            tr.set_data(ds, pd)
            log(f"data: +{n} slices at step {step}: {len(ds.states)} positions, {len(ds.row_pos)} labelled moves "
                f"(built in {took:.1f} s beside the training)")
        done = time.time() - t0 >= seconds or step >= tcfg.steps
        if not done and time.time() < seg_end:
            continue  # new data, not a snapshot's time yet
        params = {k: np.asarray(v, np.float32) for k, v in st["ema"].items()}
        path = os.path.join(work, "out", f"remote-step{step:07d}.onnx")
        export(params, tr.mcfg, path, description=f"remote train step {step} batch {tcfg.batch}",
               extra_meta={TRAIN_STEP_KEY: str(step), TRAIN_BATCH_KEY: str(tcfg.batch)})
        tokens, actions, _, _ = tr.pd.batch((tr.pd.val_pos if len(tr.pd.val_pos) else tr.pd.train_pos)[:8])
        import jax  # after main() set JAX_DEFAULT_MATMUL_PRECISION

        with jax.default_matmul_precision("highest"):  # the check in full float32 whatever the step ran at
            diff = verify(params, tr.mcfg, path, tokens, actions)
        if diff > 1e-3:
            raise RuntimeError(f"exported ONNX differs from JAX by {diff}")
        shutil.copyfile(path, os.path.join(work, "out", "latest.onnx"))
        snaps.append(path)
        log(f"snapshot: {path} (step {step}, {step * tcfg.batch} position-passes, {time.time() - t0:.0f} s, "
            f"{len(ds.states)} positions)")
    feeder.close()
    return {"step": step, "snapshots": snaps, "positions": int(len(ds.states))}


# ---------------------------------------------------------------------------------------------- label
def _label_job(job):
    kind, payload, scheme, stockfish = job
    if kind == "fens":
        r = raylabel.label_chunk(payload, scheme, stockfish, 0)
        return {"records": [("device-popular", f, m) for f, m in r["records"]], "core_seconds": r["core_seconds"]}
    sp = raylabel.selfplay_chunk(payload, stockfish, 0)
    fens = sorted(set(sp["fens"]))
    r = raylabel.label_chunk(fens, scheme, stockfish, 0)
    return {"records": [("device-selfplay", f, m) for f, m in r["records"]],
            "core_seconds": r["core_seconds"] + sp["core_seconds"]}


def label(fens: list[str], stockfish: str, workers: int, seconds: float, out: str, seed0: int,
          scheme_args: dict, chunk: int = 24, flush_minutes: float = 2.0, log=print) -> dict:
    """Labels ``fens`` then self-play positions (game seeds from ``seed0``) on ``workers`` processes for
    ``seconds``; writes ``out/device-NN.tsv.gz`` shards (lines ``source<TAB>FEN<TAB>move=score …``) and
    ``out/label-summary.json``; returns the summary."""
    scheme = raylabel.LabelScheme(**scheme_args)
    os.makedirs(out, exist_ok=True)
    jobs = [("fens", fens[i:i + chunk], scheme, stockfish) for i in range(0, len(fens), chunk)]

    def gen():
        yield from jobs
        s = seed0
        while True:
            yield ("selfplay", [s], scheme, stockfish)
            s += 1

    t0 = time.time()
    pending: list[str] = []
    summary = {"positions": 0, "core_seconds": 0.0, "shards": [], "seed0": seed0,
               "stockfish": raylabel.stockfish_name(stockfish), "scheme": scheme_args, "workers": workers}
    last = time.time()

    def flush():
        if pending:
            name = f"device-{len(summary['shards']):02d}.tsv.gz"
            with open(os.path.join(out, name + ".tmp"), "wb") as f:
                f.write(gzip.compress("".join(pending).encode(), 6))
            os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
            summary["shards"].append(name)
            pending.clear()
        summary["seconds"] = round(time.time() - t0, 1)
        with open(os.path.join(out, "label-summary.json"), "w") as f:
            json.dump(summary, f, indent=1)

    ctx = mp.get_context("fork")
    with ctx.Pool(workers) as pool:
        it = gen()
        inflight = []
        while True:
            while len(inflight) < 2 * workers and time.time() - t0 < seconds:
                inflight.append(pool.apply_async(_label_job, (next(it),)))
            if not inflight:
                break
            done = [r for r in inflight if r.ready()]
            if not done:
                time.sleep(0.2)
                if time.time() - t0 > seconds + 120:  # a stuck chunk: give up on what is in flight
                    break
                continue
            for r in done:
                inflight.remove(r)
                try:
                    res = r.get()
                except Exception as e:  # noqa: BLE001 - a lost chunk costs only its positions
                    log(f"label: a chunk was lost: {e!r}"[:300])
                    continue
                for src, fen, moves in res["records"]:
                    pending.append(f"{src}\t{labelstore.format_line(fen, moves)}\n")
                summary["positions"] += len(res["records"])
                summary["core_seconds"] += res["core_seconds"]
            if time.time() - last > flush_minutes * 60:
                flush()
                last = time.time()
                log(f"label: {summary['positions']} positions in {time.time() - t0:.0f} s")
        pool.terminate()
    flush()
    return summary


# ---------------------------------------------------------------------------------------------- import
def read_device_shard(path: str):
    """``(source, fen, moves)`` records of a ``label`` shard; malformed lines are skipped."""
    with gzip.open(path, "rt") as f:
        for line in f:
            src, _, rest = line.rstrip("\n").partition("\t")
            if not rest:
                continue
            try:
                fen, moves = labelstore.parse_line(rest)
            except labelstore.LabelFormatError:
                continue
            yield src, fen, moves


def import_shards(paths: list[str], summary: dict, store_root: str, shared: str, log=print) -> dict:
    """Adds the records of device shards to the label store, dropping positions already labelled and
    repeats; the core-seconds are shared out by positions kept. Returns ``{"kept", "dropped"}``."""
    store = labelstore.LabelStore(store_root)
    known = labelstore.known_keys(labelstore.label_files(shared, store_root))
    keep, dropped = [], 0
    for p in paths:
        for src, fen, moves in read_device_shard(p):
            k = labelstore.position_key(fen)
            if k in known:
                dropped += 1
                continue
            known.add(k)
            keep.append((src, fen, moves))
    if not keep:
        return {"kept": 0, "dropped": dropped}
    total = max(1, summary.get("positions", len(keep)))
    cost = summary.get("core_seconds", 0.0) * len(keep) / total
    settings = {**raylabel.LabelScheme(**summary["scheme"]).settings(summary["stockfish"]),
                "where": "a GPU machine's CPU cores (remote.py label)"}
    for s in store.add(keep, settings, cost):
        log(f"store: + {s.file} ({s.positions} positions, {s.moves} moves)")
    return {"kept": len(keep), "dropped": dropped}


# ---------------------------------------------------------------------------------------------- CLI
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--out", required=True)
    p.add_argument("--shared", default="../shared")
    p.add_argument("--store", default="data/labels")
    p.add_argument("--cache", default="training/data/cache")
    p.add_argument("--start", required=True, help="ONNX to start from (the campaign's best)")
    p.add_argument("--run-config", default="training/runs/campaign-l6d128/config.json")
    p.add_argument("--fens", type=int, default=0, help="this many unlabelled FENs to carry for `label`")
    p.add_argument("--fens-seed", type=int, default=11, help="shuffle seed of the popular/endgame FENs taken")
    p.add_argument("--slice-positions", type=int, default=SLICE_POSITIONS,
                   help="positions a slice-NN/ folder holds (each a uniform sample; one call carries one or more)")
    t = sub.add_parser("train")
    t.add_argument("--pack", required=True)
    t.add_argument("--work", required=True)
    t.add_argument("--seconds", type=float, required=True)
    t.add_argument("--batch", type=int, default=512)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--warmup", type=int, default=300)
    t.add_argument("--ema", type=float, default=0.999)
    t.add_argument("--snapshot-minutes", type=float, default=3.0)
    t.add_argument("--decay-frac", type=float, default=0.25)
    t.add_argument("--decay-to", type=float, default=0.05)
    t.add_argument("--step-precision", choices=("highest", "default"), default="highest",
                   help="float32 matmul precision of the training step: highest (full float32) or default "
                        "(JAX's: TF32 on a GPU); the export check always runs at highest")
    t.add_argument("--start-net", default="start.onnx", help="the pack's file to start from (start-b.onnx: arm B)")
    t.add_argument("--more", default=None,
                   help="a folder where later calls put more slice-NN/ folders; they join the data as they land")
    t.add_argument("--pad-moves", type=int, default=-1,
                   help="pad every batch to this many moves (-1: the pack's config.json, which pack sets to the dataset's most; "
                        "0: each batch's most)")
    lb = sub.add_parser("label")
    lb.add_argument("--pack", required=True)
    lb.add_argument("--stockfish", required=True)
    lb.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    lb.add_argument("--seconds", type=float, required=True)
    lb.add_argument("--out", required=True)
    lb.add_argument("--seed0", type=int, default=10_000_000)
    im = sub.add_parser("import")
    im.add_argument("dir", help="folder with device-NN.tsv.gz shards and label-summary.json")
    im.add_argument("--store", default="data/labels")
    im.add_argument("--shared", default="../shared")
    a = ap.parse_args(argv)
    # On a GPU, JAX's default float32 matmul precision is TF32: the exported ONNX then differs from JAX by
    # ~0.01 (measured on an H100), over the export check's 1e-3, so the check always runs at "highest" (train()).
    # The step runs at full float32 too unless `train --step-precision default` (TF32 on a GPU: faster once the
    # step is GPU-bound rather than bound by the host thread that builds batches; no effect on a CPU). Set
    # before anything imports jax, which reads it once.
    if getattr(a, "step_precision", "highest") == "highest":
        os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")

    if a.cmd == "pack":
        fens = None
        if a.fens:
            known = labelstore.known_keys(labelstore.label_files(a.shared, a.store))
            pos = os.path.join(a.shared, "data", "positions")
            # A seed of its own: the campaign walks these files in seed 7's order from the start. Popular
            # positions first; endgame starts once every popular one is labelled.
            pool = [f for name in ("popularpos_lichess_v3.epd", "endgames.epd")
                    for f in epd_source(os.path.join(pos, name), a.fens_seed)[::-1]]
            fens, _ = take_new(pool, 0, a.fens, known)
        if os.path.exists(a.run_config):
            cfg = json.load(open(a.run_config))
        else:
            # A fresh clone has no run folder until `make campaign` trains once: the campaign's own
            # configuration (train() takes the shapes from the start net anyway).
            from .kinds.multi_action_value import MAVTrainConfig

            cfg = dataclasses.asdict(MAVTrainConfig(**CAMPAIGN_MODEL))
            log_line(f"pack: no {a.run_config}: the campaign's trainer configuration")
        log_line(f"pack: {pack(a.out, a.shared, a.store, a.cache, a.start, cfg, fens, log_line, a.slice_positions)}")
    elif a.cmd == "train":
        over = {"batch": a.batch, "micro": 1, "lr": a.lr, "warmup": a.warmup, "ema": a.ema,
                "ckpt_seconds": 120.0, "eval_every": 500, "pad_moves": a.pad_moves}
        r = train(a.pack, a.work, a.seconds, over, a.snapshot_minutes, a.decay_frac, a.decay_to, log_line,
                  a.start_net, a.more)
        log_line(f"train: done at step {r['step']}")
    elif a.cmd == "label":
        fens_path = os.path.join(a.pack, "fens.txt")
        fens = [x for x in open(fens_path).read().split("\n") if x.strip()] if os.path.exists(fens_path) else []
        c = CampaignConfig()
        r = label(fens, a.stockfish, a.workers, a.seconds, a.out, a.seed0,
                  {"name": c.scheme, "depth": c.depth, "top_k": c.top_k, "shallow_depth": c.shallow_depth},
                  log=log_line)
        log_line(f"label: {r['positions']} positions, {r['core_seconds']:.0f} core-s, shards {r['shards']}")
    elif a.cmd == "import":
        summary = json.load(open(os.path.join(a.dir, "label-summary.json")))
        paths = sorted(glob.glob(os.path.join(a.dir, "device-*.tsv.gz")))
        log_line(f"import: {import_shards(paths, summary, a.store, a.shared, log_line)}")


if __name__ == "__main__":
    main()
