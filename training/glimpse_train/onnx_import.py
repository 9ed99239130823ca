"""Read a one-pass (``multi_action_value``) ONNX file written by ``kinds.multi_action_value`` back into training
parameters, so that the committed ONNX file is the checkpoint a fresh machine resumes training from.

Inverts the exporter's folds: √D out of the token embedding, 1/√(D/H) out of W_Q, the pair bias's
leading axis dropped. Reads every layout the exporter has written: Q, K, V as per-head [H, D, dh] matrices
(from 2026-11-27 on) or [D, D] ones, and separate gate and up matrices (from 2026-11-26 on), or the earlier
fused ``wqkv`` [D, 3D] and ``w12`` [D, 2H] matrices, split again.
Optimiser state is not in the file (it is never committed): a resumed run restarts AdamW's moments and
warms its learning rate up again.
Raises ``ValueError`` when the file is not a one-pass net or an initializer is missing.
"""

from __future__ import annotations

import argparse
import math
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from .chessdata import MOVE_TO_ACTION, random_positions, tokens_actions
from .kinds.multi_action_value import KIND_MAV, KIND_MAVP, MAVConfig, build_model, param_shapes
from .onnx_graph import onnx_meta, ort_session
from .transformer import SMOLGEN_GLOBAL, attn_name, lin_name, ln_name


def smolgen_meta(value: str) -> dict[str, int]:
    """``MAVConfig`` smolgen fields from the metadata entry ``glimpse.smolgen`` = ``"G,C,S"`` (absent: none)."""
    if not value:
        return {"smolgen": 0}
    g, c, s = (int(x) for x in value.split(","))
    return {"smolgen": g, "smolgen_compress": c, "smolgen_hidden": s}


