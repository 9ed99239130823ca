"""The training loop shared by every model kind's trainer (``kinds/*.py``; ``train.py`` runs them).

What is shared: AdamW behind global-norm clipping with linear warmup + cosine decay; an EMA of the weights
with a warmed-up decay ``min(ema, (1 + t) / (10 + t))`` (used for validation and export); atomic
checkpoints ``ckpt.pkl`` every ``ckpt_seconds``, at the end and on SIGTERM/SIGINT, plus an EMA-only
``ema/step*.npz`` snapshot per save; deterministic, resumable epoch-wise permutations of the training items;
``log.jsonl`` records every ``eval_every`` steps; the command-line handling of presets and resumed runs; and
**micro-batches**: with ``cfg.micro`` = k > 1 a step's gradient is the mean of k gradients over consecutive
slices of batch / k items (one ``lax.scan``), then one optimiser update: the same update as one pass over the
whole batch (up to float rounding), computed faster on a CPU because a slice's activations stay in cache
(measured on an AMD EPYC, 2 cores, the campaign's l6d128 one-pass net, batch 64, the jitted training step on
labelled positions: 48-52 positions/s in one pass, 64-70 as 2, 4 or 8 micro-batches).

A subclass says what a batch is and how it is scored:

- ``init_params()`` -> dict of numpy arrays; ``loss(params, *arrays)`` -> scalar (traced by JAX), a mean
  over the batch's items (axis 0 of every array), so that micro-batches average to the batch's loss;
- ``train_items`` (1-D array of the items a step draws from: rows or positions) and ``val_items``;
- ``make_batch(items)`` -> (tuple of numpy arrays passed to ``loss``, dict of counts for the log);
- ``constants()`` -> tuple of numpy arrays passed to ``loss`` after the batch's arrays, sent to the device once
  per ``run`` and never split into micro-batches (lookup tables: the batch sends indices into them);
- ``evaluate(params, items)`` -> dict of validation metrics;
- ``rates(counts, seconds)`` -> the throughput fields of a log record;
- ``describe_data()`` -> one line about the training/validation items (logged by ``train.py``);
- for ``backend="torch"`` (``torch_step.TorchStep``: the step in PyTorch, bfloat16 on a CPU's AMX tiles, the
  same update and ``ckpt.pkl``): ``torch_loss(params, *tensors)`` and ``torch_arrays(arrays)`` (host-side
  preprocessing of a batch).

Also shared: the bucket targets of the losses (``soft_targets``, HL-Gauss or one-hot) and
``load_run_params`` (a run's EMA or raw weights from ``ckpt.pkl`` or an ``ema/step*.npz`` snapshot).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pickle
import signal
import time
from typing import Any, Callable

import numpy as np

from .chessdata import bucket_of

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).


class TrainerBase:
    """Optimiser, EMA, checkpoints and the step loop; see the module docstring for the subclass hooks.

    ``cfg`` needs ``lr, min_lr_frac, warmup, steps, weight_decay, clip, ema, batch, eval_every,
    ckpt_seconds, seed`` and may have ``micro`` (micro-batches per step, dividing ``batch``; default 1).
    Raises ``ValueError`` when ``micro`` does not divide ``batch``. ``decay_mask(name, array)`` says which
    parameters get weight decay.
    """

    #: name of the items counted in a log record's ``<items>`` field ("rows" or "positions")
    items_name = "rows"

    def __init__(self, cfg, run_dir: str, log: Callable[[str], None] = print, reset_ema: bool = False,
                 decay_mask: Callable[[str, Any], bool] = lambda name, v: v.ndim == 2, backend: str = "jax"):
        import jax
        import jax.numpy as jnp
        import optax

        if backend not in ("jax", "torch"):
            raise ValueError(f"backend {backend!r}: jax or torch")
        self.jax, self.jnp = jax, jnp
        self.cfg, self.run_dir, self.log, self.reset_ema = cfg, run_dir, log, reset_ema
        self.decay_mask, self.backend = decay_mask, backend
        self.sched = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, max(1, cfg.warmup),
                                                        max(cfg.steps, cfg.warmup + 1), cfg.lr * cfg.min_lr_frac)
        mask = lambda p: {k: decay_mask(k, v) for k, v in p.items()}  # noqa: E731
        self.opt = optax.chain(optax.clip_by_global_norm(cfg.clip),
                               optax.adamw(self.sched, b1=0.9, b2=0.99, weight_decay=cfg.weight_decay, mask=mask))

        micro = int(getattr(cfg, "micro", 1) or 1)
        if micro < 1 or cfg.batch % micro:
            raise ValueError(f"micro = {micro} must be ≥ 1 and divide batch = {cfg.batch}")
        self.micro = micro

        def loss_and_grad(params, consts, *arrays):
            if micro == 1:
                return jax.value_and_grad(self.loss)(params, *arrays, *consts)
            slices = tuple(a.reshape((micro, a.shape[0] // micro) + a.shape[1:]) for a in arrays)

            def add(acc, xs):
                lo, g = jax.value_and_grad(self.loss)(params, *xs, *consts)
                return (acc[0] + lo, jax.tree_util.tree_map(jnp.add, acc[1], g)), None

            zero = (jnp.zeros((), jnp.float32), jax.tree_util.tree_map(jnp.zeros_like, params))
            (lo, g), _ = jax.lax.scan(add, zero, slices)
            return lo / micro, jax.tree_util.tree_map(lambda x: x / micro, g)

        self._loss_and_grad = jax.jit(loss_and_grad)

        def step(params, ema, opt_state, t, lr_scale, consts, *arrays):
            loss, grads = loss_and_grad(params, consts, *arrays)
            updates, opt_state = self.opt.update(grads, opt_state, params)
            # AdamW's update (weight decay included) is proportional to the learning rate, so scaling the
            # update scales the learning rate: the hook for a caller's own decay phase (``run(lr_scale=…)``).
            updates = jax.tree_util.tree_map(lambda u: lr_scale * u, updates)
            params = optax.apply_updates(params, updates)
            decay = jnp.minimum(cfg.ema, (1.0 + t) / (10.0 + t))
            ema = jax.tree_util.tree_map(lambda e, p: decay * e + (1 - decay) * p, ema, params)
            return params, ema, opt_state, loss

        self._step = jax.jit(step, donate_argnums=(0, 1, 2))
        self._put = jnp.asarray
        if backend == "torch":
            from .torch_step import TorchStep

            self._step, self._put = TorchStep(self), np.asarray

    # ---------------------------------------------------------------- hooks (subclasses)
    def init_params(self) -> dict:
        raise NotImplementedError

    def loss(self, params, *arrays):
        raise NotImplementedError

    def torch_loss(self, params, *arrays):
        """``loss`` in PyTorch (``backend="torch"``, ``torch_step.py``): ``params`` a dict of tensors, the
        arrays as tensors (after ``torch_arrays``) → a scalar tensor."""
        raise NotImplementedError(f"{type(self).__name__} has no PyTorch loss")

    def torch_arrays(self, arrays: tuple) -> tuple:
        """A batch's arrays as the PyTorch loss takes them (host-side preprocessing); default unchanged."""
        return arrays

    def make_batch(self, items: np.ndarray) -> tuple[tuple, dict]:
        raise NotImplementedError

    def constants(self) -> tuple:
        return ()

    def evaluate(self, params, items: np.ndarray) -> dict:
        raise NotImplementedError

    def rates(self, counts: dict, seconds: float) -> dict:
        return {f"{self.items_name}_per_s": round(counts.get(self.items_name, 0) / seconds, 1)}

    train_items: np.ndarray
    val_items: np.ndarray
    eval_items: int = 4096

    def describe_model(self) -> str:
        return str(self.cfg)

    def describe_data(self) -> str:
        return f"{len(self.train_items)} train items, {len(self.val_items)} validation items"

    # ---------------------------------------------------------------- state
    def fresh_state(self) -> dict:
        jnp = self.jnp
        params = {k: jnp.asarray(v) for k, v in self.init_params().items()}
        ema = {k: jnp.array(v) for k, v in params.items()}
        return {"step": 0, "params": params, "ema": ema, "opt_state": self.opt.init(params), "train_seconds": 0.0}

    def ckpt_path(self) -> str:
        return os.path.join(self.run_dir, "ckpt.pkl")

    def save(self, st: dict) -> None:
        """Writes ``ckpt.pkl`` atomically (tmp + rename) and an EMA snapshot ``ema/step<N>.npz``."""
        host = self.jax.device_get({k: st[k] for k in ("params", "ema", "opt_state")})
        blob = {"step": st["step"], "train_seconds": st["train_seconds"], "config": dataclasses.asdict(self.cfg),
                **host}
        tmp = self.ckpt_path() + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump(blob, f, protocol=4)
        os.replace(tmp, self.ckpt_path())
        snap = os.path.join(self.run_dir, "ema")
        os.makedirs(snap, exist_ok=True)
        np.savez(os.path.join(snap, f"step{st['step']:07d}.npz"), **{k: np.asarray(v) for k, v in host["ema"].items()})

    def load(self) -> dict:
        with open(self.ckpt_path(), "rb") as f:
            blob = pickle.load(f)
        tm = self.jax.tree_util.tree_map
        return {"step": blob["step"], "train_seconds": blob.get("train_seconds", 0.0),
                "params": tm(self.jnp.asarray, blob["params"]), "ema": tm(self.jnp.asarray, blob["ema"]),
                "opt_state": tm(self.jnp.asarray, blob["opt_state"])}

    # ---------------------------------------------------------------- data order
    def _perm(self, epoch: int) -> np.ndarray:
        if getattr(self, "_perm_epoch", None) != epoch:
            self._perm_cache = np.random.default_rng(self.cfg.seed * 1000 + epoch).permutation(len(self.train_items))
            self._perm_epoch = epoch
        return self._perm_cache

    def step_items(self, step: int) -> np.ndarray:
        """The ``batch`` training items of ``step``: epoch-wise seeded permutations (deterministic, resumable)."""
        n, b = len(self.train_items), self.cfg.batch
        epoch, off = divmod(step * b, n)
        idx = self._perm(epoch)[off:off + b]
        if len(idx) < b:
            idx = np.concatenate([idx, self._perm(epoch + 1)[: b - len(idx)]])
        return self.train_items[idx]

    # ---------------------------------------------------------------- loop
    def run(self, stop_flag: Callable[[], bool] = lambda: False,
            lr_scale: Callable[[], float] = lambda: 1.0) -> dict:
        """Trains to ``cfg.steps`` (resuming from ``ckpt.pkl`` if present) or until ``stop_flag()``; returns
        the final state dict (``step``, ``params``, ``ema``, ``opt_state``, ``train_seconds``).

        ``lr_scale()`` (read before every step, in [0, 1]) multiplies the schedule's learning rate: the
        campaign's per-cycle decay phase (warmup-stable-decay, Hägele et al. 2024, "Scaling Laws and
        Compute-Optimal Training Beyond Fixed Training Durations", §3). When it first drops below 1 the
        state is checkpointed, so the EMA snapshot of the undecayed weights stays on disk
        (``ema/step<N>.npz``) for comparison."""
        cfg, jnp = self.cfg, self.jnp
        os.makedirs(self.run_dir, exist_ok=True)
        if os.path.exists(self.ckpt_path()):
            st = self.load()
            self.log(f"resumed from {self.ckpt_path()} at step {st['step']}")
            if self.reset_ema:
                st["ema"] = {k: jnp.array(v) for k, v in st["params"].items()}
                self.log("EMA reset to the current weights")
        else:
            st = self.fresh_state()
            self.log(f"fresh model: {self.describe_model()}")
        vitems = self.val_items
        if len(vitems) > self.eval_items:
            vitems = np.sort(np.random.default_rng(12345).choice(vitems, self.eval_items, replace=False))
        ntrain = len(self.train_items)
        last_ckpt = t_int = time.time()
        losses: list = []
        counts: dict[str, int] = {}
        consts = tuple(jnp.asarray(c) for c in self.constants())
        with open(os.path.join(self.run_dir, "log.jsonl"), "a") as logf:
            decaying = False
            while st["step"] < cfg.steps and not stop_flag():
                scale = float(lr_scale())
                if scale < 1.0 and not decaying:
                    decaying = True
                    self.save(st)
                    last_ckpt = time.time()
                    self.log(f"step {st['step']}: learning-rate decay phase begins (undecayed EMA snapshot saved)")
                arrays, n = self.make_batch(self.step_items(st["step"]))
                st["params"], st["ema"], st["opt_state"], loss = self._step(
                    st["params"], st["ema"], st["opt_state"], np.float32(st["step"]), np.float32(scale), consts,
                    *map(self._put, arrays))
                losses.append(loss)
                st["step"] += 1
                for k, v in n.items():
                    counts[k] = counts.get(k, 0) + v
                if st["step"] % cfg.eval_every == 0 or st["step"] == cfg.steps:
                    now = time.time()
                    st["train_seconds"] += now - t_int
                    rec = {"step": st["step"], "epoch": round(st["step"] * cfg.batch / ntrain, 4),
                           self.items_name: st["step"] * cfg.batch, "lr": float(self.sched(st["step"])) * scale,
                           "train_loss": float(np.mean([float(x) for x in losses])),
                           **self.evaluate(st["ema"], vitems), **self.rates(counts, max(now - t_int, 1e-9)),
                           "train_seconds": round(st["train_seconds"], 1), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
                    logf.write(json.dumps(rec) + "\n")
                    logf.flush()
                    self.log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()))
                    losses, counts, t_int = [], {}, time.time()
                if time.time() - last_ckpt > cfg.ckpt_seconds:
                    self.save(st)
                    last_ckpt = time.time()
        self.save(st)
        self.log(f"checkpoint at step {st['step']} in {self.run_dir}")
        return st


