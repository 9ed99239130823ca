"""The one-pass kind's forward pass and loss in PyTorch, for training on a CPU (``torch_step.py``).

Why a second framework: XLA's CPU backend (JAX 0.8) runs bfloat16 matrix products no faster than float32, while
PyTorch's oneDNN kernels run them on a Xeon's AMX tiles (the figures: CHANGELOG.md).
The parameters stay the flat ``dict[str, array]`` of Haiku names (``mav_model.param_shapes``), so a checkpoint
moves between the JAX trainer (GPU) and this one unchanged.

``torch_outputs`` mirrors ``mav_model.jax_outputs`` operation for operation (tests hold both to the float64
numpy reference); the side-to-move rewrite (``canon.py``) runs on the host in numpy before the tensors are
made, since it has no parameters. ``torch_loss`` mirrors ``MAVTrainer.loss``. Under
``torch.autocast("cpu", torch.bfloat16)`` the matrix products run in bfloat16 with float32 accumulation; the
LayerNorms, softmaxes and the loss stay float32.
"""

from __future__ import annotations

import math

import numpy as np

from ..canon import canon_numpy
from ..heads import PROMO_ONEHOT
from ..transformer import LN_EPS, SMOLGEN_GLOBAL, attn_name, lin_name, ln_name
from .mav_model import FROM_TOKEN, TO_TOKEN, MAVConfig


