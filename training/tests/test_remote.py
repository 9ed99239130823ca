"""Tests of ``remote.py``: the packed dataset gives the trainer what ``MemDataset`` gives it, a remote
train run exports a snapshot that matches JAX, and device shards enter the label store deduplicated."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os

import numpy as np
import pytest

from glimpse_train import campaign, chessdata, labelstore, remote
from glimpse_train.data import MemDataset

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
D4 = "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1"


def moves_of(fen):
    import chess

    b = chess.Board(fen)
    return [(m.uci(), str(40 - 7 * i)) for i, m in enumerate(b.legal_moves)]


def _dataset(tmp_path, fens):
    a = tmp_path / "a.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(f, moves_of(f)) for f in fens]))
    return MemDataset([str(a)], str(tmp_path / "cache"), log=lambda *_: None)


def test_packed_dataset_round_trips_what_the_trainer_reads(tmp_path):
    ds = _dataset(tmp_path, [START, E4, D4])
    ds.val[:] = [False, True, False]  # one validation position, whatever the key hash says
    arrays = remote.pack_arrays(ds)
    for k, a in arrays.items():
        remote._write_array(str(tmp_path / f"{k}.npy.xz"), a)
    back = remote.PackedDataset.load(str(tmp_path))
    assert np.array_equal(back.states, ds.states) and np.array_equal(back.val, ds.val)
    assert np.array_equal(back.row_pos, ds.row_pos) and np.array_equal(back.row_action, ds.row_action)
    assert np.allclose(back.row_p, ds.row_p, atol=1e-3) and back.row_p.dtype == np.float32
    val_rows = np.flatnonzero(ds.val[ds.row_pos])
    assert np.array_equal(back.val_rows, val_rows) and len(back.train_rows) == len(ds.row_pos) - len(val_rows) > 0
    # the Stockfish order survives on validation rows (action accuracy), and is dropped elsewhere
    assert np.array_equal(back.row_key[val_rows], ds.row_key[val_rows])
    assert not back.row_key[back.train_rows].any()
    from glimpse_train.kinds.multi_action_value import PositionData

    pa, pb = PositionData(ds), PositionData(back)
    assert np.array_equal(pa.train_pos, pb.train_pos) and np.array_equal(pa.val_pos, pb.val_pos)
    for x, y in zip(pa.batch(pa.train_pos), pb.batch(pb.train_pos)):
        assert np.array_equal(x, y)


def _write_slice(d, arrays):
    d.mkdir(parents=True)
    for k, a in arrays.items():
        remote._write_array(str(d / f"{k}.npy.xz"), a)


def _by_position(ds):
    """{state bytes: (val, sorted (action, p as float16) rows)}: what a dataset holds, whatever its order."""
    out = {}
    for i in range(len(ds.states)):
        rows = np.flatnonzero(ds.row_pos == i)
        out[ds.states[i].tobytes()] = (bool(ds.val[i]), sorted(zip(ds.row_action[rows].tolist(),
                                                                   ds.row_p[rows].astype(np.float16).tolist())))
    return out


def test_slices_hold_every_position_once_and_a_dataset_grows_as_they_land(tmp_path):
    """``slice_arrays`` cuts the pack by position in a seeded random order, each position with its own rows;
    ``PackedDataset`` loads the complete slices of the pack folder and of ``more``, and ``grow`` adds one that
    lands later (once, whichever folder it is in); a slice still being copied (a file missing) waits."""
    import shutil

    ds = _dataset(tmp_path, [START, E4, D4])
    ds.val[:] = [False, True, False]
    arrays = remote.pack_arrays(ds)
    parts = remote.slice_arrays(arrays, 2, seed=0)
    assert [len(p["states"]) for p in parts] == [2, 1]
    assert all(len(p["row_action"]) == int(p["counts"].sum()) for p in parts)
    orders = {np.concatenate([p["states"] for p in remote.slice_arrays(arrays, 3, seed=k)]).tobytes() for k in range(10)}
    assert len(orders) > 1, "the positions' order comes from the seed"
    pack, more = tmp_path / "pack", tmp_path / "more"
    _write_slice(pack / "slice-00", parts[0])
    more.mkdir()
    _write_slice(more / ".slice-01.tmp", parts[1])
    (more / ".slice-01.tmp" / "row_key.npy.xz").unlink()  # half copied, under its temporary name
    first = remote.PackedDataset.load(str(pack), str(more))
    assert len(first.states) == 2 and first.loaded == {"slice-00"} and first.waiting(str(pack), str(more)) == []
    remote._write_array(str(more / ".slice-01.tmp" / "row_key.npy.xz"), parts[1]["row_key"])
    (more / ".slice-01.tmp").rename(more / "slice-01")
    assert first.waiting(str(pack), str(more)) == [str(more / "slice-01")]
    back = first.grown(first.waiting(str(pack), str(more)))
    assert back.waiting(str(pack), str(more)) == [] and len(first.states) == 2
    assert _by_position(back) == _by_position(ds)
    val_rows = np.flatnonzero(back.val[back.row_pos])
    assert np.array_equal(back.val_rows, val_rows) and len(back.train_rows) + len(val_rows) == len(back.row_pos)
    assert np.array_equal(back.row_bucket, chessdata.bucket_of(back.row_p.astype(np.float64)))
    # the target table's index in linear time is np.unique's
    values, index = np.unique(back.row_p, return_inverse=True)
    fast_values, fast_index = back.p_values_index()
    assert np.array_equal(fast_values, values) and np.array_equal(fast_index, index.reshape(-1))
    # the same slice landing in the pack folder too is not loaded twice
    shutil.copytree(more / "slice-01", pack / "slice-01")
    assert back.waiting(str(pack), str(more)) == []
    with pytest.raises(FileNotFoundError):
        remote.PackedDataset.load(str(tmp_path / "cache"))


def test_slice_feeder_builds_the_grown_dataset_beside_the_training_and_skips_a_broken_slice(tmp_path):
    import time

    ds = _dataset(tmp_path, [START, E4, D4])
    parts = remote.slice_arrays(remote.pack_arrays(ds), 1)
    pack, more = tmp_path / "pack", tmp_path / "more"
    _write_slice(pack / "slice-00", parts[0])
    more.mkdir()
    first = remote.PackedDataset.load(str(pack), str(more))
    lines = []
    feeder = remote.SliceFeeder(first, [str(pack), str(more)], lines.append, poll=0.05)
    try:
        _write_slice(more / "slice-01", parts[1])
        (more / "slice-02").mkdir()
        for k in remote.ARRAYS:
            (more / "slice-02" / f"{k}.npy.xz").write_bytes(b"not xz")
        deadline = time.time() + 30
        while feeder.ready is None and time.time() < deadline:
            time.sleep(0.05)
        got = feeder.take()
        assert got is not None and feeder.ready is None
        grown, pd, n, _ = got
        assert (n, len(grown.states), len(pd.train_pos) + len(pd.val_pos)) == (1, 2, 2), lines
        assert any("slice-02" in x and "skipped" in x for x in lines)
        _write_slice(more / "slice-03", parts[2])
        while feeder.ready is None and time.time() < deadline:
            time.sleep(0.05)
        assert feeder.take()[0].loaded == {"slice-00", "slice-01", "slice-03"}
    finally:
        feeder.close()


def test_pack_writes_slices_and_one_batch_width_for_the_whole_dataset(tmp_path, monkeypatch):
    """``pack`` writes the dataset as slice folders (a second pack replaces the first's) and sets ``pad_moves``
    from the most labelled moves of any position (20 at the start: 32) where the configuration pads each batch
    to its own most (0, the campaign's), so that every slice trains at one batch shape; a width set is kept."""
    a = tmp_path / "a.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(f, moves_of(f)) for f in (START, E4, D4)]))
    monkeypatch.setattr(labelstore, "label_files", lambda shared, store: [str(a)])
    start = tmp_path / "start.onnx"
    start.write_bytes(b"net")
    out = tmp_path / "pack"
    summary = remote.pack(str(out), "", "", str(tmp_path / "cache"), str(start), {"pad_moves": 0}, None,
                          log=lambda *_: None, slice_positions=2)
    assert summary["slices"] == 2 and summary["positions"] == 3
    assert [os.path.basename(d) for d in remote.slice_dirs(str(out))] == ["slice-00", "slice-01"]
    assert json.loads((out / "config.json").read_text())["pad_moves"] == 32
    assert len(remote.PackedDataset.load(str(out)).states) == 3 and (out / "start.onnx").read_bytes() == b"net"
    remote.pack(str(out), "", "", str(tmp_path / "cache"), str(start), {"pad_moves": 96}, None,
                log=lambda *_: None, slice_positions=3)
    assert [os.path.basename(d) for d in remote.slice_dirs(str(out))] == ["slice-00"]
    assert json.loads((out / "config.json").read_text())["pad_moves"] == 96


def test_a_large_array_is_written_as_several_xz_streams_that_read_back_as_one(tmp_path, monkeypatch):
    """``_write_array`` cuts the ``.npy`` into streams of ``XZ_STREAM_BYTES`` compressed on threads; the file
    is their concatenation, which ``_read_array`` (and ``xz -d``) reads whole, in order."""
    import lzma

    monkeypatch.setattr(remote, "XZ_STREAM_BYTES", 4096)
    a = np.random.default_rng(0).integers(0, 1968, 20_000).astype(np.int16)  # 40 kB: ten streams
    path = str(tmp_path / "a.npy.xz")
    remote._write_array(path, a, workers=3)
    raw = open(path, "rb").read()
    assert raw.count(b"\xfd7zXZ\x00") == 10  # the xz stream header magic, once a stream
    assert np.array_equal(remote._read_array(path), a)
    assert lzma.decompress(raw)[:6] == b"\x93NUMPY" and not os.path.exists(path + ".tmp")


def test_remote_train_exports_a_snapshot_from_the_start_net(tmp_path):
    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import MAVConfig, init_params
    from glimpse_train.onnx_import import import_onepass

    ds = _dataset(tmp_path, [START, E4, D4] * 1)
    ds.val[:] = [False, False, True]
    pack = tmp_path / "pack"
    pack.mkdir()
    for k, a in remote.pack_arrays(ds).items():
        remote._write_array(str(pack / f"{k}.npy.xz"), a)
    tiny = dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, kind="multi_action_value")
    (pack / "config.json").write_text(json.dumps(tiny))
    mcfg = MAVConfig(layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, attn_bias=True, head_global=True,
                     canonical=True, policy_dim=64, wdl_head=True)
    params = init_params(mcfg, 5)
    mav_kind.export(params, mcfg, str(pack / "start.onnx"))
    # Two steps, however long a loaded machine takes to set up and compile them: the step limit ends the run,
    # the clock (600 s) only bounds it.
    over = {"batch": 2, "micro": 1, "lr": 0.0, "warmup": 1, "ema": 0.5, "ckpt_seconds": 60.0, "eval_every": 1000,
            "steps": 2}
    r = remote.train(str(pack), str(tmp_path / "work"), 0.0, over, 1.0, 0.0, 0.05, log=lambda *_: None)
    assert r["step"] == 0 and len(r["snapshots"]) == 0  # a zero budget trains and exports nothing
    r = remote.train(str(pack), str(tmp_path / "work2"), 600.0, over, 1.0, 0.0, 0.05, log=lambda *_: None)
    assert r["step"] == 2 and r["snapshots"][-1].endswith("remote-step0000002.onnx")
    back, cfg2 = import_onepass(r["snapshots"][-1])
    # lr 0: the exported EMA is the start net (the export's own check compared ONNX with JAX)
    assert cfg2.layers == 1 and max(float(np.abs(back[k] - params[k]).max()) for k in params) < 1e-5
    assert os.path.exists(tmp_path / "work2" / "out" / "latest.onnx")
    # Arm B (train.sh with a start-b.onnx in the pack): its own start net and architecture, here a smolgen
    mcfg_b = dataclasses.replace(mcfg, smolgen=4, smolgen_compress=2, smolgen_hidden=8)
    params_b = init_params(mcfg_b, 9)
    mav_kind.export(params_b, mcfg_b, str(pack / "start-b.onnx"))
    r = remote.train(str(pack), str(tmp_path / "work-b"), 600.0, over, 1.0, 0.0, 0.05, log=lambda *_: None,
                     start_net="start-b.onnx")
    back, cfg_b = import_onepass(r["snapshots"][-1])
    assert r["step"] == 2 and cfg_b.smolgen == 4 and set(back) == set(params_b)
    assert max(float(np.abs(back[k] - params_b[k]).max()) for k in params_b) < 1e-5
    # a start net grown deeper (grow.py) than the pack's config.json trains as it is
    from glimpse_train import grow

    deep, dcfg = grow.grow_params(params, mcfg, 2)
    mav_kind.export(deep, dcfg, str(pack / "start.onnx"))
    r = remote.train(str(pack), str(tmp_path / "work3"), 600.0, over, 1.0, 0.0, 0.05, log=lambda *_: None)
    back, cfg3 = import_onepass(r["snapshots"][-1])
    assert cfg3.layers == 2 and max(float(np.abs(back[k] - deep[k]).max()) for k in deep) < 1e-5


def _two_slice_pack(tmp_path, pack, later, **config):
    """A tiny pack: slice-00 (START, E4) in ``pack`` with a one-layer start net and ``config`` over the
    campaign's, slice-01 (D4, a validation position) in ``later``; returns the start net's ``MAVConfig``."""
    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import MAVConfig, init_params

    ds = _dataset(tmp_path, [START, E4, D4])
    ds.val[:] = [False, False, True]
    parts = remote.slice_arrays(remote.pack_arrays(ds), 2)
    _write_slice(pack / "slice-00", parts[0])
    _write_slice(later / "slice-01", parts[1])
    tiny = dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32,
                kind="multi_action_value", **config)
    (pack / "config.json").write_text(json.dumps(tiny))
    mcfg = MAVConfig(layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, attn_bias=True, head_global=True,
                     canonical=True, policy_dim=64, wdl_head=True)
    mav_kind.export(init_params(mcfg, 5), mcfg, str(pack / "start.onnx"))
    return mcfg


