"""Held-out metrics of one one-pass ONNX net, as JSON (``make heldout NET=…``).

What the campaign's gate measures of a candidate (``campaign.Campaign.evaluate``), for any file: on the fixed
held-out split (``campaign.HeldOut``: the 3 % of ``<shared>/data/labels`` positions whose key hashes into
validation) the action accuracy of the Q argmax, Kendall τ-b against Stockfish's scores and the bucket
cross-entropy (``evaluate.eval_validation``); the accuracy of the policy head and of the engine's searchless
default ``MoveChoice blend`` (``campaign.head_accuracies``); and the first ``--puzzles`` Lichess puzzles
(``evaluate.eval_puzzles``, whole solutions). Only the shared label files are read, so the split and its
figures do not move as the label store grows.

Positions per network run (:func:`positions_per_run`): 256 for a float net, whose outputs do not depend on what
shares its run; 1 for an int8 twin, because ONNX Runtime's dynamic quantisation takes one activation scale per
run (``DynamicQuantizeLinear`` over the whole input), so a position's Q moves with the positions beside it
(figures: ``weights/README.md``). The engine runs one position's root and successors together, positions alike in
scale, which one a run stands for better than 256 unrelated ones. ``--positions-per-run N`` overrides the choice.

The JSON (``tools/results/heldout/<net>.json`` by default) records the net's file name, size and SHA-256, the
date and the command; ``make docs`` builds the model card's tables from it (``glimpse_tools.docs_tables``).

Usage (from ``training/``)::

    python -m glimpse_train.heldout --net ../weights/glimpse-l10d128-c58-int8.onnx --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time

from . import labelstore
from .campaign_metrics import HeldOut, head_accuracies
from .data import MemDataset
from .evaluate import eval_puzzles, eval_validation
from .kinds.multi_action_value import MAVPolicy
from .onnx_graph import onnx_meta

#: Positions a network run for a float net (its outputs do not depend on the batch).
FLOAT_POSITIONS_PER_RUN = 256


def positions_per_run(net: str) -> int:
    """Positions a network run for the held-out figures of ``net``: 1 for an int8 net (metadata
    ``glimpse.precision`` = ``int8``: its dynamic activation scale is shared by a run), else
    :data:`FLOAT_POSITIONS_PER_RUN` (module docstring)."""
    return 1 if onnx_meta(net).get("glimpse.precision") == "int8" else FLOAT_POSITIONS_PER_RUN


def split_figures(net: str, held: HeldOut, per_run: int | None = None) -> dict:
    """The held-out split's figures of ``net`` (``evaluate.eval_validation``'s report, plus
    ``policy_accuracy``, ``blend_accuracy`` and ``positions_per_run``), ``per_run`` positions a network run
    (default :func:`positions_per_run`)."""
    per_run = per_run or positions_per_run(net)
    rep = eval_validation(MAVPolicy(net, per_run), held)
    rep.update(head_accuracies(net, held, per_run=per_run))
    rep["positions_per_run"] = per_run
    return rep


def measure(net: str, shared: str, cache_dir: str, puzzles: int = 300, log=print,
            per_run: int | None = None) -> dict:
    """The held-out report of the ONNX file ``net`` (a one-pass kind: ``multi_action_value`` or
    ``multi_action_value_policy``): ``action_accuracy`` and ``kendall_tau`` (fractions), ``val_loss`` (nats),
    ``val_positions``, ``policy_accuracy``/``blend_accuracy`` (``None`` without a policy head), ``puzzles``,
    ``puzzle_accuracy`` and ``positions_per_run`` (``per_run``, default :func:`positions_per_run`). Raises
    ``FileNotFoundError`` when ``shared`` has no label files."""
    files = labelstore.label_files(shared, None)
    if not files:
        raise FileNotFoundError(f"no label files in {os.path.join(shared, 'data', 'labels')}")
    rep = split_figures(net, HeldOut(MemDataset(files, cache_dir, log), shared), per_run)
    puzzle_csv = os.path.join(shared, "data", "puzzles", "lichess_puzzles.csv")
    rep.update(eval_puzzles(MAVPolicy(net), puzzle_csv, puzzles) if puzzles else
               {"puzzles": 0, "puzzle_accuracy": None})
    return rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--net", required=True, help="the ONNX file")
    ap.add_argument("--json", required=True, help="where the report goes")
    ap.add_argument("--shared", default="../shared", help="folder with data/labels and data/puzzles")
    ap.add_argument("--cache-dir", default="data/cache", help="the label arrays' cache (as the campaign's)")
    ap.add_argument("--puzzles", type=int, default=300, help="Lichess puzzles to solve (0: none)")
    ap.add_argument("--positions-per-run", type=int, default=None,
                    help="positions a network run (default: 1 for an int8 net, 256 for a float one)")
    a = ap.parse_args(argv)
    if a.positions_per_run is not None and a.positions_per_run < 1:
        ap.error("--positions-per-run must be at least 1")
    t0 = time.time()
    rep = measure(a.net, a.shared, a.cache_dir, a.puzzles, log=lambda *m: print(*m, file=sys.stderr),
                  per_run=a.positions_per_run)
    rep = {"net": os.path.basename(a.net), "bytes": os.path.getsize(a.net), "sha256": labelstore.file_sha256(a.net),
           "date": time.strftime("%Y-%m-%d"), "seconds": round(time.time() - t0, 1),
           "command": os.environ.get("GLIMPSE_COMMAND") or "python -m glimpse_train.heldout " + shlex.join(
               argv if argv is not None else sys.argv[1:]), **rep}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(rep, f, indent=1)
        f.write("\n")
    print(json.dumps({k: rep[k] for k in ("net", "action_accuracy", "kendall_tau", "puzzle_accuracy")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
