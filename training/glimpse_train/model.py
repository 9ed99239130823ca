"""The searchless-chess transformer over a flat params dict with the reference's Haiku names.

Parameters are a flat ``dict[str, array]`` keyed ``"<module>/<name>"`` exactly as in the reference
checkpoints (``embed/embeddings`` [V, D], ``embed_1/embeddings`` [79, D], ``layer_norm{,_k}/{scale,offset}``,
``multi_head_dot_product_attention{,_i}/linear{,_1,_2,_3}/w`` (Q, K, V, O) [D, D],
``linear_{3i}/w`` (W1, gate) [D, 4D], ``linear_{3i+1}/w`` (W2) [D, 4D], ``linear_{3i+2}/w`` (W3) [4D, D],
head ``linear_{3L}/{w [D, K], b [K]}``). Haiku ``w`` is [in, out].

The network input is the already shifted sequence: ``[0 (BOS), 77 state tokens, action]`` (AV, 79 tokens)
or ``[0, 77 state tokens]`` (SV/BC, 78 tokens); the output is log-softmax at the last position.
"""

from __future__ import annotations

import dataclasses
import math


import numpy as np

VOCAB = 1968
MAX_SEQ = 79
LN_EPS = 1e-5

KIND_AV = "action_value"
KIND_SV = "state_value"
KIND_BC = "behavioral_cloning"
KINDS = (KIND_AV, KIND_SV, KIND_BC)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Architecture hyper-parameters (sequence length follows from ``kind``)."""

    kind: str = KIND_AV
    layers: int = 4
    dim: int = 128
    heads: int = 4
    widening: int = 4
    buckets: int = 128

    @property
    def seq_len(self) -> int:
        return 79 if self.kind == KIND_AV else 78

    @property
    def out_size(self) -> int:
        return VOCAB if self.kind == KIND_BC else self.buckets


def _sfx(i: int) -> str:
    return "" if i == 0 else f"_{i}"


def ln_name(k: int) -> str:
    return f"layer_norm{_sfx(k)}"


def attn_name(i: int) -> str:
    return f"multi_head_dot_product_attention{_sfx(i)}"


def lin_name(k: int) -> str:
    return f"linear{_sfx(k)}"


def param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    d, h = cfg.dim, cfg.dim * cfg.widening
    shapes: dict[str, tuple[int, ...]] = {
        "embed/embeddings": (VOCAB, d),
        "embed_1/embeddings": (MAX_SEQ, d),
    }
    for i in range(cfg.layers):
        for j in (2 * i, 2 * i + 1):
            shapes[f"{ln_name(j)}/scale"] = (d,)
            shapes[f"{ln_name(j)}/offset"] = (d,)
        for q in ("linear", "linear_1", "linear_2", "linear_3"):
            shapes[f"{attn_name(i)}/{q}/w"] = (d, d)
        shapes[f"{lin_name(3 * i)}/w"] = (d, h)
        shapes[f"{lin_name(3 * i + 1)}/w"] = (d, h)
        shapes[f"{lin_name(3 * i + 2)}/w"] = (h, d)
    shapes[f"{ln_name(2 * cfg.layers)}/scale"] = (d,)
    shapes[f"{ln_name(2 * cfg.layers)}/offset"] = (d,)
    shapes[f"{lin_name(3 * cfg.layers)}/w"] = (d, cfg.out_size)
    shapes[f"{lin_name(3 * cfg.layers)}/b"] = (cfg.out_size,)
    return shapes


def num_params(cfg: ModelConfig) -> int:
    return int(sum(np.prod(s) for s in param_shapes(cfg).values()))


def gflop_per_eval(cfg: ModelConfig, last_layer_optimised: bool = True) -> float:
    """Floating-point operations (2 per multiply-add) of one row's forward pass, in GFLOP.

    Counts matrix products and attention (the dominant terms); with ``last_layer_optimised`` the
    last layer computes K and V for all positions but Q, attention output and MLP only at the last.
    """
    t, d, hd, k = cfg.seq_len, cfg.dim, cfg.dim * cfg.widening, cfg.out_size
    full_layer = t * (4 * d * d + 3 * d * hd) + 2 * t * t * d
    if last_layer_optimised:
        last = t * 2 * d * d + 2 * d * d + 3 * d * hd + 2 * t * d
    else:
        last = full_layer
    macs = (cfg.layers - 1) * full_layer + last + d * k
    return 2.0 * macs / 1e9


def infer_config(params: dict[str, np.ndarray], kind: str, heads: int) -> ModelConfig:
    """Infer layers/D/widening/buckets from parameter shapes; raise ValueError on an unknown layout."""
    if "embed/embeddings" not in params or "embed_1/embeddings" not in params:
        raise ValueError("not a Haiku searchless-chess tree: missing embed/embeddings or embed_1/embeddings")
    vocab, d = params["embed/embeddings"].shape
    if vocab != VOCAB:
        raise ValueError(f"embedding has {vocab} rows, expected {VOCAB}")
    layers = 0
    while f"{attn_name(layers)}/linear/w" in params:
        layers += 1
    if layers == 0:
        raise ValueError("no attention layers found")
    hidden = params[f"{lin_name(0)}/w"].shape[1]
    if hidden % d:
        raise ValueError(f"MLP hidden size {hidden} is not a multiple of D={d}")
    out = params[f"{lin_name(3 * layers)}/w"].shape[1]
    if kind == KIND_BC and out != VOCAB:
        raise ValueError(f"BC head has {out} outputs, expected {VOCAB}")
    if d % heads:
        raise ValueError(f"D={d} not divisible by heads={heads}")
    cfg = ModelConfig(kind=kind, layers=layers, dim=d, heads=heads, widening=hidden // d,
                      buckets=out if kind != KIND_BC else 128)
    want = param_shapes(cfg)
    extra = set(params) - set(want)
    missing = set(want) - set(params)
    if extra or missing:
        raise ValueError(f"parameter names do not match: missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}")
    for name, shape in want.items():
        if tuple(params[name].shape) != shape:
            raise ValueError(f"{name}: shape {params[name].shape}, expected {shape}")
    return cfg


def load_npz_params(path: str, tree: str = "params") -> dict[str, np.ndarray]:
    """Read ``<tree>/<module>/<name>`` arrays from a golden-style npz into a flat dict."""
    z = np.load(path)
    prefix = tree + "/"
    out = {k[len(prefix):]: np.asarray(z[k], dtype=np.float32) for k in z.files if k.startswith(prefix)}
    if not out:
        raise ValueError(f"{path}: no arrays under {prefix!r}")
    return out


# ----------------------------------------------------------------------------------------------
# numpy reference forward (float64), used in tests
# ----------------------------------------------------------------------------------------------


def _np_ln(x, scale, offset):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + LN_EPS) * scale + offset


def numpy_trunk(p: dict[str, np.ndarray], layers: int, dim: int, heads: int, tokens: np.ndarray,
                attn_bias: bool = False) -> np.ndarray:
    """float64 transformer trunk (the paper's decoder blocks, bidirectional attention, pre-LN, SwiGLU):
    tokens int [B, T] → residual stream [B, T, D] before the final LayerNorm. ``p``: float64 parameters by
    Haiku name; ``attn_bias`` adds the learned per-head ``pair_bias`` [H, T, T] to the attention logits."""
    b, t = tokens.shape
    d, nh = dim, heads
    dh = d // nh
    x = p["embed/embeddings"][tokens] * math.sqrt(d) + p["embed_1/embeddings"][:t]
    for i in range(layers):
        a = attn_name(i)
        y = _np_ln(x, p[f"{ln_name(2*i)}/scale"], p[f"{ln_name(2*i)}/offset"])
        q = (y @ p[f"{a}/linear/w"]).reshape(b, t, nh, dh)
        k = (y @ p[f"{a}/linear_1/w"]).reshape(b, t, nh, dh)
        v = (y @ p[f"{a}/linear_2/w"]).reshape(b, t, nh, dh)
        s = np.einsum("bthd,bshd->bhts", q, k) / math.sqrt(dh)
        if attn_bias:
            s = s + p[f"{a}/pair_bias"][None, :, :t, :t]
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("bhts,bshd->bthd", s, v).reshape(b, t, d)
        x = x + o @ p[f"{a}/linear_3/w"]
        y = _np_ln(x, p[f"{ln_name(2*i+1)}/scale"], p[f"{ln_name(2*i+1)}/offset"])
        g = y @ p[f"{lin_name(3*i)}/w"]
        x = x + ((g / (1 + np.exp(-g))) * (y @ p[f"{lin_name(3*i+1)}/w"])) @ p[f"{lin_name(3*i+2)}/w"]
    return x


def numpy_forward(params: dict[str, np.ndarray], cfg: ModelConfig, tokens: np.ndarray) -> np.ndarray:
    """float64 forward pass: tokens int [B, T] → log-probs [B, K] at the last position."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    x = numpy_trunk(p, cfg.layers, cfg.dim, cfg.heads, tokens)
    L = cfg.layers
    y = _np_ln(x[:, -1], p[f"{ln_name(2*L)}/scale"], p[f"{ln_name(2*L)}/offset"])
    z = y @ p[f"{lin_name(3*L)}/w"] + p[f"{lin_name(3*L)}/b"]
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# JAX model
# ----------------------------------------------------------------------------------------------


def init_params(cfg: ModelConfig, seed: int = 0, emb_init_scale: float = 0.02) -> dict[str, np.ndarray]:
    """Initialisation in the spirit of Haiku's defaults (truncated-normal fan-in for linears)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, shape in param_shapes(cfg).items():
        if name.startswith("embed"):
            w = rng.normal(0.0, emb_init_scale, shape)
        elif name.endswith("/scale"):
            w = np.ones(shape)
        elif name.endswith("/offset") or name.endswith("/b"):
            w = np.zeros(shape)
        else:
            std = 1.0 / math.sqrt(shape[0])
            w = np.clip(rng.normal(0.0, 1.0, shape), -2, 2) * std / 0.87962566
        out[name] = np.asarray(w, np.float32)
    return out


def jax_forward(params, cfg: ModelConfig, tokens):
    """JAX forward: tokens int [B, T] → log-probs float32 [B, K] at the last position.

    Matmuls run on 2-D [B*T, D] operands (XLA CPU's dot with two contracting dims is several times
    slower, especially in the backward pass); the last layer computes Q, attention output and MLP for
    the last position only (the only row that is read), like the ONNX export.
    """
    import jax
    import jax.numpy as jnp

    b, t = tokens.shape
    d, nh = cfg.dim, cfg.heads
    dh = d // nh

    def ln(x, k):
        mu = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + LN_EPS) * params[f"{ln_name(k)}/scale"] + params[f"{ln_name(k)}/offset"]

    def mlp(x, i):
        y = ln(x, 2 * i + 1)
        w12 = jnp.concatenate([params[f"{lin_name(3*i)}/w"], params[f"{lin_name(3*i+1)}/w"]], axis=1)
        gu = y @ w12
        hdim = cfg.dim * cfg.widening
        return x + (jax.nn.silu(gu[:, :hdim]) * gu[:, hdim:]) @ params[f"{lin_name(3*i+2)}/w"]

    x = jnp.take(params["embed/embeddings"], tokens.reshape(-1), axis=0) * math.sqrt(d)
    x = (x.reshape(b, t, d) + params["embed_1/embeddings"][:t]).reshape(b * t, d)
    scale = 1.0 / math.sqrt(dh)
    for i in range(cfg.layers):
        a = attn_name(i)
        y = ln(x, 2 * i)
        wq, wk, wv, wo = (params[f"{a}/{n}/w"] for n in ("linear", "linear_1", "linear_2", "linear_3"))
        if i < cfg.layers - 1:
            qkv = y @ jnp.concatenate([wq, wk, wv], axis=1)
            q = qkv[:, :d].reshape(b, t, nh, dh).transpose(0, 2, 1, 3)
            k = qkv[:, d:2 * d].reshape(b, t, nh, dh).transpose(0, 2, 3, 1)
            v = qkv[:, 2 * d:].reshape(b, t, nh, dh).transpose(0, 2, 1, 3)
            s = jax.nn.softmax((q * scale) @ k, axis=-1)  # [B, H, T, T]
            o = (s @ v).transpose(0, 2, 1, 3).reshape(b * t, d)
            x = x + o @ wo
            x = mlp(x, i)
        else:
            kv = y @ jnp.concatenate([wk, wv], axis=1)
            k = kv[:, :d].reshape(b, t, nh, dh).transpose(0, 2, 3, 1)
            v = kv[:, d:].reshape(b, t, nh, dh).transpose(0, 2, 1, 3)
            y_last = y.reshape(b, t, d)[:, -1]
            q = (y_last @ wq).reshape(b, nh, 1, dh)
            s = jax.nn.softmax((q * scale) @ k, axis=-1)  # [B, H, 1, T]
            o = (s @ v).reshape(b, d)
            x = x.reshape(b, t, d)[:, -1] + o @ wo
            x = mlp(x, i)
    L = cfg.layers
    y = ln(x, 2 * L)
    z = y @ params[f"{lin_name(3*L)}/w"] + params[f"{lin_name(3*L)}/b"]
    return jax.nn.log_softmax(z, axis=-1)