def import_onepass(path: str) -> tuple[dict[str, np.ndarray], MAVConfig]:
    """``(params, cfg)`` of a one-pass ONNX file (float32 arrays keyed by the training names)."""
    model = onnx.load(path)
    meta = {p.key: p.value for p in model.metadata_props}
    if meta.get("glimpse.kind") not in (KIND_MAV, KIND_MAVP):
        raise ValueError(f"{path}: glimpse.kind is {meta.get('glimpse.kind')!r}, not {KIND_MAV!r} or {KIND_MAVP!r}")
    # The exporter names each constant ``<tag>_<counter>``: key them by the tag.
    init = {re.sub(r"_\d+$", "", t.name): numpy_helper.to_array(t) for t in model.graph.initializer}
    init = {k: v.astype(np.float32) for k, v in init.items() if v.dtype.kind == "f"}
    try:
        cfg = MAVConfig(layers=int(meta["glimpse.layers"]), dim=int(meta["glimpse.dim"]), heads=int(meta["glimpse.heads"]),
                        buckets=int(meta["glimpse.buckets"]), head_dim=int(meta["glimpse.head_dim"]),
                        head_hidden=int(meta["glimpse.head_hidden"]), value_head="value_w" in init,
                        attn_bias=bool(int(meta.get("glimpse.attn_bias", "0"))),
                        head_global=bool(int(meta.get("glimpse.head_global", "0"))),
                        canonical=bool(int(meta.get("glimpse.canonical", "0"))),
                        policy_dim=int(meta.get("glimpse.policy_dim", "0")),
                        wdl_head=bool(int(meta.get("glimpse.wdl_head", "0"))),
                        **smolgen_meta(meta.get("glimpse.smolgen", "")))
    except KeyError as e:
        raise ValueError(f"{path}: metadata {e} missing") from None
    d, nh = cfg.dim, cfg.heads

    def get(name: str) -> np.ndarray:
        if name not in init:
            raise ValueError(f"{path}: initializer {name!r} missing")
        return init[name]

    def projection(name: str) -> np.ndarray:
        # [D, D], or per head [H, D, dh] (the heads-major layout exported from 2026-11-27 on)
        w = get(name)
        return np.ascontiguousarray(w.transpose(1, 0, 2).reshape(d, d)) if w.ndim == 3 else w

    def gate_up(tag: str) -> tuple[np.ndarray, np.ndarray]:
        # files exported before 2026-11-26 hold one [D, 2H] gate/up matrix, later ones two [D, H]
        if f"w12_{tag}" in init:
            return tuple(np.split(init[f"w12_{tag}"], 2, axis=1))
        return get(f"wg_{tag}"), get(f"wu_{tag}")

    p: dict[str, np.ndarray] = {
        "embed/embeddings": (get("embed").astype(np.float64) / math.sqrt(d)).astype(np.float32),
        "embed_1/embeddings": get("pos"),
    }
    qscale = 1.0 / math.sqrt(d // nh)
    for i in range(cfg.layers):
        a = attn_name(i)
        for j in (2 * i, 2 * i + 1):
            p[f"{ln_name(j)}/scale"], p[f"{ln_name(j)}/offset"] = get(f"ln{j}_s"), get(f"ln{j}_b")
        wq, wk, wv = (np.split(init[f"wqkv{i}"], 3, axis=1) if f"wqkv{i}" in init
                      else (projection(f"w{n}{i}") for n in "qkv"))
        p[f"{a}/linear/w"] = (wq.astype(np.float64) / qscale).astype(np.float32)
        p[f"{a}/linear_1/w"], p[f"{a}/linear_2/w"], p[f"{a}/linear_3/w"] = wk, wv, get(f"wo{i}")
        if cfg.attn_bias:
            p[f"{a}/pair_bias"] = get(f"pair_bias{i}")[0]
        if cfg.smolgen:
            sg = f"{a}/smolgen"
            p[f"{sg}/compress/w"] = get(f"sg_compress{i}")
            for name, tag in (("dense1", "d1"), ("dense2", "d2")):
                p[f"{sg}/{name}/w"], p[f"{sg}/{name}/b"] = get(f"sg_{tag}w{i}"), get(f"sg_{tag}b{i}")
            for name, tag in (("ln1", "lna"), ("ln2", "lnb")):
                p[f"{sg}/{name}/scale"], p[f"{sg}/{name}/offset"] = get(f"sg_{tag}{i}_s"), get(f"sg_{tag}{i}_b")
        wg, wu = gate_up(str(i))
        p[f"{lin_name(3 * i)}/w"], p[f"{lin_name(3 * i + 1)}/w"] = wg, wu
        p[f"{lin_name(3 * i + 2)}/w"] = get(f"w3_{i}")
    if cfg.smolgen:
        p[SMOLGEN_GLOBAL] = get("sg_global")
    L = cfg.layers
    p[f"{ln_name(2 * L)}/scale"], p[f"{ln_name(2 * L)}/offset"] = get("ln_final_s"), get("ln_final_b")
    p["mav_head/action_embed/embeddings"] = get("action_embed")
    p["mav_head/linear_in/w"] = get("head_in")
    if cfg.head_global:
        p["mav_head/linear_global/w"] = get("head_global")
    p["mav_head/layer_norm/scale"], p["mav_head/layer_norm/offset"] = get("head_ln_s"), get("head_ln_b")
    hg, hu = gate_up("head")
    p["mav_head/linear_gate/w"], p["mav_head/linear_up/w"] = hg, hu
    p["mav_head/linear_down/w"] = get("w3_head")
    p["mav_head/layer_norm_out/scale"], p["mav_head/layer_norm_out/offset"] = get("head_ln_out_s"), get("head_ln_out_b")
    p["mav_head/linear_out/w"], p["mav_head/linear_out/b"] = get("head_out_w"), get("head_out_b")
    if cfg.value_head:
        p["value_head/linear/w"], p["value_head/linear/b"] = get("value_w"), get("value_b")
    if cfg.policy_dim:
        scale = 1.0 / math.sqrt(cfg.policy_dim)
        p["policy_head/query/w"] = (get("pol_q").astype(np.float64) / scale).astype(np.float32)
        p["policy_head/key/w"] = get("pol_k")
        # the exporter folds the 4 promotion offsets into a [1968] table: read them back at a7a8q/r/b/n
        tbl = get("pol_promo")
        p["policy_head/promo/b"] = np.asarray([tbl[MOVE_TO_ACTION["a7a8" + c]] for c in "qrbn"], np.float32)
    if cfg.wdl_head:
        p["wdl_head/linear/w"], p["wdl_head/linear/b"] = get("wdl_w"), get("wdl_b")
    want = param_shapes(cfg)
    for k, shape in want.items():
        if k not in p or tuple(p[k].shape) != tuple(shape):
            raise ValueError(f"{path}: parameter {k} has shape {None if k not in p else p[k].shape}, expected {shape}")
    return {k: p[k] for k in want}, cfg


def reexport(net: str, out: str, fused_attention: bool = True, positions: int = 16) -> dict:
    """Writes ``net`` (a one-pass float32 file) again with today's exporter: the weights read back by
    :func:`import_onepass`, the graph built by ``kinds.multi_action_value.build_model`` (with ONNX
    Runtime's fused ``MultiHeadAttention`` when ``fused_attention``, else plain ONNX operators), the source's
    ``glimpse.description`` kept. Checks both files on ``positions`` random-play positions (every legal
    move) and returns ``{"out", "max_abs_diff"}`` (the largest difference of any output).

    Raises ``ValueError`` for a file that is not a float32 one-pass net, or when the outputs differ by
    more than 1e-4."""
    meta = onnx_meta(net)
    if meta.get("glimpse.precision", "fp32") != "fp32":
        raise ValueError(f"{net}: glimpse.precision is {meta['glimpse.precision']!r}; re-export the float32 source")
    params, cfg = import_onepass(net)
    model = build_model(params, cfg, meta.get("glimpse.description", ""), fused_attention=fused_attention)
    onnx.save(model, out)
    return {"out": out, "max_abs_diff": same_outputs(net, out, positions)}


def same_outputs(net: str, out: str, positions: int = 16, tol: float = 1e-4) -> float:
    """Largest difference of any output of the one-pass files ``net`` and ``out`` over every legal move of
    ``positions`` random-play positions; raises ``ValueError`` above ``tol``."""
    feed = dict(zip(("tokens", "actions"), tokens_actions(random_positions(positions, seed=1))))
    a, b = ort_session(net), ort_session(out)
    names = [o.name for o in a.get_outputs()]
    diff = max(float(np.abs(x - y).max()) for x, y in zip(a.run(names, feed), b.run(names, feed)))
    if diff > tol:
        raise ValueError(f"{out}: outputs differ from {net} by {diff}")
    return diff


def main(argv=None) -> int:
    """``python -m glimpse_train.onnx_import --net a.onnx --out b.onnx [--plain-attention]``: :func:`reexport`."""
    ap = argparse.ArgumentParser(description="Re-export a one-pass net with today's exporter (same weights).")
    ap.add_argument("--net", required=True, help="float32 one-pass net (.onnx)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plain-attention", action="store_true",
                    help="plain ONNX attention operators instead of com.microsoft.MultiHeadAttention")
    a = ap.parse_args(argv)
    try:
        rep = reexport(a.net, a.out, fused_attention=not a.plain_attention)
    except (ValueError, OSError) as e:
        print(f"onnx_import: {e}", file=sys.stderr)
        return 1
    print(f"onnx_import: wrote {rep['out']} ({'plain' if a.plain_attention else 'fused'} attention); "
          f"largest output difference {rep['max_abs_diff']:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
