"""Accuracy of ``PRECISION=fp16`` exports against fp32, measured with CPU onnxruntime.

For each model pair (fp32, fp16) it reports, over every network row it evaluates:
max and mean |Δ log-prob|, max |Δ expected win probability| (AV/SV), and the share of positions
whose chosen move (the reference policy: AV argmax of expected value, SV argmin of the opponent's
expected value after the move, BC argmax of log-prob; ties to the lowest action id; no repetition
rule, positions have no history) differs between the two.

Position sets: the golden records (``golden/tiny_*_outputs.jsonl``: 64 single/pair records plus the
5 analysed positions) and the first ``--positions`` positions of ``data/labels/*.tsv.gz``.

Models: the golden tiny AV/SV/BC checkpoints (trained weights, converted both ways here) and any
``--pair NAME:FP32.onnx:FP16.onnx`` given (e.g. the random-weight 9M net; its chosen moves depend
on near-ties of random outputs, so only its Δ log-prob is informative).

Usage: ``python -m glimpse_train.fp16_report --shared ../shared [--positions 3000] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import gzip
import glob
import json
import os
import sys
import time

import chess
import numpy as np

from .chessdata import BUCKET_CENTRES as CENTRES
from .chessdata import tokenize as tokenize_array
from .convert import convert
from .kinds.action_value import KIND_AV, KIND_BC, KIND_SV
from .onnx_graph import ort_session
from .test_models import golden_cases

def tokenize(fen: str) -> list[int]:
    """77 token ids of a FEN as a list (``chessdata.tokenize``; checked against golden/tokenizer_golden.jsonl)."""
    return tokenize_array(fen).tolist()


def check_tokenizer(gdir: str) -> int:
    n = 0
    for line in open(os.path.join(gdir, "tokenizer_golden.jsonl")):
        r = json.loads(line)
        if tokenize(r["fen"]) != r["tokens"]:
            raise AssertionError(f"tokenizer disagrees with golden on {r['fen']}")
        n += 1
    return n


def load_positions(shared: str, n: int) -> list[str]:
    fens = []
    for f in sorted(glob.glob(os.path.join(shared, "data", "labels", "*.tsv.gz"))):
        with gzip.open(f, "rt") as fh:
            for line in fh:
                fens.append(line.split("\t", 1)[0])
                if len(fens) >= n:
                    return fens
    return fens


class Runner:
    def __init__(self, model, threads: int = 0):
        self.sess = ort_session(model if isinstance(model, str) else model.SerializeToString(), threads)

    def __call__(self, toks: np.ndarray, batch: int = 512) -> np.ndarray:
        return np.concatenate([self.sess.run(["log_probs"], {"tokens": toks[i:i + batch]})[0]
                               for i in range(0, len(toks), batch)])


def position_rows(kind: str, fens: list[str], actions: dict[str, int]):
    """(token rows, per-position row slices, per-position legal action ids) for the policy's evaluation."""
    rows, spans, acts = [], [], []
    for fen in fens:
        b = chess.Board(fen)
        moves = sorted(b.legal_moves, key=lambda m: actions[m.uci()])
        ids = [actions[m.uci()] for m in moves]
        start = len(rows)
        if kind == KIND_AV:
            t = tokenize(b.fen())
            rows += [[0] + t + [a] for a in ids]
        elif kind == KIND_SV:
            for m in moves:
                b.push(m)
                rows.append([0] + tokenize(b.fen()))
                b.pop()
        else:
            rows.append([0] + tokenize(b.fen()))
        spans.append((start, len(rows)))
        acts.append(ids)
    return np.asarray(rows, np.int64), spans, acts


def choose(kind: str, lp: np.ndarray, spans, acts) -> list[int]:
    """Chosen action id per position (first maximum in action order)."""
    out = []
    for (s, e), ids in zip(spans, acts):
        if kind == KIND_AV:
            out.append(ids[int(np.argmax(np.exp(lp[s:e]) @ CENTRES))])
        elif kind == KIND_SV:
            # Mover's value = 1 - opponent's expected value; argmax of it = argmin of the opponent's.
            out.append(ids[int(np.argmax(1.0 - np.exp(lp[s:e]) @ CENTRES))])
        else:
            out.append(ids[int(np.argmax(lp[s, ids]))])
    return out


