"""A training step in PyTorch for ``trainloop.TrainerBase`` (``backend="torch"``): bfloat16 matrix products on a
CPU's AMX tiles or AVX-512 BF16 units, the same update as the JAX step.

``TrainerBase`` keeps its loop, data order, evaluation, checkpoints and logs; only the step (forward,
backward, optimiser, EMA) runs here, on the subclass's ``torch_loss`` (``kinds/mav_torch.py`` for the one-pass
kind). The update is optax's chain that the JAX step applies, written out: global-norm clipping at ``clip``,
Adam (β₁ 0.9, β₂ 0.99, ε 1e-8, bias-corrected), decoupled weight decay on the ``decay_mask`` parameters, the
warmup-cosine learning rate of the step count (× the caller's ``lr_scale``), then the EMA with the warmed-up
decay ``min(ema, (1 + t) / (10 + t))``. The state stays optax's pytree with numpy leaves (``params``, ``ema``,
the Adam moments ``mu``/``nu`` and ``count``), which the PyTorch tensors share memory with, so ``ckpt.pkl`` has
the JAX trainer's format: a run moves between a CPU (this step) and a GPU (JAX) and resumes either way.

Micro-batches (``cfg.micro`` = k) accumulate k gradients of batch / k items before the one update, as the JAX
step does. ``bf16=False`` computes in float32 (the tests compare that with the JAX step).
"""

from __future__ import annotations

import importlib

import numpy as np


def torch_available() -> bool:
    """Whether PyTorch can be imported (``training/requirements-torch.txt``; a build whose CUDA libraries are missing
    raises ``ValueError`` or ``OSError`` on import, and counts as missing)."""
    try:
        importlib.import_module("torch")
    except (ImportError, ValueError, OSError):
        return False
    return True


def cpu_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU has bfloat16 products that PyTorch's oneDNN uses: the flag ``amx_bf16`` (AMX tiles) or
    ``avx512_bf16`` (AVX-512 BF16, e.g. AMD Zen 4 and 5) among the words of ``cpuinfo``; False where unreadable.
    On both kinds the PyTorch step at batch 128 ran 3-4x the JAX step's positions a second (CHANGELOG.md)."""
    try:
        with open(cpuinfo) as f:
            words = set(f.read().split())
    except OSError:
        return False
    return bool(words & {"amx_bf16", "avx512_bf16"})


class TorchStep:
    """Callable as the JAX step: ``(params, ema, opt_state, t, lr_scale, consts, *arrays)`` →
    ``(params, ema, opt_state, loss)``, with numpy arrays in and out (``arrays`` as ``trainer.make_batch``
    returns them, after ``trainer.torch_arrays``). Raises ``ImportError`` when PyTorch is missing."""

    B1, B2, EPS = 0.9, 0.99, 1e-8

    def __init__(self, trainer, bf16: bool = True):
        import torch

        self.torch, self.tr, self.bf16 = torch, trainer, bf16
        self._owned = None  # the numpy state dicts this step updates in place, and their tensors
        self._consts_key = self._consts = None

    # ------------------------------------------------------------------ state
    def _own(self, params, ema, opt_state):
        """Writable float32 numpy copies of the state (once, or when the caller passes other arrays) and the
        tensors that share their memory."""
        from optax import tree_utils as tu

        torch = self.torch
        if self._owned is not None and self._owned["params"] is params and self._owned["ema"] is ema:
            return self._owned
        copy = lambda tree: {k: np.array(v, np.float32) for k, v in tree.items()}  # noqa: E731
        p, e = copy(params), copy(ema)
        mu, nu = copy(tu.tree_get(opt_state, "mu")), copy(tu.tree_get(opt_state, "nu"))
        counts = {int(np.asarray(c)) for _, c in tu.tree_get_all_with_path(opt_state, "count")}
        if len(counts) != 1:
            raise ValueError(f"optimiser state with differing step counts {sorted(counts)}")
        tp = {k: torch.from_numpy(v).requires_grad_(True) for k, v in p.items()}
        decay = {k: bool(self.tr.decay_mask(k, v)) for k, v in p.items()}
        self._owned = {"params": p, "ema": e, "mu": mu, "nu": nu, "count": counts.pop(), "tp": tp,
                       "te": {k: torch.from_numpy(v) for k, v in e.items()},
                       "tmu": {k: torch.from_numpy(v) for k, v in mu.items()},
                       "tnu": {k: torch.from_numpy(v) for k, v in nu.items()}, "decay": decay, "opt": opt_state}
        return self._owned

    def _tensors(self, consts):
        torch = self.torch
        if self._consts_key is not consts:
            self._consts_key = consts
            self._consts = tuple(torch.from_numpy(np.array(c)) for c in consts)
        return self._consts

    @staticmethod
    def _as_tensor(torch, a: np.ndarray):
        a = np.asarray(a)
        return torch.from_numpy(a.astype(np.int64) if np.issubdtype(a.dtype, np.integer) else np.ascontiguousarray(a))

    # ------------------------------------------------------------------ step
    def __call__(self, params, ema, opt_state, t, lr_scale, consts, *arrays):
        from optax import tree_utils as tu

        torch, cfg = self.torch, self.tr.cfg
        s = self._own(params, ema, opt_state)
        tp = s["tp"]
        consts_t = self._tensors(consts)
        tensors = [self._as_tensor(torch, a) for a in self.tr.torch_arrays(arrays)]
        micro = self.tr.micro
        for v in tp.values():
            v.grad = None
        total = 0.0
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            for j in range(micro):
                sl = [a.chunk(micro)[j] for a in tensors]
                loss = self.tr.torch_loss(tp, *sl, *consts_t) / micro
                loss.backward()
                total += float(loss.detach())
        with torch.no_grad():
            grads = {k: v.grad for k, v in tp.items()}
            gnorm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values())))
            clip = 1.0 if gnorm < cfg.clip else cfg.clip / gnorm
            count = s["count"]
            lr = float(self.tr.sched(count)) * float(lr_scale)
            c1 = 1.0 - self.B1 ** (count + 1)
            c2 = 1.0 - self.B2 ** (count + 1)
            decay = min(cfg.ema, (1.0 + float(t)) / (10.0 + float(t)))
            for k, p in tp.items():
                g = grads[k] * clip
                mu, nu = s["tmu"][k], s["tnu"][k]
                mu.mul_(self.B1).add_(g, alpha=1 - self.B1)
                nu.mul_(self.B2).addcmul_(g, g, value=1 - self.B2)
                u = (mu / c1) / (torch.sqrt(nu / c2) + self.EPS)
                if s["decay"][k]:
                    u = u + cfg.weight_decay * p
                p.sub_(lr * u)
                s["te"][k].mul_(decay).add_(p, alpha=1 - decay)
            s["count"] = count + 1
        opt = tu.tree_set(s["opt"], mu=s["mu"], nu=s["nu"], count=np.asarray(s["count"], np.int32))
        s["opt"] = opt
        return s["params"], s["ema"], opt, np.float32(total)
