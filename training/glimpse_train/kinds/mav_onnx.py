"""The one-pass kind's ONNX graph (``multi_action_value``, module docstring there: the contract):
``build_model``, ``export`` and ``verify`` (ONNX Runtime against JAX; JAX imported inside it only).
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..canon import onnx_canon
from ..heads import onnx_policy, onnx_wdl
from ..onnx_graph import OPSET, _G, ort_session
from ..position_batches import PAD_ACTION
from ..transformer import SMOLGEN_GLOBAL, attn_name, lin_name, ln_name
from .mav_model import (KIND_MAV, KIND_MAVP, SEQ, FROM_TOKEN, TO_TOKEN, MAVConfig, num_params, cost_split,
                        gflop_per_position, jax_outputs)


# ----------------------------------------------------------------------------------------------
# ONNX graph
# ----------------------------------------------------------------------------------------------


def build_model(params: dict[str, np.ndarray], cfg: MAVConfig, description: str = "",
                fused_attention: bool = False, extra_meta: dict[str, str] | None = None) -> onnx.ModelProto:
    """The one-pass ONNX graph of ``params``; ``extra_meta`` adds ``glimpse.*`` metadata entries of the
    caller's (``remote train``: the snapshot's step and batch)."""
    p = {k: np.asarray(v, np.float32) for k, v in params.items()}
    t, d, nh = SEQ, cfg.dim, cfg.heads
    dh = d // nh
    L = cfg.layers
    g = _G()
    i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731

    tokens_in, actions_in = "tokens", "actions"
    if cfg.canonical:
        tokens_in, actions_in = onnx_canon(g, "tokens", "actions")
    emb = g.const("embed", (p["embed/embeddings"].astype(np.float64) * math.sqrt(d)).astype(np.float32))
    pos = g.const("pos", p["embed_1/embeddings"][:t])
    x = g.op("Add", [g.op("Gather", [emb, tokens_in], "tok_emb", axis=0), pos], "h0")
    axis1 = g.const("axis1", i64([1]))
    shape_btd = g.const("shape_btd", i64([0, t, d]))

    def ln(x_in: str, prefix: str, tag: str) -> str:
        return g.op("LayerNormalization", [x_in, g.const(f"{tag}_s", p[f"{prefix}/scale"]),
                                           g.const(f"{tag}_b", p[f"{prefix}/offset"])], tag, axis=-1, epsilon=1e-5)

    def swiglu(y: str, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray, tag: str) -> str:
        # Two products rather than one into [.., 2H] and a Split: ONNX Runtime's Split copies its
        # output, and the separate products ran the int8 twin 1.3x faster at 32 rows (README, speed).
        gate = g.op("MatMul", [y, g.const(f"wg_{tag}", wg)], f"gate_{tag}")
        up = g.op("MatMul", [y, g.const(f"wu_{tag}", wu)], f"up_{tag}")
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])], f"silu_{tag}")
        return g.op("MatMul", [g.op("Mul", [act, up], f"swiglu_{tag}"), g.const(f"w3_{tag}", wd)], f"mlp_{tag}")

    def qkv_projections(y: str, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, i: int) -> tuple[str, str, str]:
        # Q, K and V as three products [B, T, D]·[D, D] (no fused [D, 3D] product and Split: see swiglu).
        return tuple(g.op("MatMul", [y, g.const(f"w{n}{i}", w)], f"{n}{i}_proj")
                     for n, w in (("q", wq), ("k", wk), ("v", wv)))

    def heads_major(w: np.ndarray) -> np.ndarray:
        # [D, D] projection → [H, D, dh], head h's output columns h·dh … (h+1)·dh − 1
        return w.reshape(d, nh, dh).transpose(1, 0, 2)

    if cfg.smolgen:
        sg_global = g.const("sg_global", p[SMOLGEN_GLOBAL])
        sg_flat = g.const("sg_flat", i64([0, -1]))
        sg_heads = g.const("sg_heads", i64([0, nh, cfg.smolgen]))
        sg_bhtt = g.const("sg_bhtt", i64([0, nh, t, t]))

    def smolgen(y: str, i: int) -> str:
        # transformer.numpy_smolgen: y [B, T, D] → attention-logit biases [B, H, T, T]
        a = f"{attn_name(i)}/smolgen"

        def dense_silu(x_in: str, name: str, tag: str) -> str:
            z = g.op("Add", [g.op("MatMul", [x_in, g.const(f"sg_{tag}w{i}", p[f"{a}/{name}/w"])]),
                             g.const(f"sg_{tag}b{i}", p[f"{a}/{name}/b"])], f"sg_{tag}{i}")
            return g.op("Mul", [z, g.op("Sigmoid", [z])], f"sg_{tag}silu{i}")

        c = g.op("MatMul", [y, g.const(f"sg_compress{i}", p[f"{a}/compress/w"])], f"sg_c{i}")
        h = ln(dense_silu(g.op("Reshape", [c, sg_flat], f"sg_cflat{i}"), "dense1", "d1"), f"{a}/ln1", f"sg_lna{i}")
        h = g.op("Reshape", [dense_silu(h, "dense2", "d2"), sg_heads], f"sg_h{i}")
        h = ln(h, f"{a}/ln2", f"sg_lnb{i}")
        return g.op("Reshape", [g.op("MatMul", [h, sg_global], f"sg_g{i}"), sg_bhtt], f"sg_bias{i}")

    qscale = 1.0 / math.sqrt(dh)
    for i in range(L):
        a = attn_name(i)
        wq = (p[f"{a}/linear/w"].astype(np.float64) * qscale).astype(np.float32)
        wk, wv, wo = p[f"{a}/linear_1/w"], p[f"{a}/linear_2/w"], p[f"{a}/linear_3/w"]
        y = ln(x, ln_name(2 * i), f"ln{2 * i}")
        if fused_attention:
            # ONNX Runtime's com.microsoft.MultiHeadAttention: Q, K, V [B, T, D] in, context [B, T, D] out
            # (heads split and merged inside the kernel); W_Q carries 1/sqrt(dh), hence scale 1.
            q, k, v = qkv_projections(y, wq, wk, wv, i)
            mha_in = [q, k, v, "", ""]
            bias = g.const(f"pair_bias{i}", p[f"{a}/pair_bias"][None]) if cfg.attn_bias else None
            if cfg.smolgen:
                gen = smolgen(y, i)
                bias = g.op("Add", [bias, gen], f"attn_bias{i}") if bias else gen
            if bias:
                mha_in.append(bias)
            o = g.op("MultiHeadAttention", mha_in, f"ctx{i}", domain="com.microsoft", num_heads=nh, scale=1.0)
            x = g.op("Add", [x, g.op("MatMul", [o, g.const(f"wo{i}", wo)], f"attn_out{i}")], f"h_attn{i}")
            y = ln(x, ln_name(2 * i + 1), f"ln{2 * i + 1}")
            mlp = swiglu(y, p[f"{lin_name(3*i)}/w"], p[f"{lin_name(3*i+1)}/w"], p[f"{lin_name(3*i+2)}/w"], str(i))
            x = g.op("Add", [x, mlp], f"h_mlp{i}")
            continue
        # Q, K, V straight into the heads' layout [B, H, T, dh]: y as [B, 1, T, D] times per-head weights
        # [H, D, dh] (a broadcast batched MatMul) instead of a [B, T, D] product, a Reshape and a Transpose
        # each. K's last two axes are swapped by a Transpose that ONNX Runtime folds into the scores' MatMul
        # (FusedMatMul, transB): 10 of the net's 40 Transposes are left, and the int8 twin runs the move as
        # played 1.12x faster (README, speed).
        yh = g.op("Unsqueeze", [y, axis1], f"yh{i}")
        q = g.op("MatMul", [yh, g.const(f"wq{i}", heads_major(wq))], f"q{i}")
        k = g.op("MatMul", [yh, g.const(f"wk{i}", heads_major(wk))], f"kh{i}")
        k = g.op("Transpose", [k], f"k{i}", perm=[0, 1, 3, 2])
        v = g.op("MatMul", [yh, g.const(f"wv{i}", heads_major(wv))], f"v{i}")
        scores = g.op("MatMul", [q, k], f"scores{i}")
        if cfg.attn_bias:
            scores = g.op("Add", [scores, g.const(f"pair_bias{i}", p[f"{a}/pair_bias"][None])], f"scores_b{i}")
        if cfg.smolgen:
            scores = g.op("Add", [scores, smolgen(y, i)], f"scores_sg{i}")
        s = g.op("Softmax", [scores], f"attn{i}", axis=-1)
        o = g.op("MatMul", [s, v], f"ctx{i}")
        o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 2, 1, 3]), shape_btd], f"ctx{i}")
        x = g.op("Add", [x, g.op("MatMul", [o, g.const(f"wo{i}", wo)], f"attn_out{i}")], f"h_attn{i}")
        y = ln(x, ln_name(2 * i + 1), f"ln{2 * i + 1}")
        mlp = swiglu(y, p[f"{lin_name(3*i)}/w"], p[f"{lin_name(3*i+1)}/w"], p[f"{lin_name(3*i+2)}/w"], str(i))
        x = g.op("Add", [x, mlp], f"h_mlp{i}")
    y = ln(x, ln_name(2 * L), "ln_final")  # [B, 78, D]

    # Per-move head: gather the trunk outputs at the from/to board tokens of each action.
    last = g.const("last_axis", i64([-1]))
    fidx = g.op("Unsqueeze", [g.op("Gather", [g.const("from_token", FROM_TOKEN.astype(np.int64)), actions_in],
                                   "from_tok", axis=0), last], "from_idx")
    tidx = g.op("Unsqueeze", [g.op("Gather", [g.const("to_token", TO_TOKEN.astype(np.int64)), actions_in],
                                   "to_tok", axis=0), last], "to_idx")
    yf = g.op("GatherND", [y, fidx], "y_from", batch_dims=1)  # [B, M, D]
    yt = g.op("GatherND", [y, tidx], "y_to", batch_dims=1)
    yft = g.op("Concat", [yf, yt], "y_ft", axis=-1)
    u = g.op("MatMul", [yft, g.const("head_in", p["mav_head/linear_in/w"])], "head_in")
    ae = g.op("Gather", [g.const("action_embed", p["mav_head/action_embed/embeddings"]), actions_in], "act_emb", axis=0)
    u = g.op("Add", [u, ae], "head_u0")
    if cfg.head_global:
        y0 = g.op("Gather", [y, g.const("bos_idx", i64([0]))], "y_bos_keep", axis=1)  # [B, 1, D]
        u = g.op("Add", [u, g.op("MatMul", [y0, g.const("head_global", p["mav_head/linear_global/w"])])], "head_u0g")
    z = ln(u, "mav_head/layer_norm", "head_ln")
    u = g.op("Add", [u, swiglu(z, p["mav_head/linear_gate/w"], p["mav_head/linear_up/w"],
                               p["mav_head/linear_down/w"], "head")], "head_u1")
    z = ln(u, "mav_head/layer_norm_out", "head_ln_out")
    logits = g.op("Add", [g.op("MatMul", [z, g.const("head_out_w", p["mav_head/linear_out/w"])]),
                          g.const("head_out_b", p["mav_head/linear_out/b"])], "logits")
    g.nodes.append(helper.make_node("LogSoftmax", [logits], ["log_probs"], name="n_logsoftmax", axis=-1))
    outputs = [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, ["batch", "moves", cfg.buckets])]
    if cfg.policy_dim:
        pol = onnx_policy(g, p, yf, yt, actions_in)
        g.nodes.append(helper.make_node("Identity", [pol], ["policy"], name="n_policy"))
        outputs.append(helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", "moves"]))
    if cfg.wdl_head:
        y0w = g.op("Gather", [y, g.const("bos_wdl", i64(0))], "y_bos_wdl", axis=1)  # [B, D]
        g.nodes.append(helper.make_node("LogSoftmax", [onnx_wdl(g, p, y0w)], ["wdl"], name="n_wdl_logsoftmax", axis=-1))
        outputs.append(helper.make_tensor_value_info("wdl", TensorProto.FLOAT, ["batch", 3]))
    if cfg.value_head:
        y0 = g.op("Gather", [y, g.const("bos", i64(0))], "y_bos", axis=1)  # [B, D]
        vz = g.op("Gemm", [y0, g.const("value_w", p["value_head/linear/w"]), g.const("value_b", p["value_head/linear/b"])],
                  "value_logits")
        g.nodes.append(helper.make_node("LogSoftmax", [vz], ["value"], name="n_value_logsoftmax", axis=-1))
        outputs.append(helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch", cfg.buckets]))

    inputs = [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["batch", t]),
              helper.make_tensor_value_info("actions", TensorProto.INT64, ["batch", "moves"])]
    kind = onnx_kind(cfg)
    graph = helper.make_graph(g.nodes, f"glimpse_{kind}", inputs, outputs, initializer=g.inits)
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid("com.microsoft", 1)] if fused_attention else [])
    model = helper.make_model(graph, opset_imports=opsets, producer_name="glimpse-train")
    model.ir_version = 8
    cs = cost_split(cfg)
    meta = {
        "glimpse.kind": kind,
        "glimpse.buckets": str(cfg.buckets),
        "glimpse.description": description or f"{kind} L={L} D={d} H={nh}",
        "glimpse.params": str(num_params(cfg)),
        "glimpse.gflop_per_eval": f"{gflop_per_position(cfg):.6f}",
        "glimpse.gflop_trunk": f"{cs['trunk_gflop']:.6f}",
        "glimpse.gflop_per_move": f"{cs['head_gflop_per_move']:.8f}",
        "glimpse.pad_action": str(PAD_ACTION),
        "glimpse.layers": str(L),
        "glimpse.dim": str(d),
        "glimpse.heads": str(nh),
        "glimpse.seq_len": str(t),
        "glimpse.head_dim": str(cfg.dh),
        "glimpse.head_hidden": str(cfg.hh),
        "glimpse.attn_bias": str(int(cfg.attn_bias)),
        "glimpse.head_global": str(int(cfg.head_global)),
        "glimpse.canonical": str(int(cfg.canonical)),
        "glimpse.policy_dim": str(cfg.policy_dim),
        "glimpse.wdl_head": str(int(cfg.wdl_head)),
        **({"glimpse.smolgen": f"{cfg.smolgen},{cfg.smolgen_compress},{cfg.smolgen_hidden}"} if cfg.smolgen else {}),
        **(extra_meta or {}),
    }
    helper.set_model_props(model, meta)
    onnx.checker.check_model(model)
    return model


def onnx_kind(cfg: MAVConfig) -> str:
    """``glimpse.kind`` of an exported net: ``multi_action_value_policy`` with both the policy and the WDL head
    (the engine then reads them: MCTS priors, ``MoveChoice policy``, UCI ``wdl``), else ``multi_action_value``."""
    return KIND_MAVP if cfg.policy_dim and cfg.wdl_head else KIND_MAV


def export(params, cfg: MAVConfig, path: str, description: str = "",
           extra_meta: dict[str, str] | None = None) -> onnx.ModelProto:
    model = build_model(params, cfg, description, extra_meta=extra_meta)
    onnx.save(model, path)
    return model


def verify(params, cfg: MAVConfig, onnx_path: str, tokens: np.ndarray, actions: np.ndarray) -> float:
    """Max |ORT − JAX| over every output (log_probs, and value, policy, wdl as configured) for tokens
    [B, 78], actions [B, M]."""
    import jax.numpy as jnp

    want = jax_outputs({k: jnp.asarray(v) for k, v in params.items()}, cfg, jnp.asarray(tokens, jnp.int32),
                       jnp.asarray(actions, jnp.int32))
    sess = ort_session(onnx_path)
    names = list(want)
    got = sess.run(names, {"tokens": tokens.astype(np.int64), "actions": actions.astype(np.int64)})
    return max(float(np.abs(g_ - np.asarray(want[n])).max()) for n, g_ in zip(names, got))
