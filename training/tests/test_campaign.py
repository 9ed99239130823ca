"""Tests of the campaign's loop: candidates and label phases, resume from the committed ONNX, training,
adoption, the gate and the curve (labelling itself: test_labelling.py; settings: test_campaign_config.py). Run with ``make test-campaign`` (pytest, from training/)."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil

import numpy as np
import pytest

from glimpse_train import campaign, campaign_label, chessdata, labelstore, raylabel, torch_step
from glimpse_train.data import MemDataset

from test_labelling import E4, START, moves_of  # noqa: E402 - tests/ is on sys.path (pytest rootdir insertion)

SHARED = os.environ.get("GLIMPSE_SHARED",
                        os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "shared"))


# ------------------------------------------------------------------ store


# ------------------------------------------------------------------ labelling


# ------------------------------------------------------------------ resume, gate, record
def _tiny_campaign(tmp_path, run="t"):
    cfg = campaign.CampaignConfig(run=run, label_minutes=0, puzzles=0)
    store = tmp_path / "store"
    return campaign.Campaign(cfg, SHARED, str(store), str(tmp_path / "runs"), str(tmp_path / "out"), stockfish=None,
                             log=lambda *_: None)


def test_resume_from_committed_onnx(tmp_path):
    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import MAVConfig, init_params
    from glimpse_train.onnx_import import import_onepass

    c = _tiny_campaign(tmp_path)
    tiny = dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32)
    with open(os.path.join(c.run_dir, "config.json"), "w") as f:
        json.dump(dict(tiny, kind="multi_action_value"), f)
    mcfg = MAVConfig(layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, attn_bias=True, head_global=True,
                     canonical=True, policy_dim=64, wdl_head=True)
    rng = np.random.default_rng(3)
    params = {k: (v + rng.normal(0, 0.05, v.shape)).astype(np.float32) for k, v in init_params(mcfg, 0).items()}
    mav_kind.export(params, mcfg, c.checkpoint_onnx)
    back, cfg2 = import_onepass(c.checkpoint_onnx)
    assert cfg2.layers == 1 and cfg2.attn_bias and max(float(np.abs(back[k] - params[k]).max()) for k in params) < 1e-6
    a = tmp_path / "a.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(START, moves_of(START)),
                                         labelstore.format_line(E4, moves_of(E4))]))
    ds = MemDataset([str(a)], str(tmp_path / "cache"), log=lambda *_: None)
    tr = c.trainer(ds)
    got = tr.init_params()
    assert set(got) == set(params) and all(np.allclose(got[k], params[k], atol=1e-6) for k in params)
    # with no committed ONNX the run starts fresh (different weights)
    os.remove(c.checkpoint_onnx)
    fresh = c.trainer(ds).init_params()
    assert not np.allclose(fresh["mav_head/linear_in/w"], params["mav_head/linear_in/w"])


def test_mem_dataset_keeps_first_occurrences_and_indexes_win_probabilities_in_slices(tmp_path):
    """MemDataset keeps a position's first labelling, marks the held-out split by key, and ``p_values_index``
    (built in slices) equals ``np.unique(row_p, return_inverse=True)`` whatever the slice size."""
    import chess

    from glimpse_train.data import is_validation

    fens = [START, E4]
    board = chess.Board(E4)
    for uci in ("e7e5", "g1f3", "b8c6", "f1b5", "a7a6"):
        board.push_uci(uci)
        fens.append(board.fen())
    a, b = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(f, moves_of(f)) for f in fens[:4]]))
    other = [(m, "900") for m, _ in moves_of(E4)]  # E4 again, every move alike: the first file's labels win
    b.write_bytes(labelstore.gzip_bytes([labelstore.format_line(E4, other)]
                                        + [labelstore.format_line(f, moves_of(f)) for f in fens[4:]]))
    ds = MemDataset([str(a), str(b)], str(tmp_path / "cache"), log=lambda *_: None)
    assert len(ds.states) == len(fens) and ds.source.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert len(ds.row_pos) == sum(len(moves_of(f)) for f in fens)
    assert ds.val.tolist() == [is_validation(f) for f in fens]
    e4 = ds.row_p[ds.row_pos == 1]
    assert e4.max() > e4.min(), "E4 kept its first labelling (cp 0, 1, 2…), not the second (all 900)"
    values, index = np.unique(ds.row_p, return_inverse=True)
    for chunk in (1, 7, 50, 1 << 24):
        v, i = ds.p_values_index(chunk)
        assert np.array_equal(v, values) and i.dtype == np.int32 and np.array_equal(i, index.reshape(-1)), chunk


def test_a_deeper_committed_net_sets_the_runs_shapes(tmp_path):
    """A committed net grown deeper (grow.py) than the run's config.json trains as it is when no checkpoint
    exists, and config.json is rewritten to its shapes; with a checkpoint, config.json stays; a start net
    whose heads disagree with the run's loss weights is refused."""
    from glimpse_train import grow
    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import MAVConfig

    c = _tiny_campaign(tmp_path)
    tiny = dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32)
    cfg_path = os.path.join(c.run_dir, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(dict(tiny, kind="multi_action_value"), f)
    mcfg = MAVConfig(layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, attn_bias=True, head_global=True,
                     canonical=True, policy_dim=64, wdl_head=True)
    params, gcfg = grow.grow_params(mav_kind.perturbed_params(mcfg, 2), mcfg, 3)
    mav_kind.export(params, gcfg, c.checkpoint_onnx)
    a = tmp_path / "a.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(START, moves_of(START))]))
    ds = MemDataset([str(a)], str(tmp_path / "cache"), log=lambda *_: None)
    tr = c.trainer(ds)
    assert tr.cfg.layers == 3 and json.load(open(cfg_path))["layers"] == 3
    assert json.load(open(cfg_path))["lr"] == campaign.CAMPAIGN_MODEL["lr"], "only the shapes change"
    got = tr.init_params()
    assert set(got) == set(params) and all(np.allclose(got[k], params[k], atol=1e-6) for k in params)
    with open(cfg_path, "w") as f:  # a checkpoint exists: its config.json is the truth
        json.dump(dict(tiny, kind="multi_action_value"), f)
    open(os.path.join(c.run_dir, "ckpt.pkl"), "wb").close()
    assert c.trainer(ds).cfg.layers == 1 and json.load(open(cfg_path))["layers"] == 1
    os.remove(os.path.join(c.run_dir, "ckpt.pkl"))
    no_wdl = MAVConfig(**{**mcfg.__dict__, "wdl_head": False})
    mav_kind.export(mav_kind.perturbed_params(no_wdl, 2), no_wdl, c.checkpoint_onnx)
    with pytest.raises(ValueError, match="do not match the run's loss weights"):
        c.trainer(ds)


def test_a_committed_net_with_a_smolgen_trains_with_it(tmp_path):
    """A committed net given a smolgen (``grow --smolgen``) is the run's start as it is: config.json takes its
    smolgen sizes and the trainer starts from its weights, the smolgen's included."""
    from glimpse_train import grow
    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import MAVConfig

    c = _tiny_campaign(tmp_path)
    cfg_path = os.path.join(c.run_dir, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32,
                       kind="multi_action_value"), f)
    mcfg = MAVConfig(layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, attn_bias=True, head_global=True,
                     canonical=True, policy_dim=64, wdl_head=True)
    params, scfg = grow.add_smolgen(mav_kind.perturbed_params(mcfg, 2), mcfg, 4, compress=2, hidden=8)
    mav_kind.export(params, scfg, c.checkpoint_onnx)
    a = tmp_path / "a.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(START, moves_of(START))]))
    ds = MemDataset([str(a)], str(tmp_path / "cache"), log=lambda *_: None)
    tr = c.trainer(ds)
    assert (tr.cfg.smolgen, tr.cfg.smolgen_compress, tr.cfg.smolgen_hidden) == (4, 2, 8)
    assert json.load(open(cfg_path))["smolgen"] == 4
    got = tr.init_params()
    assert set(got) == set(params) and all(np.allclose(got[k], params[k], atol=1e-6) for k in params)


