"""Train the one-pass multi-action-value model (``onepass_model``) on the same Stockfish labels as the AV model.

A step takes ``batch`` *positions*; every labelled legal move of each position is scored from the one trunk
pass and contributes to the loss in the same step (moves padded to a multiple of 16 per step, padding
masked). Loss: mean over the real moves of the cross-entropy over the 128 buckets with HL-Gauss soft targets
(σ = ``hl_sigma`` buckets; 0 = one-hot), plus ``value_weight`` × the value head's cross-entropy against the
best move's win probability (0 = no value head). Optimiser, schedule, EMA warm-up, checkpoints and logs
as in ``train.py`` (AdamW behind global-norm clipping, warmup + cosine, EMA ``min(ema, (1+t)/(10+t))``,
atomic ``ckpt.pkl`` every ``ckpt_seconds`` and on SIGTERM/SIGINT, ``ema/step*.npz`` snapshots,
``log.jsonl``); re-running the same run name resumes.

``make train CONFIG=mav-small`` (any ``mav-*`` preset, or a run whose ``config.json`` has
``kind = multi_action_value``) is dispatched here by ``train.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import signal
import sys
import time

import numpy as np

from .data import Dataset, ensure_dataset, label_files
from .onepass_model import KIND_MAV, PAD_ACTION, MAVConfig, init_params, jax_forward, num_params
from .train import soft_targets

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
    eval_every: int = 200
    eval_positions: int = 512
    ckpt_seconds: float = 240.0
    seed: int = 0
    max_positions: int = 0

    def model(self) -> MAVConfig:
        return MAVConfig(layers=self.layers, dim=self.dim, heads=self.heads, head_dim=self.head_dim,
                         head_hidden=self.head_hidden, value_head=self.value_weight > 0,
                         attn_bias=bool(self.attn_bias), head_global=bool(self.head_global))


def dataset_for(shared: str, data_dir: str, max_positions: int, extra: list[str] | None = None) -> Dataset:
    d = data_dir if not max_positions else f"data/first{max_positions}"
    return ensure_dataset(shared, d, extra or [], max_positions, log=lambda *_: None)


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

    def batch(self, pos: np.ndarray, multiple: int = 16):
        """(tokens int32 [B, 78], actions int32 [B, M] padded with ``PAD_ACTION``, mask bool [B, M],
        rows int64 [B, M] (dataset row per slot, -1 at padding)); M = the most moves, rounded up."""
        counts = self.end[pos] - self.start[pos]
        m = max(multiple, int(-(-counts.max() // multiple) * multiple))
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


class MAVTrainer:
    def __init__(self, cfg: MAVTrainConfig, run_dir: str, ds: Dataset, log=print, reset_ema: bool = False):
        import jax
        import jax.numpy as jnp
        import optax

        self.jax, self.jnp = jax, jnp
        self.cfg, self.run_dir, self.log = cfg, run_dir, log
        self.pd = PositionData(ds)
        self.ds = ds
        self.mcfg = mcfg = cfg.model()
        self.reset_ema = reset_ema
        self.sched = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, max(1, cfg.warmup),
                                                        max(cfg.steps, cfg.warmup + 1), cfg.lr * cfg.min_lr_frac)
        mask = lambda p: {k: (v.ndim == 2 and not k.endswith("/embeddings")) for k, v in p.items()}  # noqa: E731
        self.opt = optax.chain(optax.clip_by_global_norm(cfg.clip),
                               optax.adamw(self.sched, b1=0.9, b2=0.99, weight_decay=cfg.weight_decay, mask=mask))
        vw = cfg.value_weight

        def loss_fn(params, tokens, actions, mask, targets, vtargets):
            lp, val = jax_forward(params, mcfg, tokens, actions)
            ce = -jnp.sum(targets * lp, axis=-1)  # [B, M]
            loss = jnp.sum(ce * mask) / jnp.maximum(jnp.sum(mask), 1.0)
            if mcfg.value_head:
                loss = loss + vw * -jnp.mean(jnp.sum(vtargets * val, axis=-1))
            return loss

        def step(params, ema, opt_state, tokens, actions, mask, targets, vtargets, t):
            loss, grads = jax.value_and_grad(loss_fn)(params, tokens, actions, mask, targets, vtargets)
            updates, opt_state = self.opt.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            decay = jnp.minimum(cfg.ema, (1.0 + t) / (10.0 + t))
            ema = jax.tree_util.tree_map(lambda e, p: decay * e + (1 - decay) * p, ema, params)
            return params, ema, opt_state, loss

        self._step = jax.jit(step, donate_argnums=(0, 1, 2))
        self._fwd = jax.jit(lambda params, tokens, actions: jax_forward(params, mcfg, tokens, actions))

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
        snap = os.path.join(self.run_dir, "ema")
        os.makedirs(snap, exist_ok=True)
        np.savez(os.path.join(snap, f"step{st['step']:07d}.npz"), **{k: np.asarray(v) for k, v in host["ema"].items()})

    def load(self):
        with open(self.ckpt_path(), "rb") as f:
            blob = pickle.load(f)
        tm = self.jax.tree_util.tree_map
        return {"step": blob["step"], "train_seconds": blob.get("train_seconds", 0.0),
                "params": tm(self.jnp.asarray, blob["params"]), "ema": tm(self.jnp.asarray, blob["ema"]),
                "opt_state": tm(self.jnp.asarray, blob["opt_state"])}

    # ---------------------------------------------------------------- data
    def _perm(self, epoch: int) -> np.ndarray:
        if getattr(self, "_perm_epoch", None) != epoch:
            self._perm_cache = np.random.default_rng(self.cfg.seed * 1000 + epoch).permutation(len(self.pd.train_pos))
            self._perm_epoch = epoch
        return self._perm_cache

    def batch_positions(self, step: int) -> np.ndarray:
        """Positions of a step: epoch-wise permutations of the training positions (deterministic, resumable)."""
        n, b = len(self.pd.train_pos), self.cfg.batch
        epoch, off = divmod(step * b, n)
        idx = self._perm(epoch)[off:off + b]
        if len(idx) < b:
            idx = np.concatenate([idx, self._perm(epoch + 1)[: b - len(idx)]])
        return self.pd.train_pos[idx]

    def targets(self, rows: np.ndarray, mask: np.ndarray):
        k = self.mcfg.buckets
        t = np.zeros(rows.shape + (k,), np.float32)
        t[mask] = soft_targets(self.ds.row_p[rows[mask]], k, self.cfg.hl_sigma)
        pbest = np.where(mask, self.ds.row_p[np.maximum(rows, 0)], -1.0).max(1)
        return t, soft_targets(pbest, k, self.cfg.hl_sigma)

    def evaluate(self, params, pos: np.ndarray) -> dict:
        """Validation: hard-bucket CE, bucket accuracy, MAE of the expected win prob (per move), action
        accuracy (argmax expected win prob, ties → lowest action id, is a Stockfish-best move), value MAE."""
        from .chessdata import BUCKET_CENTRES

        ce = acc = mae = 0.0
        n = 0
        act_ok, vmae = [], []
        for i in range(0, len(pos), 128):
            tokens, actions, mask, rows = self.pd.batch(pos[i:i + 128])
            lp, val = self._fwd(params, self.jnp.asarray(tokens), self.jnp.asarray(actions))
            lp = np.asarray(lp)
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
            if val is not None:
                vev = np.exp(np.asarray(val, np.float64)) @ BUCKET_CENTRES
                pbest = np.where(mask, self.ds.row_p[np.maximum(rows, 0)], -1.0).max(1)
                vmae.extend(np.abs(vev - pbest).tolist())
        out = {"val_loss": ce / n, "val_bucket_acc": acc / n, "val_mae": mae / n,
               "val_action_acc": float(np.mean(act_ok))}
        if vmae:
            out["val_value_mae"] = float(np.mean(vmae))
        return out

    # ---------------------------------------------------------------- loop
    def run(self, stop_flag=lambda: False):
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
            self.log(f"fresh model: {self.mcfg} ({num_params(self.mcfg):,} parameters)")
        vpos = self.pd.val_pos
        if len(vpos) > cfg.eval_positions:
            vpos = np.sort(np.random.default_rng(12345).choice(vpos, cfg.eval_positions, replace=False))
        logf = open(os.path.join(self.run_dir, "log.jsonl"), "a")
        last_ckpt = time.time()
        losses = []
        t_int = time.time()
        pos_int = moves_int = 0
        ntrain = len(self.pd.train_pos)
        while st["step"] < cfg.steps and not stop_flag():
            pos = self.batch_positions(st["step"])
            tokens, actions, mask, rows = self.pd.batch(pos)
            targets, vtargets = self.targets(rows, mask)
            st["params"], st["ema"], st["opt_state"], loss = self._step(
                st["params"], st["ema"], st["opt_state"], jnp.asarray(tokens), jnp.asarray(actions),
                jnp.asarray(mask, jnp.float32), jnp.asarray(targets), jnp.asarray(vtargets), np.float32(st["step"]))
            losses.append(loss)
            st["step"] += 1
            pos_int += len(pos)
            moves_int += int(mask.sum())
            if st["step"] % cfg.eval_every == 0 or st["step"] == cfg.steps:
                tl = float(np.mean([float(x) for x in losses]))
                losses = []
                now = time.time()
                st["train_seconds"] += now - t_int
                dt = max(now - t_int, 1e-9)
                m = self.evaluate(st["ema"], vpos)
                rec = {"step": st["step"], "epoch": round(st["step"] * cfg.batch / ntrain, 4),
                       "positions": st["step"] * cfg.batch, "lr": float(self.sched(st["step"])), "train_loss": tl,
                       **m, "positions_per_s": round(pos_int / dt, 1), "moves_per_s": round(moves_int / dt, 1),
                       "train_seconds": round(st["train_seconds"], 1), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
                logf.write(json.dumps(rec) + "\n")
                logf.flush()
                self.log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()))
                t_int = time.time()
                pos_int = moves_int = 0
            if time.time() - last_ckpt > cfg.ckpt_seconds:
                self.save(st)
                last_ckpt = time.time()
        self.save(st)
        logf.close()
        self.log(f"checkpoint at step {st['step']} in {self.run_dir}")
        return st


def is_onepass_run(argv: list[str]) -> bool:
    """True when train/export/evaluate arguments name a ``mav-*`` preset or a one-pass run."""
    def value(flag):
        for i, a in enumerate(argv):
            if a == flag and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(flag + "="):
                return a.split("=", 1)[1]
        return None

    if (value("--config") or "").startswith("mav"):
        return True
    run = value("--run") or value("--config")
    if run:
        cfgp = os.path.join(value("--runs-dir") or "runs", run, "config.json")
        if os.path.exists(cfgp):
            try:
                return json.load(open(cfgp)).get("kind") == KIND_MAV
            except (OSError, ValueError):
                return False
    return False


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--config", default="mav-smoke", help=f"preset: {', '.join(CONFIGS)}")
    ap.add_argument("--run", default=None, help="run name (default: the config name)")
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--data-dir", default=None, help="dataset cache (default data/full or data/first<N>)")
    ap.add_argument("--reset-ema", action="store_true", help="on resume, restart the EMA from the current weights")
    ap.add_argument("--extra-labels", default="data/labels", help="folder with our own label shards")
    for f in dataclasses.fields(MAVTrainConfig):
        if f.name != "kind":
            ap.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=type(f.default), default=None)
    a = ap.parse_args(argv)
    run = a.run or a.config
    run_dir = os.path.join(a.runs_dir, run)
    os.makedirs(run_dir, exist_ok=True)
    cfg_path = os.path.join(run_dir, "config.json")
    arch = ("layers", "dim", "heads", "head_dim", "head_hidden", "attn_bias", "head_global")
    if os.path.exists(cfg_path):
        cfg = MAVTrainConfig(**json.load(open(cfg_path)))
        if cfg.kind != KIND_MAV:
            raise SystemExit(f"run {run_dir} is not a {KIND_MAV} run")
    else:
        if a.config not in CONFIGS:
            raise SystemExit(f"unknown preset {a.config!r} ({', '.join(CONFIGS)})")
        cfg = MAVTrainConfig(**CONFIGS[a.config])
    fresh = not os.path.exists(cfg_path)
    for f in dataclasses.fields(MAVTrainConfig):
        v = getattr(a, f.name, None)
        if v is not None:
            if not fresh and f.name in arch and v != getattr(cfg, f.name):
                raise SystemExit(f"run {run_dir} has {f.name}={getattr(cfg, f.name)}, asked {v}: use another --run")
            setattr(cfg, f.name, v)
    json.dump(dataclasses.asdict(cfg), open(cfg_path, "w"), indent=1)
    data_dir = a.data_dir or "data/full"
    extra = [a.extra_labels] if a.extra_labels and os.path.isdir(a.extra_labels) else []

    def log(msg):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    if not label_files(a.shared, extra):
        raise SystemExit(f"no label files under {a.shared}/data/labels")
    d = data_dir if not cfg.max_positions else f"data/first{cfg.max_positions}"
    ds = ensure_dataset(a.shared, d, extra, cfg.max_positions, log)
    tr_ = PositionData(ds)
    log(f"data {d}: {len(tr_.train_pos)} train positions, {len(tr_.val_pos)} validation positions "
        f"({len(ds.train_rows)} / {len(ds.val_rows)} labelled moves)")
    stop = {"flag": False}

    def on_signal(signum, frame):
        stop["flag"] = True
        log(f"signal {signum}: checkpointing and stopping")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    MAVTrainer(cfg, run_dir, ds, log, reset_ema=a.reset_ema).run(lambda: stop["flag"])


if __name__ == "__main__":
    main()
