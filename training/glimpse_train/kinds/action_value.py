"""Model kind ``action_value`` (AV) of the paper, and its reference siblings ``state_value`` (SV) and
``behavioral_cloning`` (BC): the same transformer (``transformer.py``) with a head at the last position.

Everything about the kind is here: configuration, parameter shapes and initialisation, the float64 numpy
reference and the JAX forward pass, the ONNX graph, the trainer (AV only: loss, batches, validation), a
training run's loader and the evaluation policy. The registry (``kinds/__init__.py``) finds it by the ONNX
``glimpse.kind`` string and by preset name.

Parameters: the trunk's Haiku names (``transformer.py``) plus the head ``linear_{3L}/{w [D, K], b [K]}``.
The network input is the already shifted sequence: ``[0 (BOS), 77 state tokens, action]`` (AV, 79 tokens)
or ``[0, 77 state tokens]`` (SV/BC, 78 tokens); the output is log-softmax at the last position.

ONNX contract: input ``tokens`` int64 [batch, 79] (AV) or [batch, 78] (SV/BC); output ``log_probs``
float32 [batch, K] (AV/SV, K buckets) or [batch, 1968] (BC), log-softmax applied, read at the last
position. Dynamic batch. Opset 17. Metadata props: ``glimpse.kind``, ``glimpse.buckets`` ("0" for BC),
``glimpse.description``, ``glimpse.params``, ``glimpse.gflop_per_eval`` (+ informational
``glimpse.layers``/``dim``/``heads``/``seq_len``).

Graph optimisations (outputs stay within float32 rounding of the plain model):
* the √D embedding scale is folded into the embedding table, the 1/√(D/H) attention scale into W_Q;
* Q, K, V and SwiGLU's gate and up projections are separate MatMuls (a fused product and Split costs
  a copy in ONNX Runtime); only the JAX forward pass concatenates them ([D, 3D] and [D, 2·widening·D]);
* the last layer computes K and V for all positions but Q, attention output, MLP, final LayerNorm
  and the head only for the last position (the only row that is read).

Training (``Trainer``): cross-entropy over the 128 win-probability buckets (optionally HL-Gauss soft
targets, ``trainloop.soft_targets``); a step is ``batch`` labelled (position, move) rows. AdamW with
linear warmup + cosine decay, global-norm clipping, EMA, checkpoints and logs from ``trainloop.py``.
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

from ..chessdata import BUCKET_CENTRES, MOVE_TO_ACTION, tokenize
from ..onnx_graph import OPSET, _G, ort_session
from ..trainloop import TrainerBase, load_run_params, soft_targets
from ..transformer import (LN_EPS, MAX_SEQ, VOCAB, _np_ln, attn_name, count_layers, init_from_shapes, lin_name,
                           ln_name, numpy_trunk, trunk_shapes)
from .base import Kind

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).

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


def param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    shapes = trunk_shapes(cfg.layers, cfg.dim, cfg.dim * cfg.widening, MAX_SEQ)
    shapes[f"{lin_name(3 * cfg.layers)}/w"] = (cfg.dim, cfg.out_size)
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
    layers = count_layers(params)
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
    return init_from_shapes(param_shapes(cfg), seed, emb_init_scale, is_embedding=lambda n: n.startswith("embed"),
                            is_zero=lambda n: n.endswith("/offset") or n.endswith("/b"))


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


# ----------------------------------------------------------------------------------------------
# ONNX graph
# ----------------------------------------------------------------------------------------------


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
        # Separate products, no fused [D, 2H] product and Split (ONNX Runtime's Split copies; as
        # kinds.multi_action_value).
        gate = g.op("MatMul", [y, g.const(f"wg_{i}", p[f"{lin_name(3*i)}/w"])], f"gate{i}")
        up = g.op("MatMul", [y, g.const(f"wu_{i}", p[f"{lin_name(3*i+1)}/w"])], f"up{i}")
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
            q = g.op("MatMul", [y, g.const(f"wq{i}", wq)], f"q{i}_proj")
            q = g.op("Transpose", [g.op("Reshape", [q, shape_bthd])], f"q{i}", perm=[0, 2, 1, 3])
        else:
            y_last = g.op("Gather", [y, last_idx], f"y_last{i}", axis=1)  # [B, D]
            q = g.op("MatMul", [y_last, g.const(f"wq{i}", wq)], f"q{i}")
            q = g.op("Reshape", [q, shape_bh1d], f"q{i}")  # [B, H, 1, dh]
        k = g.op("MatMul", [y, g.const(f"wk{i}", wk)], f"k{i}_proj")
        v = g.op("MatMul", [y, g.const(f"wv{i}", wv)], f"v{i}_proj")
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


def verify(params, mcfg: ModelConfig, onnx_path: str, tokens: np.ndarray) -> float:
    """Max |ORT − JAX| of ``log_probs`` for ``tokens`` [B, T]."""
    import jax.numpy as jnp

    want = np.asarray(jax_forward({k: jnp.asarray(v) for k, v in params.items()}, mcfg, jnp.asarray(tokens)))
    got = ort_session(onnx_path).run(["log_probs"], {"tokens": tokens.astype(np.int64)})[0]
    return float(np.abs(got - want).max())


# ----------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------

# Presets: architecture and training schedule, from ``smoke`` (a check that runs in seconds) up to ``9m``.
CONFIGS = {
    "smoke": dict(layers=2, dim=32, heads=2, batch=64, steps=40, lr=1e-3, warmup=10, eval_every=20,
                  eval_rows=256, max_positions=400, ckpt_seconds=30),
    "small": dict(layers=2, dim=64, heads=4, batch=512, steps=4400, lr=1e-3, warmup=200, eval_every=200,
                  eval_rows=4096),
    "base": dict(layers=4, dim=64, heads=4, batch=256, steps=8000, lr=1e-3, warmup=300, eval_every=250,
                 eval_rows=4096),
    "medium": dict(layers=4, dim=128, heads=4, batch=256, steps=8000, lr=5e-4, warmup=300, eval_every=250,
                   eval_rows=4096),
    "9m": dict(layers=8, dim=256, heads=8, batch=256, steps=100000, lr=1e-4, warmup=1000, eval_every=1000,
               eval_rows=8192),
}


@dataclasses.dataclass
class TrainConfig:
    layers: int = 2
    dim: int = 64
    heads: int = 4
    batch: int = 256
    steps: int = 8000
    lr: float = 1e-3
    min_lr_frac: float = 0.05
    warmup: int = 300
    weight_decay: float = 1e-4
    clip: float = 1.0
    ema: float = 0.999
    hl_sigma: float = 0.75
    eval_every: int = 250
    eval_rows: int = 4096
    ckpt_seconds: float = 240.0
    seed: int = 0
    max_positions: int = 0

    def model(self) -> ModelConfig:
        return ModelConfig(kind=KIND_AV, layers=self.layers, dim=self.dim, heads=self.heads)


class Trainer(TrainerBase):
    """The action-value trainer: a step is ``batch`` labelled (position, move) rows; loss as in the
    module docstring; loop, optimiser, EMA and checkpoints from ``trainloop.TrainerBase``."""

    items_name = "rows"

    def __init__(self, cfg: TrainConfig, run_dir: str, ds, log=print, reset_ema: bool = False):
        self.ds, self.mcfg = ds, cfg.model()
        self.train_items, self.val_items, self.eval_items = ds.train_rows, ds.val_rows, cfg.eval_rows
        super().__init__(cfg, run_dir, log, reset_ema,
                         decay_mask=lambda k, v: v.ndim == 2 and not k.startswith("embed"))
        import jax

        self._fwd = jax.jit(lambda params, tokens: jax_forward(params, self.mcfg, tokens))

    def describe_model(self) -> str:
        return f"{self.mcfg} ({num_params(self.mcfg):,} parameters)"

    def init_params(self) -> dict:
        return init_params(self.mcfg, self.cfg.seed)

    def loss(self, params, tokens, targets):
        lp = jax_forward(params, self.mcfg, tokens)
        return -self.jnp.mean(self.jnp.sum(targets * lp, axis=-1))

    def make_batch(self, rows: np.ndarray):
        targets = soft_targets(self.ds.row_p[rows], self.mcfg.buckets, self.cfg.hl_sigma)
        return (self.ds.tokens(rows), targets), {"rows": len(rows)}

    def evaluate(self, params, rows: np.ndarray) -> dict:
        """Validation metrics on ``rows``: hard-label CE, bucket accuracy, MAE of expected win prob."""
        ce, acc, mae, n = 0.0, 0.0, 0.0, 0
        for i in range(0, len(rows), 1024):
            r = rows[i:i + 1024]
            lp = np.asarray(self._fwd(params, self.jnp.asarray(self.ds.tokens(r))))
            y = self.ds.row_bucket[r].astype(np.int64)
            ce += float(-lp[np.arange(len(r)), y].sum())
            acc += float((lp.argmax(1) == y).sum())
            ev = np.exp(lp) @ BUCKET_CENTRES
            mae += float(np.abs(ev - self.ds.row_p[r]).sum())
            n += len(r)
        return {"val_loss": ce / n, "val_bucket_acc": acc / n, "val_mae": mae / n}

    def describe_data(self) -> str:
        return f"{len(self.ds.train_rows)} train rows, {len(self.ds.val_rows)} validation rows"


def load_run(run_dir: str, snapshot: str | None = None, raw: bool = False):
    """(params dict, ModelConfig, step) of a run."""
    cfgj = json.load(open(os.path.join(run_dir, "config.json")))
    mcfg = ModelConfig(kind=KIND_AV, layers=cfgj["layers"], dim=cfgj["dim"], heads=cfgj["heads"])
    params, step = load_run_params(run_dir, snapshot, raw)
    return params, mcfg, step


def describe_run(run: str, step: int, raw: bool, mcfg: ModelConfig) -> str:
    return (f"Glimpse action-value net, run {run} step {step} ({'raw' if raw else 'EMA'} weights), "
            f"L={mcfg.layers} D={mcfg.dim} H={mcfg.heads}, trained on Stockfish 15.1 labels")


def verify_held_out(params, mcfg: ModelConfig, onnx_path: str, ds) -> tuple[float, str]:
    """Max |ORT − JAX| over up to 512 validation rows of ``ds``, and what was compared."""
    rows = ds.val_rows[np.linspace(0, len(ds.val_rows) - 1, min(512, len(ds.val_rows))).astype(int)]
    return verify(params, mcfg, onnx_path, ds.tokens(rows)), f"{len(rows)} held-out rows"


def export_info(mcfg: ModelConfig) -> dict:
    return {}


# ----------------------------------------------------------------------------------------------
# evaluation policy (what the engine plays)
# ----------------------------------------------------------------------------------------------


class AVPolicy:
    """Action-value policy over an ONNX model: one batch of all legal moves per position."""

    def __init__(self, path: str):
        self.sess = ort_session(path)
        self.centres = BUCKET_CENTRES.astype(np.float64)

    def win_probs_batch(self, tokens: np.ndarray) -> np.ndarray:
        out = []
        for i in range(0, len(tokens), 4096):
            lp = self.sess.run(["log_probs"], {"tokens": tokens[i:i + 4096].astype(np.int64)})[0]
            out.append(lp)
        return np.concatenate(out) if out else np.zeros((0, 128), np.float32)

    def choose(self, board: chess.Board) -> chess.Move:
        moves = sorted(board.legal_moves, key=lambda m: MOVE_TO_ACTION[m.uci()])
        state = tokenize(board.fen())
        toks = np.zeros((len(moves), 79), np.int64)
        toks[:, 1:78] = state
        toks[:, 78] = [MOVE_TO_ACTION[m.uci()] for m in moves]
        lp = self.win_probs_batch(toks)
        wp = np.exp(lp.astype(np.float64)) @ self.centres
        return moves[int(np.argmax(wp))]  # first maximum = lowest action id


KIND = Kind(
    name=KIND_AV, onnx_kinds=KINDS, presets=CONFIGS, default_preset="smoke", train_config=TrainConfig,
    arch_fields=("layers", "dim", "heads"), trainer=Trainer, load_run=load_run, describe_run=describe_run,
    export=export, verify_held_out=verify_held_out, export_info=export_info, policy=AVPolicy,
    num_params=num_params)