def _remote_snapshot(path, step=10, batch=4, seed=2, legacy=False):
    """A snapshot as ``remote.train`` writes it (step and batch as metadata of their own), or with ``legacy``
    as it did before those keys existed (the two numbers only in the description)."""
    from glimpse_train.kinds import multi_action_value as mav_kind
    from glimpse_train.kinds.multi_action_value import MAVConfig

    mcfg = MAVConfig(layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, attn_bias=True, head_global=True,
                     canonical=True, policy_dim=64, wdl_head=True)
    meta = None if legacy else {campaign.TRAIN_STEP_KEY: str(step), campaign.TRAIN_BATCH_KEY: str(batch)}
    mav_kind.export(mav_kind.perturbed_params(mcfg, seed), mcfg, str(path),
                    description=f"remote train step {step} batch {batch}" if legacy else "a remote snapshot",
                    extra_meta=meta)
    return str(path)


def test_snapshot_passes_reads_the_metadata_and_old_descriptions(tmp_path):
    from glimpse_train.onnx_graph import onnx_meta

    assert campaign.snapshot_passes(onnx_meta(_remote_snapshot(tmp_path / "new.onnx", 7, 3))) == 21
    assert campaign.snapshot_passes(onnx_meta(_remote_snapshot(tmp_path / "old.onnx", 7, 3, legacy=True))) == 21
    assert campaign.snapshot_passes({"glimpse.train_step": "5", "glimpse.train_batch": "2",
                                     "glimpse.description": "remote train step 9 batch 9"}) == 10, "keys win"
    assert campaign.snapshot_passes({"glimpse.description": "campaign run cycle 3 step 40"}) is None


