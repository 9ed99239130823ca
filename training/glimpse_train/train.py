"""Train a model kind on Stockfish-labelled moves (JAX + optax; CPU or CUDA): ``make train CONFIG=... RUN=...``.

The kind comes from the registry (``kinds/``): the ``--config`` preset's kind (``smoke``/``small``/...:
action value; ``mav-*``: the one-pass model), or, for a run that exists, the ``kind`` in its
``config.json``. The kind's trainer says what a batch is and how it is scored (see ``kinds/*.py``); the
loop, optimiser (AdamW behind global-norm clipping, warmup + cosine), EMA, atomic checkpoints
(``ckpt.pkl`` every ``ckpt_seconds`` and on SIGTERM/SIGINT; re-running the same run name resumes) and
``log.jsonl`` are shared (``trainloop.py``).
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys

from . import kinds
from .data import ensure_dataset, label_files
from .trainloop import add_common_args, log_line, resolve_config, stop_on_signals


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    kind = kinds.for_argv(argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap, kind.train_config, kind.presets, kind.default_preset, skip=("kind",))
    ap.add_argument("--backend", choices=("jax", "torch"), default="jax",
                    help="the train step's framework: torch runs it in bfloat16 on a CPU's AMX tiles (torch_step.py; "
                         "one-pass kind only, make torch-setup)")
    a = ap.parse_args(argv)
    if a.backend != "jax" and "backend" not in inspect.signature(kind.trainer).parameters:
        raise SystemExit(f"--backend {a.backend}: the {kind.name} kind trains with JAX only")

    def check(cfg):
        if getattr(cfg, "kind", kinds.action_value.KIND_AV) != kind.name:
            raise SystemExit(f"run {a.run or a.config} is not a {kind.name} run")

    cfg, run_dir = resolve_config(a, kind.train_config, kind.presets, check=check, arch=kind.arch_fields)
    extra = [a.extra_labels] if a.extra_labels and os.path.isdir(a.extra_labels) else []
    if not label_files(a.shared, extra):
        raise SystemExit(f"no label files under {a.shared}/data/labels")
    data_dir = a.data_dir or ("data/full" if not cfg.max_positions else f"data/first{cfg.max_positions}")
    ds = ensure_dataset(a.shared, data_dir, extra, cfg.max_positions, log_line)
    tr = kind.trainer(cfg, run_dir, ds, log_line, reset_ema=a.reset_ema,
                      **({"backend": a.backend} if a.backend != "jax" else {}))
    log_line(f"data {data_dir}: {tr.describe_data()}")
    tr.run(stop_on_signals(log_line))


if __name__ == "__main__":
    main()