# -------------------------------------------------------------------- targets and saved runs
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
        t = np.zeros((len(p), k), np.float32)
        t[np.arange(len(p)), bucket_of(p.astype(np.float64))] = 1.0
        return t
    edges = np.arange(k + 1, dtype=np.float64) / k
    sigma = sigma_buckets / k
    cdf = 0.5 * (1 + _erf((edges[None, :] - p[:, None].astype(np.float64)) / (sigma * math.sqrt(2))))
    mass = np.diff(cdf, axis=1)
    mass /= mass.sum(1, keepdims=True)
    return mass.astype(np.float32)


def load_run_params(run_dir: str, snapshot: str | None = None, raw: bool = False):
    """(params, step) of a training run: the EMA tree of ``ckpt.pkl`` (``raw``: the raw params), or an
    ``ema/step*.npz`` snapshot. Every kind's ``load_run`` reads its weights with this."""
    if snapshot:
        z = np.load(snapshot)
        params = {k: np.asarray(z[k], np.float32) for k in z.files}
        step = int("".join(c for c in os.path.basename(snapshot) if c.isdigit()) or 0)
    else:
        with open(os.path.join(run_dir, "ckpt.pkl"), "rb") as f:
            blob = pickle.load(f)
        params = {k: np.asarray(v, np.float32) for k, v in blob["params" if raw else "ema"].items()}
        step = blob["step"]
    return params, step


