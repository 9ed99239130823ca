"""Train an action-value transformer on Stockfish-labelled moves (JAX + optax; CPU or CUDA).

Loss: cross-entropy over the 128 win-probability buckets (optionally HL-Gauss soft targets, i.e. a
Gaussian of width ``hl_sigma`` buckets around the true win probability integrated over each bucket).
AdamW with linear warmup + cosine decay, global-norm clipping, EMA of the weights (used for validation and
export). Checkpoints (``ckpt.pkl``, atomic) every ``ckpt_seconds`` in ``training/runs/<run>/`` and at the
end; a restart with the same run name resumes from it. Metrics go to ``training/runs/<run>/log.jsonl``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pickle
import signal
import time

import numpy as np

from .data import ensure_dataset
from .model import KIND_AV, ModelConfig, init_params, jax_forward, num_params

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


class Trainer:
    def __init__(self, cfg: TrainConfig, run_dir: str, ds, log=print, reset_ema: bool = False):
        import jax
        import jax.numpy as jnp
        import optax

        self.jax, self.jnp, self.optax = jax, jnp, optax
        self.cfg, self.run_dir, self.ds, self.log = cfg, run_dir, ds, log
        self.mcfg = cfg.model()
        self.reset_ema = reset_ema
        sched = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, max(1, cfg.warmup), max(cfg.steps, cfg.warmup + 1),
                                                   cfg.lr * cfg.min_lr_frac)
        self.sched = sched
        mask = lambda p: {k: (v.ndim == 2 and not k.startswith("embed")) for k, v in p.items()}  # noqa: E731
        self.opt = optax.chain(optax.clip_by_global_norm(cfg.clip),
                               optax.adamw(sched, b1=0.9, b2=0.99, weight_decay=cfg.weight_decay, mask=mask))
        mcfg = self.mcfg

        def loss_fn(params, tokens, targets):
            lp = jax_forward(params, mcfg, tokens)
            return -jnp.mean(jnp.sum(targets * lp, axis=-1))

        def step(params, ema, opt_state, tokens, targets, t):
            loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
            updates, opt_state = self.opt.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            # EMA with a warm-up of the decay, min(ema, (1 + t) / (10 + t)): early EMAs track the weights
            decay = jnp.minimum(cfg.ema, (1.0 + t) / (10.0 + t))
            ema = jax.tree_util.tree_map(lambda e, p: decay * e + (1 - decay) * p, ema, params)
            return params, ema, opt_state, loss

        self._step = jax.jit(step, donate_argnums=(0, 1, 2))
        self._fwd = jax.jit(lambda params, tokens: jax_forward(params, mcfg, tokens))

    # ---------------------------------------------------------------- state
    def fresh_state(self):
        jnp = self.jnp
        params = {k: jnp.asarray(v) for k, v in init_params(self.mcfg, self.cfg.seed).items()}
        ema = {k: jnp.array(v) for k, v in params.items()}
        return {"step": 0, "params": params, "ema": ema, "opt_state": self.opt.init(params), "train_seconds": 0.0}

    def ckpt_path(self):
        return os.path.join(self.run_dir, "ckpt.pkl")

    def save(self, st):
        host = self.jax.device_get({k: st[k] for k in ("params", "ema", "opt_state")})
        blob = {"step": st["step"], "train_seconds": st["train_seconds"], "config": dataclasses.asdict(self.cfg),
                **host}
        tmp = self.ckpt_path() + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump(blob, f, protocol=4)
        os.replace(tmp, self.ckpt_path())
        # keep a small EMA-only snapshot per save for later comparison / shipping
        snap = os.path.join(self.run_dir, "ema")
        os.makedirs(snap, exist_ok=True)
        np.savez(os.path.join(snap, f"step{st['step']:07d}.npz"), **{k: np.asarray(v) for k, v in host["ema"].items()})

    def load(self):
        with open(self.ckpt_path(), "rb") as f:
            blob = pickle.load(f)
        jnp = self.jnp
        st = {"step": blob["step"], "train_seconds": blob.get("train_seconds", 0.0),
              "params": self.jax.tree_util.tree_map(jnp.asarray, blob["params"]),
              "ema": self.jax.tree_util.tree_map(jnp.asarray, blob["ema"]),
              "opt_state": self.jax.tree_util.tree_map(jnp.asarray, blob["opt_state"])}
        return st

    # ---------------------------------------------------------------- data
    def batch_rows(self, step: int) -> tuple[np.ndarray, int]:
        """Rows of a step: epoch-wise permutations of the training rows (deterministic, resumable)."""
        n = len(self.ds.train_rows)
        b = self.cfg.batch
        start = step * b
        epoch, off = divmod(start, n)
        perm = self._perm(epoch)
        rows = perm[off:off + b]
        if len(rows) < b:
            rows = np.concatenate([rows, self._perm(epoch + 1)[: b - len(rows)]])
        return self.ds.train_rows[rows], epoch

    def _perm(self, epoch: int) -> np.ndarray:
        if getattr(self, "_perm_epoch", None) != epoch:
            self._perm_cache = np.random.default_rng(self.cfg.seed * 1000 + epoch).permutation(len(self.ds.train_rows))
            self._perm_epoch = epoch
        return self._perm_cache

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

    # ---------------------------------------------------------------- loop
    def run(self, stop_flag=lambda: False):
        cfg = self.cfg
        os.makedirs(self.run_dir, exist_ok=True)
        jnp = self.jnp
        if os.path.exists(self.ckpt_path()):
            st = self.load()
            self.log(f"resumed from {self.ckpt_path()} at step {st['step']}")
            if self.reset_ema:
                st["ema"] = {k: jnp.array(v) for k, v in st["params"].items()}
                self.log("EMA reset to the current weights")
        else:
            st = self.fresh_state()
            self.log(f"fresh model: {self.mcfg} ({num_params(self.mcfg):,} parameters)")
        rng = np.random.default_rng(12345)
        vrows = self.ds.val_rows
        if len(vrows) > cfg.eval_rows:
            vrows = np.sort(rng.choice(vrows, cfg.eval_rows, replace=False))
        logf = open(os.path.join(self.run_dir, "log.jsonl"), "a")
        last_ckpt = time.time()
        losses = []
        t_int = time.time()
        rows_int = 0
        jnp = self.jnp
        while st["step"] < cfg.steps and not stop_flag():
            rows, epoch = self.batch_rows(st["step"])
            tokens = jnp.asarray(self.ds.tokens(rows))
            targets = jnp.asarray(soft_targets(self.ds.row_p[rows], self.mcfg.buckets, cfg.hl_sigma))
            t0 = time.time()
            st["params"], st["ema"], st["opt_state"], loss = self._step(st["params"], st["ema"], st["opt_state"],
                                                                        tokens, targets, np.float32(st["step"]))
            losses.append(loss)
            st["step"] += 1
            rows_int += len(rows)
            if st["step"] % cfg.eval_every == 0 or st["step"] == cfg.steps:
                tl = float(np.mean([float(x) for x in losses]))
                losses = []
                now = time.time()
                st["train_seconds"] += now - t_int
                rps = rows_int / max(now - t_int, 1e-9)
                m = self.evaluate(st["ema"], vrows)
                rec = {"step": st["step"], "epoch": round(st["step"] * cfg.batch / len(self.ds.train_rows), 4),
                       "rows": st["step"] * cfg.batch, "lr": float(self.sched(st["step"])), "train_loss": tl,
                       **m, "rows_per_s": round(rps, 1), "train_seconds": round(st["train_seconds"], 1),
                       "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
                logf.write(json.dumps(rec) + "\n")
                logf.flush()
                self.log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()))
                t_int = time.time()
                rows_int = 0
            if time.time() - last_ckpt > cfg.ckpt_seconds:
                self.save(st)
                last_ckpt = time.time()
            del t0
        self.save(st)
        logf.close()
        self.log(f"checkpoint at step {st['step']} in {self.run_dir}")
        return st


def build_config(args) -> TrainConfig:
    base = dict(CONFIGS[args.config]) if args.config in CONFIGS else {}
    cfg = TrainConfig(**base)
    for f in dataclasses.fields(TrainConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            setattr(cfg, f.name, v)
    return cfg


def main(argv=None):
    import sys

    from . import onepass_train  # one-pass (multi_action_value) presets `mav-*` and runs train there

    if onepass_train.is_onepass_run(list(sys.argv[1:] if argv is None else argv)):
        return onepass_train.main(argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--config", default="smoke", help=f"preset: {', '.join(CONFIGS)} (one-pass: mav-*)")
    ap.add_argument("--run", default=None, help="run name (default: the config name)")
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--data-dir", default=None, help="dataset cache (default data/full or data/<config>)")
    ap.add_argument("--reset-ema", action="store_true", help="on resume, restart the EMA from the current weights")
    ap.add_argument("--extra-labels", default="data/labels", help="folder with our own label shards")
    for f in dataclasses.fields(TrainConfig):
        ap.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=type(f.default), default=None)
    a = ap.parse_args(argv)
    run = a.run or a.config
    run_dir = os.path.join(a.runs_dir, run)
    os.makedirs(run_dir, exist_ok=True)
    cfg_path = os.path.join(run_dir, "config.json")
    if os.path.exists(cfg_path):
        # resume: the run's own config, with only the flags given now overriding it
        cfg = TrainConfig(**json.load(open(cfg_path)))
        for f in dataclasses.fields(TrainConfig):
            v = getattr(a, f.name, None)
            if v is not None:
                if f.name in ("layers", "dim", "heads") and v != getattr(cfg, f.name):
                    raise SystemExit(f"run {run_dir} has {f.name}={getattr(cfg, f.name)}, asked {v}: use another --run")
                setattr(cfg, f.name, v)
    else:
        cfg = build_config(a)
    json.dump(dataclasses.asdict(cfg), open(cfg_path, "w"), indent=1)
    data_dir = a.data_dir or ("data/full" if not cfg.max_positions else f"data/first{cfg.max_positions}")
    extra = [a.extra_labels] if a.extra_labels and os.path.isdir(a.extra_labels) else []

    def log(msg):
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)

    ds = ensure_dataset(a.shared, data_dir, extra, cfg.max_positions, log)
    log(f"data {data_dir}: {len(ds.train_rows)} train rows, {len(ds.val_rows)} validation rows")
    stop = {"flag": False}

    def on_signal(signum, frame):
        stop["flag"] = True
        log(f"signal {signum}: checkpointing and stopping")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    tr = Trainer(cfg, run_dir, ds, log, reset_ema=a.reset_ema)
    tr.run(lambda: stop["flag"])


if __name__ == "__main__":
    main()
