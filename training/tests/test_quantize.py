"""``glimpse_train.quantize`` (``make quantize``): the int8 twin keeps the source's metadata and names
its precision and source, really is quantised, stays close to its source, and bad sources are refused. The
shipped twin in ``weights/`` must have been made from the shipped source as it is now."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import onnx
import pytest

from glimpse_train import quantize as q

WEIGHTS = os.path.join(os.path.dirname(__file__), "..", "..", "weights")
with open(os.path.join(WEIGHTS, "DEFAULT")) as _f:
    DEFAULT_NET = _f.read().strip()  # the embedded net's file name (one line): a float32 net or its int8 twin
# The float32 source of the default net and its int8 twin beside it, as `make quantize` names it.
SHIPPED = os.path.join(WEIGHTS, q.source_of(DEFAULT_NET))
SHIPPED_TWIN = q.default_out(SHIPPED)


def meta(path: str) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load(path).metadata_props}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    """The tiny multi_action_value_policy test model of ``make test-models`` (random weights, fixed seed)."""
    from glimpse_train.test_models import run_mavp

    d = str(tmp_path_factory.mktemp("tiny"))
    assert run_mavp("", d)
    return os.path.join(d, "tiny_mavp.onnx")


@pytest.fixture(scope="module")
def twin(tiny) -> tuple[str, dict]:
    # Unsigned weights, as make test-models-int8: with signed ones ORT's u8s8 kernel saturates on CPUs without
    # VNNI for this random-weight net (weights/README.md); the shipped twin's test covers the default.
    s = q.quantize(tiny, weight_type="quint8")
    return s["out"], s


def test_twin_sits_beside_its_source_with_its_metadata(tiny, twin):
    path, summary = twin
    assert path == tiny[: -len(".onnx")] + "-int8.onnx" and os.path.isfile(path)
    src, got = meta(tiny), meta(path)
    for k, v in src.items():
        assert got[k] == v, k
    with open(tiny, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert got["glimpse.precision"] == "int8"
    assert got["glimpse.source"] == "tiny_mavp.onnx"
    assert got["glimpse.source_sha256"] == digest
    assert "quantize_dynamic" in got["glimpse.quantization"]
    assert summary["bytes"] < summary["source_bytes"]


def test_twin_is_quantised_with_the_same_inputs_and_outputs(tiny, twin):
    a, b = onnx.load(tiny), onnx.load(twin[0])
    ops = [n.op_type for n in b.graph.node]
    # Every MatMul with a constant weight became an integer MatMul; no float MatMul is left with one.
    weights = {t.name for t in a.graph.initializer}
    const_matmuls = sum(n.op_type == "MatMul" and n.input[1] in weights for n in a.graph.node)
    assert const_matmuls > 0
    assert ops.count("MatMulInteger") == twin[1]["int8_matmuls"] >= const_matmuls
    assert not [n.name for n in b.graph.node if n.op_type == "MatMul" and set(n.input) & weights]
    assert any(t.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8) for t in b.graph.initializer)
    sig = lambda vs: [(v.name, v.type.tensor_type.elem_type, len(v.type.tensor_type.shape.dim)) for v in vs]
    assert sig(a.graph.input) == sig(b.graph.input)
    assert sig(a.graph.output) == sig(b.graph.output)


def test_twin_q_stays_close_to_its_source(tiny, twin):
    c = q.compare(tiny, twin[0], positions=48)
    # Quantisation must change something (else the test shows nothing) ...
    assert c["max_abs_dq"] > 1e-5
    # ... but little next to what tells moves apart: the typical difference stays well below the spread of Q
    # over a position's moves, and the net's favourite move mostly survives.
    assert c["mean_abs_dq"] < 0.25 * c["mean_q_spread"], c
    assert c["argmax_agreement"] >= 0.6, c


def test_bad_sources_are_refused(tiny, twin, tmp_path):
    with pytest.raises(q.QuantizeError, match="no such file"):
        q.quantize(str(tmp_path / "missing.onnx"))
    with pytest.raises(q.QuantizeError, match="only a float32 net"):
        q.quantize(twin[0], str(tmp_path / "twice.onnx"))
    bare = onnx.load(tiny)
    del bare.metadata_props[:]
    onnx.save(bare, str(tmp_path / "bare.onnx"))
    with pytest.raises(q.QuantizeError, match="glimpse.kind missing"):
        q.quantize(str(tmp_path / "bare.onnx"))
    with pytest.raises(q.QuantizeError, match="weight type"):
        q.quantize(tiny, str(tmp_path / "x.onnx"), weight_type="int4")
    assert q.main(["--net", str(tmp_path / "missing.onnx")]) == 1


def test_random_positions_are_reproducible_and_unfinished():
    a, b = q.random_positions(6, seed=3), q.random_positions(6, seed=3)
    assert [x.fen() for x in a] == [x.fen() for x in b]
    assert all(not x.is_game_over() for x in a)
    assert len({x.fen() for x in a}) == 6


@pytest.mark.skipif(not os.path.isfile(SHIPPED_TWIN), reason="no shipped int8 twin")
def test_shipped_twin_was_made_from_the_shipped_source():
    got, src = meta(SHIPPED_TWIN), meta(SHIPPED)
    with open(SHIPPED, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert got["glimpse.source"] == os.path.basename(SHIPPED)
    assert got["glimpse.source_sha256"] == digest, "weights/ changed: run make quantize again"
    assert got["glimpse.precision"] == "int8"
    assert {k: got[k] for k in src} == src
    c = q.compare(SHIPPED, SHIPPED_TWIN, positions=32)
    assert c["mean_abs_dq"] < 0.25 * c["mean_q_spread"], c
    assert np.isfinite(c["max_abs_dq"])


def test_source_of_inverts_default_out():
    assert q.source_of("w/a-int8.onnx") == "w/a.onnx"
    assert q.source_of(q.default_out("w/glimpse-l6d128-c16.onnx")) == "w/glimpse-l6d128-c16.onnx"
    assert q.source_of("w/a.onnx") == "w/a.onnx"  # a float32 default is its own source


def test_heldout_blend_accuracy_spans_q_and_policy(tiny, tmp_path):
    """``head_accuracies`` scores ``MoveChoice blend`` as the engine does: with weight 0 it is argmax Q
    (``eval_validation``'s action accuracy), with a huge weight the policy head's argmax."""
    import glob

    from glimpse_train.campaign import HeldOut, head_accuracies
    from glimpse_train.data import MemDataset
    from glimpse_train.evaluate import eval_validation
    from glimpse_train.kinds.multi_action_value import MAVPolicy

    shared = os.environ.get("GLIMPSE_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "shared"))
    files = sorted(glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz")))
    held = HeldOut(MemDataset(files, str(tmp_path / "cache"), lambda *_: None), shared)
    assert len(held.val_rows) > 0
    q_only = head_accuracies(tiny, held, blend_weight=0.0)
    p_only = head_accuracies(tiny, held, blend_weight=1e6)
    default = head_accuracies(tiny, held)
    assert q_only["blend_accuracy"] == pytest.approx(eval_validation(MAVPolicy(tiny), held)["action_accuracy"])
    assert p_only["blend_accuracy"] == pytest.approx(p_only["policy_accuracy"])
    assert default["policy_accuracy"] == p_only["policy_accuracy"] and 0.0 <= default["blend_accuracy"] <= 1.0


def test_per_channel_twin_runs_with_3d_weights_kept_float(tiny, tmp_path):
    # The one-pass net's per-head Q/K/V weights are 3-D; per-column parameters on them made a twin that ORT
    # loaded but refused at its first run ("b zero point is not valid").
    src = onnx.load(tiny)
    kept = q.not_2d_weight_matmuls(src)
    assert kept and all(n.startswith("n_MatMul") for n in kept)
    s = q.quantize(tiny, str(tmp_path / "pc.onnx"), per_channel=True, weight_type="quint8")
    assert f"per channel ({len(kept)} MatMuls with 3-D weights kept float32)" in meta(s["out"])["glimpse.quantization"]
    b = onnx.load(s["out"])
    assert sorted(n.name for n in b.graph.node if n.op_type == "MatMul" and n.name in kept) == sorted(kept)
    assert s["int8_matmuls"] > 0
    c = q.compare(tiny, s["out"], positions=16)
    assert c["mean_abs_dq"] < 0.25 * c["mean_q_spread"], c


def test_a_twin_ort_cannot_run_leaves_out_as_it_was(tiny, tmp_path, monkeypatch):
    out = tmp_path / "keep.onnx"
    out.write_bytes(b"the previous twin")

    def refuse(path):
        raise RuntimeError("MatmulInteger : b zero point is not valid")

    monkeypatch.setattr(q, "run_once", refuse)
    with pytest.raises(q.QuantizeError, match="cannot run the int8 twin .*b zero point"):
        q.quantize(tiny, str(out), weight_type="quint8")
    assert out.read_bytes() == b"the previous twin"
    assert sorted(os.listdir(tmp_path)) == ["keep.onnx"]


def test_twin_q_depends_on_its_run_so_held_out_scores_it_alone(tiny, twin, tmp_path):
    """ORT's dynamic quantisation takes one activation scale per run: the twin's Q of a position moves with the
    positions beside it, the float net's does not. The held-out figures of an int8 net therefore come from one
    position a run (``heldout.positions_per_run``)."""
    import glob

    from glimpse_train.heldout import FLOAT_POSITIONS_PER_RUN, positions_per_run
    from glimpse_train.onnx_graph import ort_session

    boards = q.random_positions(24, seed=3)
    for net, moves in ((tiny, False), (twin[0], True)):
        s = ort_session(net)
        alone = [q.move_q(s, [b])[0] for b in boards]
        together = q.move_q(s, boards)
        worst = max(float(np.abs(a - b).max()) for a, b in zip(alone, together))
        assert (worst > 1e-4) if moves else (worst < 1e-6), (net, worst)
    assert positions_per_run(twin[0]) == 1 and positions_per_run(tiny) == FLOAT_POSITIONS_PER_RUN
    shared = os.environ.get("GLIMPSE_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "shared"))
    assert glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz"))
    rep = q.heldout([tiny, twin[0]], shared, str(tmp_path / "cache"))
    assert rep[tiny]["positions_per_run"] == FLOAT_POSITIONS_PER_RUN and rep[twin[0]]["positions_per_run"] == 1
    assert rep[tiny]["val_positions"] == rep[twin[0]]["val_positions"] > 0
