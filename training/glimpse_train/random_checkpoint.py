"""Write random-weight checkpoints in the released searchless-chess Orbax layout (with orbax-checkpoint).

``<out>/<name>/<step>/params`` and ``…/params_ema``: Orbax PyTree checkpoints (OCDBT + zarr) of the
two-level Haiku tree ``{module: {param: jax.Array}}``, as the reference's checkpoint manager writes
them. Sizes of the released models (conventions doc): ``9M`` (L8 D256), ``136M`` (L8 D1024),
``270M`` (L16 D1024), all with 8 heads, 1968-row embedding, 79 positions and 128 buckets; or any
``--layers/--dim`` for tests.

The weights are random but not degenerate: linear weights follow a fan-in scaled truncated normal
(``model.init_params``), LayerNorm scales are 1 + N(0, 0.1²), offsets and the head bias N(0, 0.1²),
and ``params_ema`` = ``params`` + N(0, 0.01²), so a converter that drops an offset or a bias, or
reads the wrong tree, produces different outputs.

``--flax`` writes a Flax-style tree instead (``Embed_0/embedding``, ``LayerNorm_i/{scale,bias}``,
``MultiHeadDotProductAttention_i/{query,key,value,out}/kernel``, ``Dense_i/kernel``, leaves wrapped
in ``value``) — the layout reported for the released SV/BC checkpoints — to test that the converter
refuses it with a clear message.

Usage: ``python -m glimpse_train.random_checkpoint --size 270M --out training/runs/random``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np

from .kinds.action_value import KIND_BC, KINDS, KIND_AV, ModelConfig, init_params, num_params

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).
# tensorstore, msgpack and orbax (requirements-convert.txt, optional) are imported inside the functions that
# read or write checkpoints.

SIZES = {"9M": (8, 256), "136M": (8, 1024), "270M": (16, 1024)}
STEP = 6400000


def random_params(cfg: ModelConfig, seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(params, params_ema) as flat ``{"<module>/<param>": float32}`` dicts with Haiku names."""
    p = init_params(cfg, seed)
    rng = np.random.default_rng(seed + 1)
    for k, v in p.items():
        if k.endswith("/scale"):
            p[k] = (v + rng.normal(0, 0.1, v.shape)).astype(np.float32)
        elif k.endswith("/offset") or k.endswith("/b"):
            p[k] = rng.normal(0, 0.1, v.shape).astype(np.float32)
    ema = {}
    for k, v in p.items():
        ema[k] = (v + rng.normal(0, 0.01, v.shape).astype(np.float32)).astype(np.float32)
    return p, ema


def nest(flat: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """``{"a/b/w": x}`` → ``{"a/b": {"w": x}}`` (Haiku's two-level tree)."""
    tree: dict[str, dict[str, np.ndarray]] = {}
    for k, v in flat.items():
        m, n = k.rsplit("/", 1)
        tree.setdefault(m, {})[n] = v
    return tree


def flax_tree(cfg: ModelConfig, seed: int) -> dict:
    """A Flax-style tree of the same sizes (only used to test layout detection)."""
    rng = np.random.default_rng(seed)
    d, h = cfg.dim, cfg.dim * cfg.widening
    r = lambda *s: {"value": rng.normal(0, 0.02, s).astype(np.float32)}  # noqa: E731
    t: dict = {"Embed_0": {"embedding": r(31, d)}, "Embed_1": {"embedding": r(78, d)}}
    for i in range(cfg.layers):
        t[f"LayerNorm_{2*i}"] = {"scale": r(d), "bias": r(d)}
        t[f"LayerNorm_{2*i+1}"] = {"scale": r(d), "bias": r(d)}
        t[f"MultiHeadDotProductAttention_{i}"] = {q: {"kernel": r(d, d)} for q in ("query", "key", "value", "out")}
        t[f"Dense_{3*i}"] = {"kernel": r(d, h)}
        t[f"Dense_{3*i+1}"] = {"kernel": r(d, h)}
        t[f"Dense_{3*i+2}"] = {"kernel": r(h, d)}
    t[f"Dense_{3*cfg.layers}"] = {"kernel": r(d, cfg.out_size), "bias": r(cfg.out_size)}
    return t


def save_tree(path: str, tree: dict) -> None:
    """Save a nested dict of arrays as an Orbax PyTree checkpoint (OCDBT, zarr) at ``path``."""
    import jax
    import orbax.checkpoint as ocp

    if os.path.exists(path):
        shutil.rmtree(path)
    jtree = jax.tree_util.tree_map(jax.numpy.asarray, tree)
    ck = ocp.PyTreeCheckpointer()
    ck.save(path, jtree)
    if hasattr(ck, "close"):
        ck.close()


def write(out: str, name: str, cfg: ModelConfig, seed: int = 0, step: int = STEP, flax: bool = False,
          log=print) -> str:
    """Write ``<out>/<name>/<step>/{params,params_ema}``; returns the model directory."""
    t0 = time.time()
    model_dir = os.path.join(out, name)
    step_dir = os.path.join(model_dir, str(step))
    os.makedirs(step_dir, exist_ok=True)
    if flax:
        tree = flax_tree(cfg, seed)
        save_tree(os.path.join(step_dir, "params"), tree)
        save_tree(os.path.join(step_dir, "params_ema"), tree)
    else:
        p, ema = random_params(cfg, seed)
        save_tree(os.path.join(step_dir, "params"), nest(p))
        del p
        save_tree(os.path.join(step_dir, "params_ema"), nest(ema))
    if log:
        log(f"wrote {model_dir} ({cfg.kind}, L={cfg.layers} D={cfg.dim} H={cfg.heads}, "
            f"{num_params(cfg):,} parameters{', Flax layout' if flax else ''}) in {time.time() - t0:.1f} s")
    return model_dir


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Random-weight searchless-chess checkpoints in the released layout")
    ap.add_argument("--size", choices=sorted(SIZES), help="released model size (sets --layers/--dim)")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--dim", type=int)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kind", choices=KINDS, default=KIND_AV)
    ap.add_argument("--name", help="model directory name (default: the size, e.g. 270M)")
    ap.add_argument("--out", default="training/runs/random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--step", type=int, default=STEP)
    ap.add_argument("--flax", action="store_true", help="write the Flax-style layout (detection test)")
    a = ap.parse_args(argv)
    if a.size:
        layers, dim = SIZES[a.size]
    elif a.layers and a.dim:
        layers, dim = a.layers, a.dim
    else:
        ap.error("give --size or both --layers and --dim")
    cfg = ModelConfig(kind=a.kind, layers=layers, dim=dim, heads=a.heads,
                      buckets=128)
    name = a.name or a.size or f"L{layers}_D{dim}_{'bc' if a.kind == KIND_BC else a.kind}"
    write(a.out, name, cfg, a.seed, a.step, a.flax)
    return 0


if __name__ == "__main__":
    sys.exit(main())
