"""Model kind ``multi_action_value`` (MAV, the one-pass model): one trunk pass per position.

The kind is this module and two beside it: ``mav_model.py`` (configuration, parameter shapes and
initialisation, the float64 numpy reference and the JAX forward pass: ``numpy_outputs``/``jax_outputs``) and
``mav_onnx.py`` (the ONNX graph: ``build_model``, ``export``, ``verify``); here are the trainer
(``MAVTrainer``: loss, targets, validation; its position batches are ``position_batches.PositionData``),
a run's loader, the evaluation policy (``MAVPolicy``) and the ``Kind`` record. Every name of the two is
importable from here. The optional policy and WDL heads are in ``heads.py``, the side-to-move frame in
``canon.py``. The registry (``kinds/__init__.py``) finds it by the ONNX ``glimpse.kind`` and by the
``mav-*`` presets.

The action-value (AV) model of the paper sees ``[0, 77 state tokens, action]`` and is run once per legal
move, so the 77 state tokens are recomputed for every move (attention is bidirectional). This model reads
the position once and scores every given move from that one pass:

* **Trunk** — the paper's transformer over the 78 tokens ``[0 (BOS), 77 state tokens]`` (same tokenizer,
  embedding × √D plus learned positions, pre-LN blocks with bidirectional attention and SwiGLU, final
  LayerNorm), with the same Haiku parameter names as ``model.py`` (``embed/embeddings`` [1968, D],
  ``embed_1/embeddings`` [78, D], ``layer_norm{,_k}``, ``multi_head_dot_product_attention{,_i}``,
  ``linear_{3i..3i+2}``); the final LayerNorm ``layer_norm_{2L}`` is applied at every position. There is
  no AV head ``linear_{3L}``.
* **Per-move head** (``mav_head/...``) — for action ``a`` with from-square ``f`` and to-square ``t``
  (castling as the king's move, promotions by their from/to squares, the promotion piece only through
  the action embedding): ``u = [y_f ‖ y_t] W_in + E[a]`` where ``y_s`` is the trunk output at the board
  token of square ``s`` (FEN order a8…h1, token position ``2 + (7 − rank)·8 + file`` in the 78-token
  sequence) and ``E`` a learned action embedding [1968, Dh]; then one pre-LN SwiGLU block
  ``u += W_down(silu(W_gate LN(u)) ⊙ W_up LN(u))`` and ``logits = LN_out(u) W_out + b_out`` → K bucket
  log-probs (log-softmax over K). Moves do not interact in the head, so padding a row with extra actions
  cannot change the real moves' outputs.
* **Global input** (optional, ``head_global``): ``u += y_0 W_g`` with ``y_0`` the trunk output at BOS,
  ``mav_head/linear_global/w`` [D, Dh] (computed once per position), so every move's head sees a summary
  of the whole position, not only its two squares.
* **Pair bias** (optional, ``attn_bias``): a learned attention-logit bias per layer and head for every
  (query, key) token pair, ``multi_head_dot_product_attention{,_i}/pair_bias`` [H, 78, 78], zero-initialised
  (a cheap trunk variant in the spirit of ChessFormer's position encoding: square-pair relations can be
  learned directly instead of through the position embeddings).
* **Smolgen** (optional, ``smolgen`` G > 0; Lc0's BT2+ nets): per layer, attention-logit biases [H, 78, 78]
  generated from the whole position (``transformer.numpy_smolgen``): the layer's input compressed to C values
  a token, flattened, a dense layer to S (swish, LayerNorm), one to H·G (swish, LayerNorm a head), and a
  projection [G, 78²] shared by all layers, zero-initialised (``grow.py --smolgen`` adds one to a trained net
  without changing its outputs). Lc0 found such a net plays as if 50 % larger for ≈ 10 % of throughput.
* **Value head** (optional, ``value_head/linear``) — K log-probs of the position's value for the side to
  move from the trunk output at BOS (trained on the best labelled move's win probability, an auxiliary
  loss; the engine does not need it).

Parameter names of the head: ``mav_head/action_embed/embeddings`` [1968, Dh], ``mav_head/linear_in/w``
[2D, Dh], ``mav_head/layer_norm/{scale,offset}`` [Dh], ``mav_head/linear_gate/w`` and
``mav_head/linear_up/w`` [Dh, Hh], ``mav_head/linear_down/w`` [Hh, Dh],
``mav_head/layer_norm_out/{scale,offset}`` [Dh], ``mav_head/linear_out/{w [Dh, K], b [K]}``,
``value_head/linear/{w [D, K], b [K]}``.

Cost (multiply-adds, 2 FLOP each): trunk ``L·(T·(4D² + 3·D·W·D) + 2·T²·D)`` with T = 78 and widening W,
once per position; head ``2·D·Dh + 3·Dh·Hh + Dh·K`` per move. For L=8, D=256 (the 9M size) with
Dh=256, Hh=512 that is 1.36 GFLOP for the trunk and 1.1 MFLOP per move: 35 moves cost 2.8 % of the trunk.
See ``cost_split``.

Training (``MAVTrainer``): a step takes ``batch`` *positions*; every labelled legal move of each position is
scored from the one trunk pass and contributes to the loss in the same step (moves padded to a multiple of
16 per step, padding masked). Loss: mean over the real moves of the cross-entropy over the 128 buckets with
HL-Gauss soft targets (σ = ``hl_sigma`` buckets; 0 = one-hot), plus ``value_weight`` × the value head's
cross-entropy against the best move's win probability (0 = no value head), plus the optional policy and WDL
heads' losses (``heads.py``). Optimiser, schedule, EMA, checkpoints and logs from ``trainloop.py``.

ONNX contract (opset 17): inputs ``tokens`` int64 [batch, 78] and ``actions`` int64 [batch, moves] (padded
with ``PAD_ACTION`` = 0; every id in 0..1967); output ``log_probs`` float32 [batch, moves, K] (padded slots
are meaningless and never influence the real ones), optional ``value`` [batch, K], ``policy`` [batch, moves],
``wdl`` [batch, 3] (log-probs). Metadata: ``glimpse.kind`` = ``multi_action_value``, or
``multi_action_value_policy`` when both the policy and the WDL head are there (``onnx_kind``), ``glimpse.buckets``,
``glimpse.description``, ``glimpse.params``, ``glimpse.gflop_per_eval`` (one position with 35 moves),
``glimpse.gflop_trunk``, ``glimpse.gflop_per_move``, ``glimpse.pad_action``, and informational fields.
The graph folds √D and 1/√(D/H) as the AV graph does and gathers the trunk outputs at each move's
from/to tokens with ``GatherND`` (batch_dims = 1).
"""

