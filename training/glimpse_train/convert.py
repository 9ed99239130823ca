"""Convert a searchless-chess Orbax checkpoint (the released 9M/136M/270M layout) to a Glimpse ONNX net.

Usage (from the repository root: ``make convert CHECKPOINT=… OUT=…``)::

    python -m glimpse_train.convert CHECKPOINT OUT.onnx [--params params|params_ema]
        [--precision fp32|fp16] [--kind action_value|state_value|behavioral_cloning]
        [--heads N] [--step N] [--config FILE] [--no-last-layer-opt]

``CHECKPOINT`` may be the checkpoints root holding one model, the model directory
(``…/270M``), the step directory (``…/270M/6400000``) or the item directory
(``…/270M/6400000/params``). The arrays are read with tensorstore (:mod:`.orbax_reader`); no
reference code is needed.

What is inferred and how:

* layers, width D, MLP widening and output size from the parameter shapes (``model.infer_config``);
* kind: a 1968-wide head is behavioural cloning. Action-value and state-value nets have the same
  shapes (128-wide head, 79 position embeddings, 1968 embedding rows — compare the golden
  ``tiny_av_config.json`` and ``tiny_sv_config.json``), so a 128-wide head needs, in this order:
  ``--kind``; the ``policy`` of a config file beside the checkpoint; a model directory name that
  says it (``…state_value…``, ``…action_value…``, ``…behavioral_cloning…``); or one of the released
  action-value names ``9M``, ``136M``, ``270M`` (what the reference's ``engines/constants.py`` loads
  as action-value). Otherwise the converter stops and asks for ``KIND=``;
* heads cannot be seen in the shapes: ``--heads``, else the config file's
  ``transformer_config.num_heads``, else 8 (all released models use 8);
* config file: ``--config``, else ``config.json`` / ``*_config.json`` in the item, step or model
  directory, else ``<name>_config.json`` beside the model directory or the checkpoints root (with
  a ``_checkpoint`` suffix dropped: ``golden/tiny_av_checkpoint`` → ``golden/tiny_av_config.json``).
  Its transformer sizes must agree with the shapes.

The ONNX file follows the engine contract (see ``kinds/action_value.py``) and carries metadata
``glimpse.kind``, ``glimpse.buckets``, ``glimpse.source_checkpoint`` (``<model>/<step>/<tree>``),
``glimpse.step``, ``glimpse.params_tree``, ``glimpse.params``, ``glimpse.gflop_per_eval``,
``glimpse.precision`` and ``glimpse.last_layer_optimised``.

``--precision fp16`` stores every weight and computes the network in float16 (for CUDA /
TensorRT); the logits are cast to float32 before the log-softmax, so input and output types are
unchanged. CPU ONNX Runtime can run it (slowly); accuracy against fp32 is measured by
``glimpse_train.fp16_report``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .kinds.action_value import KIND_AV, KIND_BC, KIND_SV, KINDS, VOCAB, ModelConfig, build_model, infer_config
from .orbax_reader import CheckpointError, Located, check_haiku_layout, read_item, resolve

DEFAULT_HEADS = 8
RELEASED_AV_NAMES = ("9M", "136M", "270M")
KIND_ALIASES = {"av": KIND_AV, "action_value": KIND_AV, "sv": KIND_SV, "state_value": KIND_SV,
                "bc": KIND_BC, "behavioral_cloning": KIND_BC, "behavioural_cloning": KIND_BC}


def normalise_kind(kind: str | None) -> str | None:
    if kind is None or kind == "":
        return None
    k = KIND_ALIASES.get(kind.strip().lower())
    if k is None:
        raise CheckpointError(f"unknown KIND {kind!r} (use av, sv, bc or {', '.join(KINDS)})")
    return k


def find_config(loc: Located, explicit: str | None) -> tuple[dict | None, str | None]:
    """The searchless-style config JSON for this checkpoint (see module doc), or (None, None)."""
    if explicit:
        try:
            cfg = json.load(open(explicit))
        except (OSError, json.JSONDecodeError) as e:
            raise CheckpointError(f"{explicit}: unreadable config: {e}") from e
        if not isinstance(cfg, dict):
            raise CheckpointError(f"{explicit}: config is not a JSON object")
        return cfg, explicit
    dirs = [loc.item_dir, os.path.dirname(loc.item_dir)]
    if loc.model_dir:
        dirs.append(loc.model_dir)
    cands: list[str] = []
    for d in dirs:
        cands += [os.path.join(d, "config.json")] + sorted(glob.glob(os.path.join(d, "*_config.json")))
    if loc.model_dir:
        for d in (loc.model_dir, os.path.dirname(loc.model_dir)):
            base = re.sub(r"_checkpoints?$", "", os.path.basename(d))
            cands.append(os.path.join(os.path.dirname(d), f"{base}_config.json"))
    for c in cands:
        if os.path.isfile(c):
            try:
                cfg = json.load(open(c))
            except (OSError, json.JSONDecodeError) as e:
                raise CheckpointError(f"{c}: unreadable config: {e}") from e
            if isinstance(cfg, dict) and ("transformer_config" in cfg or "policy" in cfg):
                return cfg, c
    return None, None


def infer_kind(params: dict[str, np.ndarray], loc: Located, config: dict | None,
               explicit: str | None) -> tuple[str, str]:
    """(kind, how it was decided). Raises CheckpointError when a 128-wide head cannot be placed."""
    heads = [n for n in params if re.fullmatch(r"linear_\d+/b", n)]
    if len(heads) != 1:
        raise CheckpointError(f"expected exactly one head bias linear_<3L>/b, found {heads}")
    out = params[heads[0]].shape[0]
    by_shape = KIND_BC if out == VOCAB else None
    kind = normalise_kind(explicit)
    if kind:
        if by_shape and kind != by_shape:
            raise CheckpointError(f"KIND={kind} but the head has {out} outputs (behavioural cloning)")
        if kind == KIND_BC and out != VOCAB:
            raise CheckpointError(f"KIND={kind} but the head has {out} outputs, not {VOCAB}")
        return kind, "KIND given"
    if by_shape:
        return by_shape, f"head has {out} outputs"
    if config and config.get("policy"):
        k = normalise_kind(str(config["policy"]))
        if k == KIND_BC:
            raise CheckpointError(f"config says {k} but the head has {out} outputs")
        return k, "config file's policy"
    name = loc.model_name.lower()
    for pat, k in (("state_value", KIND_SV), ("action_value", KIND_AV), ("behavio", KIND_BC)):
        if pat in name and k != KIND_BC:
            return k, f"model directory name '{loc.model_name}'"
    if loc.model_name in RELEASED_AV_NAMES:
        return KIND_AV, f"released action-value model name '{loc.model_name}'"
    raise CheckpointError(
        f"the head has {out} outputs: action-value and state-value nets have identical shapes, and "
        f"nothing names the kind (model directory '{loc.model_name or '?'}', no config file). "
        "Pass KIND=av or KIND=sv (--kind).")


def check_against_config(cfg: ModelConfig, config: dict | None, where: str | None) -> None:
    if not config or "transformer_config" not in config:
        return
    tc = config["transformer_config"]
    want = {"embedding_dim": cfg.dim, "num_layers": cfg.layers, "widening_factor": cfg.widening,
            "output_size": cfg.out_size}
    bad = {k: (tc[k], v) for k, v in want.items() if k in tc and int(tc[k]) != v}
    if bad:
        raise CheckpointError(f"{where}: config disagrees with the checkpoint's shapes "
                              f"(config vs checkpoint: {bad}); pass --config or move the file")


def to_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    """Store every float32 weight as float16 and run the graph in float16, output kept float32.

    The float input of every op comes from a weight or from ops on weights (the only graph input is
    int64 ``tokens``), so converting the initializers makes the whole network float16; a Cast to
    float32 is inserted before the final LogSoftmax, whose output ``log_probs`` stays float32.
    """
    for init in model.graph.initializer:
        if init.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(init)
            if np.abs(a).max(initial=0.0) > 65504:
                raise ValueError(f"weight {init.name} exceeds the float16 range")
            init.CopyFrom(numpy_helper.from_array(a.astype(np.float16), init.name))
    nodes = list(model.graph.node)
    idx = [i for i, n in enumerate(nodes) if "log_probs" in n.output]
    if len(idx) != 1 or nodes[idx[0]].op_type != "LogSoftmax":
        raise ValueError("expected exactly one LogSoftmax producing log_probs")
    last = nodes[idx[0]]
    cast = helper.make_node("Cast", [last.input[0]], ["logits_f32"], name="n_cast_logits_f32",
                            to=TensorProto.FLOAT)
    last.input[0] = "logits_f32"
    nodes.insert(idx[0], cast)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.checker.check_model(model)
    return model


def set_meta(model: onnx.ModelProto, extra: dict[str, str]) -> None:
    meta = {p.key: p.value for p in model.metadata_props}
    meta.update(extra)
    helper.set_model_props(model, meta)


def convert(checkpoint: str, out: str | None, tree: str = "params", precision: str = "fp32",
            kind: str | None = None, heads: int | None = None, step: int | None = None,
            config_path: str | None = None, optimise_last_layer: bool = True,
            log=print) -> tuple[onnx.ModelProto, dict]:
    """Read ``checkpoint`` and build (and write, when ``out`` is given) the ONNX model.

    Returns (model, info) where info has ``cfg`` (ModelConfig), ``located``, ``kind_reason``,
    ``heads_reason``, ``config_file``, ``params`` (the float32 arrays read) and ``meta``.
    Raises :class:`CheckpointError` for anything that is not a known layout.
    """
    if precision not in ("fp32", "fp16"):
        raise CheckpointError(f"PRECISION must be fp32 or fp16, not {precision!r}")
    t0 = time.time()
    loc = resolve(checkpoint, tree, step)
    params, rinfo = read_item(loc.item_dir)
    check_haiku_layout(params, loc.item_dir)
    config, config_file = find_config(loc, config_path)
    k, kind_reason = infer_kind(params, loc, config, kind)
    if heads:
        h, heads_reason = int(heads), "HEADS given"
    elif config and "transformer_config" in config and "num_heads" in config["transformer_config"]:
        h, heads_reason = int(config["transformer_config"]["num_heads"]), f"config {config_file}"
    else:
        h, heads_reason = DEFAULT_HEADS, "default (all released models use 8; HEADS= to change)"
    try:
        cfg = infer_config(params, k, h)
    except ValueError as e:
        raise CheckpointError(f"{loc.item_dir}: {e}") from e
    check_against_config(cfg, config, config_file)
    t_read = time.time() - t0
    desc = (f"searchless_chess {loc.model_name or 'checkpoint'} {k} "
            f"(L={cfg.layers} D={cfg.dim} H={cfg.heads}, {loc.relative}, {precision})")
    model = build_model(params, cfg, desc, optimise_last_layer)
    if precision == "fp16":
        model = to_fp16(model)
    meta = {
        "glimpse.source_checkpoint": loc.relative,
        "glimpse.step": str(loc.step) if loc.step is not None else "",
        "glimpse.params_tree": loc.tree,
        "glimpse.precision": precision,
        "glimpse.last_layer_optimised": "1" if optimise_last_layer else "0",
        "glimpse.converter": "glimpse_train.convert",
    }
    set_meta(model, meta)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        onnx.save(model, out)
    info = {"cfg": cfg, "located": loc, "kind_reason": kind_reason, "heads_reason": heads_reason,
            "config_file": config_file, "params": params, "meta": {p.key: p.value for p in model.metadata_props},
            "stored_dtypes": rinfo["stored_dtypes"], "format": rinfo["format"], "read_s": t_read,
            "total_s": time.time() - t0}
    if log:
        log(f"read {loc.item_dir} ({rinfo['format']}, {len(params)} arrays, stored "
            f"{'/'.join(rinfo['stored_dtypes'])}) in {t_read:.1f} s")
        log(f"kind {k} ({kind_reason}); L={cfg.layers} D={cfg.dim} heads={cfg.heads} ({heads_reason}); "
            f"outputs {cfg.out_size}; {info['meta']['glimpse.params']} parameters; "
            f"{float(info['meta']['glimpse.gflop_per_eval']):.4f} GFLOP/eval")
        if out:
            log(f"wrote {out} ({os.path.getsize(out) / 2**20:.1f} MiB, {precision}) in {info['total_s']:.1f} s")
    return model, info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Convert a searchless_chess Orbax checkpoint to Glimpse ONNX")
    ap.add_argument("checkpoint", help="checkpoints root, model dir (…/270M), step dir or params dir")
    ap.add_argument("out", help="output .onnx file")
    ap.add_argument("--params", default="params", choices=("params", "params_ema"),
                    help="which tree: params (what the reference engine plays with, default) or params_ema")
    ap.add_argument("--precision", default="fp32", choices=("fp32", "fp16"))
    ap.add_argument("--kind", default=None, help="av|sv|bc (needed when nothing else tells AV from SV)")
    ap.add_argument("--heads", type=int, default=None, help="attention heads (default: config file, else 8)")
    ap.add_argument("--step", type=int, default=None, help="step directory (default: the highest)")
    ap.add_argument("--config", default=None, help="searchless-style config JSON (policy, transformer_config)")
    ap.add_argument("--no-last-layer-opt", action="store_true",
                    help="compute every position in the last layer (for measurements)")
    a = ap.parse_args(argv)
    try:
        convert(a.checkpoint, a.out, a.params, a.precision, a.kind, a.heads, a.step, a.config,
                not a.no_last_layer_opt)
    except CheckpointError as e:
        print(f"convert: error: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:  # tensorstore / onnx failures on a damaged checkpoint
        print(f"convert: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
