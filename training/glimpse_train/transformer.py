"""The searchless-chess transformer trunk shared by every model kind (``kinds/``): Haiku parameter names
and the float64 numpy reference of the trunk.

Parameters are a flat ``dict[str, array]`` keyed ``"<module>/<name>"`` exactly as in the reference
checkpoints (``embed/embeddings`` [V, D], ``embed_1/embeddings`` [T, D], ``layer_norm{,_k}/{scale,offset}``,
``multi_head_dot_product_attention{,_i}/linear{,_1,_2,_3}/w`` (Q, K, V, O) [D, D],
``linear_{3i}/w`` (W1, gate) [D, 4D], ``linear_{3i+1}/w`` (W2) [D, 4D], ``linear_{3i+2}/w`` (W3) [4D, D]).
Haiku ``w`` is [in, out]. Each kind adds its own head (``kinds/action_value.py``: ``linear_{3L}``;
``kinds/multi_action_value.py``: ``mav_head/...``).
"""

from __future__ import annotations

import math

import numpy as np

VOCAB = 1968
MAX_SEQ = 79
LN_EPS = 1e-5


def _sfx(i: int) -> str:
    return "" if i == 0 else f"_{i}"


def ln_name(k: int) -> str:
    return f"layer_norm{_sfx(k)}"


def attn_name(i: int) -> str:
    return f"multi_head_dot_product_attention{_sfx(i)}"


def lin_name(k: int) -> str:
    return f"linear{_sfx(k)}"


SMOLGEN_GLOBAL = "smolgen_global/w"


def smolgen_shapes(prefix: str, dim: int, seq: int, heads: int, smolgen: tuple[int, int, int]) -> dict:
    """Shapes of one layer's smolgen (Lc0's BT2+ attention-bias generator) under ``prefix``
    (``<attention module>/smolgen``), ``smolgen`` = (C, S, G): ``compress/w`` [D, C], ``dense1/{w [seq·C, S], b}``,
    ``ln1/{scale,offset}`` [S], ``dense2/{w [S, heads·G], b}``, ``ln2/{scale,offset}`` [G]. The projection
    ``smolgen_global/w`` [G, seq²] is shared by every layer (:data:`SMOLGEN_GLOBAL`)."""
    c, s, g = smolgen
    return {f"{prefix}/compress/w": (dim, c), f"{prefix}/dense1/w": (seq * c, s), f"{prefix}/dense1/b": (s,),
            f"{prefix}/ln1/scale": (s,), f"{prefix}/ln1/offset": (s,), f"{prefix}/dense2/w": (s, heads * g),
            f"{prefix}/dense2/b": (heads * g,), f"{prefix}/ln2/scale": (g,), f"{prefix}/ln2/offset": (g,)}


def trunk_shapes(layers: int, dim: int, hidden: int, seq: int, heads: int = 0,
                 attn_bias: bool = False, smolgen: tuple[int, int, int] | None = None) -> dict[str, tuple[int, ...]]:
    """Shapes of the trunk's parameters (embeddings, ``layers`` blocks, final LayerNorm), in the
    reference's order; ``attn_bias`` adds ``pair_bias`` [heads, seq, seq] per layer, ``smolgen`` = (C, S, G)
    a smolgen per layer (:func:`smolgen_shapes`) and, last, the shared ``smolgen_global/w`` [G, seq²]."""
    d, h = dim, hidden
    shapes: dict[str, tuple[int, ...]] = {"embed/embeddings": (VOCAB, d), "embed_1/embeddings": (seq, d)}
    for i in range(layers):
        for j in (2 * i, 2 * i + 1):
            shapes[f"{ln_name(j)}/scale"] = (d,)
            shapes[f"{ln_name(j)}/offset"] = (d,)
        for q in ("linear", "linear_1", "linear_2", "linear_3"):
            shapes[f"{attn_name(i)}/{q}/w"] = (d, d)
        if attn_bias:
            shapes[f"{attn_name(i)}/pair_bias"] = (heads, seq, seq)
        if smolgen:
            shapes.update(smolgen_shapes(f"{attn_name(i)}/smolgen", d, seq, heads, smolgen))
        shapes[f"{lin_name(3 * i)}/w"] = (d, h)
        shapes[f"{lin_name(3 * i + 1)}/w"] = (d, h)
        shapes[f"{lin_name(3 * i + 2)}/w"] = (h, d)
    shapes[f"{ln_name(2 * layers)}/scale"] = (d,)
    shapes[f"{ln_name(2 * layers)}/offset"] = (d,)
    if smolgen:
        shapes[SMOLGEN_GLOBAL] = (smolgen[2], seq * seq)
    return shapes