# -------------------------------------------------------------------- command line
def add_common_args(ap, config_cls, presets: dict, default_config: str, skip: tuple[str, ...] = ()) -> None:
    """The flags both trainers take: paths, run name, ``--reset-ema`` and one flag per config field."""
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--config", default=default_config, help=f"preset: {', '.join(presets)}")
    ap.add_argument("--run", default=None, help="run name (default: the config name)")
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--data-dir", default=None, help="dataset cache (default data/full or data/first<N>)")
    ap.add_argument("--reset-ema", action="store_true", help="on resume, restart the EMA from the current weights")
    ap.add_argument("--extra-labels", default="data/labels", help="folder with the campaign's own label shards")
    for f in dataclasses.fields(config_cls):
        if f.name not in skip:
            ap.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=type(f.default), default=None)


def resolve_config(a, config_cls, presets: dict, arch: tuple[str, ...], check: Callable[[Any], None] = lambda c: None):
    """Returns ``(cfg, run_dir)``. A run that exists keeps its ``config.json`` with only the flags given now
    overriding it (an architecture field that differs is refused: ``SystemExit``); a new run starts from
    the preset. The result is written back to ``config.json``."""
    run_dir = os.path.join(a.runs_dir, a.run or a.config)
    cfg_path = os.path.join(run_dir, "config.json")
    fresh = not os.path.exists(cfg_path)
    if not fresh:
        with open(cfg_path) as f:
            cfg = config_cls(**json.load(f))
        check(cfg)
    elif a.config in presets:
        cfg = config_cls(**presets[a.config])
    else:
        raise SystemExit(f"unknown preset {a.config!r} ({', '.join(presets)})")
    for f in dataclasses.fields(config_cls):
        v = getattr(a, f.name, None)
        if v is not None:
            if not fresh and f.name in arch and v != getattr(cfg, f.name):
                raise SystemExit(f"run {run_dir} has {f.name}={getattr(cfg, f.name)}, asked {v}: use another --run")
            setattr(cfg, f.name, v)
    os.makedirs(run_dir, exist_ok=True)
    with open(cfg_path, "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=1)
    return cfg, run_dir


def log_line(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class SignalStop:
    """SIGTERM/SIGINT set a flag that the loops poll (the trainer checkpoints on it, the campaign's labeller
    writes what it has); calling the object reads the flag. ``install()`` may be repeated: ``ray.init`` and
    ``ray.shutdown`` replace handlers, so the campaign installs again after each."""

    def __init__(self, log: Callable[[str], None] = log_line):
        self.flag = False
        self.log = log

    def install(self) -> "SignalStop":
        signal.signal(signal.SIGTERM, self._set)
        signal.signal(signal.SIGINT, self._set)
        return self

    def _set(self, signum, frame):
        self.flag = True
        self.log(f"signal {signum}: finishing the current step, checkpointing and stopping")

    def __call__(self) -> bool:
        return self.flag


def stop_on_signals(log: Callable[[str], None] = log_line) -> Callable[[], bool]:
    """Installs SIGTERM/SIGINT handlers that ask the loop to checkpoint and stop; returns the stop flag."""
    return SignalStop(log).install()