def test_remote_train_takes_slices_that_land_while_it_runs(tmp_path):
    """``train`` with ``more``: the pack folder has one slice, the other lands in ``more`` once training has
    started; the run adds it (a log line, the positions at the end) and still exports its snapshot."""
    import shutil

    pack, more, later = tmp_path / "pack", tmp_path / "more", tmp_path / "later"
    _two_slice_pack(tmp_path, pack, later, pad_moves=48)
    more.mkdir()
    lines = []

    def log(msg):
        lines.append(msg)
        if msg.startswith("fresh model"):  # training has begun on slice-00 alone
            shutil.copytree(later / "slice-01", more / "slice-01")

    over = {"batch": 2, "micro": 1, "lr": 1e-3, "warmup": 1, "ema": 0.5, "ckpt_seconds": 60.0, "eval_every": 1000,
            "pad_moves": -1}
    r = remote.train(str(pack), str(tmp_path / "work"), 12.0, over, 10.0, 0.0, 0.05, log=log, more=str(more))
    assert any("1 slices" in x for x in lines if x.startswith("data:")), lines
    grew = [x for x in lines if x.startswith("data: +1 slices")]
    assert len(grew) == 1 and r["positions"] == 3 and r["step"] > 0 and r["snapshots"], lines


def test_import_adds_new_positions_and_drops_known_ones(tmp_path):
    store = tmp_path / "store"
    st = labelstore.LabelStore(str(store))
    st.add([("popular", START, moves_of(START))], {"name": "Stockfish 15.1"}, 2.0)
    dev = tmp_path / "dev"
    dev.mkdir()
    lines = [f"device-popular\t{labelstore.format_line(START.replace(' 0 1', ' 4 9'), moves_of(START))}\n",
             f"device-selfplay\t{labelstore.format_line(E4, moves_of(E4))}\n",
             "device-selfplay\tnot a label line\n",
             f"device-selfplay\t{labelstore.format_line(E4, moves_of(E4))}\n",
             f"device-popular\t{labelstore.format_line(D4, moves_of(D4))}\n"]
    (dev / "device-00.tsv.gz").write_bytes(gzip.compress("".join(lines).encode()))
    summary = {"positions": 4, "core_seconds": 8.0, "stockfish": "Stockfish 15.1",
               "scheme": {"name": "two-tier", "depth": 8, "top_k": 4, "shallow_depth": 2}}
    r = remote.import_shards([str(dev / "device-00.tsv.gz")], summary, str(store), None, log=lambda *_: None)
    assert r == {"kept": 2, "dropped": 2}
    st2 = labelstore.LabelStore(str(store))
    assert st2.totals()["positions"] == 3
    assert st2.totals()["core_seconds"] == 2.0 + 4.0  # half the device positions kept: half their cost
    keys = labelstore.known_keys(st2.files())
    assert keys == {labelstore.position_key(f) for f in (START, E4, D4)}


