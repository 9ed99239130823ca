"""Model kind ``multi_action_value`` (MAV, the one-pass model): one trunk pass per position.

Everything about the kind is here: configuration, parameter shapes and initialisation, the float64 numpy
reference and the JAX forward pass (``numpy_outputs``/``jax_outputs``), the ONNX graph (``build_model``),
the trainer (``MAVTrainer``: loss, position batches, validation), a run's loader and the evaluation policy
(``MAVPolicy``); the optional policy and WDL heads are in ``heads.py``, the side-to-move frame in
``canon.py``. The registry (``kinds/__init__.py``) finds it by the ONNX ``glimpse.kind`` and by the
``mav-*`` presets.

The action-value (AV) model of the paper sees ``[0, 77 state tokens, action]`` and is run once per legal
move, so the 77 state tokens are recomputed for every move (attention is bidirectional). This model reads
the position once and scores every given move from that one pass:

* **Trunk** — the paper's transformer over the 78 tokens ``[0 (BOS), 77 state tokens]`` (same tokenizer,
  embedding × √D plus learned positions, pre-LN blocks with bidirectional attention and SwiGLU, final
  LayerNorm), with the same Haiku parameter names as ``model.py`` (``embed/embeddings`` [1968, D],
  ``embed_1/embeddings`` [78, D], ``layer_norm{,_k}``, ``multi_head_dot_product_attention{,_i}``,
  ``linear_{3i..3i+2}``); the final LayerNorm ``layer_norm_{2L}`` is applied at every position. There is
  no AV head ``linear_{3L}``.
* **Per-move head** (``mav_head/...``) — for action ``a`` with from-square ``f`` and to-square ``t``
  (castling as the king's move, promotions by their from/to squares, the promotion piece only through
  the action embedding): ``u = [y_f ‖ y_t] W_in + E[a]`` where ``y_s`` is the trunk output at the board
  token of square ``s`` (FEN order a8…h1, token position ``2 + (7 − rank)·8 + file`` in the 78-token
  sequence) and ``E`` a learned action embedding [1968, Dh]; then one pre-LN SwiGLU block
  ``u += W_down(silu(W_gate LN(u)) ⊙ W_up LN(u))`` and ``logits = LN_out(u) W_out + b_out`` → K bucket
  log-probs (log-softmax over K). Moves do not interact in the head, so padding a row with extra actions
  cannot change the real moves' outputs.
* **Global input** (optional, ``head_global``): ``u += y_0 W_g`` with ``y_0`` the trunk output at BOS,
  ``mav_head/linear_global/w`` [D, Dh] (computed once per position), so every move's head sees a summary
  of the whole position, not only its two squares.
* **Pair bias** (optional, ``attn_bias``): a learned attention-logit bias per layer and head for every
  (query, key) token pair, ``multi_head_dot_product_attention{,_i}/pair_bias`` [H, 78, 78], zero-initialised
  (a cheap trunk variant in the spirit of ChessFormer's position encoding: square-pair relations can be
  learned directly instead of through the position embeddings).
* **Value head** (optional, ``value_head/linear``) — K log-probs of the position's value for the side to
  move from the trunk output at BOS (trained on the best labelled move's win probability, an auxiliary
  loss; the engine does not need it).

Parameter names of the head: ``mav_head/action_embed/embeddings`` [1968, Dh], ``mav_head/linear_in/w``
[2D, Dh], ``mav_head/layer_norm/{scale,offset}`` [Dh], ``mav_head/linear_gate/w`` and
``mav_head/linear_up/w`` [Dh, Hh], ``mav_head/linear_down/w`` [Hh, Dh],
``mav_head/layer_norm_out/{scale,offset}`` [Dh], ``mav_head/linear_out/{w [Dh, K], b [K]}``,
``value_head/linear/{w [D, K], b [K]}``.

Cost (multiply-adds, 2 FLOP each): trunk ``L·(T·(4D² + 3·D·W·D) + 2·T²·D)`` with T = 78 and widening W,
once per position; head ``2·D·Dh + 3·Dh·Hh + Dh·K`` per move. For L=8, D=256 (the 9M size) with
Dh=256, Hh=512 that is 1.36 GFLOP for the trunk and 1.1 MFLOP per move: 35 moves cost 2.8 % of the trunk.
See ``cost_split``.

Training (``MAVTrainer``): a step takes ``batch`` *positions*; every labelled legal move of each position is
scored from the one trunk pass and contributes to the loss in the same step (moves padded to a multiple of
16 per step, padding masked). Loss: mean over the real moves of the cross-entropy over the 128 buckets with
HL-Gauss soft targets (σ = ``hl_sigma`` buckets; 0 = one-hot), plus ``value_weight`` × the value head's
cross-entropy against the best move's win probability (0 = no value head), plus the optional policy and WDL
heads' losses (``heads.py``). Optimiser, schedule, EMA, checkpoints and logs from ``trainloop.py``.

ONNX contract (opset 17): inputs ``tokens`` int64 [batch, 78] and ``actions`` int64 [batch, moves] (padded
with ``PAD_ACTION`` = 0; every id in 0..1967); output ``log_probs`` float32 [batch, moves, K] (padded slots
are meaningless and never influence the real ones), optional ``value`` [batch, K], ``policy`` [batch, moves],
``wdl`` [batch, 3] (log-probs). Metadata: ``glimpse.kind`` = ``multi_action_value``, or
``multi_action_value_policy`` when both the policy and the WDL head are there (``onnx_kind``), ``glimpse.buckets``,
``glimpse.description``, ``glimpse.params``, ``glimpse.gflop_per_eval`` (one position with 35 moves),
``glimpse.gflop_trunk``, ``glimpse.gflop_per_move``, ``glimpse.pad_action``, and informational fields.
The graph folds √D and 1/√(D/H) as the AV graph does and gathers the trunk outputs at each move's
from/to tokens with ``GatherND`` (batch_dims = 1).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

import chess
import numpy as np
import onnx
from onnx import TensorProto, helper

from ..chessdata import ACTIONS, BUCKET_CENTRES, MOVE_TO_ACTION, tokenize
from ..data import Dataset
from ..onnx_graph import OPSET, _G, ort_session
from ..trainloop import TrainerBase, load_run_params, soft_targets
from ..transformer import (LN_EPS, VOCAB, _np_ln, attn_name, count_layers, init_from_shapes, lin_name, ln_name,
                           np_log_softmax, numpy_trunk, trunk_shapes)
from .base import Kind

KIND_MAV = "multi_action_value"
#: the same contract plus the ``policy`` and ``wdl`` outputs (engine: ``src/model/kinds/multi_action_value_policy.rs``)
KIND_MAVP = "multi_action_value_policy"
SEQ = 78
PAD_ACTION = 0  # id used to pad the `actions` input; its outputs are ignored
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

    kind = KIND_MAV
    seq_len = SEQ

    @property
    def dh(self) -> int:
        return self.head_dim or self.dim

    @property
    def hh(self) -> int:
        return self.head_hidden or 2 * self.dh


def param_shapes(cfg: MAVConfig) -> dict[str, tuple[int, ...]]:
    d, dh, hh, k = cfg.dim, cfg.dh, cfg.hh, cfg.buckets
    shapes = trunk_shapes(cfg.layers, d, d * cfg.widening, SEQ, cfg.heads, cfg.attn_bias)
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
    from ..heads import param_shapes as head_shapes

    shapes.update(head_shapes(d, cfg.policy_dim, cfg.wdl_head))
    return shapes


def num_params(cfg: MAVConfig) -> int:
    return int(sum(np.prod(s) for s in param_shapes(cfg).values()))


def cost_split(cfg: MAVConfig) -> dict[str, float]:
    """GFLOP (2 per multiply-add) of the trunk per position and of the head per move (matmuls and
    attention; LayerNorm, softmax and gathers are not counted)."""
    t, d, hd = SEQ, cfg.dim, cfg.dim * cfg.widening
    trunk = cfg.layers * (t * (4 * d * d + 3 * d * hd) + 2 * t * t * d) + (d * cfg.dh if cfg.head_global else 0)
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
                    wdl_head="wdl_head/linear/w" in params)
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


def init_params(cfg: MAVConfig, seed: int = 0, emb_init_scale: float = 0.02) -> dict[str, np.ndarray]:
    """Truncated-normal fan-in init for matrices, N(0, emb_init_scale²) embeddings, LN 1/0, biases 0."""
    return init_from_shapes(param_shapes(cfg), seed, emb_init_scale, is_embedding=lambda n: n.endswith("/embeddings"),
                            is_zero=lambda n: n.endswith("/offset") or n.endswith("/b") or n.endswith("/pair_bias"))


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
        from ..canon import canon_numpy

        tokens, actions = canon_numpy(tokens, actions)
    x = numpy_trunk(p, cfg.layers, cfg.dim, cfg.heads, tokens, attn_bias=cfg.attn_bias)
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
        from ..heads import policy_numpy

        out["policy"] = policy_numpy(p, yf, yt, actions)
    if cfg.wdl_head:
        from ..heads import wdl_numpy

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
        from ..canon import canon_jax

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
        from ..heads import policy_jax

        out["policy"] = policy_jax(params, jnp.take(y, fi, axis=0), jnp.take(y, ti, axis=0), acts).reshape(b, m)
    if cfg.wdl_head:
        from ..heads import wdl_jax

        out["wdl"] = wdl_jax(params, y0)
    return out


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
        from ..canon import onnx_canon

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
            if cfg.attn_bias:
                mha_in.append(g.const(f"pair_bias{i}", p[f"{a}/pair_bias"][None]))
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
        from ..heads import onnx_policy

        pol = onnx_policy(g, p, yf, yt, actions_in)
        g.nodes.append(helper.make_node("Identity", [pol], ["policy"], name="n_policy"))
        outputs.append(helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", "moves"]))
    if cfg.wdl_head:
        from ..heads import onnx_wdl

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


# ----------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------

# Presets (batch = positions per step; ~27.5 labelled moves per position on the shared labels).
CONFIGS = {
    "mav-smoke": dict(layers=2, dim=32, heads=2, batch=16, steps=40, lr=1e-3, warmup=10, eval_every=20,
                      eval_positions=64, max_positions=400, ckpt_seconds=30),
    "mav-small": dict(layers=2, dim=64, heads=4, batch=64, steps=3000, lr=1e-3, warmup=200, eval_every=200),
    "mav-medium": dict(layers=4, dim=128, heads=4, batch=64, steps=4000, lr=5e-4, warmup=300, eval_every=200),
    # the shipped one-pass net: ~48 positions/s on the idle 2-core box, 3000 steps ≈ 2.6 epochs ≈ 35-40 min
    "mav-l6d256": dict(layers=6, dim=256, heads=8, batch=32, steps=3000, lr=5e-4, warmup=200, eval_every=200),
    "mav-9m": dict(layers=8, dim=256, heads=8, batch=32, steps=20000, lr=2e-4, warmup=500, eval_every=500),
}


@dataclasses.dataclass
class MAVTrainConfig:
    kind: str = KIND_MAV
    layers: int = 2
    dim: int = 64
    heads: int = 4
    head_dim: int = 0
    head_hidden: int = 0
    batch: int = 64
    micro: int = 1  # micro-batches per step (TrainerBase): the same update, faster on a CPU
    steps: int = 3000
    lr: float = 1e-3
    min_lr_frac: float = 0.05
    warmup: int = 200
    weight_decay: float = 1e-4
    clip: float = 1.0
    ema: float = 0.999
    hl_sigma: float = 0.75
    value_weight: float = 0.1
    attn_bias: int = 0  # 1 = learned per-head attention bias over token pairs
    head_global: int = 0  # 1 = the per-move head also sees the BOS (whole-position) output
    canonical: int = 0  # 1 = inputs in the side-to-move frame (canon.py)
    policy_dim: int = 0  # P > 0: policy head (heads.py) trained on softmax(p / policy_tau) over the labelled moves
    policy_weight: float = 0.5
    policy_tau: float = 0.05
    wdl_weight: float = 0.0  # > 0: WDL head trained on Stockfish 15.1's WDL model of the best move's score
    eval_every: int = 200
    eval_positions: int = 512
    ckpt_seconds: float = 240.0
    seed: int = 0
    max_positions: int = 0
    mirror: float = 0.0  # share of the training positions without castling rights fed mirrored left to right
    # (board files and moves; the labels hold for the mirrored position, Lc0's rule): more positions for free.
    # Off until a GPU burst measures it against the held-out split.
    pad_moves: int = 0  # > 0: pad every batch's moves to at least this width (one array shape, so XLA compiles
    # the step once instead of once per width met: on an H200 the widths met in the first steps cost ~2 min
    # of compiles); 0 = each batch's most moves rounded up to 16 (least work on a CPU)

    def model(self) -> MAVConfig:
        return MAVConfig(layers=self.layers, dim=self.dim, heads=self.heads, head_dim=self.head_dim,
                         head_hidden=self.head_hidden, value_head=self.value_weight > 0,
                         attn_bias=bool(self.attn_bias), head_global=bool(self.head_global),
                         canonical=bool(self.canonical), policy_dim=self.policy_dim,
                         wdl_head=self.wdl_weight > 0)


def architecture_of(mcfg: MAVConfig) -> dict:
    """The ``MAVTrainConfig`` fields that fix the parameter shapes, as ``mcfg`` (the net a run starts from,
    ``onnx_import.import_onepass``) has them: a start net grown deeper (``grow.py``) or otherwise shaped
    differently from a run's ``config.json`` trains as it is. The loss weights stay the run's; a start net whose
    heads disagree with them (value or WDL head present in one, absent in the other) raises ``ValueError``."""
    return {"layers": mcfg.layers, "dim": mcfg.dim, "heads": mcfg.heads, "head_dim": mcfg.head_dim,
            "head_hidden": mcfg.head_hidden, "attn_bias": int(mcfg.attn_bias), "head_global": int(mcfg.head_global),
            "canonical": int(mcfg.canonical), "policy_dim": mcfg.policy_dim}


def with_start_architecture(tcfg: MAVTrainConfig, mcfg: MAVConfig) -> MAVTrainConfig:
    """``tcfg`` with the parameter shapes of ``mcfg`` (:func:`architecture_of`); raises ``ValueError`` when the
    start net's value or WDL head does not match ``tcfg``'s loss weights (``value_weight``, ``wdl_weight``)."""
    if mcfg.value_head != (tcfg.value_weight > 0) or mcfg.wdl_head != (tcfg.wdl_weight > 0):
        raise ValueError(f"start net heads (value {mcfg.value_head}, WDL {mcfg.wdl_head}) do not match the run's "
                         f"loss weights (value_weight {tcfg.value_weight}, wdl_weight {tcfg.wdl_weight})")
    return dataclasses.replace(tcfg, **architecture_of(mcfg))


class PositionData:
    """A ``Dataset`` grouped by position: the rows (labelled moves) of position i are
    ``start[i]:end[i]`` (``build_dataset`` appends each position's moves contiguously)."""

    def __init__(self, ds: Dataset):
        self.ds = ds
        n = len(ds.states)
        if len(ds.row_pos) and np.any(np.diff(ds.row_pos) < 0):
            raise ValueError("dataset rows are not grouped by position")
        self.start = np.searchsorted(ds.row_pos, np.arange(n), side="left")
        self.end = np.searchsorted(ds.row_pos, np.arange(n), side="right")
        has = self.end > self.start
        self.train_pos = np.nonzero(has & ~ds.val)[0]
        self.val_pos = np.nonzero(has & ds.val)[0]

    def batch(self, pos: np.ndarray, multiple: int = 16, width: int = 0):
        """(tokens int32 [B, 78], actions int32 [B, M] padded with ``PAD_ACTION``, mask bool [B, M],
        rows int64 [B, M] (dataset row per slot, -1 at padding)); M = the most moves rounded up to
        ``multiple``, and at least ``width``."""
        counts = self.end[pos] - self.start[pos]
        m = max(multiple, width, int(-(-counts.max() // multiple) * multiple))
        b = len(pos)
        tokens = np.zeros((b, 78), np.int32)
        tokens[:, 1:] = self.ds.states[pos]
        rows = np.full((b, m), -1, np.int64)
        for i, (s, c) in enumerate(zip(self.start[pos], counts)):
            rows[i, :c] = np.arange(s, s + c)
        mask = rows >= 0
        actions = np.full((b, m), PAD_ACTION, np.int32)
        actions[mask] = self.ds.row_action[rows[mask]]
        return tokens, actions, mask, rows


def mirror_batch(tokens: np.ndarray, actions: np.ndarray, mask: np.ndarray, share: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A training batch (tokens int32 [B, 78] with the leading 0, actions int32 [B, M], mask bool [B, M]) with
    each position that has no castling rights mirrored left to right with probability ``share``: its state
    tokens (``chessdata.mirror_states``) and its moves (``ACTION_MIRROR``); the targets, indexed by row, stay.
    Returns new arrays; the inputs are not changed."""
    from ..chessdata import ACTION_MIRROR, mirror_states, no_castling

    states = tokens[:, 1:]
    flip = no_castling(states) & (rng.random(len(tokens)) < share)
    if not flip.any():
        return tokens, actions
    tokens, actions = tokens.copy(), actions.copy()
    tokens[flip, 1:] = mirror_states(states[flip])
    sel = flip[:, None] & mask
    actions[sel] = ACTION_MIRROR[actions[sel]]
    return tokens, actions


class MAVTrainer(TrainerBase):
    """The one-pass trainer: a step is ``batch`` positions with all their labelled moves; loss as in the
    module docstring; loop, optimiser, EMA and checkpoints from ``trainloop.TrainerBase``."""

    items_name = "positions"

    def __init__(self, cfg: MAVTrainConfig, run_dir: str, ds: Dataset, log=print, reset_ema: bool = False):
        self.pd = PositionData(ds)
        self.ds, self.mcfg = ds, cfg.model()
        self.train_items, self.val_items, self.eval_items = self.pd.train_pos, self.pd.val_pos, cfg.eval_positions
        super().__init__(cfg, run_dir, log, reset_ema,
                         decay_mask=lambda k, v: v.ndim == 2 and not k.endswith("/embeddings"))
        import jax

        self._fwd = jax.jit(lambda params, tokens, actions: jax_outputs(params, self.mcfg, tokens, actions))

    def describe_model(self) -> str:
        return f"{self.mcfg} ({num_params(self.mcfg):,} parameters)"

    def init_params(self) -> dict:
        return init_params(self.mcfg, self.cfg.seed)

    def loss(self, params, tokens, actions, mask, target_idx, best_idx, ptargets, wtargets, move_w, table):
        """The mean over the batch's moves of the bucket cross-entropy, written as a mean over positions of
        ``move_w`` [B] (batch positions / batch moves, the same for every position: ``make_batch``) × the
        position's summed cross-entropy, so that every term is a mean over positions and micro-batches
        (``TrainerBase``) average to exactly this; plus the value, policy and WDL terms. The HL-Gauss
        targets are gathered here from ``table`` ([U, K], ``constants``) by ``target_idx`` [B, M] (each
        move's win probability) and ``best_idx`` [B] (the position's best), as ``target_index`` built them."""
        jnp = self.jnp
        targets, vtargets = table[target_idx], table[best_idx]  # [B, M, K], [B, K]
        out = jax_outputs(params, self.mcfg, tokens, actions)
        ce = -jnp.sum(targets * out["log_probs"], axis=-1)  # [B, M]
        loss = jnp.mean(jnp.sum(ce * mask, axis=-1) * move_w)
        if self.mcfg.value_head:
            loss = loss + self.cfg.value_weight * -jnp.mean(jnp.sum(vtargets * out["value"], axis=-1))
        if self.mcfg.policy_dim:
            import jax

            logits = jnp.where(mask > 0, out["policy"], -1e9)
            loss = loss + self.cfg.policy_weight * -jnp.mean(jnp.sum(ptargets * jax.nn.log_softmax(logits, axis=-1), axis=-1))
        if self.mcfg.wdl_head:
            loss = loss + self.cfg.wdl_weight * -jnp.mean(jnp.sum(wtargets * out["wdl"], axis=-1))
        return loss

    def make_batch(self, pos: np.ndarray):
        from ..heads import policy_targets, wdl_targets

        tokens, actions, mask, rows = self.pd.batch(pos, width=self.cfg.pad_moves)
        if self.cfg.mirror > 0:
            tokens, actions = mirror_batch(tokens, actions, mask, self.cfg.mirror,
                                           np.random.default_rng((self.cfg.seed, int(pos[0]), len(pos))))
        target_idx, best_idx = self.target_index(rows, mask)
        p = np.where(mask, self.ds.row_p[np.maximum(rows, 0)], 0.0)
        ptargets = policy_targets(p, mask, self.cfg.policy_tau) if self.mcfg.policy_dim else np.zeros(mask.shape, np.float32)
        wtargets = (wdl_targets(p.max(1), self.ds.states[pos]) if self.mcfg.wdl_head
                    else np.zeros((len(pos), 3), np.float32))
        move_w = np.full(len(pos), len(pos) / max(1, int(mask.sum())), np.float32)
        return ((tokens, actions, mask.astype(np.float32), target_idx, best_idx, ptargets, wtargets, move_w),
                {"positions": len(pos), "moves": int(mask.sum())})

    def rates(self, counts: dict, seconds: float) -> dict:
        return {"positions_per_s": round(counts.get("positions", 0) / seconds, 1),
                "moves_per_s": round(counts.get("moves", 0) / seconds, 1)}

    #: The target table's rows are padded to a multiple of this, so that its shape, and with it the compiled
    #: step (and JAX's persistent compilation cache), stays the same while the dataset grows.
    TABLE_ROWS = 16384

    def _targets_table(self) -> np.ndarray:
        if getattr(self, "_p_table", None) is None:
            values, index = np.unique(self.ds.row_p, return_inverse=True)
            self._p_index = index.astype(np.int32).reshape(-1)
            table = soft_targets(values, self.mcfg.buckets, self.cfg.hl_sigma)
            rows = -(-len(table) // self.TABLE_ROWS) * self.TABLE_ROWS
            self._p_table = np.concatenate([table, np.zeros((rows - len(table), table.shape[1]), np.float32)])
        return self._p_table

    def constants(self) -> tuple:
        """``(table,)``: the HL-Gauss targets [U, K] of the dataset's distinct win probabilities (scores are
        integer cp, so a pack of 30.4M moves has 3,919 of them), zero rows after them up to a multiple of
        ``TABLE_ROWS``. On the device once per run; batches carry indices into it (``target_index``)."""
        return (self._targets_table(),)

    def target_index(self, rows: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the ``constants`` table: [B, M] int32 for each move's win probability (0 at padding, which
        the loss masks) and [B] for the position's best move. A batch once carried the targets themselves,
        [B, M, K] float32: 50 MB and 26 ms of host time for batch 1024 at 96 moves, which bounded a
        GPU's training at ~20 steps a second; the indices are 0.4 MB."""
        self._targets_table()
        safe = np.maximum(rows, 0)
        idx = np.where(mask, self._p_index[safe], 0).astype(np.int32)
        best = np.where(mask, self.ds.row_p[safe], -1.0).argmax(1)
        return idx, idx[np.arange(len(rows)), best]

    def evaluate(self, params, pos: np.ndarray) -> dict:
        """Validation: hard-bucket CE, bucket accuracy, MAE of the expected win prob (per move), action
        accuracy (argmax expected win prob, ties → lowest action id, is a Stockfish-best move), value MAE."""
        ce = acc = mae = 0.0
        n = 0
        act_ok, vmae, pol_ok = [], [], []
        for i in range(0, len(pos), 128):
            tokens, actions, mask, rows = self.pd.batch(pos[i:i + 128], width=self.cfg.pad_moves)
            outs = self._fwd(params, self.jnp.asarray(tokens), self.jnp.asarray(actions))
            lp, val = np.asarray(outs["log_probs"]), outs.get("value")
            r = rows[mask]
            y = self.ds.row_bucket[r].astype(np.int64)
            lpm = lp[mask]
            ce += float(-lpm[np.arange(len(r)), y].sum())
            acc += float((lpm.argmax(1) == y).sum())
            ev = np.exp(lp.astype(np.float64)) @ BUCKET_CENTRES  # [B, M]
            mae += float(np.abs(ev[mask] - self.ds.row_p[r]).sum())
            n += len(r)
            keys = np.where(mask, self.ds.row_key[np.maximum(rows, 0)], -np.inf)
            evm = np.where(mask, ev, -np.inf)
            for j in range(len(rows)):
                best = np.flatnonzero(evm[j] == evm[j].max())
                choice = best[np.argmin(actions[j, best])]
                act_ok.append(keys[j, choice] == keys[j].max())
                if "policy" in outs:
                    pol = np.where(mask[j], np.asarray(outs["policy"])[j], -np.inf)
                    pol_ok.append(keys[j, int(np.argmax(pol))] == keys[j].max())
            if val is not None:
                vev = np.exp(np.asarray(val, np.float64)) @ BUCKET_CENTRES
                pbest = np.where(mask, self.ds.row_p[np.maximum(rows, 0)], -1.0).max(1)
                vmae.extend(np.abs(vev - pbest).tolist())
        out = {"val_loss": ce / n, "val_bucket_acc": acc / n, "val_mae": mae / n,
               "val_action_acc": float(np.mean(act_ok))}
        if vmae:
            out["val_value_mae"] = float(np.mean(vmae))
        if pol_ok:
            out["val_policy_acc"] = float(np.mean(pol_ok))
        return out

    def describe_data(self) -> str:
        return (f"{len(self.pd.train_pos)} train positions, {len(self.pd.val_pos)} validation positions "
                f"({len(self.ds.train_rows)} / {len(self.ds.val_rows)} labelled moves)")


def load_run(run_dir: str, snapshot: str | None = None, raw: bool = False):
    """(params, MAVConfig, step) of a one-pass training run (EMA weights unless ``raw``)."""
    cfg = MAVTrainConfig(**json.load(open(os.path.join(run_dir, "config.json"))))
    params, step = load_run_params(run_dir, snapshot, raw)
    return params, cfg.model(), step


def describe_run(run: str, step: int, raw: bool, mcfg: MAVConfig) -> str:
    return (f"Glimpse one-pass multi-action-value net, run {run} step {step} ({'raw' if raw else 'EMA'} "
            f"weights), L={mcfg.layers} D={mcfg.dim} H={mcfg.heads} head {mcfg.dh}/{mcfg.hh}"
            f"{', pair bias' if mcfg.attn_bias else ''}, "
            f"trained on Stockfish 15.1 labels")


def verify_held_out(params, mcfg: MAVConfig, onnx_path: str, ds: Dataset) -> tuple[float, str]:
    """Max |ORT − JAX| over every output for up to 256 validation positions of ``ds``."""
    pd = PositionData(ds)
    pos = pd.val_pos[np.linspace(0, len(pd.val_pos) - 1, min(256, len(pd.val_pos))).astype(int)]
    diff = 0.0
    for i in range(0, len(pos), 64):
        tokens, actions, _, _ = pd.batch(pos[i:i + 64])
        diff = max(diff, verify(params, mcfg, onnx_path, tokens, actions))
    return diff, f"{len(pos)} held-out positions"


def export_info(mcfg: MAVConfig) -> dict:
    return {"kind": KIND_MAV, **cost_split(mcfg)}


# ----------------------------------------------------------------------------------------------
# evaluation policy (what the engine plays)
# ----------------------------------------------------------------------------------------------


class MAVPolicy:
    """Argmax of the expected win probability over legal moves (ties → lowest action id), one pass per position."""

    def __init__(self, path: str, positions_per_run: int = 256):
        self.sess = ort_session(path)
        self.centres = BUCKET_CENTRES.astype(np.float64)
        self.per_run = positions_per_run

    def run(self, tokens: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """tokens [B, 78], actions [B, M] → log-probs [B, M, K]."""
        return self.sess.run(["log_probs"], {"tokens": tokens.astype(np.int64), "actions": actions.astype(np.int64)})[0]

    def win_probs_batch(self, rows: np.ndarray) -> np.ndarray:
        """AV-layout rows [N, 79] → log-probs [N, K], one network row per run of equal states."""
        n = len(rows)
        if n == 0:
            return np.zeros((0, 128), np.float32)
        change = np.any(rows[1:, :78] != rows[:-1, :78], axis=1)
        starts = np.concatenate([[0], np.flatnonzero(change) + 1])
        ends = np.concatenate([starts[1:], [n]])
        out = None
        for g in range(0, len(starts), self.per_run):
            s, e = starts[g:g + self.per_run], ends[g:g + self.per_run]
            m = int((e - s).max())
            tokens = rows[s, :78]
            actions = np.full((len(s), m), PAD_ACTION, np.int64)
            for i, (a, b) in enumerate(zip(s, e)):
                actions[i, : b - a] = rows[a:b, 78]
            lp = self.run(tokens, actions)
            if out is None:
                out = np.zeros((n, lp.shape[-1]), np.float32)
            for i, (a, b) in enumerate(zip(s, e)):
                out[a:b] = lp[i, : b - a]
        return out

    def choose(self, board: chess.Board) -> chess.Move:
        moves = sorted(board.legal_moves, key=lambda m: MOVE_TO_ACTION[m.uci()])
        tokens = np.zeros((1, 78), np.int64)
        tokens[0, 1:] = tokenize(board.fen())
        actions = np.asarray([[MOVE_TO_ACTION[m.uci()] for m in moves]], np.int64)
        wp = np.exp(self.run(tokens, actions)[0].astype(np.float64)) @ self.centres
        return moves[int(np.argmax(wp))]


KIND = Kind(
    name=KIND_MAV, onnx_kinds=(KIND_MAV, KIND_MAVP), presets=CONFIGS, default_preset="mav-smoke", train_config=MAVTrainConfig,
    arch_fields=("layers", "dim", "heads", "head_dim", "head_hidden", "attn_bias", "head_global", "canonical",
                 "policy_dim"),
    trainer=MAVTrainer, load_run=load_run, describe_run=describe_run, export=export,
    verify_held_out=verify_held_out, export_info=export_info, policy=MAVPolicy, num_params=num_params,
    preset_prefix="mav")
