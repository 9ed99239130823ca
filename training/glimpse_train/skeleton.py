"""Random-weight ONNX nets of the released searchless-chess sizes whose weights are made where they run.

A 270M action-value net (Ruoss et al., 2024, Table A1: L16 D1024, 8 heads) is 1.03 GB in float32 and 0.54 GB in
float16: far more than a device call may carry (64 MiB). Its speed does not depend on the weights, so this module
splits such a net in two:

* here, ``--size 270M --precision fp16 --out DIR`` writes ``DIR/270M-fp16.onnx``: the converter's graph
  (``glimpse_train.convert``: same ops, metadata and engine contract as a converted checkpoint) whose float
  initializers above 1 KiB point at an external data file ``270M-fp16.weights`` (ONNX external data; a few
  hundred KB), and ``DIR/270M-fp16.fill.json`` (the weights file's size, dtype and seed);
* there, ``--fill DIR/270M-fp16.fill.json`` writes that weights file with N(0, 0.02²) values (numpy only, no
  ``onnx`` package needed), after which ONNX Runtime and ``glimpse bench --weights DIR/270M-fp16.onnx`` load it.

Usage::

    python -m glimpse_train.skeleton --size 270M --precision fp16 --out .dev/gpu5
    python3 -m glimpse_train.skeleton --fill .dev/gpu5/270M-fp16.fill.json     # on the device
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

#: Initializers at or below this many bytes stay inside the graph file.
INLINE_BYTES = 1024
FILL_STD = 0.02


def write_skeleton(size: str, precision: str, out_dir: str, seed: int = 0) -> tuple[str, str]:
    """Write ``<size>-<precision>.onnx`` (external float weights) and its ``.fill.json`` into ``out_dir``.

    Returns both paths. Raises ``ValueError`` for an unknown size or precision.
    """
    import onnx
    from onnx import TensorProto
    from onnx.external_data_helper import set_external_data

    from .convert import set_meta, to_fp16
    from .kinds.action_value import KIND_AV, ModelConfig, build_model, param_shapes
    from .random_checkpoint import SIZES  # the released models' (layers, dim)

    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, not {size!r}")
    if precision not in ("fp32", "fp16"):
        raise ValueError(f"precision must be fp32 or fp16, not {precision!r}")
    layers, dim = SIZES[size]
    cfg = ModelConfig(kind=KIND_AV, layers=layers, dim=dim, heads=8)
    params = {k: np.zeros(s, np.float32) for k, s in param_shapes(cfg).items()}
    model = build_model(params, cfg, f"random-weight skeleton of searchless_chess {size} action_value "
                                     f"(L={layers} D={dim} H=8, {precision})", True)
    if precision == "fp16":
        model = to_fp16(model)
    name = f"{size}-{precision}"
    weights = f"{name}.weights"
    dtype = TensorProto.FLOAT16 if precision == "fp16" else TensorProto.FLOAT
    offset = 0
    for init in model.graph.initializer:
        if init.data_type != dtype or len(init.raw_data) <= INLINE_BYTES:
            continue
        length = len(init.raw_data)
        set_external_data(init, weights, offset=offset, length=length)
        init.data_location = TensorProto.EXTERNAL
        init.ClearField("raw_data")
        offset += length
    set_meta(model, {"glimpse.precision": precision, "glimpse.converter": "glimpse_train.skeleton",
                     "glimpse.source_checkpoint": f"random weights ({size} layout)"})
    os.makedirs(out_dir, exist_ok=True)
    graph = os.path.join(out_dir, f"{name}.onnx")
    onnx.save(model, graph)
    fill = os.path.join(out_dir, f"{name}.fill.json")
    with open(fill, "w") as f:
        json.dump({"weights": weights, "bytes": offset, "dtype": "float16" if precision == "fp16" else "float32",
                   "std": FILL_STD, "seed": seed}, f, indent=1)
    return graph, fill


def fill_weights(fill_json: str, chunk: int = 1 << 24) -> str:
    """Write the external weights file that ``fill_json`` describes (beside it); returns its path.

    Values N(0, std²) in the stored dtype, drawn in chunks of ``chunk`` values with the recorded seed.
    """
    with open(fill_json) as f:
        spec = json.load(f)
    dtype = np.dtype(spec["dtype"])
    total = int(spec["bytes"]) // dtype.itemsize
    rng = np.random.default_rng(int(spec["seed"]))
    path = os.path.join(os.path.dirname(os.path.abspath(fill_json)), spec["weights"])
    with open(path, "wb") as f:
        done = 0
        while done < total:
            n = min(chunk, total - done)
            (rng.standard_normal(n, dtype=np.float32) * float(spec["std"])).astype(dtype).tofile(f)
            done += n
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="270M", help="9M, 136M or 270M (the released models' shapes)")
    ap.add_argument("--precision", choices=("fp32", "fp16"), default="fp16")
    ap.add_argument("--out", help="folder for the graph and its fill recipe")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fill", metavar="FILL_JSON", help="write the weights file of an existing skeleton")
    a = ap.parse_args(argv)
    if a.fill:
        path = fill_weights(a.fill)
        print(f"skeleton: wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB)")
        return 0
    if not a.out:
        ap.error("--out or --fill is required")
    try:
        graph, fill = write_skeleton(a.size, a.precision, a.out, a.seed)
    except ValueError as e:
        ap.error(str(e))
    print(f"skeleton: wrote {graph} ({os.path.getsize(graph) / 2**10:.0f} KiB) and {fill}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
