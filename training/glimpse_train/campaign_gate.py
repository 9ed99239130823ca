"""The campaign's export, evaluation, gate and record (``campaign``, steps 3–5): the EMA weights to ONNX
(checked against JAX), measured on the fixed held-out split and the puzzles; a candidate that beats the
best held-out action accuracy so far becomes ``best.onnx`` and the committed checkpoint; every cycle adds
a row to ``<run>-curve.csv`` and redraws the PNG beside it.
"""

from __future__ import annotations

import csv
import os
import shutil
import time

import numpy as np

from .campaign_config import CURVE_FIELDS
from .campaign_metrics import HeldOut, policy_accuracy
from .evaluate import eval_puzzles, eval_validation
from .kinds.multi_action_value import MAVPolicy, export, verify


class CampaignGate:
    """The export, gate and record part of ``campaign.Campaign`` (a mixin: it uses the campaign's ``cfg``,
    ``state``, ``store``, ``shared``, ``run_dir``, ``log``, ``checkpoint_onnx`` and ``curve_csv``)."""

    def export_eval(self, ds, tr, step: int, ema) -> dict:
        params = {k: np.asarray(v, np.float32) for k, v in ema.items()}
        cand = os.path.join(self.run_dir, f"candidate-{self.state['cycle']:04d}.onnx")
        export(params, tr.mcfg, cand, description=f"campaign {self.cfg.run} cycle {self.state['cycle']} step {step}")
        pos = tr.pd.val_pos[:8]
        tokens, actions, _, _ = tr.pd.batch(pos)
        diff = verify(params, tr.mcfg, cand, tokens, actions)
        if diff > 1e-3:
            raise RuntimeError(f"exported ONNX differs from JAX by {diff}")
        return self.evaluate(ds, cand)

    def evaluate(self, ds, cand: str) -> dict:
        """What a cycle measures of the net ``cand``: held-out action accuracy, τ and loss
        (``evaluate.eval_validation`` on :class:`HeldOut`), the policy head's accuracy and the puzzles."""
        held = HeldOut(ds, self.shared)
        pol = MAVPolicy(cand)
        rep = eval_validation(pol, held)
        rep["policy_accuracy"] = policy_accuracy(cand, held)
        puz = eval_puzzles(pol, os.path.join(self.shared, "data", "puzzles", "lichess_puzzles.csv"), self.cfg.puzzles) \
            if self.cfg.puzzles else {"puzzles": 0, "puzzle_accuracy": float("nan")}
        return {"candidate": cand, **rep, **puz}

    def bar(self, ds, split: int | None) -> float | None:
        """The gate's bar: the best gated held-out action accuracy, on today's split of ``split`` positions.
        The split grows with ``<shared>/data/labels``; when it differs from the one the bar was set on
        (``best_heldout_positions``), the best net (``best.onnx``, else the committed checkpoint) is
        measured again on this split and that figure becomes the bar. ``None`` before any net is gated."""
        best = self.state.get("best_accuracy")
        if best is None or split is None or self.state.get("best_heldout_positions") == split:
            return best
        net = next((f for f in (os.path.join(self.run_dir, "best.onnx"), self.checkpoint_onnx) if os.path.exists(f)),
                   None)
        if net is None:
            return best
        again = eval_validation(MAVPolicy(net), HeldOut(ds, self.shared))["action_accuracy"]
        self.log(f"gate: the held-out split changed ({self.state.get('best_heldout_positions')} -> {split} "
                 f"positions): the bar {best:.4f} is re-measured on {os.path.basename(net)}: {again:.4f}")
        self.state.update(best_accuracy=again, best_heldout_positions=split)
        return again

    def gate(self, rep: dict, ds=None) -> bool:
        """Whether the candidate ``rep`` (from :meth:`evaluate`) beats the bar; if so it becomes ``best.onnx``
        and the committed checkpoint. With ``ds`` the bar is first brought to ``rep``'s split (:meth:`bar`)."""
        best = self.bar(ds, rep.get("val_positions")) if ds is not None else self.state.get("best_accuracy")
        if best is None or rep["action_accuracy"] > best:
            shutil.copyfile(rep["candidate"], os.path.join(self.run_dir, "best.onnx"))
            shutil.copyfile(rep["candidate"], self.checkpoint_onnx + ".tmp")
            os.replace(self.checkpoint_onnx + ".tmp", self.checkpoint_onnx)
            self.state.update(best_accuracy=rep["action_accuracy"], best_heldout_positions=rep.get("val_positions"))
            return True
        return False

    def curve_row(self, cyc: int, rep: dict, train_positions: int, passes: int, step: int, gate: str) -> dict:
        """The curve row of cycle ``cyc`` for the report ``rep`` of :meth:`evaluate` (``CURVE_FIELDS``)."""
        return {"cycle": cyc, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "wall_hours": round(self.state["wall_seconds"] / 3600, 3),
                "store_positions": self.store.totals()["positions"], "train_positions": train_positions,
                "position_passes": passes, "step": step, "heldout_positions": rep["val_positions"],
                "action_accuracy": round(rep["action_accuracy"], 4), "kendall_tau": round(rep["kendall_tau"], 4),
                "puzzles": rep["puzzles"],
                "policy_accuracy": "" if rep["policy_accuracy"] is None else round(rep["policy_accuracy"], 4),
                "puzzle_accuracy": round(rep["puzzle_accuracy"], 4), "gate": gate}

    def record(self, row: dict) -> None:
        if os.path.exists(self.curve_csv):
            with open(self.curve_csv) as f:
                old = list(csv.DictReader(f))
            if old and list(old[0].keys()) != CURVE_FIELDS:  # a column was added: rewrite with the new header
                with open(self.curve_csv, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=CURVE_FIELDS)
                    w.writeheader()
                    w.writerows({k: r.get(k, "") for k in CURVE_FIELDS} for r in old)
        new = not os.path.exists(self.curve_csv)
        with open(self.curve_csv, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CURVE_FIELDS)
            if new:
                w.writeheader()
            w.writerow({k: row.get(k, "") for k in CURVE_FIELDS})
        try:
            plot_curve(self.curve_csv, self.curve_csv[:-4] + ".png")
        except Exception as e:  # noqa: BLE001 - a plot failure must not stop the campaign
            self.log(f"plot failed: {e}")

    def best_row(self) -> dict | None:
        """The curve's latest row with gate ``best`` (the net ``best.onnx`` holds), or ``None``."""
        if not os.path.exists(self.curve_csv):
            return None
        with open(self.curve_csv) as f:
            best = [r for r in csv.DictReader(f) if r.get("gate") == "best"]
        return best[-1] if best else None


def plot_curve(csv_path: str, png_path: str) -> None:
    """Held-out action accuracy and puzzle accuracy against positions labelled, position-passes and wall hours."""
    import matplotlib  # only here: the campaign and its tests import this module without drawing

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        return
    f = lambda k: [float(r[k]) if r[k] not in ("", "nan") else np.nan for r in rows]  # noqa: E731
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, (xk, xl) in zip(axes, [("store_positions", "positions in the label store"),
                                   ("position_passes", "position-passes (training)"),
                                   ("wall_hours", "campaign wall hours")]):
        ax.plot(f(xk), f("action_accuracy"), "o-", label="held-out action accuracy")
        ax.plot(f(xk), f("puzzle_accuracy"), "s-", label="puzzle accuracy")
        if "policy_accuracy" in rows[0]:
            ax.plot(f(xk), f("policy_accuracy"), "^--", label="held-out policy-head accuracy")
        ax.set_xlabel(xl)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy")
    axes[0].legend()
    fig.suptitle(f"campaign curve ({os.path.basename(csv_path)})")
    fig.tight_layout()
    fig.savefig(png_path, dpi=90)
    plt.close(fig)
