"""ONNX export of the one-pass multi-action-value model (``onepass_model``) with Glimpse's contract.

Contract (kind ``multi_action_value``, opset 17):

* inputs ``tokens`` int64 [batch, 78] (``[0 (BOS), 77 state tokens]``, the usual tokenizer) and
  ``actions`` int64 [batch, moves] (action ids of the moves to score, any order; rows with fewer moves
  are padded, conventionally with ``0``; every id must be in 0..1967);
* output ``log_probs`` float32 [batch, moves, K]: log-softmax over the K win-probability buckets of each
  given move (the same buckets as the AV model); outputs at padded slots are meaningless and ignored,
  and never influence the real slots (moves do not interact after the trunk);
* optional output ``value`` float32 [batch, K]: log-probs of the position's value for the side to move.

Metadata props: ``glimpse.kind`` = ``multi_action_value``, ``glimpse.buckets`` (K), ``glimpse.description``,
``glimpse.params``, ``glimpse.gflop_per_eval`` (one position with 35 moves: trunk + 35 × head),
``glimpse.gflop_trunk``, ``glimpse.gflop_per_move``, ``glimpse.pad_action`` ("0"), and the informational
``glimpse.layers``/``dim``/``heads``/``seq_len``/``head_dim``/``head_hidden``.

Graph: √D folded into the embedding table, 1/√(D/H) into W_Q, fused QKV and SwiGLU gate/up MatMuls; the
per-move head gathers the final-LayerNorm trunk outputs at the move's from/to board tokens with
``GatherND`` (batch_dims = 1) through constant action → token-position tables.

CLI: ``python -m glimpse_train.onepass_export --run mav-small [--out weights/glimpse-mav.onnx]`` exports
a run's EMA weights and checks onnxruntime against JAX on held-out positions (exit 1 above 1e-4).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

from .model import attn_name, lin_name, ln_name
from .onnx_export import OPSET, _G, ort_session
from .onepass_model import (FROM_TOKEN, KIND_MAV, PAD_ACTION, SEQ, TO_TOKEN, MAVConfig, cost_split,
                            gflop_per_position, jax_forward, num_params)

TOL = 1e-4


def build_model(params: dict[str, np.ndarray], cfg: MAVConfig, description: str = "") -> onnx.ModelProto:
    p = {k: np.asarray(v, np.float32) for k, v in params.items()}
    t, d, nh = SEQ, cfg.dim, cfg.heads
    dh = d // nh
    L = cfg.layers
    g = _G()
    i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731

    tokens_in, actions_in = "tokens", "actions"
    if cfg.canonical:
        from .canon import onnx_canon

        tokens_in, actions_in = onnx_canon(g, "tokens", "actions")
    emb = g.const("embed", (p["embed/embeddings"].astype(np.float64) * math.sqrt(d)).astype(np.float32))
    pos = g.const("pos", p["embed_1/embeddings"][:t])
    x = g.op("Add", [g.op("Gather", [emb, tokens_in], "tok_emb", axis=0), pos], "h0")
    shape_bthd = g.const("shape_bthd", i64([0, t, nh, dh]))
    shape_btd = g.const("shape_btd", i64([0, t, d]))

    def ln(x_in: str, prefix: str, tag: str) -> str:
        return g.op("LayerNormalization", [x_in, g.const(f"{tag}_s", p[f"{prefix}/scale"]),
                                           g.const(f"{tag}_b", p[f"{prefix}/offset"])], tag, axis=-1, epsilon=1e-5)

    def swiglu(y: str, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray, tag: str) -> str:
        gu = g.op("MatMul", [y, g.const(f"w12_{tag}", np.concatenate([wg, wu], axis=1))], f"gu_{tag}")
        gate, up = g.op("Split", [gu, g.const("split", i64([wg.shape[1]] * 2))], f"gu_{tag}", n_out=2, axis=-1)
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])], f"silu_{tag}")
        return g.op("MatMul", [g.op("Mul", [act, up], f"swiglu_{tag}"), g.const(f"w3_{tag}", wd)], f"mlp_{tag}")

    qscale = 1.0 / math.sqrt(dh)
    for i in range(L):
        a = attn_name(i)
        wq = (p[f"{a}/linear/w"].astype(np.float64) * qscale).astype(np.float32)
        wk, wv, wo = p[f"{a}/linear_1/w"], p[f"{a}/linear_2/w"], p[f"{a}/linear_3/w"]
        y = ln(x, ln_name(2 * i), f"ln{2 * i}")
        qkv = g.op("MatMul", [y, g.const(f"wqkv{i}", np.concatenate([wq, wk, wv], axis=1))], f"qkv{i}")
        q, k, v = g.op("Split", [qkv, g.const("split", i64([d, d, d]))], f"qkv{i}", n_out=3, axis=-1)
        q = g.op("Transpose", [g.op("Reshape", [q, shape_bthd])], f"q{i}", perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, shape_bthd])], f"k{i}", perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, shape_bthd])], f"v{i}", perm=[0, 2, 1, 3])
        scores = g.op("MatMul", [q, k], f"scores{i}")
        if cfg.attn_bias:
            scores = g.op("Add", [scores, g.const(f"pair_bias{i}", p[f"{a}/pair_bias"][None])], f"scores_b{i}")
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
        from .heads import onnx_policy

        pol = onnx_policy(g, p, yf, yt, actions_in)
        g.nodes.append(helper.make_node("Identity", [pol], ["policy"], name="n_policy"))
        outputs.append(helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", "moves"]))
    if cfg.wdl_head:
        from .heads import onnx_wdl

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
    graph = helper.make_graph(g.nodes, f"glimpse_{KIND_MAV}", inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="glimpse-train")
    model.ir_version = 8
    cs = cost_split(cfg)
    meta = {
        "glimpse.kind": KIND_MAV,
        "glimpse.buckets": str(cfg.buckets),
        "glimpse.description": description or f"{KIND_MAV} L={L} D={d} H={nh}",
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
    }
    helper.set_model_props(model, meta)
    onnx.checker.check_model(model)
    return model


def export(params, cfg: MAVConfig, path: str, description: str = "") -> onnx.ModelProto:
    model = build_model(params, cfg, description)
    onnx.save(model, path)
    return model


def verify(params, cfg: MAVConfig, onnx_path: str, tokens: np.ndarray, actions: np.ndarray) -> float:
    """Max |ORT − JAX| over every output (log_probs, and value, policy, wdl as configured) for tokens
    [B, 78], actions [B, M]."""
    import jax.numpy as jnp

    from .onepass_model import jax_outputs

    want = jax_outputs({k: jnp.asarray(v) for k, v in params.items()}, cfg, jnp.asarray(tokens, jnp.int32),
                       jnp.asarray(actions, jnp.int32))
    sess = ort_session(onnx_path)
    names = list(want)
    got = sess.run(names, {"tokens": tokens.astype(np.int64), "actions": actions.astype(np.int64)})
    return max(float(np.abs(g_ - np.asarray(want[n])).max()) for n, g_ in zip(names, got))


def load_run(run_dir: str, snapshot: str | None = None, raw: bool = False):
    """(params, MAVConfig, step) of a one-pass training run (EMA weights unless ``raw``)."""
    from .onepass_train import MAVTrainConfig

    cfg = MAVTrainConfig(**json.load(open(os.path.join(run_dir, "config.json"))))
    if snapshot:
        z = np.load(snapshot)
        params = {k: np.asarray(z[k], np.float32) for k in z.files}
        step = int("".join(c for c in os.path.basename(snapshot) if c.isdigit()) or 0)
    else:
        with open(os.path.join(run_dir, "ckpt.pkl"), "rb") as f:
            blob = pickle.load(f)
        params = {k: np.asarray(v, np.float32) for k, v in blob["params" if raw else "ema"].items()}
        step = blob["step"]
    return params, cfg.model(), step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--run", required=True)
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--out", default=None, help="ONNX path (default runs/<run>/model.onnx)")
    ap.add_argument("--snapshot", default=None)
    ap.add_argument("--raw", action="store_true", help="export raw params instead of EMA")
    ap.add_argument("--data-dir", default="data/full")
    a = ap.parse_args(argv)
    from .onepass_train import PositionData, dataset_for

    run_dir = os.path.join(a.runs_dir, a.run)
    params, mcfg, step = load_run(run_dir, a.snapshot, a.raw)
    out = a.out or os.path.join(run_dir, "model.onnx")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    desc = (f"Glimpse one-pass multi-action-value net, run {a.run} step {step} ({'raw' if a.raw else 'EMA'} "
            f"weights), L={mcfg.layers} D={mcfg.dim} H={mcfg.heads} head {mcfg.dh}/{mcfg.hh}"
            f"{', pair bias' if mcfg.attn_bias else ''}, "
            f"trained on Stockfish 15.1 labels")
    export(params, mcfg, out, desc)
    cfgj = json.load(open(os.path.join(run_dir, "config.json")))
    pd = PositionData(dataset_for(a.shared, a.data_dir, cfgj.get("max_positions", 0)))
    pos = pd.val_pos[np.linspace(0, len(pd.val_pos) - 1, min(256, len(pd.val_pos))).astype(int)]
    diff = 0.0
    for i in range(0, len(pos), 64):
        tokens, actions, _, _ = pd.batch(pos[i:i + 64])
        diff = max(diff, verify(params, mcfg, out, tokens, actions))
    size = os.path.getsize(out)
    print(f"exported {out} ({size / 1e6:.2f} MB, {num_params(mcfg):,} params, step {step}); "
          f"max |ORT - JAX| over {len(pos)} held-out positions = {diff:.3g} (tol {TOL:g})")
    info = {"onnx": out, "run": a.run, "step": step, "ema": not a.raw, "max_abs_diff": diff, "bytes": size,
            "kind": KIND_MAV, **cost_split(mcfg)}
    with open(os.path.join(run_dir, "export.json"), "w") as f:
        json.dump(info, f, indent=1)
    sys.exit(0 if diff <= TOL else 1)


if __name__ == "__main__":
    main()
