"""An int8 twin of a Glimpse network (``make quantize``).

    python -m glimpse_train.quantize --net ../weights/<net>.onnx \
        [--out ../weights/<net>-int8.onnx] [--weight-type qint8|quint8] [--per-channel] \
        [--op-types MatMul ...] \
        [--check 64] [--heldout --shared ../../shared]

The quantisation is ONNX Runtime's own dynamic quantisation (``onnxruntime.quantization.quantize_dynamic``):
the weights of the chosen operators (default: every ``MatMul`` with a constant weight) are stored as 8-bit
integers (``--weight-type``: signed ``qint8`` or unsigned ``quint8``) with one scale per tensor
(``--per-channel``: per output column; ORT's integer MatMul takes per-column parameters for 2-D weights only, so
the per-head 3-D Q/K/V weights ``[heads, D, D/heads]`` then stay float32), and the activations feeding them are
quantised to uint8 at run time (``DynamicQuantizeLinear`` → ``MatMulInteger``, which ORT's graph optimiser
fuses into ``MatMulIntegerToFloat`` on CPU). Inputs and outputs keep their names, types and shapes, so the
engine loads the twin like any net (UCI ``WeightsFile``, ``glimpse --weights``).

Metadata: every ``glimpse.*`` entry of the source is kept as it is (kind, buckets, GFLOP counts, ...), and
``glimpse.precision`` = ``int8``, ``glimpse.source`` (the source's file name), ``glimpse.source_sha256``
(hex digest of the source file) and ``glimpse.quantization`` (the settings, for the record) are added. The
source must be a float32 net (``glimpse.precision`` absent or ``fp32``).

``--check N`` runs source and twin on N positions reached by seeded random play (every legal move of each,
kinds with an ``actions`` input only) and prints the largest and mean difference of Q (expected win
probability, 128 buckets) and how often the argmax move agrees. ``--heldout`` computes the held-out action
accuracy of both on the campaign's fixed split (the validation positions of ``<shared>/data/labels``,
``campaign.HeldOut``). The twin is run once through ONNX Runtime before it is written (ORT checks some
quantisation parameters only when a kernel runs), so a twin ORT cannot run never replaces ``--out``. Exit status 1
on a bad source, a twin ORT cannot run or a failed write.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile

import chess
import numpy as np
import onnx

from .campaign_metrics import HeldOut
from .chessdata import BUCKET_CENTRES, random_positions, tokens_actions
from .data import MemDataset
from .heldout import split_figures
from .labelstore import file_sha256
from .onnx_graph import ort_session

# onnxruntime.quantization is imported inside ``quantize`` alone: the checks and ``--heldout`` do not need it.

#: What ``make quantize`` uses unless told otherwise (chosen by measurement, ``weights/README.md``).
DEFAULT_OP_TYPES = ("MatMul",)
#: int8 weight type: ``qint8`` (signed) or ``quint8`` (unsigned); see ``weights/README.md`` for the choice.
DEFAULT_WEIGHT_TYPE = "qint8"
WEIGHT_TYPES = ("qint8", "quint8")


class QuantizeError(Exception):
    """The source cannot be quantised (missing, not a Glimpse net, not float32), or ONNX Runtime cannot run the
    twin."""


def default_out(net: str) -> str:
    """``dir/name.onnx`` → ``dir/name-int8.onnx`` (beside the source)."""
    root, ext = os.path.splitext(net)
    return f"{root}-int8{ext or '.onnx'}"


def source_of(net: str) -> str:
    """The inverse of :func:`default_out`: ``dir/name-int8.onnx`` → ``dir/name.onnx``; any other name is
    its own source (a float32 net). How ``make quantize`` and the tests find the default's float32 source
    from ``weights/DEFAULT`` (mk/quantize.mk and tests/int8_model.rs spell the same rule)."""
    return net[: -len("-int8.onnx")] + ".onnx" if net.endswith("-int8.onnx") else net


def _meta(model: onnx.ModelProto) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def quantize(net: str, out: str | None = None, per_channel: bool = False,
             op_types: tuple[str, ...] = DEFAULT_OP_TYPES, weight_type: str = DEFAULT_WEIGHT_TYPE) -> dict:
    """Writes the int8 twin of ``net`` to ``out`` (default :func:`default_out`) and returns a summary
    (``out``, sizes in bytes, the metadata added, the number of int8 MatMuls).

    ``per_channel`` keeps MatMuls whose weight is not 2-D in float32 (their count is in the settings).

    Raises :class:`QuantizeError` for a missing file, a net without ``glimpse.kind``, one that is not
    float32, or a twin that ONNX Runtime cannot run (``out`` is then left as it was)."""
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if weight_type not in WEIGHT_TYPES:
        raise QuantizeError(f"weight type {weight_type!r} is not one of {', '.join(WEIGHT_TYPES)}")
    if not os.path.isfile(net):
        raise QuantizeError(f"{net}: no such file")
    src = onnx.load(net)
    meta = _meta(src)
    if "glimpse.kind" not in meta:
        raise QuantizeError(f"{net}: metadata glimpse.kind missing (not a Glimpse net)")
    precision = meta.get("glimpse.precision", "fp32")
    if precision != "fp32":
        raise QuantizeError(f"{net}: glimpse.precision is {precision!r}; only a float32 net can be quantised")
    low = (onnx.TensorProto.FLOAT16, onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    if any(t.data_type in low for t in src.graph.initializer):
        raise QuantizeError(f"{net}: has float16 or 8-bit weights; only a float32 net can be quantised")
    out = out or default_out(net)
    wtype = QuantType.QInt8 if weight_type == "qint8" else QuantType.QUInt8
    keep_float = not_2d_weight_matmuls(src) if per_channel else []
    granularity = "per tensor"
    if per_channel:
        granularity = f"per channel ({len(keep_float)} MatMuls with 3-D weights kept float32)" if keep_float \
            else "per channel"
    settings = (f"onnxruntime {onnxruntime.__version__} quantize_dynamic, weights {wtype.name} "
                f"{granularity}, activations QUInt8 dynamic, ops {','.join(op_types)}")
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "int8.onnx")
        # DefaultTensorType: shape inference gives no type for the outputs of com.microsoft operators
        # (MultiHeadAttention in nets exported with fused attention); every activation here is float32.
        quantize_dynamic(net, raw, weight_type=wtype, per_channel=per_channel,
                         op_types_to_quantize=list(op_types), nodes_to_exclude=keep_float,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        q = onnx.load(raw)
    added = {"glimpse.precision": "int8", "glimpse.source": os.path.basename(net),
             "glimpse.source_sha256": file_sha256(net), "glimpse.quantization": settings}
    keep = {k: v for k, v in meta.items() if k.startswith("glimpse.")}
    del q.metadata_props[:]
    for k, v in {**keep, **added}.items():
        q.metadata_props.add(key=k, value=v)
    onnx.checker.check_model(q)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(out))) as tmp:
        staged = os.path.join(tmp, os.path.basename(out))
        onnx.save(q, staged)
        try:
            run_once(staged)
        except Exception as e:  # onnxruntime raises its own exception classes
            raise QuantizeError(f"{net}: ONNX Runtime cannot run the int8 twin ({e}); {out} not written") from e
        os.replace(staged, out)
    int8_matmuls = sum(n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul") for n in q.graph.node)
    return {"out": out, "source_bytes": os.path.getsize(net), "bytes": os.path.getsize(out),
            "metadata": added, "int8_matmuls": int8_matmuls,
            "fp32_matmuls": sum(n.op_type == "MatMul" for n in q.graph.node)}


def not_2d_weight_matmuls(model: onnx.ModelProto) -> list[str]:
    """Names of the ``MatMul`` nodes whose constant weight is not 2-D (the one-pass nets' per-head Q/K/V
    weights ``[heads, D, D/heads]``): ORT's integer MatMul refuses per-column parameters for them at run time
    ("b zero point is not valid", onnxruntime 1.31)."""
    rank = {t.name: len(t.dims) for t in model.graph.initializer}
    return [n.name for n in model.graph.node
            if n.op_type == "MatMul" and len(n.input) > 1 and rank.get(n.input[1], 2) != 2]


def run_once(path: str) -> None:
    """One ONNX Runtime run of the net at ``path`` on all-zero inputs (every dynamic dimension 1; token and
    action id 0 are valid ids). Raises whatever ORT raises."""
    sess = ort_session(path)
    feed = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        dtype = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float16)": np.float16}.get(
            i.type, np.float32)
        feed[i.name] = np.zeros(shape, dtype)
    sess.run(None, feed)


# ---------------------------------------------------------------------------------------------- checks
def move_q(sess, boards: list[chess.Board]) -> list[np.ndarray]:
    """Q (expected win probability) of every legal move, ascending action id, one array per board; one
    run of all boards (kinds with ``tokens`` + ``actions`` inputs)."""
    tokens, actions = tokens_actions(boards)
    lp = sess.run(["log_probs"], {"tokens": tokens, "actions": actions})[0].astype(np.float64)
    q = np.exp(lp) @ BUCKET_CENTRES
    return [q[i, : b.legal_moves.count()] for i, b in enumerate(boards)]


def compare(net: str, twin: str, positions: int = 64, seed: int = 0) -> dict:
    """Q of source and twin on :func:`random_positions`: largest and mean ``|ΔQ|`` over every legal move,
    the share of positions whose argmax move agrees, and the mean spread (std) of Q over a position's
    moves, the scale the differences are to be read against."""
    boards = random_positions(positions, seed)
    a, b = move_q(ort_session(net), boards), move_q(ort_session(twin), boards)
    diff = np.concatenate([np.abs(x - y) for x, y in zip(a, b)])
    return {"positions": len(boards), "moves": int(diff.size), "max_abs_dq": float(diff.max()),
            "mean_abs_dq": float(diff.mean()),
            "argmax_agreement": float(np.mean([np.argmax(x) == np.argmax(y) for x, y in zip(a, b)])),
            "mean_q_spread": float(np.mean([x.std() for x in a]))}


def heldout(nets: list[str], shared: str, cache: str) -> dict[str, dict]:
    """Held-out action accuracy, policy-head and ``MoveChoice blend`` accuracy and Kendall τ of each net on the campaign's fixed split
    (the validation positions of ``<shared>/data/labels``), as the campaign computes them, with
    ``heldout.positions_per_run`` positions a network run (one for an int8 net)."""
    files = sorted(glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz")))
    if not files:
        raise QuantizeError(f"no label files in {shared}/data/labels")
    held = HeldOut(MemDataset(files, cache, lambda *_: None), shared)
    return {n: split_figures(n, held) for n in nets}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", required=True, help="float32 Glimpse net (.onnx)")
    ap.add_argument("--out", default=None, help="int8 twin (default: <net>-int8.onnx beside the source)")
    ap.add_argument("--per-channel", action="store_true", help="one weight scale per output column")
    ap.add_argument("--weight-type", default=DEFAULT_WEIGHT_TYPE, choices=WEIGHT_TYPES,
                    help="signed (qint8) or unsigned (quint8) int8 weights")
    ap.add_argument("--op-types", nargs="+", default=list(DEFAULT_OP_TYPES), help="operators to quantise")
    ap.add_argument("--check", type=int, default=64, help="positions for the source-vs-twin Q check (0: none)")
    ap.add_argument("--heldout", action="store_true", help="held-out action accuracy of both (needs --shared)")
    ap.add_argument("--shared", default="../../shared")
    ap.add_argument("--cache", default="data/cache", help="label-file array cache (as the campaign's)")
    a = ap.parse_args(argv)
    try:
        s = quantize(a.net, a.out, a.per_channel, tuple(a.op_types), a.weight_type)
    except (QuantizeError, OSError, onnx.checker.ValidationError) as e:
        print(f"quantize: {e}", file=sys.stderr)
        return 1
    print(f"quantize: wrote {s['out']} ({s['bytes'] / 2**20:.2f} MiB, source {s['source_bytes'] / 2**20:.2f} MiB), "
          f"{s['int8_matmuls']} int8 MatMuls, {s['fp32_matmuls']} float MatMuls left")
    for k, v in s["metadata"].items():
        print(f"quantize: {k} = {v}")
    report = {"quantize": s}
    kind = _meta(onnx.load(a.net, load_external_data=False)).get("glimpse.kind", "")
    if a.check and kind.startswith("multi_action_value"):
        c = compare(a.net, s["out"], a.check)
        report["check"] = c
        print(f"quantize: check on {c['positions']} random-play positions ({c['moves']} moves): "
              f"max |dQ| {c['max_abs_dq']:.4f}, mean |dQ| {c['mean_abs_dq']:.4f} "
              f"(mean spread of Q over a position's moves {c['mean_q_spread']:.4f}), "
              f"argmax move agrees in {100 * c['argmax_agreement']:.1f} %")
    if a.heldout:
        h = heldout([a.net, s["out"]], a.shared, a.cache)
        report["heldout"] = h
        for n, r in h.items():
            pol = "n/a" if r["policy_accuracy"] is None else f"{100 * r['policy_accuracy']:.2f} %"
            bl = "n/a" if r["blend_accuracy"] is None else f"{100 * r['blend_accuracy']:.2f} %"
            print(f"quantize: held-out {os.path.basename(n)}: {r['val_positions']} positions, action accuracy "
                  f"{100 * r['action_accuracy']:.2f} %, policy head {pol}, blend {bl}, Kendall tau {r['kendall_tau']:.4f}")
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
