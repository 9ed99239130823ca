"""Optional heads of the one-pass model: an Lc0-style policy head and a win/draw/loss (WDL) head.

* **Policy** (``MAVConfig.policy_dim`` > 0; ChessFormer, Monroe 2024, App. A.3; Lc0's attention policy):
  for a move with from-square token ``f`` and to-square token ``t`` (in the model's input frame),
  ``logit = (y_f W_q) · (y_t W_k) / √P + b_promo[piece]`` with ``W_q, W_k`` [D, P] and one learned
  offset per promotion piece (q, r, b, n; 0 for other moves). Output ``policy`` [B, M] raw logits (the
  engine masks padding and takes the softmax over the legal moves: MCTS priors). Trained with
  cross-entropy against ``softmax(p / τ)`` over the labelled moves, ``p`` = Stockfish's win probability
  of each move (``policy_targets``).
* **WDL** (``MAVConfig.wdl_head``): ``log_softmax(y_BOS W + b)`` [B, 3] = log P(win, draw, loss) for the
  side to move. Trained against Stockfish 15.1's own WDL model of its score of the best move (the model
  Stockfish uses for ``UCI_ShowWDL``: python-chess ``Cp.wdl(model="sf15.1", ply=…)``), with the ply
  from the FEN's move number (``wdl_targets``).

Parameter names: ``policy_head/query/w``, ``policy_head/key/w`` [D, P], ``policy_head/promo/b`` [4];
``wdl_head/linear/w`` [D, 3], ``wdl_head/linear/b`` [3].
"""

from __future__ import annotations

import math

import numpy as np

from .chessdata import ACTIONS, CHAR_TO_ID, LICHESS_K

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).

PROMO_PIECES = "qrbn"
#: one-hot [1968, 4] of each action's promotion piece (all zero for other moves)
PROMO_ONEHOT = np.zeros((len(ACTIONS), 4), np.float32)
for _i, _a in enumerate(ACTIONS):
    if len(_a) == 5:
        PROMO_ONEHOT[_i, PROMO_PIECES.index(_a[4])] = 1.0


def param_shapes(dim: int, policy_dim: int, wdl: bool) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    if policy_dim:
        out.update({"policy_head/query/w": (dim, policy_dim), "policy_head/key/w": (dim, policy_dim),
                    "policy_head/promo/b": (4,)})
    if wdl:
        out.update({"wdl_head/linear/w": (dim, 3), "wdl_head/linear/b": (3,)})
    return out


