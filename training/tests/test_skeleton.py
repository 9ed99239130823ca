"""``glimpse_train.skeleton``: a released-size net whose float weights live in an external file made where it
runs. The graph file stays small, the fill writes exactly the bytes the graph points at, and ONNX Runtime then
runs it with the engine contract (``tokens`` [batch, 79] → ``log_probs`` [batch, 128])."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest

from glimpse_train import skeleton


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_skeleton_fills_and_runs(tmp_path, precision):
    graph, fill = skeleton.write_skeleton("9M", precision, str(tmp_path), seed=3)
    assert os.path.getsize(graph) < 200 * 1024  # the weights are not in the graph file
    with open(fill) as f:
        spec = json.load(f)
    model = onnx.load(graph, load_external_data=False)
    ext = [i for i in model.graph.initializer if i.data_location == onnx.TensorProto.EXTERNAL]
    where = [{e.key: e.value for e in i.external_data} for i in ext]
    ends = [int(w["offset"]) + int(w["length"]) for w in where]
    assert ext and max(ends) == spec["bytes"]
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["glimpse.kind"] == "action_value" and meta["glimpse.precision"] == precision
    weights = skeleton.fill_weights(fill)
    assert os.path.getsize(weights) == spec["bytes"]
    values = np.fromfile(weights, dtype=spec["dtype"])
    assert abs(float(values.astype(np.float32).std()) - skeleton.FILL_STD) < 0.002
    # The same seed gives the same file.
    again = np.fromfile(skeleton.fill_weights(fill), dtype=spec["dtype"])
    assert np.array_equal(values, again)
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
    tokens = np.zeros((2, 79), dtype=np.int64)
    tokens[:, 1:] = np.arange(1, 79) % 30
    (out,) = sess.run(["log_probs"], {"tokens": tokens})
    assert out.shape == (2, 128) and np.isfinite(out).all()
    assert np.allclose(np.exp(out).sum(axis=1), 1.0, atol=1e-2)


def test_skeleton_refuses_unknown_sizes(tmp_path):
    with pytest.raises(ValueError, match="size must be one of"):
        skeleton.write_skeleton("1B", "fp16", str(tmp_path))
    with pytest.raises(ValueError, match="precision must be"):
        skeleton.write_skeleton("9M", "int4", str(tmp_path))
