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
import sys

import numpy as np

from .data import Dataset, ensure_dataset, label_files
from .onepass_model import KIND_MAV, PAD_ACTION, MAVConfig, init_params, jax_forward, jax_outputs, num_params
from .train import soft_targets
from .trainloop import TrainerBase, add_common_args, log_line, resolve_config, stop_on_signals

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

    def model(self) -> MAVConfig:
        return MAVConfig(layers=self.layers, dim=self.dim, heads=self.heads, head_dim=self.head_dim,
                         head_hidden=self.head_hidden, value_head=self.value_weight > 0,
                         attn_bias=bool(self.attn_bias), head_global=bool(self.head_global),
                         canonical=bool(self.canonical), policy_dim=self.policy_dim,
                         wdl_head=self.wdl_weight > 0)


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

    def loss(self, params, tokens, actions, mask, targets, vtargets, ptargets, wtargets):
        jnp = self.jnp
        out = jax_outputs(params, self.mcfg, tokens, actions)
        ce = -jnp.sum(targets * out["log_probs"], axis=-1)  # [B, M]
        loss = jnp.sum(ce * mask) / jnp.maximum(jnp.sum(mask), 1.0)
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
        from .heads import policy_targets, wdl_targets

        tokens, actions, mask, rows = self.pd.batch(pos)
        targets, vtargets = self.targets(rows, mask)
        p = np.where(mask, self.ds.row_p[np.maximum(rows, 0)], 0.0)
        ptargets = policy_targets(p, mask, self.cfg.policy_tau) if self.mcfg.policy_dim else np.zeros(mask.shape, np.float32)
        wtargets = (wdl_targets(p.max(1), self.ds.states[pos]) if self.mcfg.wdl_head
                    else np.zeros((len(pos), 3), np.float32))
        return ((tokens, actions, mask.astype(np.float32), targets, vtargets, ptargets, wtargets),
                {"positions": len(pos), "moves": int(mask.sum())})

    def rates(self, counts: dict, seconds: float) -> dict:
        return {"positions_per_s": round(counts.get("positions", 0) / seconds, 1),
                "moves_per_s": round(counts.get("moves", 0) / seconds, 1)}

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
        act_ok, vmae, pol_ok = [], [], []
        for i in range(0, len(pos), 128):
            tokens, actions, mask, rows = self.pd.batch(pos[i:i + 128])
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
    add_common_args(ap, MAVTrainConfig, CONFIGS, "mav-smoke", skip=("kind",))
    a = ap.parse_args(argv)

    def check(cfg):
        if cfg.kind != KIND_MAV:
            raise SystemExit(f"run {a.run or a.config} is not a {KIND_MAV} run")

    cfg, run_dir = resolve_config(a, MAVTrainConfig, CONFIGS, check=check,
                                  arch=("layers", "dim", "heads", "head_dim", "head_hidden", "attn_bias",
                                        "head_global", "canonical", "policy_dim"))
    extra = [a.extra_labels] if a.extra_labels and os.path.isdir(a.extra_labels) else []
    if not label_files(a.shared, extra):
        raise SystemExit(f"no label files under {a.shared}/data/labels")
    d = a.data_dir or ("data/full" if not cfg.max_positions else f"data/first{cfg.max_positions}")
    ds = ensure_dataset(a.shared, d, extra, cfg.max_positions, log_line)
    tr = MAVTrainer(cfg, run_dir, ds, log_line, reset_ema=a.reset_ema)
    log_line(f"data {d}: {len(tr.pd.train_pos)} train positions, {len(tr.pd.val_pos)} validation positions "
             f"({len(ds.train_rows)} / {len(ds.val_rows)} labelled moves)")
    tr.run(stop_on_signals(log_line))


if __name__ == "__main__":
    main()
