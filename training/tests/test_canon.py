"""The side-to-move frame (canon.py): numpy, JAX and ONNX agree, and a position and its colour-flipped
twin give the same outputs."""

from __future__ import annotations

import chess
import numpy as np

from glimpse_train import canon
from glimpse_train.chessdata import MOVE_TO_ACTION, tokenize
from glimpse_train.kinds import multi_action_value as mav
from glimpse_train.kinds.multi_action_value import MAVConfig, init_params, jax_forward, numpy_forward

FENS = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
        "r3k2r/pppq1ppp/2n5/3pP3/8/8/PPP2PPP/R3K2R w Kq d6 0 9",
        "r3k2r/ppp2ppp/8/8/3pP3/2N5/PPPQ1PPP/R3K2R b Qk e3 0 9",
        "8/8/8/8/8/5k2/6p1/4K3 b - - 3 70"]


def inputs(fens):
    boards = [chess.Board(f) for f in fens]
    m = max(b.legal_moves.count() for b in boards)
    tokens = np.zeros((len(fens), 78), np.int64)
    actions = np.zeros((len(fens), m), np.int64)
    for i, b in enumerate(boards):
        tokens[i, 1:] = tokenize(b.fen())
        acts = sorted(MOVE_TO_ACTION[mv.uci()] for mv in b.legal_moves)
        actions[i, : len(acts)] = acts
    return boards, tokens, actions


def test_mirror_table_is_an_involution():
    assert np.array_equal(canon.MIRROR[canon.MIRROR], np.arange(len(canon.MIRROR)))
    assert canon.MIRROR[MOVE_TO_ACTION["e2e4"]] == MOVE_TO_ACTION["e7e5"]
    assert canon.MIRROR[MOVE_TO_ACTION["a2a1q"]] == MOVE_TO_ACTION["a7a8q"]


def test_twin_positions_give_identical_inputs():
    boards, _, _ = inputs(FENS)
    twins = [b.mirror() for b in boards]
    _, t1, _ = inputs([b.fen() for b in boards])
    _, t2, _ = inputs([b.fen() for b in twins])
    for i, (b, tw) in enumerate(zip(boards, twins)):
        a1 = np.asarray([[MOVE_TO_ACTION[m.uci()] for m in b.legal_moves]])
        a2 = np.asarray([[MOVE_TO_ACTION[chess.Move(chess.square_mirror(m.from_square), chess.square_mirror(m.to_square),
                                                    m.promotion).uci()] for m in b.legal_moves]])
        c1, x1 = canon.canon_numpy(t1[i:i + 1], a1)
        c2, x2 = canon.canon_numpy(t2[i:i + 1], a2)
        assert np.array_equal(c1, c2) and np.array_equal(x1, x2)
    # white to move keeps its board; black's is mirrored
    c, _ = canon.canon_numpy(t1, np.zeros((4, 1), np.int64))
    assert np.array_equal(c[1, 2:66], t1[1, 2:66]) and not np.array_equal(c[0, 2:66], t1[0, 2:66])


def test_numpy_jax_onnx_agree(tmp_path):
    import jax.numpy as jnp

    cfg = MAVConfig(layers=1, dim=16, heads=2, attn_bias=True, head_global=True, canonical=True)
    rng = np.random.default_rng(0)
    params = {k: (v + rng.normal(0, 0.1, v.shape)).astype(np.float32) for k, v in init_params(cfg, 0).items()}
    _, tokens, actions = inputs(FENS)
    ct, ca = canon.canon_jax(jnp.asarray(tokens, jnp.int32), jnp.asarray(actions, jnp.int32))
    nt, na = canon.canon_numpy(tokens, actions)
    assert np.array_equal(np.asarray(ct), nt) and np.array_equal(np.asarray(ca), na)
    lp_np, v_np = numpy_forward(params, cfg, tokens, actions)
    lp_j, v_j = jax_forward({k: jnp.asarray(v) for k, v in params.items()}, cfg, jnp.asarray(tokens, jnp.int32),
                            jnp.asarray(actions, jnp.int32))
    assert np.abs(lp_np - np.asarray(lp_j)).max() < 1e-4
    path = str(tmp_path / "c.onnx")
    mav.export(params, cfg, path)
    assert mav.verify(params, cfg, path, tokens, actions) < 1e-4
    # mirror twins through ONNX: same outputs
    boards, _, _ = inputs(FENS)
    twins = [b.mirror().fen() for b in boards]
    _, t2, _ = inputs(twins)
    a2 = np.asarray([[canon.MIRROR[a] if a else 0 for a in row] for row in actions])
    a2[actions == 0] = 0
    from glimpse_train.onnx_graph import ort_session

    s = ort_session(path)
    o1 = s.run(["log_probs", "value"], {"tokens": tokens, "actions": actions})
    o2 = s.run(["log_probs", "value"], {"tokens": t2, "actions": a2})
    mask = actions != 0
    assert np.abs(o1[0][mask] - o2[0][mask]).max() < 1e-5 and np.abs(o1[1] - o2[1]).max() < 1e-5


def test_policy_and_wdl_heads_export_import_and_train(tmp_path):
    """numpy, JAX and ONNX agree on every output; the importer reads the heads back; a few training
    steps lower the loss with both heads on."""
    import jax.numpy as jnp

    from glimpse_train.onnx_import import import_onepass
    from glimpse_train.kinds.multi_action_value import numpy_outputs, jax_outputs

    cfg = MAVConfig(layers=1, dim=16, heads=2, canonical=True, policy_dim=8, wdl_head=True)
    rng = np.random.default_rng(1)
    params = {k: (v + rng.normal(0, 0.1, v.shape)).astype(np.float32) for k, v in init_params(cfg, 0).items()}
    _, tokens, actions = inputs(FENS)
    want = numpy_outputs(params, cfg, tokens, actions)
    got = jax_outputs({k: jnp.asarray(v) for k, v in params.items()}, cfg, jnp.asarray(tokens, jnp.int32),
                      jnp.asarray(actions, jnp.int32))
    assert set(want) == {"log_probs", "value", "policy", "wdl"}
    assert all(np.abs(want[k] - np.asarray(got[k])).max() < 1e-4 for k in want)
    path = str(tmp_path / "h.onnx")
    mav.export(params, cfg, path)
    assert mav.verify(params, cfg, path, tokens, actions) < 1e-4
    back, cfg2 = import_onepass(path)
    assert cfg2.policy_dim == 8 and cfg2.wdl_head
    assert max(float(np.abs(back[k] - params[k]).max()) for k in params) < 1e-5
