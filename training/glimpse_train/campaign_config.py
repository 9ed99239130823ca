"""The campaign's settings and bookkeeping (``campaign``): its knobs (``CampaignConfig``) and model
(``CAMPAIGN_MODEL``), the state file ``runs/<run>/campaign.json`` and its seed from the committed curve,
and the clocks and schedules a cycle runs by (``shard_due``, ``PhaseClock``, ``PauseClock``, ``decay_scale``,
``train_wanted``).
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import json
import os
import threading
import time

SOURCES = ("selfplay", "popular", "endgames", "books", "lichess", "openings", "dagger")
#: The file sources: files under ``SHARED/data/`` (glob patterns), walked in a fixed shuffled order by a cursor.
#: ``popular`` and ``endgames`` are labelled to the end by now (``../shared/README.md``); ``books`` are opening
#: books (UHO 40-60 %: 241,670 positions 8-9 moves in; 2 moves: 40,457), ``lichess`` every position of the
#: Lichess games (3,970 games of a 1443-2127 player, about 280,000 positions before dedup); ``openings`` the match
#: books: ``noob_3moves.epd`` (150,932 positions 3 moves in, where the ladder's and DAgger's games start) and every
#: position of ``8moves_v3.pgn`` (34,700 lines, 164,202 distinct positions): 313,745 distinct, no finding cost.
SOURCE_FILES = {"popular": ("positions/popularpos_lichess_v3.epd",), "endgames": ("positions/endgames.epd",),
                "books": ("openings/UHO_4060_v4.epd", "openings/2moves_v1.epd"), "lichess": ("games/*.pgn",),
                "openings": ("openings/noob_3moves.epd", "openings/8moves_v3.pgn")}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A label phase whose Stockfish workers used less than this share of their cores (a match or build at normal
# priority took the rest) does not update the positions-per-second rate that sizes the next phase.
BUSY_FOR_RATE = 0.6
#: ``glimpse.*`` metadata of a ``remote train`` snapshot (``remote.train`` writes them, ``Campaign.adopt``
#: reads them): the trainer's step and batch size since the snapshot's start net.
TRAIN_STEP_KEY = "glimpse.train_step"
TRAIN_BATCH_KEY = "glimpse.train_batch"
CURVE_FIELDS = ["cycle", "time", "wall_hours", "store_positions", "train_positions", "position_passes", "step",
                "heldout_positions", "action_accuracy", "kendall_tau", "policy_accuracy", "puzzles", "puzzle_accuracy",
                "gate"]

# The campaign's model: the one-pass contract (engine kind multi_action_value), deeper than wide, inputs in
# the side-to-move frame (canon.py), learned per-pair attention bias, HL-Gauss bucket targets, and the
# policy (MCTS priors) and WDL heads of heads.py.
CAMPAIGN_MODEL = dict(layers=6, dim=128, heads=4, head_dim=128, head_hidden=256, attn_bias=1, head_global=1, canonical=1,
                      batch=64, micro=4, steps=10_000_000, lr=5e-4, warmup=300, eval_every=500, eval_positions=512,
                      ckpt_seconds=300.0, value_weight=0.1, policy_dim=64, policy_weight=0.5, policy_tau=0.05,
                      wdl_weight=0.1)


@dataclasses.dataclass
class CampaignConfig:
    """Knobs of the loop; the defaults are what ``make campaign`` runs."""

    run: str = "campaign-l6d128"
    label_minutes: float = 10.0  # sized by the rate of an unstarved phase, stretched up to label_wall_cap ×
    label_wall_cap: float = 2.0  # a label phase ends after this many × label_minutes of wall clock (pauses left out)
    train_minutes: float = 20.0
    batch: int = 0  # positions a train step; 0 = the run's config.json (CAMPAIGN_MODEL: 64)
    lr: float = 0.0  # peak learning rate of the train phases; 0 = the run's config.json (CAMPAIGN_MODEL: 5e-4).
    # A net trained on a GPU machine (batch 1024, decayed) lost held-out accuracy at 5e-4 and batch 64
    decay_frac: float = 0.0  # last share of each train phase in which the learning rate decays (0 = never;
    # 0.25, measured over two cycles, gave no held-out gain over the EMA at the decay's start)
    decay_to: float = 0.05  # learning-rate multiplier reached at the end of the train phase
    shard_minutes: float = 3.0  # a shard every this many minutes once it holds shard_min_positions (shard_due)
    shard_min_positions: int = 500  # at idle priority 3 minutes labelled ~100 positions: 6-97 kB shards
    shard_max_minutes: float = 15.0  # ... and at the latest after this many minutes, however few (a kill -9 loses less)
    workers: int = 2
    chunk: int = 24
    scheme: str = "two-tier"
    depth: int = 8
    top_k: int = 4
    shallow_depth: int = 2
    mix: str = "selfplay:0.25,books:0.2,lichess:0.2,openings:0.2,dagger:0.35"  # popular and endgames (0.3 and 0.1
    # until 2026-11-28) are labelled to the end: their share of a phase found nothing
    dagger_levels: str = "1500,1700,1900,2100"  # opponents of the engine's own games, one per label phase in turn:
    # a number under 100 is a Stockfish Skill Level, a larger one a UCI_Elo (UCI_LimitStrength; 15.1 takes 1350-2850)
    dagger_movetime: float = 0.02  # Stockfish's seconds per move in those games
    dagger_engine_movetime: float = 0.06  # the engine's: its Move Overhead (30 ms) leaves it half of 0.06. At
    # 0.02 (both sides' until 2026-11-29) it had 10 ms, and its hard limit often played the fallback move instead of
    # the net's (CHANGELOG.md, "Fixed")
    dagger_every: int = 1  # one ply in this many of those games gives a candidate (ChessBench takes every board
    # of its games); at 3, the value until 2026-11-28, the games took about half of a label phase's wall clock
    puzzles: int = 300
    cycles: int = 0  # 0 = until killed
    nice: int = 10
    train_cpu: bool = False  # train on the CPU too; without it a machine with no GPU only labels (train_wanted)
    train_backend: str = "auto"  # the train step's framework: jax, torch (bfloat16 products: torch_step.py), or
    # auto = torch on a CPU with AMX or AVX-512 bfloat16 where PyTorch is installed, else jax (train_backend)


#: Candidate positions a DAgger game yields when every ply is taken, for the number of games a phase plays (too
#: few games leave the phase short of DAgger positions, too many are played for nothing): on 2026-11-28 six
#: phases of every-ply games (searchless and MCTS against UCI_Elo 1700-2100) gave 41 (searchless against 2100,
#: short games) to 110 positions a game, 86 on average.
DAGGER_PLIES_PER_GAME = 90


def dagger_games(want: int, every: int) -> int:
    """Games (an even number, ≥ 2: each opening with both colours) for ``want`` candidate positions when one ply
    in ``every`` is taken."""
    return max(2, 2 * int(round(want * max(1, every) / DAGGER_PLIES_PER_GAME / 2)))


def shard_due(positions: int, seconds: float, cfg: CampaignConfig) -> bool:
    """Whether the labeller writes its ``positions`` pending labels (``seconds`` since the last shard) to the store
    now: after ``cfg.shard_minutes`` once they number ``cfg.shard_min_positions``, and after
    ``cfg.shard_max_minutes`` whatever their number (never with none). The end of a label phase and a stop
    write them anyway."""
    if positions <= 0:
        return False
    if seconds > cfg.shard_max_minutes * 60:
        return True
    return seconds > cfg.shard_minutes * 60 and positions >= cfg.shard_min_positions


# ---------------------------------------------------------------------------------------- state
def load_state(path: str) -> dict:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"cycle": 0, "wall_seconds": 0.0, "cursor": {}, "best_accuracy": None, "rate": None}


def seed_from_curve(csv_path: str) -> dict:
    """State to resume from when the run directory is gone (a fresh clone) but the committed curve is there:
    the next cycle number, the wall hours so far, the best gated held-out accuracy and the size of the split
    it was measured on (so the gate keeps its bar, re-measured if the split has grown) and the position-passes so far (``passes_offset``: the trainer restarts its step count from the
    committed ONNX). Empty when the curve is missing or has no rows."""
    if not os.path.exists(csv_path):
        return {}
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    last = rows[-1]
    best = max((r for r in rows if r.get("gate") == "best" and r.get("action_accuracy")),
               key=lambda r: float(r["action_accuracy"]), default=None)
    split = best.get("heldout_positions") if best else None
    return {"cycle": int(last["cycle"]) + 1, "wall_seconds": float(last["wall_hours"]) * 3600,
            "best_accuracy": float(best["action_accuracy"]) if best else None,
            "best_heldout_positions": int(split) if split else None, "passes_offset": int(last["position_passes"])}


def save_state(path: str, st: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, path)


#: The state a fresh clone could not rebuild from the curve, kept beside it (``<out>/<run>-progress.json``,
#: committed with the label shards): wall seconds (label-only phases add no curve row), the label round (DAgger
#: seeds and opponents), the sources' cursors (self-play game seeds) and the labelling rate (positions/s a worker).
PROGRESS_KEYS = ("wall_seconds", "label_round", "cursor", "rate")


def save_progress(path: str, st: dict) -> None:
    """Writes ``st``'s ``PROGRESS_KEYS`` to ``path`` (atomically, as ``save_state``)."""
    save_state(path, {k: st[k] for k in PROGRESS_KEYS if k in st})