def test_adopt_a_net_trained_elsewhere(tmp_path):
    """A remote run's snapshot is measured like a candidate; below the bar nothing changes; above it, it becomes the
    committed checkpoint and best.onnx, the optimiser checkpoint moves aside, the curve gets its row (passes =
    the best row's + the snapshot's step × batch) and the state moves to the next cycle, which labels first."""
    c = _tiny_campaign(tmp_path)
    c.record({"cycle": 6, "wall_hours": 1.5, "position_passes": 1000, "action_accuracy": 0.2, "gate": "best"})
    c.record({"cycle": 7, "wall_hours": 2.0, "position_passes": 1064, "action_accuracy": 0.19, "gate": "kept"})
    c.state.update(cycle=8, best_accuracy=1.0, wall_seconds=7200.0, labelled_cycle=8, passes_offset=1000)
    open(os.path.join(c.run_dir, "ckpt.pkl"), "wb").close()
    net = _remote_snapshot(tmp_path / "snap.onnx")
    rep = c.adopt(net)
    assert not rep["adopted"] and rep["bar"] == 1.0 and rep["passes"] == 1000 + 10 * 4
    assert not os.path.exists(c.checkpoint_onnx) and os.path.exists(os.path.join(c.run_dir, "ckpt.pkl"))
    assert c.state["cycle"] == 8 and not os.path.exists(os.path.join(c.run_dir, "candidate-0008.onnx"))
    c.state["best_accuracy"] = -1.0
    rep = c.adopt(net, extra_seconds=360.0)
    assert rep["adopted"] and 0.0 <= rep["action_accuracy"] <= 1.0
    for f in (c.checkpoint_onnx, os.path.join(c.run_dir, "best.onnx"), os.path.join(c.run_dir, "candidate-0008.onnx")):
        assert open(f, "rb").read() == open(net, "rb").read()
    assert not os.path.exists(os.path.join(c.run_dir, "ckpt.pkl"))
    assert os.path.exists(os.path.join(c.run_dir, "ckpt-cycle8-before-adopt.pkl"))
    with open(c.curve_csv) as f:
        last = list(csv.DictReader(f))[-1]
    assert (last["cycle"], last["gate"], last["position_passes"], last["wall_hours"]) == ("8", "best", "1040", "2.1")
    saved = json.load(open(c.state_path))
    assert saved["cycle"] == 9 and saved["passes_offset"] == 1040 and "labelled_cycle" not in saved
    assert saved["best_accuracy"] == rep["action_accuracy"]
    # a file that is not a remote-train snapshot needs its passes
    plain = tmp_path / "plain.onnx"
    shutil.copyfile(net, plain)
    import onnx

    m = onnx.load(str(plain))
    kept = [p for p in m.metadata_props if p.key not in (campaign.TRAIN_STEP_KEY, campaign.TRAIN_BATCH_KEY)]
    del m.metadata_props[:]
    m.metadata_props.extend(kept)
    onnx.save(m, str(plain))
    with pytest.raises(ValueError, match="give the position-passes"):
        c.adopt(str(plain))
    assert c.adopt(str(plain), passes=5000, force=True)["adopted"] and c.state["passes_offset"] == 5000


