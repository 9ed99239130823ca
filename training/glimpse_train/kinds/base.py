"""The contract every model kind fulfils: one ``Kind`` record at the end of the kind's module.

The generic entry points (``train.py``, ``export.py``, ``evaluate.py``, ``test_models.py``) know nothing of a
particular kind; they look it up in the registry (``kinds/__init__.py``) and call these fields. The campaign
is the exception: it trains and gates one-pass nets, so ``campaign_train`` and ``campaign_gate`` import
``kinds.multi_action_value``. Forward passes (numpy reference, JAX), parameter shapes, initialisation and the ONNX graph
stay ordinary module functions of the kind: the record names what the entry points need.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable


@dataclasses.dataclass(frozen=True)
class Kind:
    #: the ONNX ``glimpse.kind`` written for trained nets of this kind (also ``config.json``'s ``kind``)
    name: str
    #: every ``glimpse.kind`` string this module can build or read (AV: also ``state_value``, ``behavioral_cloning``)
    onnx_kinds: tuple[str, ...]
    #: training presets by name (``--config``); names must be unique across kinds
    presets: dict[str, dict]
    default_preset: str
    #: dataclass of the training configuration (what ``config.json`` holds); ``.model()`` -> model config
    train_config: type
    #: fields of ``train_config`` that a resumed run may not change
    arch_fields: tuple[str, ...]
    #: ``trainer(cfg, run_dir, dataset, log, reset_ema)`` -> a ``trainloop.TrainerBase``
    trainer: Callable[..., Any]
    #: ``load_run(run_dir, snapshot=None, raw=False)`` -> (params, model config, step)
    load_run: Callable[..., tuple]
    #: ``describe_run(run, step, raw, model_cfg)`` -> ``glimpse.description`` of an exported run
    describe_run: Callable[..., str]
    #: ``export(params, model_cfg, path, description)`` -> onnx.ModelProto (also written to ``path``)
    export: Callable[..., Any]
    #: ``verify_held_out(params, model_cfg, onnx_path, dataset)`` -> (max |ORT - JAX|, what was compared)
    verify_held_out: Callable[..., tuple]
    #: ``export_info(model_cfg)`` -> extra fields of ``export.json``
    export_info: Callable[..., dict]
    #: ``policy(onnx_path)`` -> an evaluation policy with ``win_probs_batch(rows [N, 79])`` and ``choose(board)``
    policy: Callable[..., Any]
    #: ``num_params(model_cfg)`` -> int
    num_params: Callable[..., int]
    #: a ``--config`` name starting with this is the kind's even when it is not one of ``presets`` ("" = none)
    preset_prefix: str = ""
