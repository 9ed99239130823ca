"""The one-pass kind's model (``multi_action_value``, module docstring there): configuration, parameter
shapes and initialisation, cost, and the forward passes: the float64 numpy reference and JAX.
JAX is imported inside ``jax_outputs`` only: exporting and evaluating a net must not load it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..canon import canon_jax, canon_numpy
from ..chessdata import ACTIONS
from ..heads import param_shapes as head_shapes, policy_jax, policy_numpy, wdl_jax, wdl_numpy
from ..transformer import (LN_EPS, SMOLGEN_GLOBAL, VOCAB, _np_ln, attn_name, count_layers, init_from_shapes, lin_name,
                           ln_name, np_log_softmax, numpy_trunk, trunk_shapes)

KIND_MAV = "multi_action_value"
#: the same contract plus the ``policy`` and ``wdl`` outputs (engine: ``src/model/kinds/multi_action_value_policy.rs``)
KIND_MAVP = "multi_action_value_policy"
SEQ = 78
TYPICAL_MOVES = 35  # moves per position assumed by the per-position GFLOP figure in the metadata


def _square_token(sq_name: str) -> int:
    """Token position (in the 78-token sequence with BOS) of a board square like ``e4``."""
    file = ord(sq_name[0]) - ord("a")
    rank = int(sq_name[1]) - 1
    return 2 + (7 - rank) * 8 + file


FROM_TOKEN = np.asarray([_square_token(a[0:2]) for a in ACTIONS], np.int32)
TO_TOKEN = np.asarray([_square_token(a[2:4]) for a in ACTIONS], np.int32)


@dataclasses.dataclass(frozen=True)
class MAVConfig:
    """Architecture of the one-pass model."""

    layers: int = 4
    dim: int = 128
    heads: int = 4
    widening: int = 4
    buckets: int = 128
    head_dim: int = 0  # Dh; 0 = D
    head_hidden: int = 0  # Hh; 0 = 2·Dh
    value_head: bool = True
    attn_bias: bool = False
    head_global: bool = False
    canonical: bool = False  # inputs rewritten into the side-to-move frame first (canon.py)
    policy_dim: int = 0  # P > 0: Lc0-style policy head (heads.py), output ``policy`` [B, M]
    wdl_head: bool = False  # win/draw/loss head (heads.py), output ``wdl`` [B, 3]
    smolgen: int = 0  # G > 0: a smolgen per layer (transformer.numpy_smolgen), G values a head, 0 = none
    smolgen_compress: int = 8  # C: values a token is compressed to (Lc0: 32 over its 64 tokens)
    smolgen_hidden: int = 128  # S: the dense layer between (Lc0: 256)

    kind = KIND_MAV
    seq_len = SEQ

    @property
    def dh(self) -> int:
        return self.head_dim or self.dim

    @property
    def hh(self) -> int:
        return self.head_hidden or 2 * self.dh

    @property
    def smolgen_shape(self) -> tuple[int, int, int] | None:
        """(C, S, G) of the smolgen, or ``None`` without one."""
        return (self.smolgen_compress, self.smolgen_hidden, self.smolgen) if self.smolgen else None


def param_shapes(cfg: MAVConfig) -> dict[str, tuple[int, ...]]:
    d, dh, hh, k = cfg.dim, cfg.dh, cfg.hh, cfg.buckets
    shapes = trunk_shapes(cfg.layers, d, d * cfg.widening, SEQ, cfg.heads, cfg.attn_bias, cfg.smolgen_shape)
    shapes.update({
        "mav_head/action_embed/embeddings": (VOCAB, dh),
        "mav_head/linear_in/w": (2 * d, dh),
        **({"mav_head/linear_global/w": (d, dh)} if cfg.head_global else {}),
        "mav_head/layer_norm/scale": (dh,),
        "mav_head/layer_norm/offset": (dh,),
        "mav_head/linear_gate/w": (dh, hh),
        "mav_head/linear_up/w": (dh, hh),
        "mav_head/linear_down/w": (hh, dh),
        "mav_head/layer_norm_out/scale": (dh,),
        "mav_head/layer_norm_out/offset": (dh,),
        "mav_head/linear_out/w": (dh, k),
        "mav_head/linear_out/b": (k,),
    })
    if cfg.value_head:
        shapes["value_head/linear/w"] = (d, k)
        shapes["value_head/linear/b"] = (k,)
    shapes.update(head_shapes(d, cfg.policy_dim, cfg.wdl_head))
    return shapes


def num_params(cfg: MAVConfig) -> int:
    return int(sum(np.prod(s) for s in param_shapes(cfg).values()))


def cost_split(cfg: MAVConfig) -> dict[str, float]:
    """GFLOP (2 per multiply-add) of the trunk per position and of the head per move (matmuls and
    attention; LayerNorm, softmax and gathers are not counted)."""
    t, d, hd = SEQ, cfg.dim, cfg.dim * cfg.widening
    trunk = cfg.layers * (t * (4 * d * d + 3 * d * hd) + 2 * t * t * d) + (d * cfg.dh if cfg.head_global else 0)
    if cfg.smolgen:
        c, sh, g = cfg.smolgen_shape
        trunk += cfg.layers * (t * d * c + t * c * sh + sh * cfg.heads * g + cfg.heads * g * t * t)
    head = 2 * d * cfg.dh + 3 * cfg.dh * cfg.hh + cfg.dh * cfg.buckets + 2 * d * cfg.policy_dim + cfg.policy_dim
    value = (d * cfg.buckets if cfg.value_head else 0) + (3 * d if cfg.wdl_head else 0)
    return {"trunk_gflop": 2.0 * (trunk + value) / 1e9, "head_gflop_per_move": 2.0 * head / 1e9,
            "head_share_35_moves": 35 * head / (trunk + value)}


def gflop_per_position(cfg: MAVConfig, moves: int = TYPICAL_MOVES) -> float:
    c = cost_split(cfg)
    return c["trunk_gflop"] + moves * c["head_gflop_per_move"]


def infer_config(params: dict[str, np.ndarray], heads: int) -> MAVConfig:
    """Config from parameter shapes (heads must be given); ValueError on an unknown layout."""
    if "mav_head/linear_in/w" not in params:
        raise ValueError("not a multi_action_value tree: missing mav_head/linear_in/w")
    vocab, d = params["embed/embeddings"].shape
    layers = count_layers(params)
    hidden = params[f"{lin_name(0)}/w"].shape[1]
    dh = params["mav_head/linear_in/w"].shape[1]
    hh = params["mav_head/linear_gate/w"].shape[1]
    k = params["mav_head/linear_out/w"].shape[1]
    cfg = MAVConfig(layers=layers, dim=d, heads=heads, widening=hidden // d, buckets=k, head_dim=dh,
                    head_hidden=hh, value_head="value_head/linear/w" in params,
                    attn_bias=f"{attn_name(0)}/pair_bias" in params,
                    head_global="mav_head/linear_global/w" in params,
                    policy_dim=params["policy_head/query/w"].shape[1] if "policy_head/query/w" in params else 0,
                    wdl_head="wdl_head/linear/w" in params,
                    **smolgen_fields(params))
    want = param_shapes(cfg)
    if set(want) != set(params):
        raise ValueError(f"parameter names differ: missing {sorted(set(want) - set(params))[:5]}, "
                         f"extra {sorted(set(params) - set(want))[:5]}")
    for n, s in want.items():
        if tuple(params[n].shape) != s:
            raise ValueError(f"{n}: shape {params[n].shape}, expected {s}")
    if d % heads:
        raise ValueError(f"D={d} not divisible by heads={heads}")
    return cfg


def smolgen_fields(params: dict[str, np.ndarray]) -> dict[str, int]:
    """The ``MAVConfig`` smolgen fields that the parameter shapes give (``smolgen`` 0 without one)."""
    if SMOLGEN_GLOBAL not in params:
        return {"smolgen": 0}
    a = f"{attn_name(0)}/smolgen"
    return {"smolgen": params[SMOLGEN_GLOBAL].shape[0], "smolgen_compress": params[f"{a}/compress/w"].shape[1],
            "smolgen_hidden": params[f"{a}/dense1/w"].shape[1]}


def _zero_init(name: str) -> bool:
    # biases, LayerNorm offsets, the pair bias and smolgen's shared projection (a new smolgen adds nothing)
    return name.endswith(("/offset", "/b", "/pair_bias")) or name == SMOLGEN_GLOBAL


def init_params(cfg: MAVConfig, seed: int = 0, emb_init_scale: float = 0.02) -> dict[str, np.ndarray]:
    """Truncated-normal fan-in init for matrices, N(0, emb_init_scale²) embeddings, LN 1/0, biases 0, smolgen's
    shared projection 0 (its biases start at zero and the first steps train that projection)."""
    return init_from_shapes(param_shapes(cfg), seed, emb_init_scale, is_embedding=lambda n: n.endswith("/embeddings"),
                            is_zero=_zero_init)


def perturbed_params(cfg: MAVConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights that are not degenerate (for test fixtures): LN scales 1 + N(0, 0.1²), offsets
    and biases N(0, 0.1²), embeddings N(0, 1), a head output layer scaled ×4 so that moves differ."""
    p = init_params(cfg, seed, emb_init_scale=1.0)
    rng = np.random.default_rng(seed + 1)
    for k, v in p.items():
        if k.endswith("/scale"):
            p[k] = (v + rng.normal(0, 0.1, v.shape)).astype(np.float32)
        elif k.endswith("/offset") or k.endswith("/b") or k.endswith("/pair_bias"):
            p[k] = rng.normal(0, 0.1, v.shape).astype(np.float32)
    p["mav_head/linear_out/w"] = (p["mav_head/linear_out/w"] * 4).astype(np.float32)
    if SMOLGEN_GLOBAL in p:
        p[SMOLGEN_GLOBAL] = rng.normal(0, 0.3, p[SMOLGEN_GLOBAL].shape).astype(np.float32)
    return p


