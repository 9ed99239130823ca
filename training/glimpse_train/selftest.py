"""Fast checks of the training pipeline (``make test-training``); plain asserts, no pytest.

1. tokenizer vs every record of ``golden/tokenizer_golden.jsonl`` (the exact string, and
   ``tokens_of_board_fen`` for python-chess's ``board.fen()``), legal-move action ids, rejected FENs;
2. action table vs ``golden/actions.txt`` and the spot checks of the conventions;
3. label parsing, cp → win prob → bucket maths, HL-Gauss targets;
4. smoke training of a few steps on a tiny dataset, resume, export to ONNX and ORT-vs-JAX check,
   and the evaluation helpers.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import sys
import tempfile
import time

import chess
import numpy as np

from .chessdata import (ACTIONS, BUCKET_CENTRES, MOVE_TO_ACTION, bucket_of, canonical_fen, parse_score, tokenize,
                        win_prob)

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def tokenizer_golden(shared):
    n = 0
    with open(os.path.join(shared, "golden", "tokenizer_golden.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            assert tokenize(r["fen"]).tolist() == r["tokens"], r["id"]
            assert canonical_fen(r["fen"]) == r["board_fen"] or "python_chess_status" in r, r["id"]
            want_canon = r.get("tokens_of_board_fen", r["tokens"])
            if "python_chess_status" not in r:
                assert tokenize(canonical_fen(r["fen"])).tolist() == want_canon, r["id"]
            board = chess.Board(r["fen"])
            moves = {m.uci(): MOVE_TO_ACTION[m.uci()] for m in board.legal_moves}
            assert moves == r["moves"], r["id"]
            n += 1
    with open(os.path.join(shared, "golden", "tokenizer_errors.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            try:
                tokenize(r["fen"])
            except ValueError:
                continue
            raise AssertionError(f"tokenizer accepted {r['fen']!r}")
    vocab = json.load(open(os.path.join(shared, "golden", "tokenizer_vocab.json")))
    chars = vocab.get("vocab") or vocab.get("characters") or vocab.get("index_to_char")
    if isinstance(chars, list):
        from .chessdata import VOCAB_CHARS

        assert "".join(chars) == VOCAB_CHARS
    return f"{n} golden FENs"


@check
def action_table(shared):
    want = open(os.path.join(shared, "golden", "actions.txt")).read().split()
    assert ACTIONS == want, "action table differs from actions.txt"
    spots = {"a1b1": 0, "e1c1": 99, "e1g1": 102, "g1f3": 169, "e2e4": 317, "e8c8": 1711, "e8g8": 1714,
             "a2a1q": 1792, "a7a8q": 1880, "e7e8q": 1924, "h7g8n": 1967, "a7a8": 1399}
    for m, i in spots.items():
        assert MOVE_TO_ACTION[m] == i, m
    return "1968 actions"


@check
def label_maths(shared):
    from .data import parse_line, score_key
    from .train import soft_targets

    assert abs(win_prob(0) - 0.5) < 1e-12
    assert abs(win_prob(100) - 1 / (1 + math.exp(-0.368208))) < 1e-12
    assert parse_score("M3") == 1.0 and parse_score("M-1") == 0.0
    # inverse formula round trip
    for cp in (-900, -35, 0, 12, 480):
        p = win_prob(cp)
        assert abs(math.log(p / (1 - p)) / 0.00368208 - cp) < 1e-6
    # bucket = searchsorted(edges, p, 'left'): an exact edge belongs to the lower bucket
    assert bucket_of(0.0) == 0 and bucket_of(1.0) == 127 and bucket_of(0.5) == 63
    assert bucket_of(1 / 128) == 0 and bucket_of(1 / 128 + 1e-9) == 1 and bucket_of(0.999) == 127
    assert abs(BUCKET_CENTRES[0] - 0.5 / 128) < 1e-15 and abs(BUCKET_CENTRES[-1] - 127.5 / 128) < 1e-15
    assert int(bucket_of(win_prob(0))) == 63
    fen, moves = parse_line("8/8/8/8/8/8/6k1/4K2R w K - 0 1\te1g1=M2 h1h2=-35 e1d1=0\n")
    assert fen.endswith("0 1") and moves[0] == ("e1g1", "M2") and moves[1] == ("h1h2", "-35")
    assert score_key("M1") > score_key("M2") > score_key("9000") > score_key("-9000") > score_key("M-2") > score_key("M-1")
    t = soft_targets(np.asarray([0.5, 0.0, 1.0, 0.3]), 128, 0.75)
    assert t.shape == (4, 128) and np.allclose(t.sum(1), 1, atol=1e-6)
    assert t[0].argmax() in (63, 64) and t[1].argmax() == 0 and t[2].argmax() == 127
    h = soft_targets(np.asarray([0.3]), 128, 0.0)
    assert h[0, int(bucket_of(0.3))] == 1.0 and h.sum() == 1.0
    # first line of the shared labels parses and covers every legal move
    lf = os.path.join(shared, "data", "labels")
    files = sorted(x for x in os.listdir(lf) if x.endswith(".tsv.gz"))
    with gzip.open(os.path.join(lf, files[0]), "rt") as f:
        fen, moves = parse_line(f.readline())
    assert {m for m, _ in moves} == {m.uci() for m in chess.Board(fen).legal_moves}
    return "cp/mate → win prob → bucket"


@check
def smoke_train_export(shared):
    from .data import build_dataset, Dataset, label_files
    from .evaluate import AVPolicy, eval_validation, kendall_tau_b
    from .export import load_run, verify
    from .onnx_export import export
    from .train import Trainer, TrainConfig

    tmp = tempfile.mkdtemp(prefix="glimpse-selftest-")
    try:
        build_dataset(label_files(shared)[:1], os.path.join(tmp, "data"), max_positions=150, log=lambda *_: None)
        ds = Dataset(os.path.join(tmp, "data"))
        assert len(ds.val_rows) > 0 and len(ds.train_rows) > 10 * len(ds.val_rows)
        tok = ds.tokens(ds.train_rows[:3])
        assert tok.shape == (3, 79) and (tok[:, 0] == 0).all()
        cfg = TrainConfig(layers=1, dim=32, heads=2, batch=32, steps=12, lr=3e-3, warmup=2, eval_every=6,
                          eval_rows=64, ckpt_seconds=1e9)
        run = os.path.join(tmp, "run")
        os.makedirs(run)
        json.dump(cfg.__dict__, open(os.path.join(run, "config.json"), "w"))
        tr = Trainer(cfg, run, ds, log=lambda *_: None)
        cfg.steps = 6
        st = tr.run()
        assert st["step"] == 6 and os.path.exists(os.path.join(run, "ckpt.pkl"))
        cfg.steps = 12
        st = tr.run()  # resumes from the checkpoint just written
        assert st["step"] == 12
        recs = [json.loads(x) for x in open(os.path.join(run, "log.jsonl"))]
        assert [r["step"] for r in recs] == [6, 12] and all(np.isfinite(r["val_loss"]) for r in recs)
        params, mcfg, step = load_run(run)
        assert step == 12
        path = os.path.join(tmp, "m.onnx")
        model = export(params, mcfg, path)
        meta = {p.key: p.value for p in model.metadata_props}
        assert meta["glimpse.kind"] == "action_value" and meta["glimpse.buckets"] == "128"
        assert int(meta["glimpse.params"]) == sum(v.size for v in params.values())
        assert float(meta["glimpse.gflop_per_eval"]) > 0
        diff = verify(params, mcfg, path, ds.tokens(ds.val_rows[:64]))
        assert diff < 1e-4, diff
        # the last-layer optimisation must not change outputs
        path2 = os.path.join(tmp, "m_full.onnx")
        export(params, mcfg, path2, optimise_last_layer=False)
        diff2 = verify(params, mcfg, path2, ds.tokens(ds.val_rows[:64]))
        assert diff2 < 1e-4, diff2
        pol = AVPolicy(path)
        rep = eval_validation(pol, ds)
        assert 0 <= rep["action_accuracy"] <= 1 and -1 <= rep["kendall_tau"] <= 1
        mv = pol.choose(chess.Board())
        assert mv in chess.Board().legal_moves
        assert abs(kendall_tau_b(np.array([1., 2, 3]), np.array([1., 2, 3])) - 1) < 1e-12
        assert abs(kendall_tau_b(np.array([1., 2, 3]), np.array([3., 2, 1])) + 1) < 1e-12
        return f"12 steps + resume, export diff {diff:.2g} / {diff2:.2g}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_checks(checks, argv=None, what: str = "checks", doc: str | None = None) -> None:
    """Runs each ``check(shared) -> message``, prints ``ok``/``FAIL`` lines and a count, and exits 1 if
    any failed (``--shared``: the shared data folder)."""
    ap = argparse.ArgumentParser(description=doc or __doc__)
    ap.add_argument("--shared", default="../shared")
    a = ap.parse_args(argv)
    failed = 0
    for fn in checks:
        t0 = time.time()
        try:
            msg = fn(a.shared)
            print(f"ok   {fn.__name__} ({time.time() - t0:.1f} s): {msg}", flush=True)
        except Exception as e:  # noqa: BLE001
            failed += 1
            import traceback

            traceback.print_exc()
            print(f"FAIL {fn.__name__}: {e!r}", flush=True)
    print(f"{len(checks) - failed}/{len(checks)} {what} passed")
    sys.exit(1 if failed else 0)


def main(argv=None):
    run_checks(CHECKS, argv)


if __name__ == "__main__":
    main()
