"""Faithfulness tests of the Orbax → ONNX converter on the golden reference checkpoints (``make test-convert``).

For each golden tiny checkpoint ``<shared>/golden/tiny_{av,sv,bc}_checkpoint/`` (the released
layout, written by the reference code):

1. the arrays read with tensorstore equal, bit for bit, the sha256 manifest of
   ``tiny_*_config.json`` for both ``params`` and ``params_ema`` (and what orbax-checkpoint's own
   ``StandardCheckpointer`` restores);
2. the converted ONNX (given the checkpoints root, so kind and heads come from the config beside
   it) reproduces every golden log-prob within 1e-4 (BC 2e-4) in onnxruntime, in batch and alone,
   with and without the last-layer optimisation; its metadata names the kind, buckets, source,
   step and tree;
3. ``PARAMS=params_ema`` loads the other tree: its outputs differ from the golden ones (by more than
   1e-3) and match a float64 numpy forward pass of the EMA arrays;
4. ``PRECISION=fp16`` stays within 0.05 of fp32 on every golden record;
5. other Orbax storage variants (no OCDBT, zarr v3) read identically; unknown layouts are
   refused with a diagnosis: a Flax-style tree, an AV/SV-ambiguous directory
   without KIND, a 128-wide head given KIND=bc, a directory without checkpoints;
6. the engine (``target/release/glimpse``, UCI through python-chess) loaded with each converted
   model through ``setoption name WeightsFile`` plays the reference engine's ``engine_chosen_move``
   in every golden position record (history replayed with ``position … moves …``). AV is the
   contract; SV and BC are checked the same way. Skipped, with a message, only when the binary or
   the ONNX Runtime library is missing (``--require-engine`` makes that a failure; ``make test``
   builds both first).

Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile

import chess
import chess.engine
import numpy as np

from .convert import convert
from .kinds.action_value import KIND_AV, KIND_BC, KIND_SV, ModelConfig, load_npz_params, numpy_forward
from .onnx_graph import ort_session
from .orbax_reader import CheckpointError, read_item, resolve
from .random_checkpoint import nest, write
from .test_models import golden_cases

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).
# tensorstore, msgpack and orbax (requirements-convert.txt, optional) are imported inside the functions that
# read or write checkpoints.

SHORT = {"av": KIND_AV, "sv": KIND_SV, "bc": KIND_BC}
TOL = {"av": 1e-4, "sv": 1e-4, "bc": 2e-4}
FP16_TOL = 0.05


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str) -> bool:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def run_onnx(model_or_path, toks: np.ndarray) -> np.ndarray:
    sess = ort_session(model_or_path if isinstance(model_or_path, str) else model_or_path.SerializeToString(),
                       threads=1)
    return sess.run(["log_probs"], {"tokens": toks})[0]


def golden_arrays(gdir: str, short: str):
    cases = list(golden_cases(os.path.join(gdir, f"tiny_{short}_outputs.jsonl"), short))
    return np.asarray([c[0] for c in cases], np.int64), np.asarray([c[1] for c in cases], np.float64)


def check_tree_bytes(c: Checks, gdir: str, short: str, root: str):
    cfg = json.load(open(os.path.join(gdir, f"tiny_{short}_config.json")))
    for tree in ("params", "params_ema"):
        arrays, info = read_item(resolve(root, tree).item_dir)
        bad = [p["ocdbt_key"] for p in cfg["parameters"]
               if hashlib.sha256(np.ascontiguousarray(arrays["/".join(p["tree_path"])]).tobytes()).hexdigest()
               != p[f"sha256_{tree}"]]
        c.check(not bad and len(arrays) == len(cfg["parameters"]),
                f"{short} {tree}: {len(arrays)} arrays read with tensorstore match the sha256 manifest"
                + (f" (mismatch: {bad[:3]})" if bad else ""))
    # Cross-check against orbax-checkpoint's own reader (the library the checkpoints were written with).
    try:
        import orbax.checkpoint as ocp

        loc = resolve(root, "params")
        restored = ocp.StandardCheckpointer().restore(loc.item_dir)
        arrays, _ = read_item(loc.item_dir)
        same = all(np.array_equal(np.asarray(restored[m][n]), arrays[f"{m}/{n}"])
                   for m in restored for n in restored[m])
        c.check(same, f"{short}: orbax StandardCheckpointer.restore equals the tensorstore read")
    except ImportError:
        print("  (orbax-checkpoint not installed: cross-check skipped)")


def check_golden(c: Checks, gdir: str, short: str, out_dir: str) -> str:
    kind = SHORT[short]
    root = os.path.join(gdir, f"tiny_{short}_checkpoint")
    cfg_json = json.load(open(os.path.join(gdir, f"tiny_{short}_config.json")))
    print(f"tiny_{short}: {root}")
    check_tree_bytes(c, gdir, short, root)
    toks, want = golden_arrays(gdir, short)
    path = os.path.join(out_dir, f"tiny_{short}.onnx")
    model, info = convert(root, path, log=None)
    cfg: ModelConfig = info["cfg"]
    meta = info["meta"]
    model_name = os.path.basename(info["located"].model_dir)
    c.check(cfg.kind == kind and cfg.heads == cfg_json["transformer_config"]["num_heads"]
            and cfg.layers == cfg_json["transformer_config"]["num_layers"]
            and cfg.dim == cfg_json["transformer_config"]["embedding_dim"],
            f"{short}: inferred {cfg.kind} L={cfg.layers} D={cfg.dim} H={cfg.heads} ({info['kind_reason']}; "
            f"heads from {info['heads_reason']})")
    want_meta = {"glimpse.kind": kind, "glimpse.buckets": "0" if kind == KIND_BC else "128",
                 "glimpse.source_checkpoint": f"{model_name}/6400000/params", "glimpse.step": "6400000",
                 "glimpse.params_tree": "params", "glimpse.params": str(cfg_json["num_parameters"]),
                 "glimpse.precision": "fp32"}
    bad = {k: meta.get(k) for k, v in want_meta.items() if meta.get(k) != v}
    c.check(not bad and float(meta.get("glimpse.gflop_per_eval", 0)) > 0, f"{short}: metadata {want_meta}"
            + (f" — got {bad}" if bad else ""))
    got = run_onnx(path, toks)
    d = float(np.abs(got - want).max())
    c.check(got.dtype == np.float32 and got.shape == want.shape and d <= TOL[short],
            f"{short}: {len(toks)} golden records, max |ONNX - golden| = {d:.2e} (tol {TOL[short]:g})")
    got1 = np.concatenate([run_onnx(path, toks[i:i + 1]) for i in range(0, len(toks), max(1, len(toks) // 7))])
    want1 = want[::max(1, len(toks) // 7)]
    d1 = float(np.abs(got1 - want1).max())
    c.check(d1 <= TOL[short], f"{short}: batch-1 runs, max diff {d1:.2e}")
    # Without the last-layer optimisation (the measurement baseline) the outputs agree too.
    plain, _ = convert(root, None, optimise_last_layer=False, log=None)
    dp = float(np.abs(run_onnx(plain, toks) - want).max())
    c.check(dp <= TOL[short], f"{short}: without last-layer optimisation, max diff {dp:.2e}")
    # params_ema: the other tree.
    ema_model, ema_info = convert(root, os.path.join(out_dir, f"tiny_{short}_ema.onnx"), tree="params_ema", log=None)
    ema_out = run_onnx(ema_model, toks)
    d_ema_golden = float(np.abs(ema_out - want).max())
    npz = load_npz_params(os.path.join(gdir, f"tiny_{short}_params.npz"), "params_ema")
    d_ema_np = float(np.abs(ema_out - numpy_forward(npz, cfg, toks)).max())
    c.check(d_ema_golden > 1e-3 and d_ema_np <= TOL[short]
            and ema_info["meta"]["glimpse.params_tree"] == "params_ema"
            and ema_info["meta"]["glimpse.source_checkpoint"].endswith("/params_ema"),
            f"{short}: params_ema differs from the golden params outputs by {d_ema_golden:.3f} and matches "
            f"a float64 forward of the EMA arrays within {d_ema_np:.2e}")
    # fp16.
    fp16, _ = convert(root, None, precision="fp16", log=None)
    d16 = float(np.abs(run_onnx(fp16, toks) - got).max())
    c.check(d16 <= FP16_TOL, f"{short}: fp16 export, max |fp16 - fp32| = {d16:.2e} (bound {FP16_TOL})")
    return path


def expect_error(c: Checks, what: str, needle: str, fn):
    try:
        fn()
    except CheckpointError as e:
        msg = str(e)
        c.check(needle.lower() in msg.lower(), f"refuses {what}: {msg[:150]}…")
        return
    c.check(False, f"refuses {what}: no error raised")


def check_refusals(c: Checks, gdir: str):
    print("layouts")
    tmp = tempfile.mkdtemp(prefix="glimpse-convert-test-")
    try:
        tiny = ModelConfig(kind=KIND_AV, layers=1, dim=32, heads=4)
        write(tmp, "9M_state_value", tiny, flax=True, log=None)
        expect_error(c, "a Flax-style tree", "Flax-style", lambda: convert(os.path.join(tmp, "9M_state_value"),
                                                                          None, log=None))
        # AV and SV share shapes: a directory name that says nothing needs KIND=.
        shutil.copytree(os.path.join(gdir, "tiny_sv_checkpoint", "tiny_state_value"), os.path.join(tmp, "mystery"))
        expect_error(c, "an AV/SV-ambiguous checkpoint without KIND", "KIND=",
                     lambda: convert(os.path.join(tmp, "mystery"), None, log=None))
        _, info = convert(os.path.join(tmp, "mystery"), None, kind="sv", heads=4, log=None)
        c.check(info["cfg"].kind == KIND_SV, "accepts it with KIND=sv")
        expect_error(c, "KIND=bc on a 128-wide head", "outputs",
                     lambda: convert(os.path.join(tmp, "mystery"), None, kind="bc", log=None))
        # Other Orbax storage variants (per-leaf directories without OCDBT; zarr v3) read the same arrays.
        import jax
        import orbax.checkpoint as ocp

        logging.getLogger("absl").setLevel(logging.ERROR)  # "Skipping merge of OCDBT checkpoints" (no OCDBT)

        ref = load_npz_params(os.path.join(gdir, "tiny_av_params.npz"), "params")
        for ocdbt, zarr3 in ((False, False), (True, True)):
            d = os.path.join(tmp, f"variant_{int(ocdbt)}{int(zarr3)}", "6400000", "params")
            ocp.Checkpointer(ocp.PyTreeCheckpointHandler(use_ocdbt=ocdbt, use_zarr3=zarr3)).save(
                d, jax.tree_util.tree_map(jax.numpy.asarray, nest(ref)))
            got, info = read_item(d)
            c.check(set(got) == set(ref) and all(np.array_equal(got[k], ref[k]) for k in ref),
                    f"reads an Orbax item written with use_ocdbt={ocdbt}, use_zarr3={zarr3} ({info['format']})")
        expect_error(c, "a directory without checkpoints", "not an Orbax checkpoint",
                     lambda: convert(gdir, None, log=None))
        expect_error(c, "a missing step", "step 5 not found",
                     lambda: convert(os.path.join(tmp, "mystery"), None, kind="sv", step=5, log=None))
        # The step directory and the params directory are accepted as well as the model directory.
        for sub in ("6400000", "6400000/params"):
            _, info = convert(os.path.join(tmp, "mystery", sub), None, kind="sv", heads=4, log=None)
            c.check(info["located"].relative == "mystery/6400000/params", f"accepts the {sub} directory")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def find_engine(repo: str) -> tuple[str | None, str]:
    exe = os.path.join(repo, "target", "release", "glimpse")
    if not os.path.isfile(exe):
        return None, f"{exe} not built (make build)"
    libs = [os.path.join(repo, "target", "release"), os.path.join(repo, "lib")]
    if not os.environ.get("ORT_DYLIB_PATH") and not any(
            f.startswith("libonnxruntime.so") for d in libs if os.path.isdir(d) for f in os.listdir(d)):
        return None, "ONNX Runtime library missing (make ort)"
    return exe, ""


def check_engine(c: Checks, gdir: str, exe: str, models: dict[str, str]):
    class Lines(logging.Handler):
        """Collects what the engine printed (python-chess logs each line it reads at DEBUG)."""

        def __init__(self):
            super().__init__(logging.DEBUG)
            self.lines: list[str] = []

        def emit(self, record):
            self.lines.append(record.getMessage())

    print(f"engine: {exe}")
    log = logging.getLogger("chess.engine")
    for short, path in models.items():
        lines = Lines()
        log.addHandler(lines)
        log.setLevel(logging.DEBUG)
        log.propagate = False
        eng = chess.engine.SimpleEngine.popen_uci([exe], timeout=60)
        try:
            eng.configure({"WeightsFile": os.path.abspath(path)})
            eng.ping()
            loaded = [m for m in lines.lines if "info string loaded" in m and os.path.abspath(path) in m]
            c.check(bool(loaded), f"{short}: engine reports loading {os.path.basename(path)}"
                    + (f": {loaded[0].split('info string ', 1)[1][:90]}" if loaded else ""))
            with open(os.path.join(gdir, f"tiny_{short}_outputs.jsonl")) as f:
                for line in f:
                    r = json.loads(line)
                    if r["kind"] != "position":
                        continue
                    board = chess.Board(r["start_fen"])
                    for u in r["history_uci"]:
                        board.push_uci(u)
                    if board.fen() != r["fen"]:
                        c.check(False, f"{short} {r['name']}: replayed history gives {board.fen()}")
                        continue
                    res = eng.play(board, chess.engine.Limit(time=30))
                    got = res.move.uci() if res.move else None
                    c.check(got == r["engine_chosen_move"],
                            f"{short} {r['name']}: engine plays {got}, reference {r['engine_chosen_move']}"
                            + (f" (after {len(r['history_uci'])} plies of history)" if r["history_uci"] else ""))
        finally:
            eng.quit()
            log.removeHandler(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="../target/test-models/convert")
    ap.add_argument("--repo", default="..", help="repository root (for target/release/glimpse)")
    ap.add_argument("--require-engine", action="store_true", help="fail when the engine cannot be run")
    a = ap.parse_args(argv)
    gdir = os.path.join(a.shared, "golden")
    os.makedirs(a.out, exist_ok=True)
    c = Checks()
    models = {short: check_golden(c, gdir, short, a.out) for short in SHORT}
    check_refusals(c, gdir)
    exe, why = find_engine(a.repo)
    if exe:
        check_engine(c, gdir, exe, models)
    elif a.require_engine:
        c.check(False, f"engine check: {why}")
    else:
        print(f"engine check skipped: {why}")
    print(f"test-convert: {c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
