"""The strength campaign (``make campaign``): label → store → train → export → evaluate → gate → record,
in cycles, for as long as it is left running; killed at any point, the next start resumes.

One cycle:

1. **Label** the positions an unstarved phase labels in ``label_minutes`` (its measured rate; a phase whose
   workers got under ``BUSY_FOR_RATE`` of their cores does not update it), stretched up to
   ``label_wall_cap`` × ``label_minutes`` of wall clock, so a match at idle priority lengthens the phase
   rather than emptying it (time stopped by ``kill -STOP`` is left out: ``PauseClock``): new positions from
   Stockfish self-play at random skill, popular Lichess positions and endgame starts
   (``../shared/data/positions/``), deduplicated on the first four FEN fields against every labelled
   position so far; labelled by Stockfish as Ray tasks (``raylabel``; ``RAY_ADDRESS`` for a cluster); a
   shard goes into the label store (``data/labels/``, committed) every ``shard_minutes`` once it holds
   ``shard_min_positions``, at the latest every ``shard_max_minutes`` (``shard_due``).
   On a machine with no GPU (and no ``--train-cpu``) the campaign does only this, phase after phase
   (``label_only``): the cores are worth far more as labels than as CPU training passes.
2. **Train** for ``train_minutes`` (``PhaseClock``: CPU time over cores, so pauses and matches at idle
   priority do not eat the phase): the one-pass trainer over every label file (shared + store), resuming
   from ``training/runs/<run>/ckpt.pkl`` (checkpoints every ``ckpt_seconds`` ≤ 15 min and on SIGTERM);
   with no checkpoint it starts from the committed ``training/campaign/<run>.onnx`` (``onnx_import``),
   else from scratch. The learning rate stays at its peak after warm-up (``steps`` is huge); with
   ``decay_frac`` > 0 it decays linearly to ``decay_to`` × peak in the last ``decay_frac`` of each train
   phase (warmup-stable-decay; ``decay_scale``) and the next phase starts at the peak again (off by
   default: no measured gain). The EMA of the weights is what is exported and measured.
3. **Export** the EMA weights to ONNX (ORT checked against JAX), **evaluate** through ONNX Runtime on the
   fixed held-out split (positions of ``../shared/data/labels`` whose key hashes into the 3 % validation
   set; never trained on): action accuracy (argmax expected win probability is a Stockfish-best move) and
   Kendall τ; and the first ``puzzles`` Lichess puzzles.
4. **Gate**: a candidate whose held-out action accuracy beats the best so far becomes
   ``training/campaign/<run>.onnx`` (the resumable, committed checkpoint) and ``runs/<run>/best.onnx``.
   Replacing the engine's embedded default is a separate, SPRT-decided step (``weights/README.md``).
5. **Record**: a row in ``training/campaign/<run>-curve.csv`` and the PNG beside it (positions labelled,
   position-passes, wall hours against held-out action accuracy and puzzle accuracy).

Campaign state (cycle, phase timings, the sources' cursors) is ``runs/<run>/campaign.json``; its part that the
curve cannot give back (``PROGRESS_KEYS``: wall seconds, label round, cursors, rate) is also written to the
committed ``training/campaign/<run>-progress.json``, which a fresh clone resumes from (``merge_progress``).

The parts live beside this module: ``campaign_config`` (knobs, state, clocks), ``campaign_positions`` (the
sources), ``campaign_label`` (the label phase), ``campaign_train`` (the train phase), ``campaign_gate``
(export, evaluation, gate, record) and ``campaign_metrics`` (the held-out split, policy and blend accuracy).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import sys
import time

import numpy as np

from . import chessdata, labelstore, raylabel
from .campaign_config import (BUSY_FOR_RATE, CAMPAIGN_MODEL, CURVE_FIELDS, REPO, SOURCES,  # noqa: F401
                              TRAIN_BATCH_KEY, TRAIN_STEP_KEY, CampaignConfig, PauseClock, PhaseClock,
                              decay_scale, dagger_opponent, gpu_backend, load_state, merge_progress, parse_mix,
                              save_progress, save_state, seed_from_curve, shard_due, train_wanted)
from .campaign_gate import CampaignGate, plot_curve  # noqa: F401
from .campaign_label import CampaignLabelling
from .campaign_metrics import BLEND_MIN_POLICY, BLEND_WEIGHT, HeldOut, head_accuracies, policy_accuracy  # noqa: F401
from .campaign_positions import (PENDING_MAX, CampaignPositions, epd_source, run_until_stopped,  # noqa: F401
                                 take_new)
from .campaign_train import CampaignTraining, StartNetTrainer  # noqa: F401
from .data import MemDataset
from .onnx_graph import onnx_meta
from .trainloop import SignalStop, log_line

# The names imported above and not used here are the campaign's public names, importable from this module
# as before the split (tests, ``heldout``, ``remote``, ``quantize`` and the docs name ``campaign.X``).


def snapshot_passes(meta: dict[str, str]) -> int | None:
    """Position-passes a ``remote train`` snapshot trained since its start net: ``step × batch`` from its
    ``glimpse.train_step``/``glimpse.train_batch`` metadata (``remote.train`` writes them); ``None`` for a
    net without them. Snapshots written before those keys existed record the same two numbers only in
    ``glimpse.description`` (``remote train step N batch B``): for them alone the description is parsed."""
    if TRAIN_STEP_KEY in meta and TRAIN_BATCH_KEY in meta:
        return int(meta[TRAIN_STEP_KEY]) * int(meta[TRAIN_BATCH_KEY])
    m = re.search(r"remote train step (\d+) batch (\d+)", meta.get("glimpse.description", ""))
    return int(m.group(1)) * int(m.group(2)) if m else None


class Campaign(CampaignPositions, CampaignLabelling, CampaignTraining, CampaignGate):
    """The loop of the module docstring; its phases are the mixins' methods (one module each)."""

    def __init__(self, cfg: CampaignConfig, shared: str, store_root: str, runs_dir: str, out_dir: str,
                 stockfish: str | None = None, log=log_line):
        self.cfg, self.shared = cfg, shared
        self.store = labelstore.LabelStore(store_root)
        self.run_dir = os.path.abspath(os.path.join(runs_dir, cfg.run))
        self.out_dir = os.path.abspath(out_dir)
        os.makedirs(self.run_dir, exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)
        logf = open(os.path.join(self.run_dir, "campaign.log"), "a")

        def both(msg: str) -> None:
            log(msg)
            logf.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {msg}\n")
            logf.flush()

        self.log = both
        self.state_path = os.path.join(self.run_dir, "campaign.json")
        fresh = not os.path.exists(self.state_path)
        self.state = load_state(self.state_path)
        if fresh:
            seeded = seed_from_curve(self.curve_csv)
            if seeded:
                self.state.update(seeded)
                self.log(f"no {self.state_path}: resuming the curve at cycle {seeded['cycle']} "
                         f"(gate bar {seeded['best_accuracy']}, {seeded['passes_offset']} position-passes so far)")
            if os.path.exists(self.progress_path):
                merge_progress(self.state, load_state(self.progress_path))
                self.log(f"progress from {self.progress_path}: {self.state['wall_seconds'] / 3600:.2f} wall hours, "
                         f"label round {self.label_round}, cursors {self.state['cursor']}")
        self.stockfish = stockfish
        self.stop = SignalStop()
        self.clock = PauseClock()  # started by run(): phases and wall hours leave out SIGSTOP pauses
        self._known: set[str] | None = None
        self._epd: dict[str, list[str]] = {}

    @property
    def checkpoint_onnx(self) -> str:
        return os.path.join(self.out_dir, f"{self.cfg.run}.onnx")

    @property
    def label_round(self) -> int:
        """The number of the label phase: it seeds the DAgger games, picks their opponent and shuffles the
        candidates. It starts at the cycle and grows by one each phase, so phases without training (a
        CPU-only machine) never replay the same games."""
        return max(self.state.get("label_round", 0), self.state["cycle"])

    @property
    def curve_csv(self) -> str:
        return os.path.join(self.out_dir, f"{self.cfg.run}-curve.csv")

    @property
    def progress_path(self) -> str:
        """``<out>/<run>-progress.json`` beside the curve (``PROGRESS_KEYS``): what a fresh clone resumes from
        besides the curve, so its wall hours, DAgger rounds and self-play seeds go on instead of starting over."""
        return os.path.join(self.out_dir, f"{self.cfg.run}-progress.json")

    def save(self) -> None:
        """Writes the state (``runs/<run>/campaign.json``) and its committed part (``progress_path``)."""
        save_state(self.state_path, self.state)
        save_progress(self.progress_path, self.state)

    def files(self) -> list[str]:
        return labelstore.label_files(self.shared, self.store.root)

    def known(self) -> set[str]:
        if self._known is None:
            self._known = labelstore.known_keys(self.files())
        return self._known

    def scheme(self) -> raylabel.LabelScheme:
        c = self.cfg
        return raylabel.LabelScheme(c.scheme, c.depth, c.top_k, c.shallow_depth)

    @property
    def cache_dir(self) -> str:
        return os.path.join(os.path.dirname(self.run_dir), "..", "data", "cache")

    def adopt(self, net: str, passes: int | None = None, extra_seconds: float = 0.0, force: bool = False) -> dict:
        """Makes ``net``, a one-pass ONNX file trained elsewhere (a GPU machine's ``remote train`` snapshot,
        CAMPAIGN.md), the campaign's start, with the campaign stopped. It is measured as a cycle measures its
        candidate (:meth:`evaluate`); when its held-out action accuracy beats the gate's bar (or ``force``) it
        becomes ``candidate-<cycle>.onnx``, ``best.onnx`` and the committed checkpoint, the run's ``ckpt.pkl``
        moves aside to ``ckpt-cycle<N>-before-adopt.pkl`` (the next train phase starts from ``net``, at its
        own depth and width), a curve row is recorded (gate ``best``) and the state moves on: the next cycle
        (which labels first), ``passes_offset``, the bar, the wall hours plus ``extra_seconds`` (the remote run's).

        ``passes``: the net's position-passes in all; by default the best row's plus the snapshot's own
        (:func:`snapshot_passes`: the remote run started from the best net). Returns ``{"adopted", "action_accuracy", "bar", …}`` (the report of :meth:`evaluate`).
        Raises ``ValueError`` when ``passes`` is not given and cannot be worked out."""
        if passes is None:
            own = snapshot_passes(onnx_meta(net))
            row = self.best_row()
            if own is None or row is None:
                raise ValueError(f"{net}: give the position-passes (it is not a remote train snapshot, or the "
                                 f"curve has no best row)")
            passes = int(row["position_passes"]) + own
        ds = MemDataset(self.files(), self.cache_dir, self.log)
        cyc = self.state["cycle"]
        cand = os.path.join(self.run_dir, f"candidate-{cyc:04d}.onnx")
        shutil.copyfile(net, cand)
        rep = self.evaluate(ds, cand)
        bar = self.bar(ds, rep["val_positions"])
        rep.update(adopted=False, bar=bar, passes=passes)
        self.log(f"adopt: {net}: held-out {rep['action_accuracy']:.4f} (bar {bar}), puzzles {rep['puzzle_accuracy']}")
        if not force and bar is not None and rep["action_accuracy"] <= bar:
            os.remove(cand)
            self.log("adopt: not better than the bar; nothing changed (--adopt-force adopts it anyway)")
            return rep
        self.state["best_accuracy"] = None  # the gate copies whatever beats None
        self.gate(rep)
        ckpt = os.path.join(self.run_dir, "ckpt.pkl")
        if os.path.exists(ckpt):
            os.replace(ckpt, os.path.join(self.run_dir, f"ckpt-cycle{cyc}-before-adopt.pkl"))
        has = np.bincount(ds.row_pos, minlength=len(ds.states)) > 0
        self.state["wall_seconds"] = self.state.get("wall_seconds", 0.0) + extra_seconds
        row = self.curve_row(cyc, rep, int((has & ~ds.val).sum()), passes, 0, "best")
        self.record(row)
        self.state.update(cycle=cyc + 1, passes_offset=passes)
        self.state.pop("labelled_cycle", None)
        self.save()
        self.log("adopt: cycle " + " ".join(f"{k}={v}" for k, v in row.items()))
        rep["adopted"] = True
        return rep

    # ------------------------------------------------------------------ loop
    def label_only(self) -> None:
        """The campaign on a machine with no GPU (and no ``--train-cpu``): label phases back to back until
        stopped (or ``cycles`` phases), each writing its shards to the store. No curve row: the net does not
        change, so the cycle number stays and the next trained cycle records every position labelled here.
        The new shards are not tokenized here: that cost 18 s of a 786 s phase (2 % of the labels;
        2026-11-29), and a pack for a GPU tokenizes them on every CPU (``data.warm_cache``)."""
        self.log(f"no GPU and no --train-cpu: labelling only (cycle {self.state['cycle']} stays until a "
                 f"train phase runs)")
        phases = 0
        while not self.stop() and self.cfg.label_minutes > 0 and (not self.cfg.cycles or phases < self.cfg.cycles):
            t0 = self.clock()
            self.log(f"=== label phase {self.label_round}: store {self.store.totals()}")
            n = self.label_with_ray()
            self.state["wall_seconds"] = self.state.get("wall_seconds", 0.0) + (self.clock() - t0)
            self.state["labelled_cycle"] = self.state["cycle"]
            self.save()
            self.log(f"label: {n} positions labelled; store {self.store.totals()}")
            phases += 1
        self.save()
        self.log("campaign stopped; `make campaign` resumes")

    def run(self) -> None:
        self.stop.install()
        self.clock.start()
        cache = self.cache_dir
        gpu = gpu_backend()
        if self.stockfish:
            native = " (native build, make stockfish-native)" if self.stockfish == chessdata.NATIVE_STOCKFISH else ""
            self.log(f"labelling with {self.stockfish}{native}")
        if not train_wanted(self.cfg, gpu):
            self.label_only()
            return
        self.log(f"training on {gpu or 'the CPU (--train-cpu)'}")
        while not self.stop() and (not self.cfg.cycles or self.state["cycle"] < self.cfg.cycles):
            cyc = self.state["cycle"]
            t0 = self.clock()
            self.log(f"=== cycle {cyc}: store {self.store.totals()}")
            if self.cfg.label_minutes > 0 and self.state.get("labelled_cycle") == cyc:
                self.log(f"label: cycle {cyc} already labelled before the restart; training")
            elif self.cfg.label_minutes > 0:
                n = self.label_with_ray()
                self.log(f"label: {n} positions labelled; store {self.store.totals()}")
                if not self.stop():
                    self.state["labelled_cycle"] = cyc
                self.save()
            if self.stop():
                break
            ds = MemDataset(self.files(), cache, self.log)
            out = self.train_phase(ds)
            if self.stop():
                break
            tr, step = out["trainer"], out["step"]
            rep = self.export_eval(ds, tr, step, out["params"])
            gated = self.gate(rep, ds)
            self.state["wall_seconds"] = self.state.get("wall_seconds", 0.0) + (self.clock() - t0)
            row = self.curve_row(cyc, rep, len(tr.pd.train_pos), self.state.get("passes_offset", 0) + step * tr.cfg.batch,
                                 step, "best" if gated else "kept")
            self.record(row)
            self.log("cycle " + " ".join(f"{k}={v}" for k, v in row.items()))
            self.state["cycle"] = cyc + 1
            self.save()
        self.save()
        self.log("campaign stopped; `make campaign` resumes")


