"""Side-to-move canonical frame for the one-pass model (``MAVConfig.canonical``), inside the network.

The engine keeps feeding the reference inputs (``tokens`` [B, 78] = BOS + the 77 FEN tokens of
``docs/searchless-conventions.md``, ``actions`` [B, M] action ids); the network first rewrites them into
the frame of the side to move, as AlphaZero, Lc0 and ChessFormer see the board:

* black to move: the board is mirrored (rank r ↔ 9 − r: FEN index i ↔ i ^ 56) and the piece colours
  swapped (``p``↔``P`` …), the en-passant rank ``3``↔``6``, and every action id replaced by its mirror
  (``e7e5`` ↔ ``e2e4``, ``a2a1q`` ↔ ``a7a8q``); white to move: unchanged;
* the side token becomes ``w`` for both;
* the castling field becomes four fixed slots (own king side ``K``, own queen side ``Q``, their king side
  ``k``, their queen side ``q``, ``.`` where the right is gone), so mirror-image positions give identical
  network inputs.

So a position and its colour-flipped twin produce the same outputs (the value is always for the side
to move): the network learns each pattern once for both colours, which is colour-flip augmentation for
free. The same rewrite is written three times, for numpy (reference), JAX (training) and ONNX (export);
``tests`` check the three agree.
"""

from __future__ import annotations

import numpy as np

from .chessdata import ACTIONS, CHAR_TO_ID, MOVE_TO_ACTION

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).

SIDE_POS = 1  # positions in the 78-token sequence (BOS at 0)
BOARD = slice(2, 66)
CASTLE = slice(66, 70)
EP_RANK_POS = 71
BLACK_ID, WHITE_ID, DOT_ID = CHAR_TO_ID["b"], CHAR_TO_ID["w"], CHAR_TO_ID["."]


def _swap_table() -> np.ndarray:
    t = np.arange(len(CHAR_TO_ID), dtype=np.int64)
    for lo in "pnrkqb":
        a, b = CHAR_TO_ID[lo], CHAR_TO_ID[lo.upper()]
        t[a], t[b] = b, a
    return t


#: piece colour swap over the 31 token ids (board squares only; ``b`` is also a file letter)
SWAP = _swap_table()
_EP_SWAP = np.arange(len(CHAR_TO_ID), dtype=np.int64)
_EP_SWAP[CHAR_TO_ID["3"]], _EP_SWAP[CHAR_TO_ID["6"]] = CHAR_TO_ID["6"], CHAR_TO_ID["3"]
#: source position of every sequence slot for black to move (the board mirrored)
SRC_BLACK = np.arange(78, dtype=np.int64)
SRC_BLACK[2:66] = 2 + (np.arange(64) ^ 56)
#: mirror of every action id
MIRROR = np.asarray([MOVE_TO_ACTION[f"{a[0]}{9 - int(a[1])}{a[2]}{9 - int(a[3])}{a[4:]}"] for a in ACTIONS], np.int64)
#: castling slots: the character each slot shows, and which original character gives it (white / black to move)
SLOT_OUT = np.asarray([CHAR_TO_ID[c] for c in "KQkq"], np.int64)
SLOT_SRC_BLACK = np.asarray([CHAR_TO_ID[c] for c in "kqKQ"], np.int64)