def merge_progress(st: dict, progress: dict) -> dict:
    """``st`` (a fresh machine's state, seeded from the curve) brought up to a committed ``progress``
    (``save_progress``): the larger wall seconds and label round, each cursor at the further of the two, the
    progress's rate where ``st`` has none. Nothing goes back: a curve row newer than the progress file keeps
    its hours. Returns ``st``, changed in place."""
    if progress.get("wall_seconds") is not None:
        st["wall_seconds"] = max(float(st.get("wall_seconds") or 0.0), float(progress["wall_seconds"]))
    if progress.get("label_round") is not None:
        st["label_round"] = max(int(st.get("label_round") or 0), int(progress["label_round"]))
    cur = st.setdefault("cursor", {})
    for name, at in (progress.get("cursor") or {}).items():
        cur[name] = max(int(cur.get(name, 0)), int(at))
    if st.get("rate") is None and progress.get("rate") is not None:
        st["rate"] = progress["rate"]
    return st


class PhaseClock:
    """How far a train phase of ``budget`` seconds has got, counted in the CPU time this process used
    (all its threads) divided by the machine's cores, so that time the trainer spends paused (SIGSTOP) or
    starved (idle scheduling while a match runs) does not count. On an otherwise idle machine it runs at
    about the wall clock. ``done()`` also ends the phase after ``wall_cap`` × ``budget`` wall seconds (a
    GPU trainer uses little CPU). ``cpu`` and ``wall`` are the clocks (injectable for tests)."""

    def __init__(self, budget: float, cores: int | None = None, wall_cap: float = 2.0,
                 cpu=time.process_time, wall=time.monotonic):
        self.budget, self.cores, self.wall_cap = budget, cores or os.cpu_count() or 1, wall_cap
        self._cpu, self._wall = cpu, wall
        self.cpu0, self.wall0 = cpu(), wall()

    def elapsed(self) -> float:
        return (self._cpu() - self.cpu0) / self.cores

    def done(self) -> bool:
        return self.elapsed() >= self.budget or self._wall() - self.wall0 >= self.wall_cap * self.budget


