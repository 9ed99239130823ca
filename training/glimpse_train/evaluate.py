"""Evaluate an exported ONNX model through onnxruntime with the policy the engine plays.

The policy comes from the model kind's registry entry (``kinds/``), chosen by the file's ``glimpse.kind``:
``action_value`` scores all legal moves in one batch of rows, ``multi_action_value`` one row per position.
Both have ``win_probs_batch(rows [N, 79])`` and ``choose(board)``, so the metrics below are kind-agnostic.

Metrics (JSON report + PNG plots in ``runs/<run>/eval/``):
* ``val_loss``: cross-entropy against the hard bucket label on validation rows;
* ``action_accuracy``: share of validation positions where the policy's move (argmax of expected win
  probability over legal moves, ties → lowest action id) is Stockfish's top move (a move whose score
  equals the best score counts);
* ``kendall_tau``: Kendall τ-b between predicted expected win probabilities and Stockfish's scores
  over the legal moves, averaged over validation positions with ≥ 2 moves;
* ``puzzle_accuracy``: Lichess puzzles, whole solution: after ``Moves[0]`` the policy must play every
  solver move; a different move that mates also solves it. Reported by 200-point rating band.
  (The engine's threefold-repetition rule is not applied here.)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time

import chess
import numpy as np
import onnx

from . import kinds
from .chessdata import BUCKET_CENTRES
from .data import ensure_dataset

# matplotlib is imported inside the plotting function alone: the rest of the module works without it.


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    if n < 2:
        return float("nan")
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    iu = np.triu_indices(n, 1)
    dx, dy = dx[iu], dy[iu]
    s = float((dx * dy).sum())
    nx, ny = float((dx != 0).sum()), float((dy != 0).sum())
    if nx == 0 or ny == 0:
        return float("nan")
    return s / np.sqrt(nx * ny)


def validation_per_position(policy, ds, max_positions: int = 0) -> dict:
    """Per-position validation measures of ``policy`` on ``ds``'s validation rows (``max_positions`` > 0: a
    fixed random sample of that many positions), positions in ascending id order: ``pos_ids`` [P] int,
    ``correct`` [P] bool (the policy's move has Stockfish's best score), ``tau`` [P] float (Kendall τ-b of
    predicted against Stockfish's scores; NaN under 2 moves or where either side is all ties), ``loss_sum`` [P]
    (nats: the position's rows' cross-entropy against the hard bucket, summed), ``abs_err_sum`` [P] (summed
    |expected − labelled win probability|) and ``rows`` [P] int (labelled moves). :func:`eval_validation`
    summarises them; ``heldout_pair`` compares two nets position by position."""
    rows = ds.val_rows
    pos_ids = np.unique(ds.row_pos[rows])
    if max_positions and len(pos_ids) > max_positions:
        pos_ids = np.sort(np.random.default_rng(0).choice(pos_ids, max_positions, replace=False))
        rows = rows[np.isin(ds.row_pos[rows], pos_ids)]
    if not len(rows):
        return {"pos_ids": np.zeros(0, np.int64), "correct": np.zeros(0, bool), "tau": np.zeros(0),
                "loss_sum": np.zeros(0), "abs_err_sum": np.zeros(0), "rows": np.zeros(0, np.int64)}
    lp = policy.win_probs_batch(ds.tokens(rows))
    y = ds.row_bucket[rows].astype(np.int64)
    loss = -lp[np.arange(len(rows)), y].astype(np.float64)
    ev = np.exp(lp.astype(np.float64)) @ BUCKET_CENTRES
    err = np.abs(ev - ds.row_p[rows])
    rp = ds.row_pos[rows]
    order = np.argsort(rp, kind="stable")
    bounds = np.flatnonzero(np.diff(rp[order])) + 1
    groups = np.split(order, bounds)
    correct = np.zeros(len(groups), bool)
    tau = np.full(len(groups), np.nan)
    for i, grp in enumerate(groups):
        acts = ds.row_action[rows[grp]]
        pred = ev[grp]
        keys = ds.row_key[rows[grp]]
        best = np.flatnonzero(pred == pred.max())
        choice = best[np.argmin(acts[best])]
        correct[i] = keys[choice] == keys.max()
        tau[i] = kendall_tau_b(pred, keys.astype(np.float64))
    starts = np.r_[0, bounds]
    return {"pos_ids": rp[order][starts], "correct": correct, "tau": tau,
            "loss_sum": np.add.reduceat(loss[order], starts), "abs_err_sum": np.add.reduceat(err[order], starts),
            "rows": np.diff(np.r_[starts, len(rows)])}


def eval_validation(policy, ds, max_positions: int = 0) -> dict:
    """The validation report of ``policy`` (module docstring): ``val_rows``, ``val_positions``, ``val_loss``
    (nats a labelled move), ``action_accuracy``, ``kendall_tau`` (mean over positions where it is defined),
    ``val_mae_win_prob``; from :func:`validation_per_position`."""
    pp = validation_per_position(policy, ds, max_positions)
    nrows = int(pp["rows"].sum())
    taus = pp["tau"][~np.isnan(pp["tau"])]
    return {"val_rows": nrows, "val_positions": int(len(pp["pos_ids"])), "val_loss": float(pp["loss_sum"].sum() / nrows),
            "action_accuracy": float(np.mean(pp["correct"])), "kendall_tau": float(np.mean(taus)),
            "val_mae_win_prob": float(pp["abs_err_sum"].sum() / nrows)}


def eval_puzzles(policy, path: str, limit: int) -> dict:
    results = []
    with open(path) as f:
        for i, r in enumerate(csv.DictReader(f)):
            if limit and i >= limit:
                break
            board = chess.Board(r["FEN"])
            moves = r["Moves"].split()
            board.push_uci(moves[0])
            ok = True
            for j in range(1, len(moves), 2):
                mv = policy.choose(board)
                if mv.uci() != moves[j]:
                    board.push(mv)
                    ok = board.is_checkmate()
                    break
                board.push(mv)
                if j + 1 < len(moves):
                    board.push_uci(moves[j + 1])
            results.append((int(r["Rating"]), ok))
    ratings = np.asarray([x[0] for x in results])
    solved = np.asarray([x[1] for x in results])
    bands = {}
    for lo in range(0, 3400, 200):
        m = (ratings >= lo) & (ratings < lo + 200)
        if m.any():
            bands[f"{lo}-{lo + 199}"] = {"n": int(m.sum()), "accuracy": float(solved[m].mean())}
    return {"puzzles": int(len(results)), "puzzle_accuracy": float(solved.mean()) if len(results) else float("nan"),
            "puzzle_bands": bands}


def plots(run_dir: str, out_dir: str, report: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logp = os.path.join(run_dir, "log.jsonl")
    if os.path.exists(logp):
        recs = [json.loads(line) for line in open(logp) if line.strip()]
        # keep the last record per step (resumed runs may repeat steps)
        by_step = {r["step"]: r for r in recs}
        steps = sorted(by_step)
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(steps, [by_step[s]["train_loss"] for s in steps], label="train (HL-Gauss targets)")
        ax.plot(steps, [by_step[s]["val_loss"] for s in steps], label="validation (hard bucket, EMA)")
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (nats)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "loss.png"), dpi=110)
        plt.close(fig)
    bands = report.get("puzzle_bands", {})
    if bands:
        fig, ax = plt.subplots(figsize=(8, 4))
        names = list(bands)
        ax.bar(range(len(names)), [bands[n]["accuracy"] for n in names])
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
        for i, n in enumerate(names):
            ax.text(i, bands[n]["accuracy"] + 0.01, str(bands[n]["n"]), ha="center", fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("puzzle accuracy (whole solution)")
        ax.set_title(f"puzzle accuracy by rating band (n = count); overall {report['puzzle_accuracy']:.3f}")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "puzzles_by_rating.png"), dpi=110)
        plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--run", required=True)
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--model", default=None, help="ONNX file (default runs/<run>/model.onnx)")
    ap.add_argument("--puzzles", type=int, default=1000, help="number of puzzles (0 = all)")
    ap.add_argument("--val-positions", type=int, default=0, help="limit validation positions (0 = all)")
    ap.add_argument("--data-dir", default="data/full")
    ap.add_argument("--out", default=None, help="report folder (default runs/<run>/eval)")
    a = ap.parse_args(argv)
    run_dir = os.path.join(a.runs_dir, a.run)
    model = a.model or os.path.join(run_dir, "model.onnx")
    out_dir = a.out or os.path.join(run_dir, "eval")
    os.makedirs(out_dir, exist_ok=True)
    cfgp = os.path.join(run_dir, "config.json")
    maxpos = json.load(open(cfgp)).get("max_positions", 0) if os.path.exists(cfgp) else 0
    ds = ensure_dataset(a.shared, a.data_dir if not maxpos else f"data/first{maxpos}", [], maxpos)
    policy = kinds.for_onnx(model).policy(model)
    t0 = time.time()
    report = {"model": os.path.abspath(model), "run": a.run}
    report["metadata"] = {p.key: p.value for p in onnx.load(model, load_external_data=False).metadata_props}
    report.update(eval_validation(policy, ds, a.val_positions))
    print(f"validation: loss {report['val_loss']:.4f}, action accuracy {report['action_accuracy']:.4f}, "
          f"Kendall tau {report['kendall_tau']:.4f} ({report['val_positions']} positions, {report['val_rows']} rows)",
          flush=True)
    pz = os.path.join(a.shared, "data", "puzzles", "lichess_puzzles.csv")
    report.update(eval_puzzles(policy, pz, a.puzzles))
    print(f"puzzles: {report['puzzle_accuracy']:.4f} of {report['puzzles']}", flush=True)
    for band, v in report["puzzle_bands"].items():
        print(f"  {band}: {v['accuracy']:.3f} (n={v['n']})")
    report["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    plots(run_dir, out_dir, report)
    print(f"report: {os.path.join(out_dir, 'report.json')}, plots in {out_dir}")


if __name__ == "__main__":
    main()