def test_lr_batch_and_backend_flags_override_the_run_config_without_rewriting_it(tmp_path):
    c = _tiny_campaign(tmp_path)
    tiny = dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32)
    cfg_path = os.path.join(c.run_dir, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(dict(tiny, kind="multi_action_value"), f)
    a = tmp_path / "a.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(START, moves_of(START))]))
    ds = MemDataset([str(a)], str(tmp_path / "cache"), log=lambda *_: None)
    assert c.trainer(ds).cfg.lr == campaign.CAMPAIGN_MODEL["lr"], "lr 0 (the default) keeps the run's"
    c.cfg.lr = 1.5e-4
    assert c.trainer(ds).cfg.lr == 1.5e-4
    assert json.load(open(cfg_path))["lr"] == campaign.CAMPAIGN_MODEL["lr"], "the run's config.json is not rewritten"
    c.cfg.batch, c.cfg.train_backend = 24, "jax"
    tr = c.trainer(ds)
    assert (tr.cfg.batch, tr.cfg.micro, tr.backend) == (24, campaign.CAMPAIGN_MODEL["micro"], "jax")
    assert json.load(open(cfg_path))["batch"] == campaign.CAMPAIGN_MODEL["batch"]
    if torch_step.torch_available():
        c.cfg.train_backend = "torch"
        tr = c.trainer(ds)
        assert (tr.cfg.batch, tr.cfg.micro, tr.backend) == (24, 1, "torch"), "PyTorch takes the batch in one pass"


def test_gate_and_record(tmp_path):
    c = _tiny_campaign(tmp_path)
    cand = tmp_path / "cand.onnx"
    cand.write_bytes(b"model-1")
    assert c.gate({"candidate": str(cand), "action_accuracy": 0.20})
    assert open(c.checkpoint_onnx, "rb").read() == b"model-1"
    cand.write_bytes(b"model-2")
    assert not c.gate({"candidate": str(cand), "action_accuracy": 0.19})
    assert open(c.checkpoint_onnx, "rb").read() == b"model-1"
    assert c.gate({"candidate": str(cand), "action_accuracy": 0.25})
    assert open(c.checkpoint_onnx, "rb").read() == b"model-2"
    for i, acc in enumerate([0.2, 0.25]):
        c.record({"cycle": i, "store_positions": 100 * i, "position_passes": 1000 * i, "wall_hours": i,
                  "action_accuracy": acc, "puzzle_accuracy": 0.1})
    rows = open(c.curve_csv).read().splitlines()
    assert rows[0].split(",") == campaign.CURVE_FIELDS and len(rows) == 3
    assert os.path.getsize(c.curve_csv[:-4] + ".png") > 1000


def test_the_bar_is_re_measured_when_the_heldout_split_changes(tmp_path):
    """A bar set on another held-out split (the split grows with the shared labels) is measured again on the
    best net before a candidate is compared with it; on the same split it is kept as it is."""
    c = _tiny_campaign(tmp_path)
    net = _remote_snapshot(tmp_path / "best.onnx")
    shutil.copyfile(net, os.path.join(c.run_dir, "best.onnx"))
    ds = MemDataset(c.files(), c.cache_dir, log=lambda *_: None)
    rep = c.evaluate(ds, net)
    split, acc = rep["val_positions"], rep["action_accuracy"]
    assert split > 0
    c.state.update(best_accuracy=1.0, best_heldout_positions=split)
    assert c.bar(ds, split) == 1.0, "same split: the bar stands"
    assert not c.gate(dict(rep, action_accuracy=acc + 0.01), ds)
    c.state.update(best_accuracy=1.0, best_heldout_positions=split + 7)
    assert c.bar(ds, split) == pytest.approx(acc), "another split: the best net measured again"
    assert c.state["best_heldout_positions"] == split
    c.state.update(best_accuracy=1.0, best_heldout_positions=None)
    assert c.gate(dict(rep, action_accuracy=acc + 0.01), ds), "a split never recorded counts as another"
    assert c.state["best_accuracy"] == acc + 0.01 and c.state["best_heldout_positions"] == split


def test_state_survives_restart(tmp_path):
    c = _tiny_campaign(tmp_path)
    c.state["cycle"] = 4
    c.state["cursor"] = {"popular": 1234}
    campaign.save_state(c.state_path, c.state)
    c2 = _tiny_campaign(tmp_path)
    assert c2.state["cycle"] == 4 and c2.state["cursor"]["popular"] == 1234
    shutil.rmtree(tmp_path / "runs")


def test_a_fresh_clone_resumes_the_curve_not_cycle_zero(tmp_path):
    """The run directory (state, checkpoint) is not committed; the curve is. A new machine must go on with
    the next cycle number, the wall hours and position-passes so far, and the gate's bar."""
    c = _tiny_campaign(tmp_path)
    for i, (acc, gate) in enumerate([(0.20, "best"), (0.25, "best"), (0.24, "kept")]):
        c.record({"cycle": i, "store_positions": 100 * i, "position_passes": 1000 * (i + 1), "wall_hours": 0.5 * i,
                  "heldout_positions": 40 + i, "action_accuracy": acc, "puzzle_accuracy": 0.1, "gate": gate})
    shutil.rmtree(tmp_path / "runs")
    c2 = _tiny_campaign(tmp_path)
    assert c2.state["cycle"] == 3
    assert c2.state["best_accuracy"] == 0.25, "a kept (worse) candidate does not raise the bar"
    assert c2.state["wall_seconds"] == 3600 and c2.state["passes_offset"] == 3000
    assert c2.state["best_heldout_positions"] == 41, "the split the bar was measured on"
    cand = tmp_path / "cand.onnx"
    cand.write_bytes(b"m")
    assert not c2.gate({"candidate": str(cand), "action_accuracy": 0.249})
    assert campaign.seed_from_curve(str(tmp_path / "missing.csv")) == {}


def test_a_fresh_clone_resumes_the_committed_progress(tmp_path):
    """Label-only phases add no curve row: their wall hours, label rounds and self-play seeds go into the
    committed ``<run>-progress.json``, and a machine without the run directory goes on from there (the
    curve's hours stay when they are the larger)."""
    c = _tiny_campaign(tmp_path)
    c.record({"cycle": 52, "store_positions": 100, "position_passes": 1000, "wall_hours": 10.0,
              "heldout_positions": 40, "action_accuracy": 0.4, "puzzle_accuracy": 0.1, "gate": "best"})
    c.state.update(wall_seconds=90_000.0, label_round=129, rate=60.5, cursor={"selfplay": 5000, "books": 7})
    c.state["labelled_cycle"] = 52
    c.save()
    kept = json.load(open(c.progress_path))
    assert kept == {"wall_seconds": 90_000.0, "label_round": 129, "cursor": {"selfplay": 5000, "books": 7},
                    "rate": 60.5}, "only what the curve cannot give back"
    shutil.rmtree(tmp_path / "runs")
    c2 = _tiny_campaign(tmp_path)
    assert c2.state["cycle"] == 53 and c2.state["passes_offset"] == 1000, "the curve still gives the cycle"
    assert c2.state["wall_seconds"] == 90_000.0 and c2.label_round == 129 and c2.state["rate"] == 60.5
    assert c2.state["cursor"] == {"selfplay": 5000, "books": 7}
    assert "labelled_cycle" not in c2.state

    campaign.save_state(c2.progress_path, {"wall_seconds": 100.0, "label_round": 3, "cursor": {"selfplay": 9}})
    shutil.rmtree(tmp_path / "runs")
    c3 = _tiny_campaign(tmp_path)
    assert c3.state["wall_seconds"] == 36_000.0 and c3.label_round == 53, "an older progress file goes back nowhere"
    assert c3.state["cursor"] == {"selfplay": 9} and c3.state["rate"] is None


@pytest.mark.skipif(not os.path.exists(os.path.join(campaign.REPO, "target", "release", "glimpse"))
                    or not any(os.path.exists(p) for p in chessdata.SF_PATHS), reason="needs the engine and Stockfish")
def test_dagger_positions_come_from_engine_games(tmp_path):
    import chess

    from glimpse_train import campaign_positions

    c = _tiny_campaign(tmp_path)
    c.cfg.dagger_levels = "0"
    fens = c.dagger_positions(50)  # 2 games at 20 ms a move against Skill Level 0
    assert fens and all(chess.Board(f).is_valid() for f in fens)
    pgn = os.path.join(c.run_dir, "dagger-0000.pgn")
    # dagger_every 1 (the default): every position of both games that is not the final one of a finished game
    # (pgn_positions, tested on its own in test_labelling.py)
    assert sorted(fens) == sorted(campaign_positions.pgn_positions(pgn))


def test_dagger_gives_the_engine_its_own_movetime(tmp_path, monkeypatch):
    """Stockfish keeps --dagger-movetime; the engine gets --dagger-engine-movetime, so that its own moves (not the
    fallback its hard limit plays) make the games."""
    from glimpse_train import campaign_positions

    c = _tiny_campaign(tmp_path)
    c.cfg.dagger_movetime, c.cfg.dagger_engine_movetime = 0.02, 0.07
    seen = []
    monkeypatch.setattr(campaign_positions, "run_until_stopped", lambda cmd, *a, **k: seen.append(cmd) or (1, "x"))
    monkeypatch.setattr(os.path, "exists", lambda p: True)
    c.dagger_net = lambda: None
    assert c.dagger_positions(50) == []
    cmd = seen[0]
    assert cmd[cmd.index("--movetime") + 1] == "0.07" and cmd[cmd.index("--b-movetime") + 1] == "0.02"


def test_dagger_plays_the_int8_twin_of_the_campaign_net(tmp_path):
    """DAgger's games are the shipped engine's: the int8 twin of the campaign's net, made once per source net
    (its glimpse.source_sha256) and made again when that net changes; a net that cannot be quantised plays
    itself."""
    import onnx

    from glimpse_train.test_models import run_mavp

    c = _tiny_campaign(tmp_path)
    logs = []
    c.log = logs.append
    assert run_mavp("", str(tmp_path / "nets"))
    net = str(tmp_path / "nets" / "tiny_mavp.onnx")

    def meta(path):
        return {m.key: m.value for m in onnx.load(path).metadata_props}

    twin = c.int8_twin(net)
    assert twin == os.path.join(c.run_dir, "dagger-int8.onnx")
    assert meta(twin)["glimpse.precision"] == "int8"
    assert meta(twin)["glimpse.source_sha256"] == labelstore.file_sha256(net)
    made = os.stat(twin).st_mtime_ns
    assert c.int8_twin(net) == twin and os.stat(twin).st_mtime_ns == made, "the same source: the twin is reused"

    changed = onnx.load(net)
    changed.metadata_props.add(key="glimpse.description", value="a newer candidate")
    newer = str(tmp_path / "nets" / "newer.onnx")
    onnx.save(changed, newer)
    assert c.int8_twin(newer) == twin and meta(twin)["glimpse.source_sha256"] == labelstore.file_sha256(newer)

    int8 = str(tmp_path / "nets" / "already-int8.onnx")
    shutil.copyfile(twin, int8)
    assert c.int8_twin(int8) == int8, "only a float32 net has a twin"
    assert "the games use that net as it is" in logs[-1] and "only a float32 net" in logs[-1]


def test_allot_gives_a_spent_sources_share_to_the_others():
    from glimpse_train.campaign_positions import allot

    shares = {"selfplay": 0.25, "books": 0.2, "lichess": 0.2, "dagger": 0.35}
    assert allot(100, shares, set()) == {"selfplay": 25, "books": 20, "lichess": 20, "dagger": 35}
    got = allot(1000, shares, {"lichess"})
    assert got == {"selfplay": 312, "books": 250, "dagger": 438} and sum(got.values()) == 1000
    assert allot(7, shares, {"books", "lichess"}) == {"selfplay": 2, "dagger": 5}
    assert allot(10, {"books": 1.0}, {"books"}) == {}


def test_a_spent_file_source_hands_its_share_to_the_unbounded_ones(tmp_path, monkeypatch):
    """A file source that runs out in a phase passes what it falls short of to self-play and DAgger; once its
    cursor is at the end, its whole share goes to them, and a restart knows that from the state without
    parsing the files again."""
    import chess

    from glimpse_train import campaign_positions

    monkeypatch.setitem(campaign_positions.SOURCE_FILES, "books", ("openings/noob_3moves.epd",))
    c = _tiny_campaign(tmp_path)
    c.cfg.mix = "books:0.5,dagger:0.5"
    book = c.file_source_of("books")
    c.state["cursor"] = {"books": len(book) - 5}
    asked = []

    def dagger(want):  # distinct legal positions, none of them in the book
        asked.append(want)
        b, out = chess.Board(), []
        for mv in ["g1f3", "g8f6", "b1c3", "b8c6", "f3g1", "f6g8", "c3b1", "c6b8"] * 40:
            b.push_uci(mv)
            out.append(b.fen())
        return out

    monkeypatch.setattr(c, "dagger_positions", dagger)
    got = c.candidates(100)
    assert sum(s == "books" for s, _ in got) == 5 and asked == [95]
    assert c.spent_sources(["books", "dagger"]) == {"books"}
    c.candidates(60)
    assert asked[-1] == 60, "the whole phase is asked of DAgger"
    campaign.save_state(c.state_path, c.state)

    # A restart: the recorded size is trusted for the same files, so the book is not parsed again ...
    c2 = _tiny_campaign(tmp_path)
    monkeypatch.setattr(campaign_positions, "file_source", lambda *a: pytest.fail("parsed again"))
    assert c2.spent_sources(["books"]) == {"books"}
    # ... but files that changed are.
    c2.state["source_size"]["books"][0][0][1] += 1
    with pytest.raises(pytest.fail.Exception):
        c2.spent_sources(["books"])


def test_candidates_keep_a_games_plies_together_in_each_label_chunk(tmp_path, monkeypatch):
    """Label chunks keep Stockfish's hash and histories, so each chunk takes consecutive plies of one source's
    games in the order found (``shuffle_runs``), while the runs of the sources are mixed across the phase."""
    import chess

    from glimpse_train import campaign_positions

    monkeypatch.setitem(campaign_positions.SOURCE_FILES, "books", ("openings/noob_3moves.epd",))
    c = _tiny_campaign(tmp_path)
    c.cfg.mix, c.cfg.chunk = "books:0.5,dagger:0.5", 8
    b, game = chess.Board(), []
    for mv in ["g1f3", "g8f6", "b1c3", "b8c6", "f3g1", "f6g8", "c3b1", "c6b8"] * 6 + ["e2e4"]:
        b.push_uci(mv)
        game.append(b.fen())
    monkeypatch.setattr(c, "dagger_positions", lambda want: list(game))
    got = c.candidates(80)
    ply = {labelstore.position_key(f): i for i, f in enumerate(game)}
    dagger = [f for s, f in got if s == "dagger"]
    assert len(dagger) == 9 and len(got) == 49, "the repeated cycle dedups to 8 positions and the last one"
    chunks = [got[i:i + 8] for i in range(0, len(got), 8)]
    assert all(len({s for s, _ in ch}) == 1 for ch in chunks), "a chunk holds one source"
    for ch in chunks:
        if ch[0][0] == "dagger":
            idx = [ply[labelstore.position_key(f)] for _, f in ch]
            assert idx == sorted(idx), "the plies of a game in their order"
    sources = [ch[0][0] for ch in chunks]
    assert sources != sorted(sources, key=lambda s: s != sources[0]), "the runs are mixed, not one source first"


def test_the_label_phase_chunks_carried_and_new_candidates_apart(tmp_path, monkeypatch):
    """A carry of any length leaves the new candidates' runs aligned with the chunks."""
    c = _tiny_campaign(tmp_path)
    c.cfg.label_minutes, c.cfg.chunk, c.cfg.workers = 1.0, 2, 1
    carried = [("selfplay", START)]
    c.save_pending(carried)
    new = [("dagger", E4), ("dagger", "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1"),
           ("popular", "rnbqkbnr/pppppppp/8/8/2P5/8/PP1PPPPP/RNBQKBNR b KQkq - 0 1")]
    monkeypatch.setattr(c, "candidates", lambda n: list(new))
    seen = []

    def all_chunks(fn, chunks, args, on_result=None, **kw):
        seen.extend(chunks)
        for ch in chunks:
            on_result({"records": [(f, moves_of(f)) for f in ch], "fens": ch, "core_seconds": 1.0})
        return []

    monkeypatch.setattr(raylabel, "run_chunks", all_chunks)
    monkeypatch.setattr(raylabel, "stockfish_name", lambda _: "Stockfish test")
    assert c.label_phase() == 4
    assert seen == [[START], [new[0][1], new[1][1]], [new[2][1]]]


def test_heads_train_and_report(tmp_path):
    """A tiny canonical net with policy and WDL heads trains on real labels: the loss falls and the
    validation record has the policy accuracy."""
    import glob
    import itertools

    from glimpse_train.kinds.multi_action_value import MAVTrainConfig, MAVTrainer

    src = sorted(glob.glob(os.path.join(SHARED, "data", "labels", "*.tsv.gz")))[0]
    with gzip.open(src, "rt") as f:
        lines = [ln.rstrip("\n") for ln in itertools.islice(f, 600)]
    small = tmp_path / "small.tsv.gz"
    small.write_bytes(labelstore.gzip_bytes(lines))
    ds = MemDataset([str(small)], str(tmp_path / "cache"), log=lambda *_: None)
    cfg = MAVTrainConfig(layers=1, dim=32, heads=2, batch=16, steps=60, lr=2e-3, warmup=5, eval_every=60,
                         eval_positions=64, canonical=1, policy_dim=16, wdl_weight=0.1, ckpt_seconds=1e9)
    tr = MAVTrainer(cfg, str(tmp_path / "run"), ds, log=lambda *_: None)
    st = tr.fresh_state()
    batch, _ = tr.make_batch(tr.step_items(0))
    l0 = float(tr.loss(st["params"], *map(tr.jnp.asarray, batch + tr.constants())))
    st = tr.run()
    l1 = float(tr.loss(st["params"], *map(tr.jnp.asarray, batch + tr.constants())))
    assert l1 < l0
    rec = json.loads(open(tmp_path / "run" / "log.jsonl").read().splitlines()[-1])
    assert 0.0 <= rec["val_policy_acc"] <= 1.0 and rec["step"] == 60


def test_unlabelled_candidates_carry_over_to_the_next_label_phase(tmp_path, monkeypatch):
    """Candidates cost games to find; a label phase that reaches its deadline (or is killed) keeps the ones it
    did not label for the next phase, which labels them first and drops any the store has labelled since."""
    c = _tiny_campaign(tmp_path)
    c.cfg.label_minutes, c.cfg.chunk, c.cfg.workers = 1.0, 2, 1
    found = [("selfplay", START), ("dagger", E4),
             ("popular", "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1"),
             ("popular", "rnbqkbnr/pppppppp/8/8/2P5/8/PP1PPPPP/RNBQKBNR b KQkq - 0 1")]
    asked = []
    monkeypatch.setattr(c, "candidates", lambda n: asked.append(n) or list(found))

    def first_chunk_only(fn, chunks, args, on_result=None, **kw):
        # The deadline passes after the first chunk: the second never starts.
        r = {"records": [(f, moves_of(f)) for f in chunks[0]], "fens": chunks[0], "core_seconds": 1.0}
        on_result(r)
        return [r]

    monkeypatch.setattr(raylabel, "run_chunks", first_chunk_only)
    monkeypatch.setattr(raylabel, "stockfish_name", lambda _: "Stockfish test")
    assert c.label_phase() == 2
    with open(c.pending_path) as f:
        assert [tuple(line.rstrip("\n").split("\t")) for line in f] == found[2:]

    # A fresh process (a restart) labels the carried ones first and asks for only the rest.
    c2 = _tiny_campaign(tmp_path)
    c2.cfg.label_minutes, c2.cfg.chunk, c2.cfg.workers = 1.0, 2, 1
    c2.store.add([("popular", found[3][1], moves_of(found[3][1]))], {"engine": "test"}, 1.0)  # labelled meanwhile
    got = []
    monkeypatch.setattr(c2, "candidates", lambda n: got.append(n) or [])

    def all_chunks(fn, chunks, args, on_result=None, **kw):
        for ch in chunks:
            on_result({"records": [(f, moves_of(f)) for f in ch], "fens": ch, "core_seconds": 1.0})
        return []

    monkeypatch.setattr(raylabel, "run_chunks", all_chunks)
    assert c2.label_phase() == 1, "only the carried position the store did not have yet"
    assert got and got[0] == asked[0] - 1
    assert not os.path.exists(c2.pending_path), "nothing left: the file is removed"


def test_train_phase_lr_scale_zero_freezes_weights_and_keeps_the_undecayed_snapshot(tmp_path):
    c = _tiny_campaign(tmp_path)
    tiny = dict(campaign.CAMPAIGN_MODEL, layers=1, dim=16, heads=2, head_dim=16, head_hidden=32, warmup=1,
                ckpt_seconds=1e9, eval_every=10**6)
    with open(os.path.join(c.run_dir, "config.json"), "w") as f:
        json.dump(dict(tiny, kind="multi_action_value"), f)
    a = tmp_path / "a.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(START, moves_of(START)),
                                         labelstore.format_line(E4, moves_of(E4))]))
    ds = MemDataset([str(a)], str(tmp_path / "cache"), log=lambda *_: None)

    def steps(n, scale):
        tr = c.trainer(ds)
        calls = iter(range(n + 1))
        st = tr.run(lambda: next(calls) >= n, lr_scale=lambda: scale)  # stops after n steps
        return {k: np.asarray(v) for k, v in st["params"].items()}, st["step"]

    p1, s1 = steps(3, 1.0)  # fresh run, full learning rate: weights move
    p2, s2 = steps(3, 0.0)  # resumed, learning rate scaled to 0: weights stay where they were
    assert s2 > s1
    assert all(np.array_equal(p1[k], p2[k]) for k in p1)
    snaps = sorted(os.listdir(os.path.join(c.run_dir, "ema")))
    assert f"step{s1:07d}.npz" in snaps  # saved when the decay began, before any decayed step