def parse_args(argv=None) -> tuple[argparse.Namespace, CampaignConfig]:
    """The command line: the parsed arguments and the :class:`CampaignConfig` they give (a ``bool`` field is a
    flag, ``--train-cpu``). Exits through argparse on a bad value (``--mix``, ``--dagger-levels``)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--store", default="../data/labels", help="label store folder (committed)")
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--out-dir", default="campaign", help="committed outputs: resumable ONNX, curve CSV/PNG")
    ap.add_argument("--stockfish", default=None)
    for fl in dataclasses.fields(CampaignConfig):
        if isinstance(fl.default, bool):
            ap.add_argument("--" + fl.name.replace("_", "-"), dest=fl.name, action="store_true")
        else:
            ap.add_argument("--" + fl.name.replace("_", "-"), dest=fl.name, type=type(fl.default), default=fl.default)
    ap.add_argument("--adopt", default=None, metavar="NET",
                    help="instead of running: make NET (a net trained elsewhere) the campaign's start if it beats "
                         "the gate (Campaign.adopt); stop the campaign first")
    ap.add_argument("--adopt-passes", type=int, default=None, help="NET's position-passes in all (default: worked out)")
    ap.add_argument("--adopt-hours", type=float, default=0.0, help="wall hours to add to the curve (the remote run's)")
    ap.add_argument("--adopt-force", action="store_true", help="adopt NET even if it does not beat the gate's bar")
    a = ap.parse_args(argv)
    cfg = CampaignConfig(**{fl.name: getattr(a, fl.name) for fl in dataclasses.fields(CampaignConfig)})
    try:
        parse_mix(cfg.mix)
    except ValueError as e:
        ap.error(f"--mix: {e}")
    if cfg.dagger_every < 1:
        ap.error(f"--dagger-every: {cfg.dagger_every} is below 1 (1 takes every ply)")
    for level in cfg.dagger_levels.split(","):
        try:
            dagger_opponent(int(level))
        except ValueError as e:
            ap.error(f"--dagger-levels: {e}")
    return a, cfg


def main(argv=None):
    a, cfg = parse_args(argv)
    if a.adopt:
        try:
            rep = Campaign(cfg, a.shared, a.store, a.runs_dir, a.out_dir).adopt(
                a.adopt, a.adopt_passes, a.adopt_hours * 3600, a.adopt_force)
        except (ValueError, OSError) as e:
            print(f"campaign: {e}", file=sys.stderr)
            return 1
        return 0 if rep["adopted"] else 2
    sf = chessdata.find_stockfish(a.stockfish)
    Campaign(cfg, a.shared, a.store, a.runs_dir, a.out_dir, sf).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