from __future__ import annotations

import dataclasses
import json
import os

import chess
import numpy as np

from ..chessdata import BUCKET_CENTRES, MOVE_TO_ACTION, tokenize
from ..data import Dataset
from ..heads import policy_targets, wdl_targets
from ..onnx_graph import ort_session
from ..position_batches import PAD_ACTION, PositionData, mirror_batch  # noqa: F401 - mirror_batch: as below
from ..trainloop import TrainerBase, load_run_params, soft_targets
from .base import Kind
from .mav_model import KIND_MAV, KIND_MAVP, MAVConfig, cost_split, init_params, jax_outputs, num_params
from .mav_onnx import export, verify

# The kind's other public names, importable from here as before the split (tests, onnx_import, grow, the docs).
from .mav_model import (FROM_TOKEN, SEQ, TO_TOKEN, TYPICAL_MOVES, gflop_per_position, infer_config,  # noqa: F401,E402
                        jax_forward, numpy_forward, numpy_outputs, param_shapes, perturbed_params)
from .mav_onnx import build_model, onnx_kind  # noqa: F401,E402

# JAX (and optax) is imported inside the functions that use it: importing this module must not load it (slow to
# load, and its threads make later forks, Ray's and Stockfish's, warn of deadlocks).


# ----------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------

# Presets (batch = positions per step; ~27.5 labelled moves per position on the shared labels).
CONFIGS = {
    "mav-smoke": dict(layers=2, dim=32, heads=2, batch=16, steps=40, lr=1e-3, warmup=10, eval_every=20,
                      eval_positions=64, max_positions=400, ckpt_seconds=30),
    "mav-small": dict(layers=2, dim=64, heads=4, batch=64, steps=3000, lr=1e-3, warmup=200, eval_every=200),
    "mav-medium": dict(layers=4, dim=128, heads=4, batch=64, steps=4000, lr=5e-4, warmup=300, eval_every=200),
    # the shipped one-pass net: ~48 positions/s on the idle 2-core box, 3000 steps ≈ 2.6 epochs ≈ 35-40 min
    "mav-l6d256": dict(layers=6, dim=256, heads=8, batch=32, steps=3000, lr=5e-4, warmup=200, eval_every=200),
    "mav-9m": dict(layers=8, dim=256, heads=8, batch=32, steps=20000, lr=2e-4, warmup=500, eval_every=500),
}