def _phase(tmp_path, monkeypatch, core_seconds, wall, pause=0.0):
    """One label phase of 48 candidates in two 24-position chunks, each reporting ``core_seconds``, on a fake
    clock on which the labelling takes ``wall`` seconds, plus ``pause`` seconds stopped (``kill -STOP``) before
    the first chunk, which the campaign's pause clock leaves out; returns (campaign, run_chunks kwargs,
    positions)."""
    import random
    import types

    import chess

    c = _tiny_campaign(tmp_path)
    c.cfg.label_minutes, c.cfg.chunk, c.cfg.workers = 10.0, 24, 2
    c.state["rate"] = 0.04  # 0.04 positions/s × 2 workers × 600 s = 48 positions
    rng, board, fens = random.Random(5), chess.Board(), []
    while len(fens) < 48:
        board.push(rng.choice(list(board.legal_moves)))
        if board.is_game_over():
            board = chess.Board()
        elif board.fen() not in fens:
            fens.append(board.fen())
    monkeypatch.setattr(c, "candidates", lambda n: [("popular", f) for f in fens[:n]])
    now, paused = [1000.0], [0.0]
    monkeypatch.setattr(campaign_label, "time", types.SimpleNamespace(time=lambda: now[0], strftime=campaign_label.time.strftime))
    c.clock = lambda: now[0] - paused[0]
    seen = {}

    def chunks_run(fn, chunks, args, on_result=None, **kw):
        seen.update(kw)
        now[0] += pause
        paused[0] += pause
        for ch in chunks:
            now[0] += wall / len(chunks)
            on_result({"records": [(f, moves_of(f)) for f in ch], "fens": ch, "core_seconds": core_seconds})
        return []

    monkeypatch.setattr(raylabel, "run_chunks", chunks_run)
    monkeypatch.setattr(raylabel, "stockfish_name", lambda _: "Stockfish test")
    return c, seen, len(fens)


