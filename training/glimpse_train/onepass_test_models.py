"""Test fixture for the engine: a tiny random-weight one-pass model and JAX reference outputs.

Writes ``<out>/tiny_mav.onnx`` (kind ``multi_action_value``, L=2 D=32 H=2, head 32/64, value head; fixed
seed, non-degenerate random weights from ``onepass_model.perturbed_params``) and
``<out>/tiny_mav_reference.json``: for each of a few positions its FEN (python-chess ``board.fen()``), the
78 input tokens, the legal moves in ascending action id with their ids, the JAX log-probs [M, K] and
value log-probs [K], the expected win probabilities and the move the AV policy chooses (mate in one first,
else argmax of the expected win probability, ties → lowest action id) with its margin over the runner-up.
The ONNX file is checked against JAX (≤ 1e-4), the float64 numpy forward, and with extra padded actions
(the real moves' outputs must not change); exits 1 on a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import chess
import numpy as np

from .chessdata import BUCKET_CENTRES, MOVE_TO_ACTION, tokenize
from .onepass_export import export
from .onepass_model import MAVConfig, jax_forward, numpy_forward, perturbed_params
from .onnx_export import ort_session

CONFIG = MAVConfig(layers=2, dim=32, heads=2, head_dim=32, head_hidden=64, value_head=True)
SEED = 2024
FENS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "8/4P3/8/8/8/2k5/8/4K3 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "4k3/8/4K3/4P3/8/8/8/8 w - - 0 1",
]
TOL = 1e-4


def reference(params, cfg: MAVConfig, fens: list[str]) -> list[dict]:
    import jax.numpy as jnp

    jp = {k: jnp.asarray(v) for k, v in params.items()}
    recs = []
    for fen in fens:
        board = chess.Board(fen)
        fen = board.fen()
        moves = sorted(board.legal_moves, key=lambda m: MOVE_TO_ACTION[m.uci()])
        acts = [MOVE_TO_ACTION[m.uci()] for m in moves]
        tokens = [0] + tokenize(fen).astype(int).tolist()
        lp, val = jax_forward(jp, cfg, jnp.asarray([tokens], jnp.int32), jnp.asarray([acts], jnp.int32))
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


def run(out_dir: str) -> bool:
    os.makedirs(out_dir, exist_ok=True)
    params = perturbed_params(CONFIG, SEED)
    path = os.path.join(out_dir, "tiny_mav.onnx")
    export(params, CONFIG, path, description="tiny random-weight multi_action_value test model (seed 2024)")
    recs = reference(params, CONFIG, FENS)
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
        ref64, _ = numpy_forward(params, CONFIG, tok, act)
        worst_np = max(worst_np, float(np.abs(ref64[0] - want).max()))
        padded = np.concatenate([act, rng.integers(0, 1968, (1, 5))], axis=1)
        got_pad = sess.run(["log_probs"], {"tokens": tok, "actions": padded})[0]
        worst_pad = max(worst_pad, float(np.abs(got_pad[0, : act.shape[1]] - got[0]).max()))
    with open(os.path.join(out_dir, "tiny_mav_reference.json"), "w") as f:
        json.dump({"model": "tiny_mav.onnx", "config": CONFIG.__dict__ | {"kind": CONFIG.kind}, "seed": SEED,
                   "tolerance": TOL, "positions": recs}, f)
    ok = worst <= TOL and worst_np <= TOL and worst_pad <= 1e-6
    print(f"tiny_mav: {len(recs)} positions, max |ORT - JAX| = {worst:.3g}, |JAX - numpy64| = {worst_np:.3g}, "
          f"padding changes real moves by {worst_pad:.3g}; smallest chosen-move margin "
          f"{min(r['margin'] for r in recs if not r['mate_in_one']):.3g} -> {'OK' if ok else 'FAIL'} ({path})")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="../target/test-models")
    a = ap.parse_args(argv)
    sys.exit(0 if run(a.out) else 1)


if __name__ == "__main__":
    main()