def compare(kind: str, r32: Runner, r16: Runner, toks: np.ndarray) -> dict:
    t0 = time.time()
    a = r32(toks)
    t32 = time.time() - t0
    t0 = time.time()
    b = r16(toks)
    t16 = time.time() - t0
    d = np.abs(a.astype(np.float64) - b)
    res = {"rows": int(len(toks)), "max_dlogp": float(d.max()), "mean_dlogp": float(d.mean()),
           "fp32_s": t32, "fp16_s": t16, "a": a, "b": b}
    if kind != KIND_BC:
        res["max_dvalue"] = float(np.abs(np.exp(a) @ CENTRES - np.exp(b) @ CENTRES).max())
    return res


def report_pair(name: str, kind: str, m32, m16, gdir: str | None, short: str | None, fens: list[str],
                actions: dict[str, int], threads: int) -> list[dict]:
    r32, r16 = Runner(m32, threads), Runner(m16, threads)
    out = []
    if gdir and short:
        cases = list(golden_cases(os.path.join(gdir, f"tiny_{short}_outputs.jsonl"), short))
        toks = np.asarray([c[0] for c in cases], np.int64)
        res = compare(kind, r32, r16, toks)
        # Golden positions' chosen moves (the 5 analysed records).
        pos = [json.loads(line) for line in open(os.path.join(gdir, f"tiny_{short}_outputs.jsonl"))]
        pos = [p for p in pos if p["kind"] == "position"]  # history ignored: no repetition rule on either side
        ptoks, spans, acts = position_rows(kind, [p["fen"] for p in pos], actions)
        c32 = choose(kind, r32(ptoks), spans, acts)
        c16 = choose(kind, r16(ptoks), spans, acts)
        res.update(set=f"golden ({len(cases)} records, {len(pos)} positions)", positions=len(pos),
                   changed=int(sum(x != y for x, y in zip(c32, c16))))
        out.append(dict(model=name, kind=kind, **{k: v for k, v in res.items() if k not in "ab"}))
    if fens:
        toks, spans, acts = position_rows(kind, fens, actions)
        res = compare(kind, r32, r16, toks)
        c32 = choose(kind, res["a"], spans, acts)
        c16 = choose(kind, res["b"], spans, acts)
        res.update(set=f"labels ({len(fens)} positions)", positions=len(fens),
                   changed=int(sum(x != y for x, y in zip(c32, c16))))
        out.append(dict(model=name, kind=kind, **{k: v for k, v in res.items() if k not in "ab"}))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--positions", type=int, default=3000)
    ap.add_argument("--pair", action="append", default=[], help="NAME:KIND:FP32.onnx:FP16.onnx[:POSITIONS]")
    ap.add_argument("--no-golden", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    gdir = os.path.join(a.shared, "golden")
    print(f"tokenizer: {check_tokenizer(gdir)} golden FENs agree", flush=True)
    actions = {line.strip(): i for i, line in enumerate(open(os.path.join(gdir, "actions.txt")))}
    fens = load_positions(a.shared, a.positions)
    rows = []
    if not a.no_golden:
        for short, kind in (("av", KIND_AV), ("sv", KIND_SV), ("bc", KIND_BC)):
            root = os.path.join(gdir, f"tiny_{short}_checkpoint")
            m32, _ = convert(root, None, log=None)
            m16, _ = convert(root, None, precision="fp16", log=None)
            rows += report_pair(f"tiny {short} (golden)", kind, m32, m16, gdir, short, fens, actions, a.threads)
            print(f"done tiny {short}", flush=True)
    for spec in a.pair:
        parts = spec.split(":")
        name, kind, p32, p16 = parts[:4]
        n = int(parts[4]) if len(parts) > 4 else len(fens)
        rows += report_pair(name, {"av": KIND_AV, "sv": KIND_SV, "bc": KIND_BC}[kind], p32, p16, None, None,
                            fens[:n], actions, a.threads)
        print(f"done {name}", flush=True)
    print()
    print("| model | position set | rows | max abs Δ log-prob | mean abs Δ log-prob | max abs Δ win prob "
          "| chosen move changed | fp32 / fp16 CPU time |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        dv = f"{r['max_dvalue']:.2e}" if "max_dvalue" in r else "—"
        print(f"| {r['model']} | {r['set']} | {r['rows']} | {r['max_dlogp']:.2e} | {r['mean_dlogp']:.2e} | {dv} "
              f"| {r['changed']}/{r['positions']} ({100 * r['changed'] / max(1, r['positions']):.2f} %) "
              f"| {r['fp32_s']:.1f} s / {r['fp16_s']:.1f} s |")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
