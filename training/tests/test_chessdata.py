"""Tokenizer and action table against the golden files, label parsing and the cp → win prob → bucket maths."""

from __future__ import annotations

import gzip
import json
import math
import os

import chess
import chess.engine
import numpy as np

from glimpse_train.chessdata import (ACTIONS, BUCKET_CENTRES, MOVE_TO_ACTION, bucket_of, canonical_fen, parse_score,
                                     tokenize, win_prob)
from glimpse_train.trainloop import soft_targets


def test_tokenizer_golden(shared):
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
    assert n > 0
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
        from glimpse_train.chessdata import VOCAB_CHARS

        assert "".join(chars) == VOCAB_CHARS


def test_action_table(shared):
    want = open(os.path.join(shared, "golden", "actions.txt")).read().split()
    assert ACTIONS == want, "action table differs from actions.txt"
    spots = {"a1b1": 0, "e1c1": 99, "e1g1": 102, "g1f3": 169, "e2e4": 317, "e8c8": 1711, "e8g8": 1714,
             "a2a1q": 1792, "a7a8q": 1880, "e7e8q": 1924, "h7g8n": 1967, "a7a8": 1399}
    for m, i in spots.items():
        assert MOVE_TO_ACTION[m] == i, m


def test_label_maths(shared):
    from glimpse_train.data import parse_line, score_key

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


# ------------------------------------------------------------------ mirroring (Lc0's rule)
def test_mirroring_matches_python_chess_and_maps_every_legal_move():
    import chess

    from glimpse_train.chessdata import (ACTION_MIRROR, MOVE_TO_ACTION, canonical_fen, mirror_states, no_castling,
                                         tokenize)

    fens = ["8/8/4k3/8/8/3K4/4P3/8 w - - 0 1",
            "r4rk1/pp3ppp/2n5/3pP3/8/5N2/PP3PPP/R4RK1 w - d6 0 15",  # en passant on the d-file
            "4k3/P7/8/8/8/8/7p/4K3 b - - 3 60"]  # promotions on both wings
    for fen in fens:
        board = chess.Board(fen)
        mirrored = board.transform(chess.flip_horizontal)
        st = tokenize(canonical_fen(fen))[None]
        assert no_castling(st)[0]
        assert (mirror_states(st)[0] == tokenize(canonical_fen(mirrored.fen()))).all(), fen
        assert ({int(ACTION_MIRROR[MOVE_TO_ACTION[m.uci()]]) for m in board.legal_moves}
                == {MOVE_TO_ACTION[m.uci()] for m in mirrored.legal_moves}), fen
    assert not no_castling(tokenize(chess.STARTING_FEN)[None])[0]


def test_mirror_batch_flips_only_positions_without_castling_rights():
    import chess

    from glimpse_train.chessdata import ACTION_MIRROR, MOVE_TO_ACTION, canonical_fen, tokenize
    from glimpse_train.kinds.multi_action_value import PAD_ACTION, mirror_batch

    fens = [chess.STARTING_FEN, "8/8/4k3/8/8/3K4/4P3/8 w - - 0 1"]
    tokens = np.zeros((2, 78), np.int32)
    tokens[:, 1:] = [tokenize(canonical_fen(f)) for f in fens]
    moves = [[m.uci() for m in chess.Board(f).legal_moves] for f in fens]
    width = max(map(len, moves))
    actions = np.full((2, width), PAD_ACTION, np.int32)
    mask = np.zeros((2, width), bool)
    for i, ms in enumerate(moves):
        actions[i, :len(ms)] = [MOVE_TO_ACTION[m] for m in ms]
        mask[i, :len(ms)] = True
    before = (tokens.copy(), actions.copy())
    t, a = mirror_batch(tokens, actions, mask, 1.0, np.random.default_rng(0))
    assert (tokens == before[0]).all() and (actions == before[1]).all(), "inputs unchanged"
    assert (t[0] == tokens[0]).all() and (a[0] == actions[0]).all(), "castling rights: never mirrored"
    assert (a[1, mask[1]] == ACTION_MIRROR[actions[1, mask[1]]]).all() and (a[1, ~mask[1]] == PAD_ACTION).all()
    assert (t[1, 1:] == tokenize(canonical_fen(chess.Board(fens[1]).transform(chess.flip_horizontal).fen()))).all()
    t, a = mirror_batch(tokens, actions, mask, 0.0, np.random.default_rng(0))
    assert (t == tokens).all() and (a == actions).all()


def test_position_key_is_one_function_for_the_store_and_the_split():
    """The dedup key of the label store (``labelstore``) and the held-out split key (``data.is_validation``)
    are chessdata's one ``position_key``; on single-spaced FENs (every label file) it is the old
    ``split(" ")`` key, so the committed store's keys and the validation split do not move."""
    from glimpse_train import chessdata, data, labelstore

    assert data.position_key is chessdata.position_key and labelstore.position_key is chessdata.position_key
    for fen in (chess.STARTING_FEN, "r3k2r/8/8/3pP3/8/8/8/R3K2R w KQkq d6 0 12", "8/8/8/8/8/8/6k1/4K2R w K - 0 1"):
        old_data_key = " ".join(fen.split(" ")[:4])
        old_store_key = " ".join(fen.split()[:4])
        assert data.position_key(fen) == labelstore.position_key(fen) == old_data_key == old_store_key
    assert chessdata.position_key("8/8/8/8/8/8/6k1/4K2R  w K -  0 1") == "8/8/8/8/8/8/6k1/4K2R w K -"


def test_score_text_and_stockfish_discovery(tmp_path):
    from glimpse_train import chessdata

    assert chessdata.score_str(chess.engine.PovScore(chess.engine.Mate(-3), chess.WHITE)) == "M-3"
    assert chessdata.score_str(chess.engine.PovScore(chess.engine.Cp(35), chess.BLACK)) == "35"
    sf = tmp_path / "sf"
    sf.write_text("")
    assert chessdata.find_stockfish(str(sf)) == str(sf)
    if not any(os.path.exists(p) for p in chessdata.SF_PATHS):
        try:
            chessdata.find_stockfish(None)
        except FileNotFoundError as e:
            assert "apt-get install" in str(e)
