"""Tests of ``glimpse_train.label_order`` (labelling cost and quality by chunk order)."""

from __future__ import annotations

import chess

from glimpse_train import chessdata, label_order, uci_pipe

PGN = """[Event "a"]

1. e4 e5 2. Nf3 Nc6 3. Ng1 Nb8 4. Nf3 Nc6 5. Bb5 a6 1-0

[Event "b"]

1. f3 e5 2. g4 Qh4# 0-1
"""


def test_game_positions_keep_game_order_and_drop_repeats_and_final_positions(tmp_path):
    p = tmp_path / "g.pgn"
    p.write_text(PGN)
    fens = label_order.game_positions(str(p), 100)
    b = chess.Board()
    first = []
    for mv in ["e2e4", "e7e5", "g1f3", "b8c6", "f3g1"]:
        b.push_uci(mv)
        first.append(b.fen())
    assert fens[:5] == first
    # 3... Nb8 4. Nf3 Nc6 repeat positions already taken (the same first four FEN fields); 5. Bb5 a6 are new.
    assert len(fens) == 5 + 2 + 3, "game b's mate is a final position and is left out"
    assert not chess.Board(fens[-1]).is_game_over() and fens[-1].split()[1] == "b"
    assert label_order.game_positions(str(p), 4) == first[:4]


def test_mcnemar_z_and_top_move():
    assert label_order.mcnemar_z(140, 112) == (140 - 112) / 252 ** 0.5
    assert label_order.mcnemar_z(0, 0) == 0.0
    assert label_order.top_move([("a2a3", "-5"), ("e2e4", "30"), ("g1f3", "M3"), ("h2h4", "M-2")]) == "g1f3"


def test_measure_labels_both_orders_and_compares_with_a_reference(tmp_path):
    p = tmp_path / "g.pgn"
    p.write_text(PGN)
    fens = label_order.game_positions(str(p), 8)
    res = label_order.measure(fens, chessdata.find_stockfish(), chunk=4, repeats=1, reference_depth=6,
                              log=lambda *_: None)
    uci_pipe.close_shared()
    assert res["positions"] == 8 and all(len(v) == 1 and v[0] > 0 for v in res["core_seconds"].values())
    for k in ("ordered", "shuffled"):
        assert 0 <= res["only"][k] <= res["agree"][k] <= 8
    # Opening positions: the deep search's top move is one of the label's top moves in most of them.
    assert res["agree"]["ordered"] + res["agree"]["shuffled"] >= 4
