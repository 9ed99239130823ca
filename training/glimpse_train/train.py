"""Train an action-value transformer on Stockfish-labelled moves (JAX + optax; CPU or CUDA).

Loss: cross-entropy over the 128 win-probability buckets (optionally HL-Gauss soft targets, i.e. a
Gaussian of width ``hl_sigma`` buckets around the true win probability integrated over each bucket).
AdamW with linear warmup + cosine decay, global-norm clipping, EMA of the weights (used for validation and
export). Checkpoints (``ckpt.pkl``, atomic) every ``ckpt_seconds`` in ``training/runs/<run>/`` and at the
end; a restart with the same run name resumes from it. Metrics go to ``training/runs/<run>/log.jsonl``.
The loop, optimiser, EMA and checkpoints are shared with the one-pass trainer (``trainloop.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os

import numpy as np

from .data import ensure_dataset
from .model import KIND_AV, ModelConfig, init_params, jax_forward, num_params
from .trainloop import TrainerBase, add_common_args, log_line, resolve_config, stop_on_signals

# Presets. rows/s measured on the 2-core CPU box (see training/README.md).
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


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz–Stegun 7.1.26 (|err| < 1.5e-7), vectorised, no scipy dependency.
    s = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-x * x)
    return s * y


def soft_targets(p: np.ndarray, k: int, sigma_buckets: float) -> np.ndarray:
    """Targets [B, K] float32: HL-Gauss (σ in bucket widths) or one-hot at searchsorted(edges, p)."""
    if sigma_buckets <= 0:
        from .chessdata import bucket_of

        t = np.zeros((len(p), k), np.float32)
        t[np.arange(len(p)), bucket_of(p.astype(np.float64))] = 1.0
        return t
    edges = np.arange(k + 1, dtype=np.float64) / k
    sigma = sigma_buckets / k
    cdf = 0.5 * (1 + _erf((edges[None, :] - p[:, None].astype(np.float64)) / (sigma * math.sqrt(2))))
    mass = np.diff(cdf, axis=1)
    mass /= mass.sum(1, keepdims=True)
    return mass.astype(np.float32)


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
        from .chessdata import BUCKET_CENTRES

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


def main(argv=None):
    import sys

    from . import onepass_train  # one-pass (multi_action_value) presets `mav-*` and runs train there

    if onepass_train.is_onepass_run(list(sys.argv[1:] if argv is None else argv)):
        return onepass_train.main(argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap, TrainConfig, CONFIGS, "smoke")
    a = ap.parse_args(argv)
    cfg, run_dir = resolve_config(a, TrainConfig, CONFIGS, arch=("layers", "dim", "heads"))
    data_dir = a.data_dir or ("data/full" if not cfg.max_positions else f"data/first{cfg.max_positions}")
    extra = [a.extra_labels] if a.extra_labels and os.path.isdir(a.extra_labels) else []
    ds = ensure_dataset(a.shared, data_dir, extra, cfg.max_positions, log_line)
    log_line(f"data {data_dir}: {len(ds.train_rows)} train rows, {len(ds.val_rows)} validation rows")
    stop = stop_on_signals(log_line)
    Trainer(cfg, run_dir, ds, log_line, reset_ema=a.reset_ema).run(stop)


if __name__ == "__main__":
    main()
