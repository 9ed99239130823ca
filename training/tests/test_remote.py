"""Tests of ``remote.py``: the packed dataset gives the trainer what ``MemDataset`` gives it, a remote
train run exports a snapshot that matches JAX, and device shards enter the label store deduplicated."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os

import numpy as np
import pytest

from glimpse_train import campaign, labelstore, remote
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
    this machine's CPU: ``stage.sh`` hands over a pack file's first part, ``train.sh`` joins it with the part the
    pack carries and, finding ``start-b.onnx``, trains arm B beside arm A; ``collect.sh`` returns when both
    have ended, with each arm's snapshot and the logs."""
    import subprocess
    import sys

    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import MAVConfig, init_params
    from glimpse_train.onnx_import import import_onepass

    scripts = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(remote.__file__))), "device")
    tree = tmp_path / "tree"  # the working tree a call runs in: training/glimpse_train and the carried .dev
    (tree / "training").mkdir(parents=True)
    os.symlink(os.path.dirname(os.path.abspath(remote.__file__)), tree / "training" / "glimpse_train")
    pack, stage = tree / ".dev" / "pack", tree / ".dev" / "stage1"
    pack.mkdir(parents=True)
    stage.mkdir()
    ds = _dataset(tmp_path, [START, E4, D4])
    ds.val[:] = [False, False, True]
    for k, a in remote.pack_arrays(ds).items():
        remote._write_array(str(pack / f"{k}.npy.xz"), a)
    raw = (pack / "row_p.npy.xz").read_bytes()
    (stage / "row_p.npy.xz.part-00").write_bytes(raw[:100])
    (pack / "row_p.npy.xz.part-01").write_bytes(raw[100:])
    (pack / "row_p.npy.xz").unlink()
    tiny = dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32,
                kind="multi_action_value", steps=2)
    (pack / "config.json").write_text(json.dumps(tiny))
    mcfg = MAVConfig(layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, attn_bias=True, head_global=True,
                     canonical=True, policy_dim=64, wdl_head=True)
    mav_kind.export(init_params(mcfg, 5), mcfg, str(pack / "start.onnx"))
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

    call("stage.sh", ".dev/stage1")
    call("train.sh", "600", "--lr", "0", "--warmup", "1")
    call("collect.sh", "500", timeout=560)
    assert (dev / "g" / "pack" / "row_p.npy.xz").read_bytes() == raw
    logs = (out / "logs.txt").read_text()
    assert logs.count("train: done at step 2") == 2, logs[-2000:]
    _, cfg_a = import_onepass(str(out / "latest.onnx"))
    _, cfg_b = import_onepass(str(out / "latest-b.onnx"))
    assert (cfg_a.smolgen, cfg_b.smolgen) == (0, 4)


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