def test_label_phase_stretches_to_its_wall_cap_and_a_starved_phase_keeps_the_rate(tmp_path, monkeypatch):
    """A label phase is sized by the rate of an unstarved phase and may run to label_wall_cap × label_minutes;
    one whose workers got little CPU (a match at normal priority) labels what it can but does not lower
    the rate that sizes the next phase."""
    c, seen, n = _phase(tmp_path / "a", monkeypatch, core_seconds=800.0, wall=800.0)
    assert n == 48 and c.label_phase() == n
    assert seen["deadline"] == 1000.0 + 2.0 * 600, "stretched up to twice label_minutes of wall clock"
    assert c.state["rate"] == round(n / 800.0 / 2, 2), "1,600 core-s in 800 s on 2 workers: unstarved, measured"

    c, seen, n = _phase(tmp_path / "b", monkeypatch, core_seconds=20.0, wall=800.0)
    assert c.label_phase() == n
    assert c.state["rate"] == 0.04, "40 core-s in 800 s on 2 workers is 2.5 % busy: the rate stays"


def test_a_pause_during_a_label_phase_neither_uses_it_up_nor_lowers_the_rate(tmp_path, monkeypatch):
    """A phase stopped by ``kill -STOP`` for an hour (a match) and resumed: the deadline and the rate are timed
    on the pause clock, so the phase labels on after the resume and its 800 s of work measure the rate (on the
    wall clock the phase would be 10 % busy and past its deadline)."""
    c, seen, n = _phase(tmp_path, monkeypatch, core_seconds=800.0, wall=800.0, pause=3600.0)
    assert c.label_phase() == n
    assert seen["clock"] is c.clock and seen["deadline"] == 1000.0 + 2.0 * 600
    assert c.state["rate"] == round(n / 800.0 / 2, 2) and c.state["label_seconds"] == 800.0


