"""``successor.py``: the successor value of a move equals 1 − the best Q of the position after it, evaluated on
its own; mates and stalemates follow the engine's rules; the accuracy grid picks moves as the engine does."""

from __future__ import annotations

import json

import chess
import numpy as np

from glimpse_train import successor
from glimpse_train.kinds import multi_action_value as mav
from glimpse_train.onnx_graph import ort_session
from glimpse_train.quantize import move_q

CFG = mav.MAVConfig(layers=1, dim=32, heads=4, head_dim=16, head_hidden=24, attn_bias=True, head_global=True,
                    canonical=True, policy_dim=8, wdl_head=True)


def _net(tmp_path):
    path = str(tmp_path / "tiny.onnx")
    mav.export(mav.perturbed_params(CFG, 4), CFG, path, description="tiny")
    return path


def test_successor_values_match_the_successors_own_q(tmp_path):
    sess = ort_session(_net(tmp_path), 1)
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3"
    board = chess.Board(fen)
    labels = {m.uci(): float(i) for i, m in enumerate(board.legal_moves)}
    r = successor.position_arrays(sess, fen, labels)
    moves = sorted(board.legal_moves, key=lambda m: successor.MOVE_TO_ACTION[m.uci()])
    assert len(r["q"]) == len(moves) and r["best"].sum() == 1
    root_q = move_q(sess, [board])[0]  # ascending action id, every legal move
    np.testing.assert_allclose(r["q"], root_q, atol=1e-5)
    for i in (0, len(moves) // 2, len(moves) - 1):
        after = board.copy()
        after.push(moves[i])
        assert abs(r["v"][i] - (1.0 - move_q(sess, [after])[0].max())) < 1e-5
        tokens, actions = successor.tokens_actions([after])
        value = sess.run(["value"], {"tokens": tokens, "actions": actions})[0]
        assert abs(r["vh"][i] - (1.0 - float(successor._expected(value)[0]))) < 1e-5
    assert np.all(r["lp"] <= 0) and abs(np.exp(r["lp"]).sum() - 1.0) < 1e-4


def test_mates_and_stalemates_follow_the_rules(tmp_path):
    sess = ort_session(_net(tmp_path), 1)
    fen = "7k/4Q3/6K1/8/8/8/8/8 w - - 0 1"  # Qe8 mates, Qf7 stalemates
    labels = {m.uci(): 0.0 for m in chess.Board(fen).legal_moves}
    labels["e7e8"] = 1.0
    r = successor.position_arrays(sess, fen, labels)
    moves = sorted(chess.Board(fen).legal_moves, key=lambda m: successor.MOVE_TO_ACTION[m.uci()])
    at = {m.uci(): i for i, m in enumerate(moves)}
    assert r["mate"][at["e7e8"]] and r["v"][at["e7f7"]] == 0.5 and not r["mate"][at["e7f7"]]
    # a mate is chosen whatever the weights (another mating move may come first: any mate counts as best here)
    r["best"] = r["mate"].copy()
    assert successor.accuracy([r], 0.0, 0.0) == 1.0 and successor.accuracy([r], 1.0, 0.05) == 1.0


def test_accuracy_mixes_q_and_v_and_takes_the_first_maximum():
    rec = {"q": np.array([0.6, 0.5, 0.5]), "v": np.array([0.2, 0.7, 0.7]), "lp": np.array([0.0, -5.0, 0.0]),
           "mate": np.zeros(3, bool), "best": np.array([False, True, False])}
    assert successor.accuracy([rec], 0.0, 0.0) == 0.0  # Q alone: move 0
    assert successor.accuracy([rec], 0.5, 0.0) == 1.0  # 0.4 vs 0.6 vs 0.6: the first maximum, move 1
    assert successor.accuracy([rec], 0.5, 0.05) == 0.0  # ln P moves it to move 2
    rec["vh"] = np.array([0.9, 0.1, 0.1])  # the value head's successor values: move 0 again
    assert successor.accuracy([rec], 0.5, 0.0, value_mix=0.0) == 1.0
    assert successor.accuracy([rec], 0.5, 0.0, value_mix=1.0) == 0.0


def test_top_k_chooses_among_the_best_moves_by_q_only():
    rec = {"q": np.array([0.6, 0.55, 0.5, 0.1]), "v": np.array([0.1, 0.3, 0.9, 0.9]), "lp": np.zeros(4),
           "mate": np.array([False, False, False, False]), "best": np.array([False, False, True, False])}
    assert successor.accuracy([rec], 0.6, 0.0) == 1.0  # all moves: 0.26, 0.40, 0.74, 0.58
    assert successor.accuracy([rec], 0.6, 0.0, top_k=3) == 1.0
    assert successor.accuracy([rec], 0.6, 0.0, top_k=2) == 0.0  # move 2 is outside the best 2 by Q
    assert successor.accuracy([rec], 0.6, 0.0, top_k=1) == 0.0  # Q's own choice
    assert list(successor.top_k_mask(rec["q"], rec["mate"], 2)) == [True, True, False, False]
    mate = np.array([False, False, False, True])
    assert list(successor.top_k_mask(rec["q"], mate, 1)) == [True, False, False, True], "a mate is always in"
    assert successor.top_k_mask(rec["q"], rec["mate"], 0).all() and successor.top_k_mask(rec["q"], mate, 9).all()


def test_cli_on_the_fixture_labels(tmp_path, shared, capsys):
    assert successor.main(["--net", _net(tmp_path), "--shared", shared, "--positions", "12", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    rep = json.loads(out.strip().splitlines()[-1])
    assert 0 < rep["positions"] <= 12 and set(rep["accuracy_percent"]) == {str(w) for w in successor.WEIGHTS}
    assert successor.main(["--net", _net(tmp_path), "--shared", shared, "--positions", "12", "--threads", "1",
                           "--value-mix", "0", "1"]) == 0
    both = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["by_value_mix"]
    assert set(both) == {"0.0", "1.0"} and both["0.0"] == rep["accuracy_percent"]
    assert successor.main(["--net", _net(tmp_path), "--shared", shared, "--positions", "12", "--threads", "1",
                           "--top-k", "1", "99"]) == 0
    widths = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["by_top_k"]
    assert widths["1"]["0.6"] == rep["accuracy_percent"]["0.0"]["0.0"], "one move: Q's own choice"
    assert widths["99"]["0.6"] == rep["accuracy_percent"]["0.6"]["0.0"], "every move"
    assert successor.main(["--net", str(tmp_path / "missing.onnx"), "--shared", shared]) == 1