@pytest.mark.parametrize("flag,want", [([], "highest"), (["--step-precision", "default"], None)])
def test_step_precision_flag_sets_jax_matmul_precision_before_training(tmp_path, monkeypatch, flag, want):
    """`train` runs its step at full float32 unless asked for JAX's default (TF32 on a GPU); the variable is set
    before the pack is read, so before anything imports jax."""
    monkeypatch.delenv("JAX_DEFAULT_MATMUL_PRECISION", raising=False)
    with pytest.raises(OSError):  # no pack there: fails after the precision is chosen
        remote.main(["train", "--pack", str(tmp_path / "none"), "--work", str(tmp_path / "w"), "--seconds", "0", *flag])
    assert os.environ.get("JAX_DEFAULT_MATMUL_PRECISION") == want


def test_device_scripts_stage_train_both_arms_and_collect_their_snapshots(tmp_path):
    """``training/device``'s calls as a GPU machine runs them, in a folder of their own (``DEVICE_TMP``), on
    this machine's CPU: ``train.sh`` starts on the slice its pack carries and, finding ``start-b.onnx``, trains
    arm B beside arm A; ``stage.sh`` puts the other slice where both pick it up; ``collect.sh`` returns when
    both have ended, with each arm's snapshot and the logs."""
    import subprocess
    import sys

    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import init_params
    from glimpse_train.onnx_import import import_onepass

    scripts = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(remote.__file__))), "device")
    tree = tmp_path / "tree"  # the working tree a call runs in: training/glimpse_train and the carried .dev
    (tree / "training").mkdir(parents=True)
    os.symlink(os.path.dirname(os.path.abspath(remote.__file__)), tree / "training" / "glimpse_train")
    pack, stage = tree / ".dev" / "pack", tree / ".dev" / "stage1"
    mcfg = _two_slice_pack(tmp_path, pack, stage, steps=2)
    mcfg_b = dataclasses.replace(mcfg, smolgen=4, smolgen_compress=2, smolgen_hidden=8)
    mav_kind.export(init_params(mcfg_b, 6), mcfg_b, str(pack / "start-b.onnx"))
    dev, out = tmp_path / "dev", tmp_path / "out"
    dev.mkdir()
    out.mkdir()
    env = dict(os.environ, DEVICE_TMP=str(dev), PY=sys.executable, OUT=str(out), JAX_PLATFORMS="cpu")

    def call(script, *args, timeout=60):
        r = subprocess.run(["bash", os.path.join(scripts, script), *args], cwd=tree, env=env, capture_output=True,
                           text=True, timeout=timeout)
        assert r.returncode == 0, f"{script}: {r.stdout[-1500:]} {r.stderr[-800:]}"
        return r.stdout

    call("train.sh", "600", "--lr", "0", "--warmup", "1")
    call("stage.sh", ".dev/stage1")
    call("collect.sh", "500", timeout=560)
    assert sorted(os.listdir(dev / "g" / "slices")) == ["slice-01"]
    logs = (out / "logs.txt").read_text()
    assert logs.count("train: done at step 2") == 2, logs[-2000:]
    _, cfg_a = import_onepass(str(out / "latest.onnx"))
    _, cfg_b = import_onepass(str(out / "latest-b.onnx"))
    assert (cfg_a.smolgen, cfg_b.smolgen) == (0, 4)


