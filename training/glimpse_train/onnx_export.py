"""Export a searchless-chess transformer (flat Haiku-named params) to ONNX with Glimpse's contract.

Contract: input ``tokens`` int64 [batch, 79] (AV: ``[0, 77 state tokens, action]``) or [batch, 78]
(SV/BC: ``[0, 77 state tokens]``); output ``log_probs`` float32 [batch, K] (AV/SV, K buckets) or
[batch, 1968] (BC), log-softmax applied, read at the last position. Dynamic batch. Opset 17.
Metadata props: ``glimpse.kind``, ``glimpse.buckets`` ("0" for BC), ``glimpse.description``,
``glimpse.params``, ``glimpse.gflop_per_eval`` (+ informational ``glimpse.layers``/``dim``/``heads``).

Graph optimisations (outputs stay within float32 rounding of the plain model):
* the √D embedding scale is folded into the embedding table, the 1/√(D/H) attention scale into W_Q;
* Q/K/V projections are one MatMul [D, 3D]; SwiGLU's W1/W2 one MatMul [D, 8D];
* the last layer computes K and V for all positions but Q, attention output, MLP, final LayerNorm
  and the head only for the last position (the only row that is read).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .model import (KIND_AV, KIND_BC, KINDS, ModelConfig, attn_name, gflop_per_eval, infer_config,
                    lin_name, ln_name, load_npz_params, num_params)

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


def build_model(params: dict[str, np.ndarray], cfg: ModelConfig, description: str = "",
                optimise_last_layer: bool = True) -> onnx.ModelProto:
    """Build the ONNX ModelProto for ``params`` (float32 numpy arrays, Haiku names)."""
    p = {k: np.asarray(v, np.float32) for k, v in params.items()}
    t, d, nh = cfg.seq_len, cfg.dim, cfg.heads
    dh = d // nh
    L = cfg.layers
    g = _G()
    i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731

    emb = g.const("embed", (p["embed/embeddings"].astype(np.float64) * math.sqrt(d)).astype(np.float32))
    pos = g.const("pos", p["embed_1/embeddings"][:t])
    x = g.op("Gather", [emb, "tokens"], "tok_emb", axis=0)
    x = g.op("Add", [x, pos], "h0")

    shape_bthd = g.const("shape_bthd", i64([0, t, nh, dh]))
    shape_btd = g.const("shape_btd", i64([0, t, d]))
    shape_bh1d = g.const("shape_bh1d", i64([0, nh, 1, dh]))
    shape_bd = g.const("shape_bd", i64([0, d]))
    last_idx = g.const("last", i64(t - 1))
    qscale = 1.0 / math.sqrt(dh)

    def ln(x_in: str, k: int) -> str:
        return g.op("LayerNormalization",
                    [x_in, g.const(f"ln{k}_s", p[f"{ln_name(k)}/scale"]), g.const(f"ln{k}_b", p[f"{ln_name(k)}/offset"])],
                    f"ln{k}", axis=-1, epsilon=1e-5)

    def mlp(x_in: str, i: int) -> str:
        y = ln(x_in, 2 * i + 1)
        w12 = np.concatenate([p[f"{lin_name(3*i)}/w"], p[f"{lin_name(3*i+1)}/w"]], axis=1)
        gu = g.op("MatMul", [y, g.const(f"w12_{i}", w12)], f"gu{i}")
        gate, up = g.op("Split", [gu, g.const("split", i64([cfg.dim * cfg.widening] * 2))], f"gu{i}", n_out=2, axis=-1)
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])], f"silu{i}")
        hmid = g.op("Mul", [act, up], f"swiglu{i}")
        out = g.op("MatMul", [hmid, g.const(f"w3_{i}", p[f"{lin_name(3*i+2)}/w"])], f"mlp{i}")
        return g.op("Add", [x_in, out], f"h_mlp{i}")

    for i in range(L):
        a = attn_name(i)
        wq = (p[f"{a}/linear/w"].astype(np.float64) * qscale).astype(np.float32)
        wk, wv, wo = p[f"{a}/linear_1/w"], p[f"{a}/linear_2/w"], p[f"{a}/linear_3/w"]
        y = ln(x, 2 * i)
        last = optimise_last_layer and i == L - 1
        if not last:
            qkv = g.op("MatMul", [y, g.const(f"wqkv{i}", np.concatenate([wq, wk, wv], axis=1))], f"qkv{i}")
            q, k, v = g.op("Split", [qkv, g.const("split", i64([d, d, d]))], f"qkv{i}", n_out=3, axis=-1)
            q = g.op("Transpose", [g.op("Reshape", [q, shape_bthd])], f"q{i}", perm=[0, 2, 1, 3])
        else:
            kv = g.op("MatMul", [y, g.const(f"wkv{i}", np.concatenate([wk, wv], axis=1))], f"kv{i}")
            k, v = g.op("Split", [kv, g.const("split", i64([d, d]))], f"kv{i}", n_out=2, axis=-1)
            y_last = g.op("Gather", [y, last_idx], f"y_last{i}", axis=1)  # [B, D]
            q = g.op("MatMul", [y_last, g.const(f"wq{i}", wq)], f"q{i}")
            q = g.op("Reshape", [q, shape_bh1d], f"q{i}")  # [B, H, 1, dh]
        k = g.op("Transpose", [g.op("Reshape", [k, shape_bthd])], f"k{i}", perm=[0, 2, 3, 1])  # [B,H,dh,T]
        v = g.op("Transpose", [g.op("Reshape", [v, shape_bthd])], f"v{i}", perm=[0, 2, 1, 3])  # [B,H,T,dh]
        s = g.op("Softmax", [g.op("MatMul", [q, k], f"scores{i}")], f"attn{i}", axis=-1)
        o = g.op("MatMul", [s, v], f"ctx{i}")
        if not last:
            o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 2, 1, 3]), shape_btd], f"ctx{i}")
            o = g.op("MatMul", [o, g.const(f"wo{i}", wo)], f"attn_out{i}")
            x = g.op("Add", [x, o], f"h_attn{i}")
        else:
            o = g.op("Reshape", [o, shape_bd], f"ctx{i}")  # [B, D]
            o = g.op("MatMul", [o, g.const(f"wo{i}", wo)], f"attn_out{i}")
            x_last = g.op("Gather", [x, last_idx], f"x_last{i}", axis=1)
            x = g.op("Add", [x_last, o], f"h_attn{i}")
        x = mlp(x, i)
    if not optimise_last_layer:
        x = g.op("Gather", [x, last_idx], "x_last", axis=1)
    y = ln(x, 2 * L)
    z = g.op("Gemm", [y, g.const("head_w", p[f"{lin_name(3*L)}/w"]), g.const("head_b", p[f"{lin_name(3*L)}/b"])],
             "logits")
    g.nodes.append(helper.make_node("LogSoftmax", [z], ["log_probs"], name="n_logsoftmax", axis=-1))

    # Deduplicate identical split constants (same name base created several times is harmless but wasteful).
    inp = helper.make_tensor_value_info("tokens", TensorProto.INT64, ["batch", t])
    out = helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, ["batch", cfg.out_size])
    graph = helper.make_graph(g.nodes, f"glimpse_{cfg.kind}", [inp], [out], initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="glimpse-train")
    model.ir_version = 8
    meta = {
        "glimpse.kind": cfg.kind,
        "glimpse.buckets": "0" if cfg.kind == KIND_BC else str(cfg.buckets),
        "glimpse.description": description or f"{cfg.kind} L={L} D={d} H={nh}",
        "glimpse.params": str(num_params(cfg)),
        "glimpse.gflop_per_eval": f"{gflop_per_eval(cfg, optimise_last_layer):.6f}",
        "glimpse.layers": str(L),
        "glimpse.dim": str(d),
        "glimpse.heads": str(nh),
        "glimpse.seq_len": str(t),
    }
    helper.set_model_props(model, meta)
    onnx.checker.check_model(model)
    return model


def export(params: dict[str, np.ndarray], cfg: ModelConfig, path: str, description: str = "",
           optimise_last_layer: bool = True) -> onnx.ModelProto:
    model = build_model(params, cfg, description, optimise_last_layer)
    onnx.save(model, path)
    return model


def ort_session(path_or_bytes, threads: int = 0):
    import onnxruntime as ort

    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path_or_bytes, so, providers=["CPUExecutionProvider"])


def main(argv=None):
    ap = argparse.ArgumentParser(description="Convert a golden-style npz (params/<module>/<name>) to ONNX")
    ap.add_argument("npz")
    ap.add_argument("out")
    ap.add_argument("--kind", choices=KINDS, default=KIND_AV)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--tree", default="params", help="params or params_ema")
    ap.add_argument("--description", default="")
    a = ap.parse_args(argv)
    params = load_npz_params(a.npz, a.tree)
    cfg = infer_config(params, a.kind, a.heads)
    export(params, cfg, a.out, a.description)
    print(f"wrote {a.out}: {cfg}")


if __name__ == "__main__":
    main()