def canon_numpy(tokens: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tokens int [B, 78], actions int [B, M] → the same in the side-to-move frame (new arrays)."""
    tokens = np.asarray(tokens, np.int64)
    actions = np.asarray(actions, np.int64)
    black = tokens[:, SIDE_POS] == BLACK_ID
    out = tokens.copy()
    tb = tokens[black][:, SRC_BLACK]
    tb[:, BOARD] = SWAP[tb[:, BOARD]]
    tb[:, EP_RANK_POS] = _EP_SWAP[tb[:, EP_RANK_POS]]
    out[black] = tb
    out[:, SIDE_POS] = WHITE_ID
    src = np.where(black[:, None], SLOT_SRC_BLACK[None], SLOT_OUT[None])  # [B, 4]
    present = (tokens[:, CASTLE][:, None, :] == src[:, :, None]).any(-1)
    out[:, CASTLE] = np.where(present, SLOT_OUT[None], DOT_ID)
    return out, np.where(black[:, None], MIRROR[actions], actions)


def canon_jax(tokens, actions):
    """JAX version of ``canon_numpy`` (int32 in, int32 out)."""
    import jax.numpy as jnp

    black = tokens[:, SIDE_POS] == BLACK_ID
    tb = jnp.take(tokens, jnp.asarray(SRC_BLACK, jnp.int32), axis=1)
    tb = tb.at[:, BOARD].set(jnp.take(jnp.asarray(SWAP, jnp.int32), tb[:, BOARD]))
    tb = tb.at[:, EP_RANK_POS].set(jnp.take(jnp.asarray(_EP_SWAP, jnp.int32), tb[:, EP_RANK_POS]))
    out = jnp.where(black[:, None], tb, tokens)
    out = out.at[:, SIDE_POS].set(WHITE_ID)
    src = jnp.where(black[:, None], jnp.asarray(SLOT_SRC_BLACK, jnp.int32)[None], jnp.asarray(SLOT_OUT, jnp.int32)[None])
    present = jnp.any(tokens[:, CASTLE][:, None, :] == src[:, :, None], axis=-1)
    out = out.at[:, CASTLE].set(jnp.where(present, jnp.asarray(SLOT_OUT, jnp.int32)[None], DOT_ID))
    acts = jnp.where(black[:, None], jnp.take(jnp.asarray(MIRROR, jnp.int32), actions), actions)
    return out.astype(tokens.dtype), acts.astype(actions.dtype)


def onnx_canon(g, tokens: str, actions: str) -> tuple[str, str]:
    """Adds the rewrite to an ``onnx_graph._G`` graph; returns the names of the new tokens/actions (int64)."""
    i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731
    side = g.op("Gather", [tokens, g.const("c_side_pos", i64([SIDE_POS]))], "c_side", axis=1)  # [B, 1]
    black = g.op("Equal", [side, g.const("c_black_id", i64(BLACK_ID))], "c_black")  # [B, 1] bool
    # black version: mirrored board, swapped colours and ep rank
    tb = g.op("Gather", [tokens, g.const("c_src_black", SRC_BLACK)], "c_tb", axis=1)  # [B, 78]
    pos_tbl = np.stack([np.arange(len(CHAR_TO_ID))] * 78).astype(np.int64)  # per position: token -> token
    pos_tbl[2:66] = SWAP
    pos_tbl[EP_RANK_POS] = _EP_SWAP
    pos_tbl[SIDE_POS] = WHITE_ID
    flat = g.op("Add", [tb, g.const("c_row_off", (np.arange(78) * len(CHAR_TO_ID)).astype(np.int64)[None])], "c_flat")
    tb = g.op("Gather", [g.const("c_pos_tbl", pos_tbl.reshape(-1)), flat], "c_tb_mapped", axis=0)
    out = g.op("Where", [black, tb, tokens], "c_tokens_frame")
    # castling slots from the original field
    cast = g.op("Slice", [tokens, g.const("c_cs", i64([66])), g.const("c_ce", i64([70])), g.const("c_ca", i64([1]))], "c_cast")
    src = g.op("Where", [black, g.const("c_slot_b", SLOT_SRC_BLACK[None]), g.const("c_slot_w", SLOT_OUT[None])], "c_slot_src")
    eq = g.op("Equal", [g.op("Unsqueeze", [cast, g.const("c_ax1", i64([1]))], "c_cast3"),
                        g.op("Unsqueeze", [src, g.const("c_ax2", i64([2]))], "c_src3")], "c_eq")  # [B, 4, 4]
    present = g.op("ReduceMax", [g.op("Cast", [eq], "c_eq_i", to=7)], "c_present", axes=[-1], keepdims=0)  # [B, 4]
    slots = g.op("Where", [g.op("Cast", [present], "c_present_b", to=9), g.const("c_slot_out", SLOT_OUT[None]),
                           g.const("c_dot", i64(DOT_ID))], "c_slots")
    head = g.op("Slice", [out, g.const("c_h0", i64([0])), g.const("c_h1", i64([66])), g.const("c_ha", i64([1]))], "c_head")
    tail = g.op("Slice", [out, g.const("c_t0", i64([70])), g.const("c_t1", i64([78])), g.const("c_ta", i64([1]))], "c_tail")
    side_fix = g.op("Concat", [g.op("Slice", [head, g.const("c_s0", i64([0])), g.const("c_s1", i64([1])),
                                             g.const("c_sa", i64([1]))], "c_bos"),
                               g.op("Mul", [g.op("Slice", [head, g.const("c_s2", i64([1])), g.const("c_s3", i64([2])),
                                                           g.const("c_sb", i64([1]))], "c_side_tok"),
                                            g.const("c_zero", i64(0))], "c_side_zero"),
                               g.op("Slice", [head, g.const("c_s4", i64([2])), g.const("c_s5", i64([66])),
                                             g.const("c_sc", i64([1]))], "c_board")], "c_head_fixed", axis=1)
    side_fix = g.op("Add", [side_fix, g.const("c_side_w", np.eye(1, 66, SIDE_POS, dtype=np.int64) * WHITE_ID)], "c_head_w")
    new_tokens = g.op("Concat", [side_fix, slots, tail], "c_tokens", axis=1)
    mirrored = g.op("Gather", [g.const("c_mirror", MIRROR), actions], "c_act_m", axis=0)
    new_actions = g.op("Where", [black, mirrored, actions], "c_actions")
    return new_tokens, new_actions