@dataclasses.dataclass
class MAVTrainConfig:
    kind: str = KIND_MAV
    layers: int = 2
    dim: int = 64
    heads: int = 4
    head_dim: int = 0
    head_hidden: int = 0
    batch: int = 64
    micro: int = 1  # micro-batches per step (TrainerBase): the same update, faster on a CPU
    steps: int = 3000
    lr: float = 1e-3
    min_lr_frac: float = 0.05
    warmup: int = 200
    weight_decay: float = 1e-4
    clip: float = 1.0
    ema: float = 0.999
    hl_sigma: float = 0.75
    value_weight: float = 0.1
    attn_bias: int = 0  # 1 = learned per-head attention bias over token pairs
    head_global: int = 0  # 1 = the per-move head also sees the BOS (whole-position) output
    smolgen: int = 0  # G > 0: a smolgen per layer (attention biases generated from the position), 0 = none
    smolgen_compress: int = 8
    smolgen_hidden: int = 128
    canonical: int = 0  # 1 = inputs in the side-to-move frame (canon.py)
    policy_dim: int = 0  # P > 0: policy head (heads.py) trained on softmax(p / policy_tau) over the labelled moves
    policy_weight: float = 0.5
    policy_tau: float = 0.05
    wdl_weight: float = 0.0  # > 0: WDL head trained on Stockfish 15.1's WDL model of the best move's score
    eval_every: int = 200
    eval_positions: int = 512
    ckpt_seconds: float = 240.0
    seed: int = 0
    max_positions: int = 0
    mirror: float = 0.0  # share of the training positions without castling rights fed mirrored left to right
    # (board files and moves; the labels hold for the mirrored position, Lc0's rule): more positions for free.
    # Off until a GPU burst measures it against the held-out split.
    pad_moves: int = 0  # > 0: pad every batch's moves to at least this width (one array shape, so XLA compiles
    # the step once instead of once per width met: on an H200 the widths met in the first steps cost ~2 min
    # of compiles); 0 = each batch's most moves rounded up to 16 (least work on a CPU)

    def model(self) -> MAVConfig:
        return MAVConfig(layers=self.layers, dim=self.dim, heads=self.heads, head_dim=self.head_dim,
                         head_hidden=self.head_hidden, value_head=self.value_weight > 0,
                         attn_bias=bool(self.attn_bias), head_global=bool(self.head_global),
                         canonical=bool(self.canonical), policy_dim=self.policy_dim,
                         wdl_head=self.wdl_weight > 0, smolgen=self.smolgen, smolgen_compress=self.smolgen_compress,
                         smolgen_hidden=self.smolgen_hidden)


