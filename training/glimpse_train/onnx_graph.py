"""ONNX helpers shared by every model kind's exporter (``kinds/*.py``): a tiny graph builder, the opset,
an onnxruntime session and the ``glimpse.*`` metadata of a file.

The exporters fold √D into the embedding table and 1/√(D/H) into W_Q, and write Q, K, V and the SwiGLU
gate and up as separate MatMuls (a fused product and a ``Split`` costs a copy in ONNX Runtime; see each
kind's ``build_model``).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

# onnxruntime is imported inside the functions that run a net: building and reading graphs does not load it.

OPSET = 17


class _G:
    """Tiny graph builder."""

    def __init__(self):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def const(self, base: str, arr: np.ndarray) -> str:
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.array(arr, order="C"), n))
        return n

    def op(self, op_type: str, inputs: list[str], base: str | None = None, n_out: int = 1, **attrs):
        outs = [self.name(base or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("n_" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs


def ort_session(path_or_bytes, threads: int = 0):
    import onnxruntime as ort

    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path_or_bytes, so, providers=["CPUExecutionProvider"])


def onnx_meta(path: str) -> dict[str, str]:
    """The metadata props (``glimpse.kind``, ...) of an ONNX file, without loading external data."""
    return {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}


def onnx_kind(path: str) -> str:
    """``glimpse.kind`` of an ONNX file ("" when absent)."""
    return onnx_meta(path).get("glimpse.kind", "")