def count_layers(params: dict) -> int:
    layers = 0
    while f"{attn_name(layers)}/linear/w" in params:
        layers += 1
    return layers


def init_from_shapes(shapes: dict[str, tuple[int, ...]], seed: int, emb_init_scale: float,
                     is_embedding, is_zero) -> dict[str, np.ndarray]:
    """Haiku-style initialisation: ``is_embedding(name)`` → N(0, emb_init_scale²), ``/scale`` → 1,
    ``is_zero(name)`` → 0, other matrices truncated-normal fan-in. One generator, in ``shapes`` order."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, shape in shapes.items():
        if is_embedding(name):
            w = rng.normal(0.0, emb_init_scale, shape)
        elif name.endswith("/scale"):
            w = np.ones(shape)
        elif is_zero(name):
            w = np.zeros(shape)
        else:
            std = 1.0 / math.sqrt(shape[0])
            w = np.clip(rng.normal(0.0, 1.0, shape), -2, 2) * std / 0.87962566
        out[name] = np.asarray(w, np.float32)
    return out


# ----------------------------------------------------------------------------------------------
# numpy reference (float64), used in tests
# ----------------------------------------------------------------------------------------------


def _np_ln(x, scale, offset):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + LN_EPS) * scale + offset


def np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _np_silu(x):
    return x / (1 + np.exp(-x))


def numpy_smolgen(p: dict[str, np.ndarray], prefix: str, heads: int, y: np.ndarray) -> np.ndarray:
    """float64 smolgen (Lc0's BT2+): the layer's LayerNormed input y [B, T, D] → attention-logit biases
    [B, H, T, T] generated from the whole position: compress each token to C values, flatten, dense to S
    (swish, LayerNorm), dense to H·G (swish, LayerNorm over each head's G), and the shared
    ``smolgen_global/w`` [G, T²] maps each head's G values to its T×T biases."""
    b, t, _ = y.shape
    c = (y @ p[f"{prefix}/compress/w"]).reshape(b, -1)
    h = _np_ln(_np_silu(c @ p[f"{prefix}/dense1/w"] + p[f"{prefix}/dense1/b"]), p[f"{prefix}/ln1/scale"],
               p[f"{prefix}/ln1/offset"])
    h = _np_silu(h @ p[f"{prefix}/dense2/w"] + p[f"{prefix}/dense2/b"]).reshape(b, heads, -1)
    h = _np_ln(h, p[f"{prefix}/ln2/scale"], p[f"{prefix}/ln2/offset"])
    return (h @ p[SMOLGEN_GLOBAL]).reshape(b, heads, t, t)


def numpy_trunk(p: dict[str, np.ndarray], layers: int, dim: int, heads: int, tokens: np.ndarray,
                attn_bias: bool = False, smolgen: bool = False) -> np.ndarray:
    """float64 transformer trunk (the paper's decoder blocks, bidirectional attention, pre-LN, SwiGLU):
    tokens int [B, T] → residual stream [B, T, D] before the final LayerNorm. ``p``: float64 parameters by
    Haiku name; ``attn_bias`` adds the learned per-head ``pair_bias`` [H, T, T] to the attention logits,
    ``smolgen`` the position's generated biases [B, H, T, T] (:func:`numpy_smolgen`; T must be the full
    sequence)."""
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
        if smolgen:
            s = s + numpy_smolgen(p, f"{a}/smolgen", nh, y)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("bhts,bshd->bthd", s, v).reshape(b, t, d)
        x = x + o @ p[f"{a}/linear_3/w"]
        y = _np_ln(x, p[f"{ln_name(2*i+1)}/scale"], p[f"{ln_name(2*i+1)}/offset"])
        g = y @ p[f"{lin_name(3*i)}/w"]
        x = x + ((g / (1 + np.exp(-g))) * (y @ p[f"{lin_name(3*i+1)}/w"])) @ p[f"{lin_name(3*i+2)}/w"]
    return x