def test_prepare_places_every_slice_once_within_the_call_limit(tmp_path):
    """``prepare.sh`` with ``PACKED=1`` (in a scratch git repository, with a 1 MB call limit): every pack slice
    lands whole in exactly one of .dev/pack (beside the start net), .dev/lab/slices and .dev/stageK, each
    folder within the limit, and the calls are printed in order; ``restore`` puts the index back."""
    import subprocess

    repo = tmp_path / "repo"
    for d in ("data/labels", "weights", "training/campaign", "tests/data"):
        (repo / d).mkdir(parents=True)
        (repo / d / "f.txt").write_text(d)
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(remote.__file__))), "device", "prepare.sh")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    subprocess.run(git + ["add", "."], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "t"], cwd=repo, check=True)
    pack = repo / ".dev" / "pack"
    (pack / "py" / "chess").mkdir(parents=True)
    (pack / "py" / "chess" / "__init__.py").write_text("")
    rng = np.random.default_rng(0)
    (pack / "start.onnx").write_bytes(rng.bytes(200_000))
    (pack / "config.json").write_text("{}")
    sizes = {f"slice-{i:02d}": n for i, n in enumerate([300_000, 450_000, 280_000, 600_000, 120_000])}
    for name, n in sizes.items():
        (pack / name).mkdir()
        (pack / name / "row_action.npy.xz").write_bytes(rng.bytes(n))
    env = dict(os.environ, PACKED="1", LIMIT_MB="1", BEST=str(pack / "start.onnx"), STOCKFISH="/bin/true")
    r = subprocess.run(["bash", script], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    where = {}
    for d in [repo / ".dev" / "pack", repo / ".dev" / "lab" / "slices", *sorted((repo / ".dev").glob("stage*"))]:
        for n in os.listdir(d):
            if n.startswith("slice-"):
                assert n not in where
                where[n] = d
                assert (d / n / "row_action.npy.xz").stat().st_size == sizes[n]
        base = repo / ".dev" / "lab" if d.name == "slices" else d
        assert sum(f.stat().st_size for f in base.rglob("*") if f.is_file()) <= 1_000_000
    assert set(where) == set(sizes) and (repo / ".dev" / "pack" / "start.onnx").exists()
    assert "calls in order: train.sh (carry .dev/pack), lab.sh (carry .dev/lab), stage.sh .dev/stage1" in r.stdout
    assert "data/labels/f.txt" not in subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True,
                                                     text=True).stdout
    subprocess.run(["bash", script, "restore"], cwd=repo, check=True, capture_output=True, timeout=60)
    assert "data/labels/f.txt" in subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout


def test_lab_sh_stops_when_its_stockfish_does_not_run_here(tmp_path):
    """``lab.sh`` with a Stockfish that cannot run on the machine (a native build for other instructions:
    here a binary whose ``bench`` fails) exits with a message naming the fix, before any labelling starts."""
    import lzma
    import subprocess

    scripts = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(remote.__file__))), "device")
    tree = tmp_path / "tree"
    (tree / "training").mkdir(parents=True)
    os.symlink(os.path.dirname(os.path.abspath(remote.__file__)), tree / "training" / "glimpse_train")
    lab = tree / ".dev" / "lab"
    (lab / "py").mkdir(parents=True)
    (lab / "fens.txt").write_text(START + "\n")
    (lab / "stockfish.xz").write_bytes(lzma.compress(b"#!/bin/sh\necho 'Illegal instruction' >&2\nexit 132\n"))
    (lab / "stockfish.src").write_text(".cache/stockfish/stockfish\n")
    dev = tmp_path / "dev"
    dev.mkdir()
    r = subprocess.run(["bash", os.path.join(scripts, "lab.sh"), "5"], cwd=tree, capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, DEVICE_TMP=str(dev)))
    assert r.returncode != 0 and "does not run on this CPU" in r.stderr
    assert "STOCKFISH=/usr/games/stockfish" in r.stderr
    assert not (dev / "sf").exists() and not list(dev.glob("lab-*.log"))
