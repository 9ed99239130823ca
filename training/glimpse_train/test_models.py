"""Test models for the engine (``make test-models``), one section per model kind, written to ``--out``.

* ``action_value`` and its reference siblings: the golden tiny reference checkpoints (npz, ``params``
  tree) → ONNX, verified. For each of AV/SV/BC: ``<shared>/golden/tiny_<k>_params.npz`` →
  ``<out>/tiny_<k>.onnx``; the number of heads comes from ``tiny_<k>_config.json``. Every golden log-prob
  record in ``tiny_<k>_outputs.jsonl`` (the 64 single/pair records and every per-move record of the 5
  position records) is run through onnxruntime and compared (max abs diff ≤ 1e-4, 2e-4 for BC).
* ``multi_action_value``: ``<out>/tiny_mav.onnx`` (L=2 D=32 H=2, head 32/64, value head; fixed seed,
  non-degenerate random weights from ``perturbed_params``) and ``<out>/tiny_mav_reference.json``: for each
  of a few positions its FEN (python-chess ``board.fen()``), the 78 input tokens, the legal moves in
  ascending action id with their ids, the JAX log-probs [M, K] and value log-probs [K], the expected win
  probabilities and the move the AV policy chooses (mate in one first, else argmax of the expected win
  probability, ties → lowest action id) with its margin over the runner-up. The ONNX file is checked
  against JAX (≤ 1e-4), the float64 numpy forward, and with extra padded actions (the real moves' outputs
  must not change).

Exits 1 on a failure. ``--kinds`` picks sections (default: all).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import chess
import numpy as np

from .chessdata import BUCKET_CENTRES, MOVE_TO_ACTION, tokenize
from .kinds import action_value as av
from .kinds import multi_action_value as mav
from .onnx_graph import ort_session

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).

# ---------------------------------------------------------------------------------------------- action value
SHORT_KINDS = {"av": av.KIND_AV, "sv": av.KIND_SV, "bc": av.KIND_BC}
TOL = {"av": 1e-4, "sv": 1e-4, "bc": 2e-4}


def golden_cases(path: str, short: str):
    """Yield (embedding_input, expected log-probs) for every golden record."""
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["kind"] in ("pair", "single"):
                yield r["embedding_input"], r["log_probs"]
            elif r["kind"] == "position":
                if short == "av":
                    for m in r["per_move"]:
                        yield m["embedding_input"], m["log_probs"]
                elif short == "sv":
                    cur = r["current"]
                    yield cur.get("embedding_input", [0] + cur["predict_input"][:-1]), cur["log_probs"]
                    for m in r["per_move"]:
                        yield m["embedding_input"], m["next_log_probs_raw"]
                else:
                    yield r["embedding_input"], r["log_probs_all_actions"]


def run_golden(shared: str, out_dir: str) -> bool:
    os.makedirs(out_dir, exist_ok=True)
    ok = True
    for short, kind in SHORT_KINDS.items():
        gdir = os.path.join(shared, "golden")
        cfg_json = json.load(open(os.path.join(gdir, f"tiny_{short}_config.json")))
        heads = int(cfg_json["transformer_config"]["num_heads"])
        params = av.load_npz_params(os.path.join(gdir, f"tiny_{short}_params.npz"), "params")
        cfg = av.infer_config(params, kind, heads)
        path = os.path.join(out_dir, f"tiny_{short}.onnx")
        av.export(params, cfg, path, description=f"golden tiny {kind} (searchless_chess reference, params tree)")
        cases = list(golden_cases(os.path.join(gdir, f"tiny_{short}_outputs.jsonl"), short))
        toks = np.asarray([c[0] for c in cases], np.int64)
        want = np.asarray([c[1] for c in cases], np.float64)
        sess = ort_session(path)
        got = sess.run(["log_probs"], {"tokens": toks})[0]
        # batch-1 run must agree too (dynamic batch)
        got1 = sess.run(["log_probs"], {"tokens": toks[:1]})[0]
        ref = av.numpy_forward(params, cfg, toks)
        diff = float(np.abs(got - want).max())
        diff_np = float(np.abs(ref - want).max())
        diff_b1 = float(np.abs(got1[0] - got[0]).max())
        good = diff <= TOL[short] and diff_b1 <= 1e-5 and got.dtype == np.float32 and got.shape == want.shape
        ok &= good
        print(f"tiny_{short}: {len(cases)} golden records, L={cfg.layers} D={cfg.dim} H={cfg.heads} K={cfg.out_size}; "
              f"max |ORT - golden| = {diff:.3g} (tol {TOL[short]:g}), numpy64 ref {diff_np:.3g}, "
              f"batch-1 vs batch {diff_b1:.3g} -> {'OK' if good else 'FAIL'} ({path})")
    return ok


# ---------------------------------------------------------------------------------------------- one-pass
MAV_CONFIG = mav.MAVConfig(layers=2, dim=32, heads=2, head_dim=32, head_hidden=64, value_head=True)
MAV_SEED = 2024
MAV_FENS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "8/4P3/8/8/8/2k5/8/4K3 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "4k3/8/4K3/4P3/8/8/8/8 w - - 0 1",
]
MAV_TOL = 1e-4


def reference(params, cfg: mav.MAVConfig, fens: list[str]) -> list[dict]:
    import jax.numpy as jnp

    jp = {k: jnp.asarray(v) for k, v in params.items()}
    recs = []
    for fen in fens:
        board = chess.Board(fen)
        fen = board.fen()
        moves = sorted(board.legal_moves, key=lambda m: MOVE_TO_ACTION[m.uci()])
        acts = [MOVE_TO_ACTION[m.uci()] for m in moves]
        tokens = [0] + tokenize(fen).astype(int).tolist()
        lp, val = mav.jax_forward(jp, cfg, jnp.asarray([tokens], jnp.int32), jnp.asarray([acts], jnp.int32))
        lp = np.asarray(lp)[0]
        ev = np.exp(lp.astype(np.float64)) @ BUCKET_CENTRES
        mates = []
        for i, m in enumerate(moves):
            board.push(m)
            if board.is_checkmate():
                mates.append(i)
            board.pop()
        order = np.argsort(-ev, kind="stable")
        chosen = mates[0] if mates else int(np.argmax(ev))
        recs.append({
            "fen": fen, "tokens": tokens, "moves": [m.uci() for m in moves], "actions": acts,
            "log_probs": lp.tolist(), "value_log_probs": np.asarray(val)[0].tolist(),
            "expected_win_prob": ev.tolist(), "chosen_move": moves[chosen].uci(),
            "mate_in_one": bool(mates), "margin": float(ev[order[0]] - ev[order[1]]) if len(moves) > 1 else 1.0,
        })
    return recs


def run_mav(shared: str, out_dir: str) -> bool:
    os.makedirs(out_dir, exist_ok=True)
    params = mav.perturbed_params(MAV_CONFIG, MAV_SEED)
    path = os.path.join(out_dir, "tiny_mav.onnx")
    mav.export(params, MAV_CONFIG, path, description="tiny random-weight multi_action_value test model (seed 2024)")
    recs = reference(params, MAV_CONFIG, MAV_FENS)
    sess = ort_session(path)
    worst = worst_np = worst_pad = 0.0
    rng = np.random.default_rng(0)
    for r in recs:
        tok = np.asarray([r["tokens"]], np.int64)
        act = np.asarray([r["actions"]], np.int64)
        got, val = sess.run(["log_probs", "value"], {"tokens": tok, "actions": act})
        want = np.asarray(r["log_probs"])
        worst = max(worst, float(np.abs(got[0] - want).max()),
                    float(np.abs(val[0] - np.asarray(r["value_log_probs"])).max()))
        ref64, _ = mav.numpy_forward(params, MAV_CONFIG, tok, act)
        worst_np = max(worst_np, float(np.abs(ref64[0] - want).max()))
        padded = np.concatenate([act, rng.integers(0, 1968, (1, 5))], axis=1)
        got_pad = sess.run(["log_probs"], {"tokens": tok, "actions": padded})[0]
        worst_pad = max(worst_pad, float(np.abs(got_pad[0, : act.shape[1]] - got[0]).max()))
    with open(os.path.join(out_dir, "tiny_mav_reference.json"), "w") as f:
        json.dump({"model": "tiny_mav.onnx", "config": MAV_CONFIG.__dict__ | {"kind": MAV_CONFIG.kind}, "seed": MAV_SEED,
                   "tolerance": MAV_TOL, "positions": recs}, f)
    ok = worst <= MAV_TOL and worst_np <= MAV_TOL and worst_pad <= 1e-6
    print(f"tiny_mav: {len(recs)} positions, max |ORT - JAX| = {worst:.3g}, |JAX - numpy64| = {worst_np:.3g}, "
          f"padding changes real moves by {worst_pad:.3g}; smallest chosen-move margin "
          f"{min(r['margin'] for r in recs if not r['mate_in_one']):.3g} -> {'OK' if ok else 'FAIL'} ({path})")
    return ok


# The campaign's architecture in miniature: side-to-move frame, attention bias, global head input, and the policy
# and WDL heads that make it a ``multi_action_value_policy`` net.
MAVP_CONFIG = mav.MAVConfig(layers=2, dim=32, heads=2, head_dim=32, head_hidden=64, value_head=True, attn_bias=True,
                            head_global=True, canonical=True, policy_dim=16, wdl_head=True)
MAVP_SEED = 2025


def run_mavp(shared: str, out_dir: str) -> bool:
    """``tiny_mavp.onnx`` + ``tiny_mavp_reference.json``: the float64 numpy reference of every output (log_probs,
    policy logits, WDL log-probs) for ``MAV_FENS``; checks ORT against it and the exported kind."""
    os.makedirs(out_dir, exist_ok=True)
    params = mav.perturbed_params(MAVP_CONFIG, MAVP_SEED)
    rng = np.random.default_rng(MAVP_SEED)
    for name in params:  # perturbed_params leaves the optional heads at their init: give them weight
        if name.startswith(("policy_head/", "wdl_head/")):
            params[name] = (params[name] + rng.normal(0, 0.5, params[name].shape)).astype(np.float32)
    path = os.path.join(out_dir, "tiny_mavp.onnx")
    model = mav.export(params, MAVP_CONFIG, path, description="tiny random-weight multi_action_value_policy test model")
    kind = {p.key: p.value for p in model.metadata_props}["glimpse.kind"]
    sess = ort_session(path)
    recs, worst = [], 0.0
    for fen in MAV_FENS:
        board = chess.Board(fen)
        moves = sorted(board.legal_moves, key=lambda m: MOVE_TO_ACTION[m.uci()])
        acts = [MOVE_TO_ACTION[m.uci()] for m in moves]
        tokens = [0] + tokenize(board.fen()).astype(int).tolist()
        tok, act = np.asarray([tokens], np.int64), np.asarray([acts], np.int64)
        ref = mav.numpy_outputs(params, MAVP_CONFIG, tok, act)
        got = dict(zip(["log_probs", "policy", "wdl"], sess.run(["log_probs", "policy", "wdl"], {"tokens": tok, "actions": act})))
        worst = max(worst, *(float(np.abs(got[k][0] - ref[k][0]).max()) for k in got))
        pol = ref["policy"][0] - ref["policy"][0].max()
        prior = np.exp(pol) / np.exp(pol).sum()
        recs.append({"fen": board.fen(), "moves": [m.uci() for m in moves],
                     "expected_win_prob": (np.exp(ref["log_probs"][0]) @ BUCKET_CENTRES).tolist(),
                     "prior": prior.tolist(), "wdl": np.exp(ref["wdl"][0]).tolist(),
                     "policy_best": moves[int(np.argmax(prior))].uci()})
    with open(os.path.join(out_dir, "tiny_mavp_reference.json"), "w") as f:
        json.dump({"model": "tiny_mavp.onnx", "kind": kind, "seed": MAVP_SEED, "tolerance": MAV_TOL,
                   "positions": recs}, f)
    ok = worst <= MAV_TOL and kind == mav.KIND_MAVP
    print(f"tiny_mavp: {len(recs)} positions, kind {kind}, max |ORT - numpy64| over log_probs/policy/wdl = "
          f"{worst:.3g} -> {'OK' if ok else 'FAIL'} ({path})")
    return ok


SECTIONS = {av.KIND_AV: run_golden, mav.KIND_MAV: run_mav, mav.KIND_MAVP: run_mavp}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="../target/test-models")
    ap.add_argument("--kinds", nargs="*", default=list(SECTIONS), choices=list(SECTIONS))
    a = ap.parse_args(argv)
    ok = True
    for k in a.kinds:
        ok &= SECTIONS[k](a.shared, a.out)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