class PauseClock:
    """Seconds (from an arbitrary origin, like ``time.monotonic``) that leave out the time this process spent
    stopped: ``kill -STOP`` … ``kill -CONT`` on the campaign's processes, how it is paused for a match or a
    timing. The label phase's deadline and rate and the campaign's wall hours read it, so a pause neither
    uses up a phase (its labelling finds the deadline passed and labels nothing) nor counts as campaign time.

    A daemon thread (``start()``) wakes every ``tick`` seconds; a gap longer than ``gap`` seconds between two
    observations is a stop, and all of it but one ``tick`` is added to ``paused``. A reading observes too, so
    the first one after a resume already leaves the pause out. Without the thread (not started) nothing is
    ever counted as a stop. ``now`` is the underlying clock (injectable for tests)."""

    def __init__(self, tick: float = 1.0, gap: float = 30.0, now=time.monotonic):
        self.tick, self.gap, self._now = tick, gap, now
        self.paused = 0.0  # seconds counted as stopped so far
        self._last = now()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> "PauseClock":
        """Starts the observing thread (once; the time since the clock was made is running time); returns the
        clock."""
        if self._thread is None:
            with self._lock:
                self._last = self._now()
            self._thread = threading.Thread(target=self._run, name="pause-clock", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            time.sleep(self.tick)
            self.observe()

    def observe(self) -> None:
        """Counts the time since the last observation as stopped if it is longer than ``gap``."""
        with self._lock:
            t = self._now()
            if t - self._last > self.gap:
                self.paused += t - self._last - self.tick
            self._last = max(self._last, t)

    def __call__(self) -> float:
        if self._thread is not None:
            self.observe()
        return self._now() - self.paused


def decay_scale(elapsed: float, total: float, frac: float, to: float) -> float:
    """Learning-rate multiplier ``elapsed`` seconds into a train phase of ``total`` seconds: 1 until the
    last ``frac`` of the phase, then linear down to ``to`` at its end (and ``to`` after it); the stable
    phase of the next cycle starts again at 1 (warmup-stable-decay, Hägele et al. 2024, §3; MiniCPM, Hu et
    al. 2024, §4). ``frac <= 0`` never decays."""
    if frac <= 0 or total <= 0:
        return 1.0
    start = total * (1.0 - min(frac, 1.0))
    if elapsed <= start:
        return 1.0
    x = min((elapsed - start) / (total - start), 1.0)
    return 1.0 + (to - 1.0) * x


def dagger_opponent(level: int) -> tuple[str, str]:
    """The ``tools/match.py`` engine spec and a label for the DAgger opponent ``level``: under 100 a Stockfish
    ``Skill Level`` (0-20), otherwise a ``UCI_Elo`` with ``UCI_LimitStrength`` (Stockfish 15.1: 1350-2850).
    Raises ``ValueError`` for a level in neither range."""
    if 0 <= level <= 20:
        return f"stockfish:Skill Level={level}", f"Skill Level {level}"
    if 1350 <= level <= 2850:
        return f"stockfish:UCI_LimitStrength=true,UCI_Elo={level}", f"UCI_Elo {level}"
    raise ValueError(f"DAgger level {level}: neither a Skill Level (0-20) nor a UCI_Elo (1350-2850)")


def train_backend(asked: str, gpu: str | None) -> str:
    """The train step's framework for ``CampaignConfig.train_backend`` ``asked`` on this machine: ``"jax"`` on an
    accelerator (``gpu``) or where asked; ``"torch"`` where asked (``ImportError`` without PyTorch), or for
    ``"auto"`` on a CPU with bfloat16 products (AMX or AVX-512 BF16, ``torch_step.cpu_bf16``) where PyTorch imports
    (its speed against JAX's: CHANGELOG.md). Raises ``ValueError`` on another name."""
    from .torch_step import cpu_bf16, torch_available

    if asked not in ("auto", "jax", "torch"):
        raise ValueError(f"train backend {asked!r}: auto, jax or torch")
    if asked == "torch" and not torch_available():
        raise ImportError("--train-backend torch needs PyTorch: make torch-setup")
    if asked != "auto":
        return asked
    return "torch" if gpu is None and cpu_bf16() and torch_available() else "jax"


def gpu_backend() -> str | None:
    """The accelerator JAX would train on (``"gpu"``, ``"tpu"``…), or ``None`` on a CPU-only machine. JAX is
    imported only where a device node suggests an accelerator (its threads make every later fork, Ray's
    and Stockfish's, warn of deadlocks)."""
    if not glob.glob("/dev/nvidia[0-9]*") and not glob.glob("/dev/accel*") and not os.environ.get("GLIMPSE_PROBE_JAX"):
        return None
    try:
        import jax  # only here: JAX's threads make every later fork warn (see above)

        backend = jax.default_backend()
    except Exception:  # noqa: BLE001 - no usable JAX means no GPU to train on
        return None
    return None if backend == "cpu" else backend


def train_wanted(cfg: CampaignConfig, gpu: str | None) -> bool:
    """Whether the campaign trains: on an accelerator always, on the CPU only with ``--train-cpu``. A CPU
    train phase adds about 20,000 position-passes (0.04 % of a GPU burst's) while it takes both
    cores from Stockfish, so by default a CPU-only machine spends its time on labels."""
    return cfg.train_minutes > 0 and (cfg.train_cpu or gpu is not None)


def parse_mix(mix: str) -> dict[str, float]:
    """``"selfplay:0.4,popular:0.4,endgames:0.2"`` → normalised shares; raises ``ValueError``."""
    out = {}
    for part in mix.split(","):
        name, _, share = part.partition(":")
        if name not in SOURCES:
            raise ValueError(f"unknown position source {name!r}")
        out[name] = float(share)
    tot = sum(out.values())
    if tot <= 0:
        raise ValueError("mix shares sum to zero")
    return {k: v / tot for k, v in out.items()}