# ----------------------------------------------------------------------------------------------
# numpy reference forward (float64), used in tests
# ----------------------------------------------------------------------------------------------


def numpy_forward(params, cfg: MAVConfig, tokens: np.ndarray, actions: np.ndarray):
    """float64: tokens int [B, 78], actions int [B, M] → (log_probs [B, M, K], value log-probs [B, K] or None)."""
    out = numpy_outputs(params, cfg, tokens, actions)
    return out["log_probs"], out.get("value")


def numpy_outputs(params, cfg: MAVConfig, tokens: np.ndarray, actions: np.ndarray) -> dict:
    """float64 reference of every output: ``log_probs`` [B, M, K], and as configured ``value`` [B, K],
    ``policy`` [B, M] (logits), ``wdl`` [B, 3] (log-probs)."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    b = tokens.shape[0]
    if cfg.canonical:
        tokens, actions = canon_numpy(tokens, actions)
    x = numpy_trunk(p, cfg.layers, cfg.dim, cfg.heads, tokens, attn_bias=cfg.attn_bias, smolgen=bool(cfg.smolgen))
    L = cfg.layers
    y = _np_ln(x, p[f"{ln_name(2*L)}/scale"], p[f"{ln_name(2*L)}/offset"])  # [B, T, D]
    bi = np.arange(b)[:, None]
    yf = y[bi, FROM_TOKEN[actions]]
    yt = y[bi, TO_TOKEN[actions]]
    u = np.concatenate([yf, yt], -1) @ p["mav_head/linear_in/w"] + p["mav_head/action_embed/embeddings"][actions]
    if cfg.head_global:
        u = u + (y[:, 0] @ p["mav_head/linear_global/w"])[:, None, :]
    z = _np_ln(u, p["mav_head/layer_norm/scale"], p["mav_head/layer_norm/offset"])
    g = z @ p["mav_head/linear_gate/w"]
    u = u + ((g / (1 + np.exp(-g))) * (z @ p["mav_head/linear_up/w"])) @ p["mav_head/linear_down/w"]
    z = _np_ln(u, p["mav_head/layer_norm_out/scale"], p["mav_head/layer_norm_out/offset"])
    lp = np_log_softmax(z @ p["mav_head/linear_out/w"] + p["mav_head/linear_out/b"])
    out = {"log_probs": lp}
    if cfg.value_head:
        out["value"] = np_log_softmax(y[:, 0] @ p["value_head/linear/w"] + p["value_head/linear/b"])
    if cfg.policy_dim:
        out["policy"] = policy_numpy(p, yf, yt, actions)
    if cfg.wdl_head:
        out["wdl"] = wdl_numpy(p, y[:, 0])
    return out


# ----------------------------------------------------------------------------------------------
# JAX model
# ----------------------------------------------------------------------------------------------


def jax_forward(params, cfg: MAVConfig, tokens, actions):
    """JAX: tokens int [B, 78], actions int [B, M] → (log_probs float32 [B, M, K], value [B, K] or None)."""
    out = jax_outputs(params, cfg, tokens, actions)
    return out["log_probs"], out.get("value")


def jax_outputs(params, cfg: MAVConfig, tokens, actions) -> dict:
    """JAX: every output as ``numpy_outputs`` (float32).

    Matmuls on 2-D operands (as ``model.jax_forward``: XLA CPU is much faster that way).
    """
    import jax
    import jax.numpy as jnp

    b, t = tokens.shape
    m = actions.shape[1]
    d, nh = cfg.dim, cfg.heads
    dhd = d // nh
    if cfg.canonical:
        tokens, actions = canon_jax(tokens, actions)

    def ln(x, prefix):
        mu = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + LN_EPS) * params[f"{prefix}/scale"] + params[f"{prefix}/offset"]

    def swiglu(y, wg, wu, wd):
        gu = y @ jnp.concatenate([wg, wu], axis=1)
        hdim = wg.shape[1]
        return (jax.nn.silu(gu[:, :hdim]) * gu[:, hdim:]) @ wd

    x = jnp.take(params["embed/embeddings"], tokens.reshape(-1), axis=0) * math.sqrt(d)
    x = (x.reshape(b, t, d) + params["embed_1/embeddings"][:t]).reshape(b * t, d)
    scale = 1.0 / math.sqrt(dhd)
    for i in range(cfg.layers):
        a = attn_name(i)
        y = ln(x, ln_name(2 * i))
        wq, wk, wv, wo = (params[f"{a}/{n}/w"] for n in ("linear", "linear_1", "linear_2", "linear_3"))
        qkv = y @ jnp.concatenate([wq, wk, wv], axis=1)
        q = qkv[:, :d].reshape(b, t, nh, dhd).transpose(0, 2, 1, 3)
        k = qkv[:, d:2 * d].reshape(b, t, nh, dhd).transpose(0, 2, 3, 1)
        v = qkv[:, 2 * d:].reshape(b, t, nh, dhd).transpose(0, 2, 1, 3)
        logits = (q * scale) @ k
        if cfg.attn_bias:
            logits = logits + params[f"{a}/pair_bias"][None, :, :t, :t]
        if cfg.smolgen:
            sg = f"{a}/smolgen"
            c = (y @ params[f"{sg}/compress/w"]).reshape(b, -1)
            h = ln(jax.nn.silu(c @ params[f"{sg}/dense1/w"] + params[f"{sg}/dense1/b"]), f"{sg}/ln1")
            h = jax.nn.silu(h @ params[f"{sg}/dense2/w"] + params[f"{sg}/dense2/b"]).reshape(b * nh, -1)
            h = ln(h, f"{sg}/ln2")
            logits = logits + (h @ params[SMOLGEN_GLOBAL]).reshape(b, nh, t, t)
        s = jax.nn.softmax(logits, axis=-1)
        o = (s @ v).transpose(0, 2, 1, 3).reshape(b * t, d)
        x = x + o @ wo
        y = ln(x, ln_name(2 * i + 1))
        x = x + swiglu(y, params[f"{lin_name(3*i)}/w"], params[f"{lin_name(3*i+1)}/w"], params[f"{lin_name(3*i+2)}/w"])
    y = ln(x, ln_name(2 * cfg.layers))  # [B*T, D]
    acts = actions.reshape(-1)
    base = (jnp.arange(b, dtype=jnp.int32) * t)[:, None]
    fi = (base + jnp.take(jnp.asarray(FROM_TOKEN), actions, axis=0)).reshape(-1)
    ti = (base + jnp.take(jnp.asarray(TO_TOKEN), actions, axis=0)).reshape(-1)
    yft = jnp.concatenate([jnp.take(y, fi, axis=0), jnp.take(y, ti, axis=0)], axis=1)  # [B*M, 2D]
    u = yft @ params["mav_head/linear_in/w"] + jnp.take(params["mav_head/action_embed/embeddings"], acts, axis=0)
    if cfg.head_global:
        glob = y.reshape(b, t, d)[:, 0] @ params["mav_head/linear_global/w"]  # [B, Dh]
        u = (u.reshape(b, m, -1) + glob[:, None, :]).reshape(b * m, -1)
    z = ln(u, "mav_head/layer_norm")
    u = u + swiglu(z, params["mav_head/linear_gate/w"], params["mav_head/linear_up/w"], params["mav_head/linear_down/w"])
    z = ln(u, "mav_head/layer_norm_out")
    logits = z @ params["mav_head/linear_out/w"] + params["mav_head/linear_out/b"]
    lp = jax.nn.log_softmax(logits, axis=-1).reshape(b, m, cfg.buckets)
    out = {"log_probs": lp}
    y0 = y.reshape(b, t, d)[:, 0]
    if cfg.value_head:
        out["value"] = jax.nn.log_softmax(y0 @ params["value_head/linear/w"] + params["value_head/linear/b"], axis=-1)
    if cfg.policy_dim:
        out["policy"] = policy_jax(params, jnp.take(y, fi, axis=0), jnp.take(y, ti, axis=0), acts).reshape(b, m)
    if cfg.wdl_head:
        out["wdl"] = wdl_jax(params, y0)
    return out