def host_inputs(cfg: MAVConfig, tokens: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tokens int [B, 78], actions int [B, M] → int64 arrays in the model's input frame (``canon_numpy`` when
    ``cfg.canonical``)."""
    if cfg.canonical:
        return canon_numpy(tokens, actions)
    return np.asarray(tokens, np.int64), np.asarray(actions, np.int64)


def torch_outputs(params: dict, cfg: MAVConfig, tokens, actions) -> dict:
    """PyTorch: ``params`` a dict of float32 tensors by Haiku name; ``tokens`` [B, 78] and ``actions`` [B, M]
    int64 tensors already in the input frame (``host_inputs``) → every output of ``mav_model.numpy_outputs``:
    ``log_probs`` [B, M, K], and as configured ``value`` [B, K], ``policy`` [B, M] (logits), ``wdl`` [B, 3]."""
    import torch
    import torch.nn.functional as F

    b, t = tokens.shape
    m = actions.shape[1]
    d, nh = cfg.dim, cfg.heads
    dhd = d // nh

    def ln(x, prefix):
        return F.layer_norm(x.float(), (x.shape[-1],), params[f"{prefix}/scale"], params[f"{prefix}/offset"], LN_EPS)

    # Separate products, not JAX's concatenated weights: the backward of a column slice zero-fills and copies
    # the whole [B·T, 3D] product (22 % of a step's time on the campaign's net).
    def swiglu(y, wg, wu, wd):
        return (F.silu(y @ wg) * (y @ wu)) @ wd

    x = F.embedding(tokens.reshape(-1), params["embed/embeddings"]) * math.sqrt(d)
    x = (x.reshape(b, t, d) + params["embed_1/embeddings"][:t]).reshape(b * t, d)
    scale = 1.0 / math.sqrt(dhd)
    for i in range(cfg.layers):
        a = attn_name(i)
        y = ln(x, ln_name(2 * i))
        wq, wk, wv, wo = (params[f"{a}/{n}/w"] for n in ("linear", "linear_1", "linear_2", "linear_3"))
        q = (y @ wq).reshape(b, t, nh, dhd).transpose(1, 2)
        k = (y @ wk).reshape(b, t, nh, dhd).permute(0, 2, 3, 1)
        v = (y @ wv).reshape(b, t, nh, dhd).transpose(1, 2)
        # explicit softmax attention: PyTorch's fused CPU attention is 7x slower in bfloat16 backward here
        logits = ((q * scale) @ k).float()
        if cfg.attn_bias:
            logits = logits + params[f"{a}/pair_bias"][None, :, :t, :t]
        if cfg.smolgen:
            sg = f"{a}/smolgen"
            c = (y @ params[f"{sg}/compress/w"]).reshape(b, -1)
            h = ln(F.silu(c @ params[f"{sg}/dense1/w"] + params[f"{sg}/dense1/b"]), f"{sg}/ln1")
            h = F.silu(h @ params[f"{sg}/dense2/w"] + params[f"{sg}/dense2/b"]).reshape(b * nh, -1)
            h = ln(h, f"{sg}/ln2")
            logits = logits + (h @ params[SMOLGEN_GLOBAL]).reshape(b, nh, t, t).float()
        s = torch.softmax(logits, -1)
        o = (s @ v).transpose(1, 2).reshape(b * t, d)
        x = x + o @ wo
        y = ln(x, ln_name(2 * i + 1))
        x = x + swiglu(y, params[f"{lin_name(3*i)}/w"], params[f"{lin_name(3*i+1)}/w"], params[f"{lin_name(3*i+2)}/w"])
    y = ln(x, ln_name(2 * cfg.layers))  # [B*T, D]
    acts = actions.reshape(-1)
    base = (torch.arange(b, dtype=torch.int64) * t)[:, None]
    fi = (base + torch.from_numpy(FROM_TOKEN.astype(np.int64))[actions]).reshape(-1)
    ti = (base + torch.from_numpy(TO_TOKEN.astype(np.int64))[actions]).reshape(-1)
    yf, yt = y.index_select(0, fi), y.index_select(0, ti)
    u = torch.cat([yf, yt], 1) @ params["mav_head/linear_in/w"] + F.embedding(acts, params["mav_head/action_embed/embeddings"])
    y0 = y.reshape(b, t, d)[:, 0]
    if cfg.head_global:
        glob = y0 @ params["mav_head/linear_global/w"]  # [B, Dh]
        u = (u.reshape(b, m, -1) + glob[:, None, :]).reshape(b * m, -1)
    z = ln(u, "mav_head/layer_norm")
    u = u + swiglu(z, params["mav_head/linear_gate/w"], params["mav_head/linear_up/w"], params["mav_head/linear_down/w"])
    z = ln(u, "mav_head/layer_norm_out")
    logits = (z @ params["mav_head/linear_out/w"]).float() + params["mav_head/linear_out/b"]
    out = {"log_probs": torch.log_softmax(logits, -1).reshape(b, m, cfg.buckets)}
    if cfg.value_head:
        out["value"] = torch.log_softmax((y0 @ params["value_head/linear/w"]).float() + params["value_head/linear/b"], -1)
    if cfg.policy_dim:
        qp = (yf @ params["policy_head/query/w"]).float()
        kp = (yt @ params["policy_head/key/w"]).float()
        promo = torch.from_numpy(PROMO_ONEHOT)[acts] @ params["policy_head/promo/b"]
        out["policy"] = ((qp * kp).sum(-1) / math.sqrt(qp.shape[-1]) + promo).reshape(b, m)
    if cfg.wdl_head:
        out["wdl"] = torch.log_softmax((y0 @ params["wdl_head/linear/w"]).float() + params["wdl_head/linear/b"], -1)
    return out


def torch_loss(params: dict, cfg: MAVConfig, weights: dict, tokens, actions, mask, target_idx, best_idx, ptargets,
               wtargets, move_w, table):
    """``MAVTrainer.loss`` in PyTorch (same arrays, as tensors; ``tokens``/``actions`` from ``host_inputs``):
    the mean over the batch's moves of the bucket cross-entropy against the HL-Gauss rows of ``table`` [U, K],
    plus ``weights["value"]``, ``["policy"]`` and ``["wdl"]`` × the heads' cross-entropies → a scalar."""
    import torch

    out = torch_outputs(params, cfg, tokens, actions)
    targets, vtargets = table[target_idx], table[best_idx]  # [B, M, K], [B, K]
    ce = -(targets * out["log_probs"]).sum(-1)  # [B, M]
    loss = ((ce * mask).sum(-1) * move_w).mean()
    if cfg.value_head:
        loss = loss + weights["value"] * -(vtargets * out["value"]).sum(-1).mean()
    if cfg.policy_dim:
        logits = torch.where(mask > 0, out["policy"], torch.full_like(out["policy"], -1e9))
        loss = loss + weights["policy"] * -(ptargets * torch.log_softmax(logits, -1)).sum(-1).mean()
    if cfg.wdl_head:
        loss = loss + weights["wdl"] * -(wtargets * out["wdl"]).sum(-1).mean()
    return loss