def test_a_label_phase_cut_short_by_a_stop_keeps_the_rate(tmp_path, monkeypatch):
    """A stop during a phase (SIGTERM) ends it early with its finding time spread over few labels: the
    positions are kept, the rate that sizes the next phase is not lowered."""
    c, seen, n = _phase(tmp_path, monkeypatch, core_seconds=800.0, wall=800.0)
    run = raylabel.run_chunks

    def stopped_run(*a, **kw):
        c.stop.flag = True  # as SignalStop's handler does
        return run(*a, **kw)

    monkeypatch.setattr(raylabel, "run_chunks", stopped_run)
    assert c.label_phase() == n and c.store.totals()["positions"] == n
    assert c.state["rate"] == 0.04, "the stopped phase does not measure the rate"


_SIGTERM_AFTER_LABELLING = """
import os, signal, sys, time
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
import test_campaign as tc
from glimpse_train import raylabel

c = tc._tiny_campaign(__import__("pathlib").Path({tmp!r}))
c.cfg.workers = 1
# the phase itself: one real Ray task, so that Ray's worker machinery has run before the shutdown
c.label_phase = lambda: len(raylabel.run_chunks(lambda ch: ch, [[1]], (), stop=c.stop))
n = c.label_with_ray()
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(1)
print("survived", n, c.stop.flag)
"""


