"""Two one-pass nets on the same held-out positions, position by position (``make heldout-pair``).

``heldout`` gives each net's figures alone; their difference has a standard error of about half a point of
action accuracy when the two are treated as independent samples, larger than what a train phase of an hour
moves. On the same 10,867 positions most answers agree, so the paired difference is far tighter. For each
measure of the campaign's gate this reports both nets' values, the difference A − B and its 95 % interval:

* ``action_accuracy`` (Q argmax), ``blend_accuracy`` (the engine's searchless ``MoveChoice blend``) and
  ``policy_accuracy`` (policy head): the positions only A (``a_only``) and only B (``b_only``) gets right, the
  paired normal interval of the difference and McNemar's exact two-sided p (the binomial test of ``a_only``
  against ``a_only + b_only`` draws at ½; McNemar 1947, *Psychometrika* 12);
* ``kendall_tau``: the mean of per-position τ-b differences over positions where both are defined, with its
  normal interval;
* ``val_loss``: the difference of the mean cross-entropy a labelled move, from per-position sums;
  ``val_loss_by_file`` the same for the positions of each label file of the split. The split mixes files
  labelled in full at depth 8 (``sf15-d8-*``) and two-tier files (the best four moves at depth 8, the rest at
  depth 2, as the campaign's store): a net trained further on the store can gain on the second kind while its
  tail moves drift from the depth-8 values of the first, so the pooled loss alone can mislead.

Each net is run as ``heldout`` runs it (1 position a network run for an int8 net, 256 for a float one;
``--positions-per-run`` overrides both). The split and the positions are ``heldout``'s; nothing here
replaces a match: a significant gain in accuracy is evidence for a candidate, not its Elo.

Usage (from ``training/``)::

    python -m glimpse_train.heldout_pair --a candidate.onnx --b ../weights/glimpse-l10d128-c58-int8.onnx \\
        --shared ../../shared --json pair.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time

import numpy as np

from . import labelstore
from .campaign_metrics import HeldOut, head_per_position
from .data import MemDataset
from .evaluate import validation_per_position
from .heldout import positions_per_run
from .kinds.multi_action_value import MAVPolicy

Z95 = 1.959964
"""The two-sided 95 % point of the standard normal."""


def binomial_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided p of ``k`` successes in ``n`` fair coin draws: 2 · P(X ≤ min(k, n − k)), at most 1
    (1.0 when ``n`` is 0). Log-space sums, so ``n`` in the tens of thousands is fine."""
    if n == 0:
        return 1.0
    lo = min(k, n - k)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(lo + 1)]
    top = max(logs)
    return min(1.0, 2.0 * math.exp(top) * sum(math.exp(x - top) for x in logs))


def paired_binary(a_ok: np.ndarray, b_ok: np.ndarray) -> dict:
    """Two nets' right/wrong answers [P] bool on the same positions → ``a``, ``b`` (shares), ``diff`` (A − B),
    ``ci95`` [lo, hi] (paired normal: the variance of the per-position difference), ``a_only``, ``b_only``
    (discordant counts) and ``p_mcnemar`` (exact, two-sided). Raises ``ValueError`` on unequal lengths or none."""
    a_ok, b_ok = np.asarray(a_ok, bool), np.asarray(b_ok, bool)
    if a_ok.shape != b_ok.shape or not a_ok.size:
        raise ValueError(f"paired answers need equal, non-empty shapes, got {a_ok.shape} and {b_ok.shape}")
    n = a_ok.size
    a_only, b_only = int(np.sum(a_ok & ~b_ok)), int(np.sum(~a_ok & b_ok))
    diff = (a_only - b_only) / n
    se = math.sqrt(max(a_only + b_only - (a_only - b_only) ** 2 / n, 0.0)) / n
    return {"a": float(a_ok.mean()), "b": float(b_ok.mean()), "diff": diff,
            "ci95": [diff - Z95 * se, diff + Z95 * se], "a_only": a_only, "b_only": b_only,
            "p_mcnemar": binomial_two_sided_p(a_only, a_only + b_only)}


