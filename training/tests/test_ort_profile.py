"""``glimpse_train.ort_profile`` (``make profile``): the feeds are the engine's one-pass rows, and the
profile sums real ORT kernel events by operator over the runs it made."""

from __future__ import annotations

import os

import chess
import numpy as np
import pytest

from glimpse_train import ort_profile as prof
from glimpse_train.chessdata import ACTIONS, tokenize


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    """The tiny multi_action_value_policy test model of ``make test-models``."""
    from glimpse_train.test_models import run_mavp

    d = str(tmp_path_factory.mktemp("tiny"))
    assert run_mavp("", d)
    return os.path.join(d, "tiny_mavp.onnx")


def test_feeds_are_bos_tokens_and_padded_legal_moves():
    f = prof.feeds(len(prof.FENS) + 1, pad=0)
    assert f["tokens"].shape == (len(prof.FENS) + 1, 78)
    assert (f["tokens"][:, 0] == 0).all()
    np.testing.assert_array_equal(f["tokens"][1, 1:], tokenize(prof.FENS[1]))
    # Row i holds the legal moves of FENS[i % n], then padding; the last row cycles back to the first FEN.
    for i in (0, 2, len(prof.FENS)):
        fen = prof.FENS[i % len(prof.FENS)]
        legal = sorted(m.uci() for m in chess.Board(fen).legal_moves)
        n = len(legal)
        assert sorted(ACTIONS[a] for a in f["actions"][i, :n]) == legal
        assert (f["actions"][i, n:] == 0).all()
    assert f["actions"].shape[1] == max(chess.Board(x).legal_moves.count() for x in prof.FENS)


def test_profile_sums_kernels_by_operator(tiny):
    p = prof.profile(tiny, rows=2, reps=6, threads=1)
    assert p["runs"] >= 6  # warm-up runs are profiled too
    assert p["wall_ms"] > 0 and p["profiled_ms"] > 0
    assert "MatMul" in p["ops"]
    assert p["kernel_ms"] == pytest.approx(sum(ms for ms, _ in p["ops"].values()))
    assert all(n >= 1 and ms >= 0 for ms, n in p["ops"].values())


def test_profile_refuses_a_net_without_the_one_pass_inputs(tmp_path):
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Identity", ["tokens"], ["y"])], "g",
                          [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["b", 79])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, ["b", 79])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = str(tmp_path / "av.onnx")
    with open(path, "wb") as fh:
        fh.write(m.SerializeToString())
    with pytest.raises(SystemExit, match="one-pass"):
        prof.profile(path, rows=1, reps=1, threads=1)


def test_matmul_rate_is_positive():
    assert prof.matmul_rate(64, 32, 32, reps=3, threads=1) > 0
