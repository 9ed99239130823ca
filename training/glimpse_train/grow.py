"""Deepen a trained one-pass net, or give it a smolgen, without changing what it computes.

A block of the trunk is pre-LayerNorm and residual, ``x + Attn(LN(x))`` then ``x + FFN(LN(x))``. With its
attention output projection ``W_O`` and its feed-forward output ``W3`` at zero, both branches add nothing,
so a block whose other weights are freshly initialised is the identity; the grown net's outputs equal the
source's (to float rounding), and training moves ``W_O`` and ``W3`` off zero at once (their gradients are
not zero; the zero-initialised residual branch of Goyal et al., 2017, and of GPT-2's residual scaling).
This keeps every position-pass already spent on the source while giving the trainer a deeper trunk: at
equal parameters depth beats width at this scale (ChessBench Tab. 2, ``../shared/docs/strength-notes.md``),
and the campaign's L6 D128 net (c35) underfits its own data (``fit_gap.py``: 40.4 % action accuracy
on training positions, 38.7 % on unseen positions of the same distribution).

New blocks go in evenly between the source's (:func:`insert_after`), not all on top. Each one costs
≈ 45 MFLOP per position at D128 (``kinds.multi_action_value.cost_split``).

A smolgen (``--smolgen G``, Lc0's BT2+ attention-bias generator: ``kinds/multi_action_value.py``) is added the
same way: its per-layer weights freshly initialised, its shared projection to the T×T biases at zero, so every
bias is 0 until training moves that projection (its gradient is not zero). At D128, G 64 it costs ≈ 10 % more
FLOP a position (``cost_split``).

``python -m glimpse_train.grow --net a.onnx [--layers 10] [--smolgen 64] --out b.onnx`` writes the grown file
and checks it against the source on random-play positions (every output, every legal move; error above 1e-4).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np
import onnx

from .kinds.multi_action_value import build_model, gflop_per_position, num_params, param_shapes
from .onnx_graph import onnx_meta
from .onnx_import import import_onepass, same_outputs
from .transformer import SMOLGEN_GLOBAL, attn_name, init_from_shapes, lin_name, ln_name


def insert_after(old: int, new: int) -> list[int]:
    """Where the ``new - old`` identity blocks go: for each, the index of the source block it follows,
    spread evenly over ``0 … old-1`` (nondecreasing; an index repeats when more than ``old`` blocks are
    added). 6 → 10: ``[0, 1, 3, 4]``. Raises ``ValueError`` unless ``new ≥ old ≥ 1``."""
    if old < 1 or new < old:
        raise ValueError(f"cannot grow {old} layers to {new}")
    n = new - old
    return [min(old - 1, max(0, int(np.floor((k + 1) * old / (n + 1) + 0.5)) - 1)) for k in range(n)]


def _block_keys(i: int) -> dict[str, str]:
    """Role → parameter name of block ``i`` (the trunk's naming, ``transformer.trunk_shapes``)."""
    a = attn_name(i)
    return {"ln_attn/scale": f"{ln_name(2 * i)}/scale", "ln_attn/offset": f"{ln_name(2 * i)}/offset",
            "ln_ffn/scale": f"{ln_name(2 * i + 1)}/scale", "ln_ffn/offset": f"{ln_name(2 * i + 1)}/offset",
            "q": f"{a}/linear/w", "k": f"{a}/linear_1/w", "v": f"{a}/linear_2/w", "o": f"{a}/linear_3/w",
            "pair_bias": f"{a}/pair_bias",
            "gate": f"{lin_name(3 * i)}/w", "up": f"{lin_name(3 * i + 1)}/w", "down": f"{lin_name(3 * i + 2)}/w"}


def grow_params(params: dict[str, np.ndarray], cfg, layers: int, seed: int = 0) -> tuple[dict[str, np.ndarray], object]:
    """``(params, cfg)`` of ``cfg.layers`` → ``layers`` blocks (a ``MAVConfig``; parameters keyed by the
    training names). Source blocks keep their weights and order; each new block has LayerNorm scale 1 and
    offset 0, zero pair bias, zero ``W_O`` and ``W3``, and Haiku-style fan-in initialised Q, K, V, gate and
    up matrices (seeded). Every other parameter (embeddings, final LayerNorm, heads) is copied."""
    old = cfg.layers
    if cfg.smolgen and layers != old:
        raise ValueError("cannot deepen a net with a smolgen (grow first, then add the smolgen)")
    after = insert_after(old, layers)
    new_cfg = dataclasses.replace(cfg, layers=layers)
    shapes = param_shapes(new_cfg)
    fresh = init_from_shapes({k: v for k, v in shapes.items()}, seed, 0.02, lambda n: "embed" in n,
                             lambda n: n.endswith("/pair_bias") or n.endswith("/offset"))
    order: list[int | None] = []  # source block index, or None for an identity block
    for i in range(old):
        order.append(i)
        order.extend([None] * after.count(i))
    out: dict[str, np.ndarray] = {}
    in_trunk = set()
    for i in range(max(old, layers) + 1):
        in_trunk.update(_block_keys(i).values())
    in_trunk.update({f"{ln_name(2 * old)}/scale", f"{ln_name(2 * old)}/offset"})
    for k, v in params.items():
        if k not in in_trunk:
            out[k] = v
    for j, src in enumerate(order):
        dst = _block_keys(j)
        if src is None:
            for role, name in dst.items():
                if name not in shapes:
                    continue
                w = fresh[name]
                if role in ("o", "down"):
                    w = np.zeros_like(w)
                out[name] = w.astype(np.float32)
        else:
            for role, name in _block_keys(src).items():
                if name in params:
                    out[dst[role]] = params[name]
    out[f"{ln_name(2 * layers)}/scale"] = params[f"{ln_name(2 * old)}/scale"]
    out[f"{ln_name(2 * layers)}/offset"] = params[f"{ln_name(2 * old)}/offset"]
    missing = [k for k in shapes if k not in out or tuple(out[k].shape) != tuple(shapes[k])]
    if missing:
        raise ValueError(f"grown parameters missing or misshapen: {missing[:4]}")
    return {k: out[k] for k in shapes}, new_cfg


def add_smolgen(params: dict[str, np.ndarray], cfg, gen: int, compress: int = 8, hidden: int = 128,
                seed: int = 0) -> tuple[dict[str, np.ndarray], object]:
    """``(params, cfg)`` with a smolgen of G = ``gen`` values a head (C = ``compress``, S = ``hidden``) in every
    layer: its dense weights Haiku-style fan-in initialised (seeded), LayerNorm scales 1, biases and offsets 0,
    the shared projection ``smolgen_global/w`` [G, T²] 0, so the outputs are the source's. Every other
    parameter is copied. Raises ``ValueError`` when the net has a smolgen already or ``gen`` < 1."""
    if cfg.smolgen:
        raise ValueError(f"the net has a smolgen already (G = {cfg.smolgen})")
    if gen < 1 or compress < 1 or hidden < 1:
        raise ValueError(f"smolgen sizes must be positive (G {gen}, C {compress}, S {hidden})")
    new_cfg = dataclasses.replace(cfg, smolgen=gen, smolgen_compress=compress, smolgen_hidden=hidden)
    shapes = param_shapes(new_cfg)
    added = {k: v for k, v in shapes.items() if k not in params}
    fresh = init_from_shapes(added, seed, 0.02, lambda n: False,
                             lambda n: n.endswith(("/offset", "/b")) or n == SMOLGEN_GLOBAL)
    out = {**params, **fresh}
    return {k: np.asarray(out[k], np.float32) for k in shapes}, new_cfg


def grow(net: str, out: str, layers: int | None = None, seed: int = 0, positions: int = 16, smolgen: int = 0) -> dict:
    """Writes ``net`` (a float32 one-pass ONNX file) grown to ``layers`` blocks (``None``: as many as it has)
    and, with ``smolgen`` G > 0, given a smolgen (:func:`add_smolgen`) as ``out``, and checks both files on
    ``positions`` random-play positions. Returns ``{"out", "from_layers", "layers", "insert_after",
    "smolgen", "max_abs_diff", "params_before", "params_after", "gflop_before", "gflop_after"}``.

    Raises ``ValueError`` for a file that is not a float32 one-pass net, a ``layers`` below the source's, a
    smolgen on a net that has one, or outputs that differ by more than 1e-4."""
    meta = onnx_meta(net)
    if meta.get("glimpse.precision", "fp32") != "fp32":
        raise ValueError(f"{net}: glimpse.precision is {meta['glimpse.precision']!r}; grow the float32 source")
    params, cfg = import_onepass(net)
    layers = cfg.layers if layers is None else layers
    grown, gcfg = grow_params(params, cfg, layers, seed)
    what = [f"grown L{cfg.layers} -> L{layers} (identity blocks)"] if layers != cfg.layers else []
    if smolgen:
        grown, gcfg = add_smolgen(grown, gcfg, smolgen, seed=seed)
        what.append(f"smolgen G{smolgen} (zero projection)")
    desc = f"{meta.get('glimpse.description', net)}; {', '.join(what) or 'unchanged'}"
    onnx.save(build_model(grown, gcfg, desc), out)
    diff = same_outputs(net, out, positions)
    return {"out": out, "from_layers": cfg.layers, "layers": layers, "insert_after": insert_after(cfg.layers, layers),
            "smolgen": gcfg.smolgen, "max_abs_diff": diff, "params_before": num_params(cfg),
            "params_after": num_params(gcfg),
            "gflop_before": gflop_per_position(cfg), "gflop_after": gflop_per_position(gcfg)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", required=True, help="float32 one-pass net (.onnx)")
    ap.add_argument("--layers", type=int, default=None, help="blocks of the grown trunk (≥ the source's; "
                    "default: the source's)")
    ap.add_argument("--smolgen", type=int, default=0, metavar="G",
                    help="add a smolgen with G values a head (Lc0's BT2+; 0 = none)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0, help="seed of the new blocks' Q, K, V, gate and up matrices")
    a = ap.parse_args(argv)
    try:
        r = grow(a.net, a.out, a.layers, a.seed, smolgen=a.smolgen)
    except (ValueError, OSError) as e:
        print(f"grow: {e}", file=sys.stderr)
        return 1
    what = [f"L{r['from_layers']} -> L{r['layers']} (identity blocks after source blocks {r['insert_after']})"
            ] if r["layers"] != r["from_layers"] else [f"L{r['layers']}"]
    if r["smolgen"]:
        what.append(f"smolgen G{r['smolgen']}")
    print(f"grow: wrote {r['out']}: {', '.join(what)}, {r['params_before']:,} -> {r['params_after']:,} parameters, "
          f"{r['gflop_before']:.3f} -> {r['gflop_after']:.3f} GFLOP a position; largest output difference "
          f"{r['max_abs_diff']:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