def paired_mean(a: np.ndarray, b: np.ndarray) -> dict:
    """Per-position values [P] of two nets (NaN where undefined) → ``a``, ``b`` (means over positions where both
    are defined), ``diff`` (mean of A − B), ``ci95`` (normal) and ``positions``. Raises ``ValueError`` when no
    position has both."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both = ~np.isnan(a) & ~np.isnan(b)
    if not both.any():
        raise ValueError("no position where both values are defined")
    d = a[both] - b[both]
    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else float("nan")
    diff = float(d.mean())
    return {"a": float(a[both].mean()), "b": float(b[both].mean()), "diff": diff,
            "ci95": [diff - Z95 * se, diff + Z95 * se], "positions": int(both.sum())}


def paired_ratio(a_sum: np.ndarray, b_sum: np.ndarray, rows: np.ndarray) -> dict:
    """Per-position sums [P] of a per-row measure (a loss) for two nets over the same ``rows`` [P] → the means a
    row ``a`` and ``b``, ``diff`` and its ``ci95`` (normal, from the per-position sums' differences)."""
    a_sum, b_sum = np.asarray(a_sum, np.float64), np.asarray(b_sum, np.float64)
    total = float(np.sum(rows))
    d = a_sum - b_sum
    se = float(d.std(ddof=1) * math.sqrt(d.size) / total) if d.size > 1 else float("nan")
    diff = float(d.sum() / total)
    return {"a": float(a_sum.sum() / total), "b": float(b_sum.sum() / total), "diff": diff,
            "ci95": [diff - Z95 * se, diff + Z95 * se]}


def per_position(net: str, held: HeldOut, per_run: int | None = None) -> dict:
    """``evaluate.validation_per_position`` of ``net`` on ``held``, plus ``campaign_metrics.head_per_position``'s
    ``policy_ok``/``blend_ok`` where it has a policy head, ``per_run`` positions a run (default as ``heldout``)."""
    per_run = per_run or positions_per_run(net)
    pp = validation_per_position(MAVPolicy(net, per_run), held)
    heads = head_per_position(net, held, per_run=per_run)
    if heads is not None:
        pp.update(heads)
    pp["positions_per_run"] = per_run
    source = getattr(held.ds, "source", None)
    if source is not None:
        pp["source"] = np.asarray(source)[pp["pos_ids"]]
        pp["source_names"] = [os.path.basename(f) for f in held.ds.files]
    return pp


def compare(pa: dict, pb: dict) -> dict:
    """The paired report of two :func:`per_position` results on the same split (module docstring). Raises
    ``ValueError`` when they cover different positions."""
    if not np.array_equal(pa["pos_ids"], pb["pos_ids"]) or not np.array_equal(pa["rows"], pb["rows"]):
        raise ValueError("the two nets were measured on different positions")
    rep = {"positions": int(len(pa["pos_ids"])), "rows": int(np.sum(pa["rows"])),
           "action_accuracy": paired_binary(pa["correct"], pb["correct"])}
    for key, name in (("blend_ok", "blend_accuracy"), ("policy_ok", "policy_accuracy")):
        rep[name] = paired_binary(pa[key], pb[key]) if key in pa and key in pb else None
    rep["kendall_tau"] = paired_mean(pa["tau"], pb["tau"])
    rep["val_loss"] = paired_ratio(pa["loss_sum"], pb["loss_sum"], pa["rows"])
    if "source" in pa:
        rep["val_loss_by_file"] = {
            name: paired_ratio(pa["loss_sum"][m], pb["loss_sum"][m], pa["rows"][m])
            for i, name in enumerate(pa["source_names"]) if (m := pa["source"] == i).any()}
    return rep


def summary(rep: dict) -> str:
    """One line a measure: A, B, A − B with its interval (points for accuracies), McNemar's p."""
    out = []
    for k in ("action_accuracy", "blend_accuracy", "policy_accuracy", "kendall_tau", "val_loss"):
        m = rep.get(k)
        if m is None:
            continue
        pct = k.endswith("accuracy")
        f = (lambda x: f"{100 * x:.2f}") if pct else (lambda x: f"{x:.4f}")
        line = f"{k:16s} A {f(m['a'])}  B {f(m['b'])}  A-B {f(m['diff'])} (95 % {f(m['ci95'][0])} .. {f(m['ci95'][1])})"
        if "p_mcnemar" in m:
            line += f"  only A {m['a_only']}, only B {m['b_only']}, McNemar p {m['p_mcnemar']:.3g}"
        out.append(line)
    for name, m in (rep.get("val_loss_by_file") or {}).items():
        out.append(f"  val_loss {name}: A {m['a']:.4f}  B {m['b']:.4f}  A-B {m['diff']:.4f} "
                   f"(95 % {m['ci95'][0]:.4f} .. {m['ci95'][1]:.4f})")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="the candidate ONNX file")
    ap.add_argument("--b", required=True, help="the ONNX file it is compared with")
    ap.add_argument("--json", required=True, help="where the report goes")
    ap.add_argument("--shared", default="../shared", help="folder with data/labels")
    ap.add_argument("--cache-dir", default="data/cache", help="the label arrays' cache (as the campaign's)")
    ap.add_argument("--positions-per-run", type=int, default=None,
                    help="positions a network run for both (default: 1 for an int8 net, 256 for a float one)")
    a = ap.parse_args(argv)
    if a.positions_per_run is not None and a.positions_per_run < 1:
        ap.error("--positions-per-run must be at least 1")
    for net in (a.a, a.b):
        if not os.path.isfile(net):
            ap.error(f"no such file: {net}")
    files = labelstore.label_files(a.shared, None)
    if not files:
        ap.error(f"no label files in {os.path.join(a.shared, 'data', 'labels')}")
    t0 = time.time()
    held = HeldOut(MemDataset(files, a.cache_dir, lambda *m: print(*m, file=sys.stderr)), a.shared)
    pa, pb = (per_position(net, held, a.positions_per_run) for net in (a.a, a.b))
    paired = compare(pa, pb)
    rep = {"a": os.path.basename(a.a), "a_sha256": labelstore.file_sha256(a.a), "a_positions_per_run": pa["positions_per_run"],
           "b": os.path.basename(a.b), "b_sha256": labelstore.file_sha256(a.b), "b_positions_per_run": pb["positions_per_run"],
           "date": time.strftime("%Y-%m-%d"), "seconds": round(time.time() - t0, 1),
           "command": os.environ.get("GLIMPSE_COMMAND") or "python -m glimpse_train.heldout_pair " + shlex.join(
               argv if argv is not None else sys.argv[1:]), **paired}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(rep, f, indent=1)
        f.write("\n")
    print(f"A {rep['a']}  B {rep['b']}  ({rep['positions']} held-out positions)\n{summary(rep)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