def architecture_of(mcfg: MAVConfig) -> dict:
    """The ``MAVTrainConfig`` fields that fix the parameter shapes, as ``mcfg`` (the net a run starts from,
    ``onnx_import.import_onepass``) has them: a start net grown deeper (``grow.py``) or otherwise shaped
    differently from a run's ``config.json`` trains as it is. The loss weights stay the run's; a start net whose
    heads disagree with them (value or WDL head present in one, absent in the other) raises ``ValueError``."""
    return {"layers": mcfg.layers, "dim": mcfg.dim, "heads": mcfg.heads, "head_dim": mcfg.head_dim,
            "head_hidden": mcfg.head_hidden, "attn_bias": int(mcfg.attn_bias), "head_global": int(mcfg.head_global),
            "canonical": int(mcfg.canonical), "policy_dim": mcfg.policy_dim, "smolgen": mcfg.smolgen,
            "smolgen_compress": mcfg.smolgen_compress, "smolgen_hidden": mcfg.smolgen_hidden}


def with_start_architecture(tcfg: MAVTrainConfig, mcfg: MAVConfig) -> MAVTrainConfig:
    """``tcfg`` with the parameter shapes of ``mcfg`` (:func:`architecture_of`); raises ``ValueError`` when the
    start net's value or WDL head does not match ``tcfg``'s loss weights (``value_weight``, ``wdl_weight``)."""
    if mcfg.value_head != (tcfg.value_weight > 0) or mcfg.wdl_head != (tcfg.wdl_weight > 0):
        raise ValueError(f"start net heads (value {mcfg.value_head}, WDL {mcfg.wdl_head}) do not match the run's "
                         f"loss weights (value_weight {tcfg.value_weight}, wdl_weight {tcfg.wdl_weight})")
    return dataclasses.replace(tcfg, **architecture_of(mcfg))

