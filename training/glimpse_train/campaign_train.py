"""The campaign's train phase (``campaign``, step 2): the one-pass trainer (``kinds.multi_action_value``) on
every label file for ``train_minutes`` of ``PhaseClock`` time, resuming ``runs/<run>/ckpt.pkl``, else
starting from the committed ONNX checkpoint (``StartNetTrainer``), else from scratch; the run's
``config.json`` holds the trainer configuration (``CAMPAIGN_MODEL`` at first, the start net's shapes when
they differ).
"""

from __future__ import annotations

import dataclasses
import json
import os

from .campaign_config import CAMPAIGN_MODEL, PhaseClock, decay_scale, gpu_backend, train_backend
from .kinds.multi_action_value import MAVTrainConfig, MAVTrainer, with_start_architecture
from .onnx_import import import_onepass


class StartNetTrainer(MAVTrainer):
    """The one-pass trainer whose fresh start (no checkpoint in its run folder) is the weights of the ONNX
    net ``start`` (``onnx_import``), or random weights when ``start`` is ``None``; ``note`` ends the log
    line that says so. The campaign's train phase and ``remote train`` use it."""

    def __init__(self, cfg: MAVTrainConfig, run_dir: str, ds, log, start: str | None, note: str = "",
                 backend: str = "jax"):
        self.start, self.note = start, note
        super().__init__(cfg, run_dir, ds, log, backend=backend)

    def init_params(self) -> dict:
        if self.start:
            params, _ = import_onepass(self.start)
            self.log(f"train: starting from {self.start}{self.note}")
            return params
        return super().init_params()


class CampaignTraining:
    """The training part of ``campaign.Campaign`` (a mixin: it uses the campaign's ``cfg``, ``run_dir``,
    ``stop``, ``log`` and ``checkpoint_onnx``)."""

    def trainer(self, ds) -> StartNetTrainer:
        cfg_path = os.path.join(self.run_dir, "config.json")
        if os.path.exists(cfg_path):
            # A run configured before ``micro`` existed gets the campaign's: it changes speed, not the update.
            tcfg = MAVTrainConfig(**{"micro": CAMPAIGN_MODEL["micro"], **json.load(open(cfg_path))})
        else:
            tcfg = MAVTrainConfig(**CAMPAIGN_MODEL)
            with open(cfg_path, "w") as f:
                json.dump(dataclasses.asdict(tcfg), f, indent=1)
        if self.cfg.lr > 0:
            tcfg = dataclasses.replace(tcfg, lr=self.cfg.lr)
        if self.cfg.batch > 0:
            tcfg = dataclasses.replace(tcfg, batch=self.cfg.batch)
        start = self.checkpoint_onnx if os.path.exists(self.checkpoint_onnx) else None
        if start and not os.path.exists(os.path.join(self.run_dir, "ckpt.pkl")):
            # Starting from the committed net: its shapes win over config.json (a net grown deeper by grow.py,
            # adopted from a GPU machine, trains as it is), and config.json is rewritten to match the checkpoints.
            shaped = with_start_architecture(tcfg, import_onepass(start)[1])
            if shaped != tcfg:
                self.log(f"train: {start} has {shaped.layers} layers, width {shaped.dim}: config.json follows it")
                on_disk = json.load(open(cfg_path))
                on_disk.update({k: getattr(shaped, k) for k in dataclasses.asdict(shaped)
                                if getattr(shaped, k) != getattr(tcfg, k)})
                with open(cfg_path, "w") as f:
                    json.dump(on_disk, f, indent=1)
                tcfg = shaped
        backend = train_backend(self.cfg.train_backend, gpu_backend())
        if backend == "torch" and tcfg.micro != 1:
            # micro-batches help XLA (trainloop.py) but slow PyTorch's step by about a quarter (CHANGELOG.md)
            tcfg = dataclasses.replace(tcfg, micro=1)
        self.log(f"train: the step runs on {backend} (--train-backend {self.cfg.train_backend}), batch {tcfg.batch}, "
                 f"{tcfg.micro} micro-batch(es), peak learning rate {tcfg.lr}")
        return StartNetTrainer(tcfg, self.run_dir, ds, self.log, start, f" (no checkpoint in {self.run_dir})",
                               backend=backend)

    def train_phase(self, ds) -> dict:
        c = self.cfg
        clock = PhaseClock(c.train_minutes * 60)
        tr = self.trainer(ds)
        st = tr.run(lambda: self.stop() or clock.done(),
                    lr_scale=lambda: decay_scale(clock.elapsed(), clock.budget, c.decay_frac, c.decay_to))
        return {"step": st["step"], "params": st["ema"], "trainer": tr}