# ---------------------------------------------------------------------------------------------- forward
def policy_numpy(p: dict, yf: np.ndarray, yt: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """float64 reference: yf, yt [B, M, D] (trunk outputs at the from/to tokens), actions [B, M] → [B, M]."""
    q = yf @ p["policy_head/query/w"]
    k = yt @ p["policy_head/key/w"]
    return (q * k).sum(-1) / math.sqrt(q.shape[-1]) + PROMO_ONEHOT[actions] @ p["policy_head/promo/b"]


def wdl_numpy(p: dict, y0: np.ndarray) -> np.ndarray:
    z = y0 @ p["wdl_head/linear/w"] + p["wdl_head/linear/b"]
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def policy_jax(params: dict, yf, yt, actions):
    """JAX: yf, yt [N, D], actions [N] → logits [N]."""
    import jax.numpy as jnp

    q = yf @ params["policy_head/query/w"]
    k = yt @ params["policy_head/key/w"]
    promo = jnp.take(jnp.asarray(PROMO_ONEHOT), actions, axis=0) @ params["policy_head/promo/b"]
    return jnp.sum(q * k, axis=-1) / math.sqrt(q.shape[-1]) + promo


def wdl_jax(params: dict, y0):
    import jax

    return jax.nn.log_softmax(y0 @ params["wdl_head/linear/w"] + params["wdl_head/linear/b"], axis=-1)


def onnx_policy(g, p: dict, yf: str, yt: str, actions: str) -> str:
    """ONNX: yf, yt [B, M, D], actions [B, M] → ``policy`` logits [B, M]."""
    scale = np.float32(1.0 / math.sqrt(p["policy_head/query/w"].shape[1]))
    q = g.op("MatMul", [yf, g.const("pol_q", (p["policy_head/query/w"] * scale).astype(np.float32))], "pol_q")
    k = g.op("MatMul", [yt, g.const("pol_k", p["policy_head/key/w"])], "pol_k")
    dot = g.op("ReduceSum", [g.op("Mul", [q, k], "pol_qk"), g.const("pol_axes", np.asarray([-1], np.int64))],
               "pol_dot", keepdims=0)
    promo = g.op("Gather", [g.const("pol_promo", (PROMO_ONEHOT @ p["policy_head/promo/b"]).astype(np.float32)), actions],
                 "pol_promo_b", axis=0)
    return g.op("Add", [dot, promo], "policy_raw")


def onnx_wdl(g, p: dict, y0: str) -> str:
    """ONNX: y0 [B, D] → log P(win, draw, loss) [B, 3] (before the final LogSoftmax node, which the caller names)."""
    return g.op("Gemm", [y0, g.const("wdl_w", p["wdl_head/linear/w"]), g.const("wdl_b", p["wdl_head/linear/b"])],
                "wdl_logits")


# ---------------------------------------------------------------------------------------------- targets
def policy_targets(p: np.ndarray, mask: np.ndarray, tau: float) -> np.ndarray:
    """softmax(p / τ) over the real moves: p, mask [B, M] → [B, M] (0 at padding)."""
    z = np.where(mask, p / tau, -np.inf)
    z = z - z.max(1, keepdims=True)
    e = np.where(mask, np.exp(z), 0.0)
    return (e / e.sum(1, keepdims=True)).astype(np.float32)


def fullmove_of(states: np.ndarray) -> np.ndarray:
    """Move numbers [P] from 77-token states (positions 74–76: digits right-padded with ``.``)."""
    digits = states[:, 74:77].astype(np.int64)
    out = np.zeros(len(states), np.int64)
    for j in range(3):
        d = digits[:, j]
        is_digit = d < 10
        out = np.where(is_digit, out * 10 + d, out)
    return np.maximum(out, 1)


def _sf15_1_wins(cp: np.ndarray, ply: np.ndarray) -> np.ndarray:
    """Stockfish 15.1's win rate in per mille for cp [P] (int) at ply [P], vectorised: the formula of
    python-chess's ``chess.engine._sf15_1_wins`` (Stockfish 15.1, src/uci.cpp, ``win_rate_model``)."""
    m = np.minimum(240, np.maximum(ply, 0)) / 64
    a = (((-0.58270499 * m + 2.68512549) * m + 15.24638015) * m) + 344.49745382
    b = (((-2.65734562 * m + 15.96509799) * m + -20.69040836) * m) + 73.61029937
    x = np.minimum(4000, np.maximum(cp * 361 / 100, -4000))
    return np.floor(0.5 + 1000 / (1 + np.exp((a - x) / b))).astype(np.int64)


def wdl_targets(p_best: np.ndarray, states: np.ndarray) -> np.ndarray:
    """[P, 3] float32 (win, draw, loss) for the side to move from the best move's win probability
    ``p_best`` [P] (Lichess formula; 1/0 = mate) through Stockfish 15.1's WDL model at the position's ply
    (the same values as ``chess.engine.Cp(cp).wdl(model="sf15.1", ply=ply)``, computed for the whole batch
    at once: 15 ms → about 0.4 ms for 1,024 positions)."""
    side_black = states[:, 0] == CHAR_TO_ID["b"]
    ply = 2 * (fullmove_of(states) - 1) + side_black
    pb = p_best.astype(np.float64)
    inner = (pb > 0.0) & (pb < 1.0)
    q = np.where(inner, pb, 0.5)
    # Python's round() (half to even) on the cp value, as the row-by-row version did.
    cp = np.round(np.log(q / (1 - q)) / LICHESS_K).astype(np.int64)
    wins, losses = _sf15_1_wins(cp, ply), _sf15_1_wins(-cp, ply)
    out = np.stack([wins, 1000 - wins - losses, losses], axis=1) / 1000
    out[pb >= 1.0] = (1, 0, 0)
    out[pb <= 0.0] = (0, 0, 1)
    return out.astype(np.float32)