class MAVTrainer(TrainerBase):
    """The one-pass trainer: a step is ``batch`` positions with all their labelled moves; loss as in the
    module docstring; loop, optimiser, EMA and checkpoints from ``trainloop.TrainerBase``."""

    items_name = "positions"

    def __init__(self, cfg: MAVTrainConfig, run_dir: str, ds: Dataset, log=print, reset_ema: bool = False,
                 backend: str = "jax"):
        self.pd = PositionData(ds)
        self.ds, self.mcfg = ds, cfg.model()
        self.train_items, self.val_items, self.eval_items = self.pd.train_pos, self.pd.val_pos, cfg.eval_positions
        super().__init__(cfg, run_dir, log, reset_ema,
                         decay_mask=lambda k, v: v.ndim == 2 and not k.endswith("/embeddings"), backend=backend)
        import jax

        self._fwd = jax.jit(lambda params, tokens, actions: jax_outputs(params, self.mcfg, tokens, actions))

    def set_data(self, ds: Dataset, pd: PositionData | None = None) -> None:
        """Trains on ``ds`` from the next ``run`` on (a dataset that grew: ``remote.SliceFeeder``; ``pd`` its
        ``PositionData`` when built already): the position index, the epoch order and the target table are
        rebuilt; the compiled step is kept (its shapes are the batch, ``pad_moves`` and the table's rows, a
        multiple of ``TABLE_ROWS``)."""
        self.ds, self.pd = ds, pd if pd is not None else PositionData(ds)
        self.train_items, self.val_items = self.pd.train_pos, self.pd.val_pos
        self._p_table = self._perm_epoch = None

    def describe_model(self) -> str:
        return f"{self.mcfg} ({num_params(self.mcfg):,} parameters)"

    def init_params(self) -> dict:
        return init_params(self.mcfg, self.cfg.seed)

    def loss(self, params, tokens, actions, mask, target_idx, best_idx, ptargets, wtargets, move_w, table):
        """The mean over the batch's moves of the bucket cross-entropy, written as a mean over positions of
        ``move_w`` [B] (batch positions / batch moves, the same for every position: ``make_batch``) × the
        position's summed cross-entropy, so that every term is a mean over positions and micro-batches
        (``TrainerBase``) average to exactly this; plus the value, policy and WDL terms. The HL-Gauss
        targets are gathered here from ``table`` ([U, K], ``constants``) by ``target_idx`` [B, M] (each
        move's win probability) and ``best_idx`` [B] (the position's best), as ``target_index`` built them."""
        jnp = self.jnp
        targets, vtargets = table[target_idx], table[best_idx]  # [B, M, K], [B, K]
        out = jax_outputs(params, self.mcfg, tokens, actions)
        ce = -jnp.sum(targets * out["log_probs"], axis=-1)  # [B, M]
        loss = jnp.mean(jnp.sum(ce * mask, axis=-1) * move_w)
        if self.mcfg.value_head:
            loss = loss + self.cfg.value_weight * -jnp.mean(jnp.sum(vtargets * out["value"], axis=-1))
        if self.mcfg.policy_dim:
            import jax

            logits = jnp.where(mask > 0, out["policy"], -1e9)
            loss = loss + self.cfg.policy_weight * -jnp.mean(jnp.sum(ptargets * jax.nn.log_softmax(logits, axis=-1), axis=-1))
        if self.mcfg.wdl_head:
            loss = loss + self.cfg.wdl_weight * -jnp.mean(jnp.sum(wtargets * out["wdl"], axis=-1))
        return loss

    def torch_loss(self, params, *arrays):
        """``loss`` in PyTorch (``mav_torch.torch_loss``; the step: ``torch_step.TorchStep``)."""
        from .mav_torch import torch_loss

        weights = {"value": self.cfg.value_weight, "policy": self.cfg.policy_weight, "wdl": self.cfg.wdl_weight}
        return torch_loss(params, self.mcfg, weights, *arrays)

    def torch_arrays(self, arrays: tuple) -> tuple:
        from .mav_torch import host_inputs

        return (*host_inputs(self.mcfg, arrays[0], arrays[1]), *arrays[2:])

    def make_batch(self, pos: np.ndarray):
        tokens, actions, mask, rows = self.pd.batch(pos, width=self.cfg.pad_moves)
        if self.cfg.mirror > 0:
            tokens, actions = mirror_batch(tokens, actions, mask, self.cfg.mirror,
                                           np.random.default_rng((self.cfg.seed, int(pos[0]), len(pos))))
        target_idx, best_idx = self.target_index(rows, mask)
        p = np.where(mask, self.ds.row_p[np.maximum(rows, 0)], 0.0)
        ptargets = policy_targets(p, mask, self.cfg.policy_tau) if self.mcfg.policy_dim else np.zeros(mask.shape, np.float32)
        wtargets = (wdl_targets(p.max(1), self.ds.states[pos]) if self.mcfg.wdl_head
                    else np.zeros((len(pos), 3), np.float32))
        move_w = np.full(len(pos), len(pos) / max(1, int(mask.sum())), np.float32)
        return ((tokens, actions, mask.astype(np.float32), target_idx, best_idx, ptargets, wtargets, move_w),
                {"positions": len(pos), "moves": int(mask.sum())})

    def rates(self, counts: dict, seconds: float) -> dict:
        return {"positions_per_s": round(counts.get("positions", 0) / seconds, 1),
                "moves_per_s": round(counts.get("moves", 0) / seconds, 1)}

    #: The target table's rows are padded to a multiple of this, so that its shape, and with it the compiled
    #: step (and JAX's persistent compilation cache), stays the same while the dataset grows.
    TABLE_ROWS = 16384

    def _targets_table(self) -> np.ndarray:
        if getattr(self, "_p_table", None) is None:
            # A dataset may know them already (remote.PackedDataset: in linear time, built beside the training).
            fast = getattr(self.ds, "p_values_index", None)
            values, index = fast() if fast else np.unique(self.ds.row_p, return_inverse=True)
            self._p_index = index.astype(np.int32).reshape(-1)
            table = soft_targets(values, self.mcfg.buckets, self.cfg.hl_sigma)
            rows = -(-len(table) // self.TABLE_ROWS) * self.TABLE_ROWS
            self._p_table = np.concatenate([table, np.zeros((rows - len(table), table.shape[1]), np.float32)])
        return self._p_table

    def constants(self) -> tuple:
        """``(table,)``: the HL-Gauss targets [U, K] of the dataset's distinct win probabilities (scores are
        integer cp, so a pack of 30.4M moves has 3,919 of them), zero rows after them up to a multiple of
        ``TABLE_ROWS``. On the device once per run; batches carry indices into it (``target_index``)."""
        return (self._targets_table(),)

    def target_index(self, rows: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the ``constants`` table: [B, M] int32 for each move's win probability (0 at padding, which
        the loss masks) and [B] for the position's best move. A batch once carried the targets themselves,
        [B, M, K] float32: 50 MB and 26 ms of host time for batch 1024 at 96 moves, which bounded a
        GPU's training at ~20 steps a second; the indices are 0.4 MB."""
        self._targets_table()
        safe = np.maximum(rows, 0)
        idx = np.where(mask, self._p_index[safe], 0).astype(np.int32)
        best = np.where(mask, self.ds.row_p[safe], -1.0).argmax(1)
        return idx, idx[np.arange(len(rows)), best]

    def evaluate(self, params, pos: np.ndarray) -> dict:
        """Validation: hard-bucket CE, bucket accuracy, MAE of the expected win prob (per move), action
        accuracy (argmax expected win prob, ties → lowest action id, is a Stockfish-best move), value MAE."""
        ce = acc = mae = 0.0
        n = 0
        act_ok, vmae, pol_ok = [], [], []
        for i in range(0, len(pos), 128):
            tokens, actions, mask, rows = self.pd.batch(pos[i:i + 128], width=self.cfg.pad_moves)
            outs = self._fwd(params, self.jnp.asarray(tokens), self.jnp.asarray(actions))
            lp, val = np.asarray(outs["log_probs"]), outs.get("value")
            r = rows[mask]
            y = self.ds.row_bucket[r].astype(np.int64)
            lpm = lp[mask]
            ce += float(-lpm[np.arange(len(r)), y].sum())
            acc += float((lpm.argmax(1) == y).sum())
            ev = np.exp(lp.astype(np.float64)) @ BUCKET_CENTRES  # [B, M]
            mae += float(np.abs(ev[mask] - self.ds.row_p[r]).sum())
            n += len(r)
            keys = np.where(mask, self.ds.row_key[np.maximum(rows, 0)], -np.inf)
            evm = np.where(mask, ev, -np.inf)
            for j in range(len(rows)):
                best = np.flatnonzero(evm[j] == evm[j].max())
                choice = best[np.argmin(actions[j, best])]
                act_ok.append(keys[j, choice] == keys[j].max())
                if "policy" in outs:
                    pol = np.where(mask[j], np.asarray(outs["policy"])[j], -np.inf)
                    pol_ok.append(keys[j, int(np.argmax(pol))] == keys[j].max())
            if val is not None:
                vev = np.exp(np.asarray(val, np.float64)) @ BUCKET_CENTRES
                pbest = np.where(mask, self.ds.row_p[np.maximum(rows, 0)], -1.0).max(1)
                vmae.extend(np.abs(vev - pbest).tolist())
        out = {"val_loss": ce / n, "val_bucket_acc": acc / n, "val_mae": mae / n,
               "val_action_acc": float(np.mean(act_ok))}
        if vmae:
            out["val_value_mae"] = float(np.mean(vmae))
        if pol_ok:
            out["val_policy_acc"] = float(np.mean(pol_ok))
        return out

    def describe_data(self) -> str:
        return (f"{len(self.pd.train_pos)} train positions, {len(self.pd.val_pos)} validation positions "
                f"({len(self.ds.train_rows)} / {len(self.ds.val_rows)} labelled moves)")


def load_run(run_dir: str, snapshot: str | None = None, raw: bool = False):
    """(params, MAVConfig, step) of a one-pass training run (EMA weights unless ``raw``)."""
    cfg = MAVTrainConfig(**json.load(open(os.path.join(run_dir, "config.json"))))
    params, step = load_run_params(run_dir, snapshot, raw)
    return params, cfg.model(), step


def describe_run(run: str, step: int, raw: bool, mcfg: MAVConfig) -> str:
    return (f"Glimpse one-pass multi-action-value net, run {run} step {step} ({'raw' if raw else 'EMA'} "
            f"weights), L={mcfg.layers} D={mcfg.dim} H={mcfg.heads} head {mcfg.dh}/{mcfg.hh}"
            f"{', pair bias' if mcfg.attn_bias else ''}, "
            f"trained on Stockfish 15.1 labels")


def verify_held_out(params, mcfg: MAVConfig, onnx_path: str, ds: Dataset) -> tuple[float, str]:
    """Max |ORT − JAX| over every output for up to 256 validation positions of ``ds``."""
    pd = PositionData(ds)
    pos = pd.val_pos[np.linspace(0, len(pd.val_pos) - 1, min(256, len(pd.val_pos))).astype(int)]
    diff = 0.0
    for i in range(0, len(pos), 64):
        tokens, actions, _, _ = pd.batch(pos[i:i + 64])
        diff = max(diff, verify(params, mcfg, onnx_path, tokens, actions))
    return diff, f"{len(pos)} held-out positions"


def export_info(mcfg: MAVConfig) -> dict:
    return {"kind": KIND_MAV, **cost_split(mcfg)}


# ----------------------------------------------------------------------------------------------
# evaluation policy (what the engine plays)
# ----------------------------------------------------------------------------------------------


class MAVPolicy:
    """Argmax of the expected win probability over legal moves (ties → lowest action id), one pass per position."""

    def __init__(self, path: str, positions_per_run: int = 256):
        self.sess = ort_session(path)
        self.centres = BUCKET_CENTRES.astype(np.float64)
        self.per_run = positions_per_run

    def run(self, tokens: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """tokens [B, 78], actions [B, M] → log-probs [B, M, K]."""
        return self.sess.run(["log_probs"], {"tokens": tokens.astype(np.int64), "actions": actions.astype(np.int64)})[0]

    def win_probs_batch(self, rows: np.ndarray) -> np.ndarray:
        """AV-layout rows [N, 79] → log-probs [N, K], one network row per run of equal states."""
        n = len(rows)
        if n == 0:
            return np.zeros((0, 128), np.float32)
        change = np.any(rows[1:, :78] != rows[:-1, :78], axis=1)
        starts = np.concatenate([[0], np.flatnonzero(change) + 1])
        ends = np.concatenate([starts[1:], [n]])
        out = None
        for g in range(0, len(starts), self.per_run):
            s, e = starts[g:g + self.per_run], ends[g:g + self.per_run]
            m = int((e - s).max())
            tokens = rows[s, :78]
            actions = np.full((len(s), m), PAD_ACTION, np.int64)
            for i, (a, b) in enumerate(zip(s, e)):
                actions[i, : b - a] = rows[a:b, 78]
            lp = self.run(tokens, actions)
            if out is None:
                out = np.zeros((n, lp.shape[-1]), np.float32)
            for i, (a, b) in enumerate(zip(s, e)):
                out[a:b] = lp[i, : b - a]
        return out

    def choose(self, board: chess.Board) -> chess.Move:
        moves = sorted(board.legal_moves, key=lambda m: MOVE_TO_ACTION[m.uci()])
        tokens = np.zeros((1, 78), np.int64)
        tokens[0, 1:] = tokenize(board.fen())
        actions = np.asarray([[MOVE_TO_ACTION[m.uci()] for m in moves]], np.int64)
        wp = np.exp(self.run(tokens, actions)[0].astype(np.float64)) @ self.centres
        return moves[int(np.argmax(wp))]


KIND = Kind(
    name=KIND_MAV, onnx_kinds=(KIND_MAV, KIND_MAVP), presets=CONFIGS, default_preset="mav-smoke", train_config=MAVTrainConfig,
    arch_fields=("layers", "dim", "heads", "head_dim", "head_hidden", "attn_bias", "head_global", "canonical",
                 "policy_dim"),
    trainer=MAVTrainer, load_run=load_run, describe_run=describe_run, export=export,
    verify_held_out=verify_held_out, export_info=export_info, policy=MAVPolicy, num_params=num_params,
    preset_prefix="mav")