def test_sigterm_after_a_label_phase_is_caught_not_fatal(tmp_path):
    """After Ray's shutdown a SIGTERM killed the campaign outright (no checkpoint, exit 143) although Python
    still reported the stop handler; ``label_with_ray`` installs it again, so the flag is set instead."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    code = _SIGTERM_AFTER_LABELLING.format(root=os.path.dirname(here), tests=here, tmp=str(tmp_path))
    env = dict(os.environ, GLIMPSE_SHARED=SHARED, RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "survived 1 True" in r.stdout, r.stdout[-2000:]


def test_a_stop_ends_a_running_subprocess_within_seconds():
    """The DAgger match runs through ``run_until_stopped``: a stop request terminates it at the next poll
    (a campaign stopped mid-match no longer waits for hundreds of games); otherwise its exit code and
    stderr come back."""
    import sys
    import time

    from glimpse_train.campaign import run_until_stopped

    t0 = time.time()
    sleeper = "import sys, time; sys.stderr.write('started'); sys.stderr.flush(); time.sleep(60)"
    rc, err = run_until_stopped([sys.executable, "-c", sleeper], lambda: time.time() > t0 + 1.0, poll=0.05)
    assert rc is None and time.time() - t0 < 8 and err == "started"
    rc, err = run_until_stopped([sys.executable, "-c", "import sys; sys.stderr.write('bad'); sys.exit(3)"],
                                lambda: False, poll=0.05)
    assert (rc, err) == (3, "bad")


# ------------------------------------------------------------------ no-GPU mode, DAgger opponents


def test_label_only_mode_runs_label_phases_with_new_rounds_and_never_trains(tmp_path, monkeypatch):
    """Without a GPU the loop is label phases only: each phase gets the next round (new DAgger seed and
    opponent, new shuffle), the cycle and the curve stay, and the trainer is never built."""
    c = _tiny_campaign(tmp_path)
    c.cfg.label_minutes, c.cfg.cycles = 1.0, 3
    c.state["cycle"] = 52
    rounds = []
    monkeypatch.setattr(campaign, "gpu_backend", lambda: None)
    monkeypatch.setattr(c, "label_with_ray", lambda: (rounds.append(c.label_round),
                                                      c.state.update(label_round=c.label_round + 1), 7)[-1])
    monkeypatch.setattr(c, "trainer", lambda ds: pytest.fail("a CPU-only campaign must not train"))
    c.run()
    assert rounds == [52, 53, 54] and c.state["cycle"] == 52
    assert not os.path.exists(c.curve_csv)
    again = _tiny_campaign(tmp_path)
    assert again.label_round == 55, "the round survives a restart"
    assert json.load(open(again.state_path))["labelled_cycle"] == 52


