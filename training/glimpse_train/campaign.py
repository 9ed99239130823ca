"""The strength campaign (``make campaign``): label → store → train → export → evaluate → gate → record,
in cycles, for as long as it is left running; killed at any point, the next start resumes.

One cycle:

1. **Label** the positions an unstarved phase labels in ``label_minutes`` (its measured rate; a phase whose
   workers got under ``BUSY_FOR_RATE`` of their cores does not update it), stretched up to
   ``label_wall_cap`` × ``label_minutes`` of wall clock, so a match at idle priority lengthens the phase
   rather than emptying it: new positions from Stockfish self-play at random skill, popular
   Lichess positions and endgame starts (``../shared/data/positions/``), deduplicated on the first four
   FEN fields against every labelled position so far; labelled by Stockfish as Ray tasks
   (``raylabel``; ``RAY_ADDRESS`` for a cluster); a shard goes into the label store (``data/labels/``,
   committed) every ``shard_minutes`` once it holds ``shard_min_positions``, at the latest every
   ``shard_max_minutes`` (``shard_due``).
   On a machine with no GPU (and no ``--train-cpu``) the campaign does only this, phase after phase
   (``label_only``): the cores are worth far more as labels than as CPU training passes.
2. **Train** for ``train_minutes`` (``PhaseClock``: CPU time over cores, so pauses and matches at idle
   priority do not eat the phase): the one-pass trainer over every label file (shared + store), resuming
   from ``training/runs/<run>/ckpt.pkl`` (checkpoints every ``ckpt_seconds`` ≤ 15 min and on SIGTERM);
   with no checkpoint it starts from the committed ``training/campaign/<run>.onnx`` (``onnx_import``),
   else from scratch. The learning rate stays at its peak after warm-up (``steps`` is huge); with
   ``decay_frac`` > 0 it decays linearly to ``decay_to`` × peak in the last ``decay_frac`` of each train
   phase (warmup-stable-decay; ``decay_scale``) and the next phase starts at the peak again (off by
   default: no measured gain). The EMA of the weights is what is exported and measured.
3. **Export** the EMA weights to ONNX (ORT checked against JAX), **evaluate** through ONNX Runtime on the
   fixed held-out split (positions of ``../shared/data/labels`` whose key hashes into the 3 % validation
   set; never trained on): action accuracy (argmax expected win probability is a Stockfish-best move) and
   Kendall τ; and the first ``puzzles`` Lichess puzzles.
4. **Gate**: a candidate whose held-out action accuracy beats the best so far becomes
   ``training/campaign/<run>.onnx`` (the resumable, committed checkpoint) and ``runs/<run>/best.onnx``.
   Replacing the engine's embedded default is a separate, SPRT-decided step (``weights/README.md``).
5. **Record**: a row in ``training/campaign/<run>-curve.csv`` and the PNG beside it (positions labelled,
   position-passes, wall hours against held-out action accuracy and puzzle accuracy).

Campaign state (cycle, phase timings, the sources' cursors) is ``runs/<run>/campaign.json``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import random
import shutil
import signal
import sys
import time

import numpy as np

from . import chessdata, labelstore, raylabel
from .trainloop import log_line

SOURCES = ("selfplay", "popular", "endgames", "dagger")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A label phase whose Stockfish workers used less than this share of their cores (a match or build at normal
# priority took the rest) does not update the positions-per-second rate that sizes the next phase.
BUSY_FOR_RATE = 0.6
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
    label_wall_cap: float = 2.0  # a label phase ends after this many × label_minutes of wall clock whatever it did
    train_minutes: float = 20.0
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
    mix: str = "selfplay:0.3,popular:0.3,endgames:0.1,dagger:0.3"
    dagger_levels: str = "1500,1700,1900,2100"  # opponents of the engine's own games, one per label phase in turn:
    # a number under 100 is a Stockfish Skill Level, a larger one a UCI_Elo (UCI_LimitStrength; 15.1 takes 1350-2850)
    dagger_movetime: float = 0.02  # seconds per move for both sides in those games
    puzzles: int = 300
    cycles: int = 0  # 0 = until killed
    nice: int = 10
    train_cpu: bool = False  # train on the CPU too; without it a machine with no GPU only labels (train_wanted)


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


class Stop:
    """SIGTERM/SIGINT set a flag that every phase polls (the trainer checkpoints on it, the labeller writes
    what it has). ``install()`` must come after ``ray.init``, which sets handlers of its own."""

    def __init__(self):
        self.flag = False

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._set)
        signal.signal(signal.SIGINT, self._set)

    def _set(self, signum, frame):
        self.flag = True
        log_line(f"signal {signum}: finishing the current step, checkpointing and stopping")

    def __call__(self) -> bool:
        return self.flag


# ---------------------------------------------------------------------------------------- state
def load_state(path: str) -> dict:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"cycle": 0, "wall_seconds": 0.0, "cursor": {}, "best_accuracy": None, "rate": None}


def seed_from_curve(csv_path: str) -> dict:
    """State to resume from when the run directory is gone (a fresh clone) but the committed curve is there:
    the next cycle number, the wall hours so far, the best gated held-out accuracy (so the gate keeps its
    bar) and the position-passes so far (``passes_offset``: the trainer restarts its step count from the
    committed ONNX). Empty when the curve is missing or has no rows."""
    if not os.path.exists(csv_path):
        return {}
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    last = rows[-1]
    best = [float(r["action_accuracy"]) for r in rows if r.get("gate") == "best" and r.get("action_accuracy")]
    return {"cycle": int(last["cycle"]) + 1, "wall_seconds": float(last["wall_hours"]) * 3600,
            "best_accuracy": max(best) if best else None, "passes_offset": int(last["position_passes"])}


def save_state(path: str, st: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, path)


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


# ---------------------------------------------------------------------------------------- positions
def dagger_opponent(level: int) -> tuple[str, str]:
    """The ``tools/match.py`` engine spec and a label for the DAgger opponent ``level``: under 100 a Stockfish
    ``Skill Level`` (0-20), otherwise a ``UCI_Elo`` with ``UCI_LimitStrength`` (Stockfish 15.1: 1350-2850).
    Raises ``ValueError`` for a level in neither range."""
    if 0 <= level <= 20:
        return f"stockfish:Skill Level={level}", f"Skill Level {level}"
    if 1350 <= level <= 2850:
        return f"stockfish:UCI_LimitStrength=true,UCI_Elo={level}", f"UCI_Elo {level}"
    raise ValueError(f"DAgger level {level}: neither a Skill Level (0-20) nor a UCI_Elo (1350-2850)")


def gpu_backend() -> str | None:
    """The accelerator JAX would train on (``"gpu"``, ``"tpu"``…), or ``None`` on a CPU-only machine. JAX is
    imported only where a device node suggests an accelerator (its threads make every later fork, Ray's
    and Stockfish's, warn of deadlocks)."""
    import glob

    if not glob.glob("/dev/nvidia[0-9]*") and not glob.glob("/dev/accel*") and not os.environ.get("GLIMPSE_PROBE_JAX"):
        return None
    try:
        import jax

        backend = jax.default_backend()
    except Exception:  # noqa: BLE001 - no usable JAX means no GPU to train on
        return None
    return None if backend == "cpu" else backend


def train_wanted(cfg: "CampaignConfig", gpu: str | None) -> bool:
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


def run_until_stopped(cmd: list[str], stop, cwd: str | None = None, poll: float = 0.5) -> tuple[int | None, str]:
    """Runs ``cmd`` (stdout discarded, stderr kept) until it exits or ``stop()`` turns true; then it is sent
    SIGTERM (SIGKILL 10 s later). Returns (exit code, or None when stopped; stderr). A campaign stopped during
    its DAgger match thus stops within seconds instead of after the whole match (up to ~20 minutes)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=cwd)
        stopped = False
        while p.poll() is None:
            if stop():
                stopped = True
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                break
            time.sleep(poll)
        err.seek(0)
        text = err.read().decode(errors="replace")
    return (None if stopped else p.returncode), text


def epd_source(path: str, seed: int) -> list[str]:
    """Canonical 6-field FENs of an EPD file in a fixed shuffled order (the cursor walks through it)."""
    import chess

    fens = []
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                fens.append(" ".join(parts[:4]) + " 0 1")
    random.Random(seed).shuffle(fens)
    out = []
    for raw in fens:
        try:
            b = chess.Board(raw)
        except ValueError:
            continue
        if b.is_valid() and not b.is_game_over(claim_draw=False):
            out.append(b.fen())
    return out


PENDING_MAX = 200_000  # unlabelled candidates kept between label phases


def take_new(fens, start: int, n: int, known: set[str]) -> tuple[list[str], int]:
    """Up to ``n`` FENs from ``fens[start:]`` whose key is not in ``known`` (added to it); returns them
    and the new cursor."""
    out, i = [], start
    while i < len(fens) and len(out) < n:
        k = labelstore.position_key(fens[i])
        i += 1
        if k not in known:
            known.add(k)
            out.append(fens[i - 1])
    return out, i


# ---------------------------------------------------------------------------------------- phases
class Campaign:
    def __init__(self, cfg: CampaignConfig, shared: str, store_root: str, runs_dir: str, out_dir: str,
                 stockfish: str | None = None, log=log_line):
        self.cfg, self.shared = cfg, shared
        self.store = labelstore.LabelStore(store_root)
        self.run_dir = os.path.abspath(os.path.join(runs_dir, cfg.run))
        self.out_dir = os.path.abspath(out_dir)
        os.makedirs(self.run_dir, exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)
        logf = open(os.path.join(self.run_dir, "campaign.log"), "a")

        def both(msg: str) -> None:
            log(msg)
            logf.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {msg}\n")
            logf.flush()

        self.log = both
        self.state_path = os.path.join(self.run_dir, "campaign.json")
        fresh = not os.path.exists(self.state_path)
        self.state = load_state(self.state_path)
        if fresh:
            seeded = seed_from_curve(self.curve_csv)
            if seeded:
                self.state.update(seeded)
                self.log(f"no {self.state_path}: resuming the curve at cycle {seeded['cycle']} "
                         f"(gate bar {seeded['best_accuracy']}, {seeded['passes_offset']} position-passes so far)")
        self.stockfish = stockfish
        self.stop = Stop()
        self._known: set[str] | None = None
        self._epd: dict[str, list[str]] = {}

    @property
    def checkpoint_onnx(self) -> str:
        return os.path.join(self.out_dir, f"{self.cfg.run}.onnx")

    @property
    def label_round(self) -> int:
        """The number of the label phase: it seeds the DAgger games, picks their opponent and shuffles the
        candidates. It starts at the cycle and grows by one each phase, so phases without training (a
        CPU-only machine) never replay the same games."""
        return max(self.state.get("label_round", 0), self.state["cycle"])

    @property
    def curve_csv(self) -> str:
        return os.path.join(self.out_dir, f"{self.cfg.run}-curve.csv")

    def files(self) -> list[str]:
        return labelstore.label_files(self.shared, self.store.root)

    def known(self) -> set[str]:
        if self._known is None:
            self._known = labelstore.known_keys(self.files())
        return self._known

    def scheme(self) -> raylabel.LabelScheme:
        c = self.cfg
        return raylabel.LabelScheme(c.scheme, c.depth, c.top_k, c.shallow_depth)

    # ------------------------------------------------------------------ label
    def candidates(self, n: int) -> list[tuple[str, str]]:
        """``n`` new (source, FEN) pairs by the mix; self-play games are played as Ray tasks."""
        shares = parse_mix(self.cfg.mix)
        known, cur = self.known(), self.state.setdefault("cursor", {})
        out: list[tuple[str, str]] = []
        for name, share in shares.items():
            want = int(round(n * share))
            if want <= 0 or self.stop():
                continue
            if name == "dagger":
                fens = self.dagger_positions(want)
                new, _ = take_new(fens, 0, want, known)
            elif name == "selfplay":
                games = max(1, want // 25)
                seed0 = cur.get("selfplay", 0)
                seeds = [seed0 + i for i in range(games)]
                chunks = [seeds[i:i + 4] for i in range(0, len(seeds), 4)]
                res = raylabel.run_chunks(raylabel.selfplay_chunk, chunks, (self.stockfish, self.cfg.nice), stop=self.stop)
                cur["selfplay"] = seed0 + games
                fens = [f for r in res for f in r["fens"]]
                self.state["core_seconds_selfplay"] = self.state.get("core_seconds_selfplay", 0.0) + sum(
                    r["core_seconds"] for r in res)
                new, _ = take_new(fens, 0, want, known)
            else:
                file = {"popular": "popularpos_lichess_v3.epd", "endgames": "endgames.epd"}[name]
                if name not in self._epd:
                    self._epd[name] = epd_source(os.path.join(self.shared, "data", "positions", file), seed=7)
                new, cur[name] = take_new(self._epd[name], cur.get(name, 0), want, known)
            out.extend((name, f) for f in new)
        random.Random(self.label_round).shuffle(out)
        return out

    def dagger_net(self) -> str | None:
        """The net the engine plays its DAgger games with: the campaign's best candidate, else the
        committed checkpoint, else ``None`` (the engine's embedded default)."""
        for p in (os.path.join(self.run_dir, "best.onnx"), self.checkpoint_onnx):
            if os.path.exists(p):
                return os.path.abspath(p)
        return None

    def dagger_positions(self, want: int) -> list[str]:
        """FENs (about one ply in three) from games of the engine (current net; searchless, and MCTS in every
        other pass over the levels) against Stockfish at ``dagger_levels``, played by ``tools/match.py``: the
        states the learner actually visits (DAgger, Ross, Gordon & Bagnell 2011). Empty, with a log line, when the engine is not built or a stop is
        requested during the match (``run_until_stopped``)."""
        import chess.pgn

        engine = os.path.join(REPO, "target", "release", "glimpse")
        if not os.path.exists(engine):
            self.log("dagger: target/release/glimpse not built (make build); source skipped this cycle")
            return []
        games = max(2, 2 * int(round(want / 25 / 2)))
        levels = [int(x) for x in self.cfg.dagger_levels.split(",")]
        cyc = self.label_round
        spec, opponent = dagger_opponent(levels[cyc % len(levels)])
        pgn = os.path.join(self.run_dir, f"dagger-{cyc:04d}.pgn")
        net = self.dagger_net()
        cmd = [os.path.join(REPO, ".venv", "bin", "python"), os.path.join(REPO, "tools", "match.py"), "--a", engine,
               "--b", spec, "--tc", "none", "--movetime", str(self.cfg.dagger_movetime),
               "--games", str(games), "--concurrency", str(self.cfg.workers), "--seed", str(1000 + cyc),
               "--book", os.path.join(self.shared, "data", "openings", "noob_3moves.epd"), "--maxmoves", "150",
               "--pgn", pgn, "--json", pgn[:-4] + ".json", "--quiet"]
        # Every other pass over the levels the engine plays with MCTS (the positions its search leads to, at
        # ~20 ms a move), so each opponent meets both modes.
        mode = "mcts" if (cyc // len(levels)) % 2 else "searchless"
        cmd[4:4] = ["--a-option", f"SearchMode={mode}"]
        if net:
            cmd[4:4] = ["--a-option", f"WeightsFile={net}"]
        t0 = time.time()
        rc, err = run_until_stopped(["nice", "-n", str(self.cfg.nice)] + cmd, self.stop, cwd=REPO)
        if rc is None:
            self.log(f"dagger: match stopped after {time.time() - t0:.0f} s (stop requested); no positions")
            return []
        if rc != 0 or not os.path.exists(pgn):
            self.log(f"dagger: match.py failed (rc {rc}): {err.strip()[-300:]}")
            return []
        fens, rng = [], random.Random(cyc)
        with open(pgn) as f:
            while (game := chess.pgn.read_game(f)) is not None:
                board = game.board()
                for mv in game.mainline_moves():
                    board.push(mv)
                    if rng.random() < 1 / 3 and not board.is_game_over():
                        fens.append(board.fen())
        self.log(f"dagger: {games} {mode} games vs {opponent} with {net or 'the embedded net'} "
                 f"({time.time() - t0:.0f} s): {len(fens)} positions")
        rng.shuffle(fens)
        return fens

    @property
    def pending_path(self) -> str:
        return os.path.join(self.run_dir, "pending.tsv")

    def load_pending(self) -> list[tuple[str, str]]:
        """Candidates found by an earlier label phase that its deadline (or a kill) left unlabelled:
        ``(source, FEN)`` pairs, minus any whose position the store has labelled since. Finding them
        cost games (self-play, DAgger), so they are labelled before new ones are looked for."""
        if not os.path.exists(self.pending_path):
            return []
        labelled = labelstore.known_keys(self.files())
        out, seen = [], set()
        with open(self.pending_path) as f:
            for line in f:
                src, _, fen = line.rstrip("\n").partition("\t")
                if not fen:
                    continue
                k = labelstore.position_key(fen)
                if k not in labelled and k not in seen:
                    seen.add(k)
                    out.append((src, fen))
        self.known().update(seen)
        return out

    def save_pending(self, left: list[tuple[str, str]]) -> None:
        """Writes the unlabelled candidates (at most ``PENDING_MAX``) atomically; removes the file when none."""
        if not left:
            if os.path.exists(self.pending_path):
                os.remove(self.pending_path)
            return
        tmp = self.pending_path + ".tmp"
        with open(tmp, "w") as f:
            f.writelines(f"{s}\t{fen}\n" for s, fen in left[:PENDING_MAX])
        os.replace(tmp, self.pending_path)

    def label_with_ray(self) -> int:
        """``label_phase`` with Ray running: Ray runs only while labelling (its idle workers cost ~10 % of a
        core each while training). ``ray.init`` sets signal handlers of its own, and after ``ray.shutdown``
        a SIGTERM killed the process outright although Python still reported the campaign's handler (measured: exit
        143, no checkpoint), so the stop handler is installed again after each."""
        raylabel.ray_init(self.cfg.workers, self.log)
        self.stop.install()
        try:
            return self.label_phase()
        finally:
            raylabel.ray_shutdown()
            self.stop.install()

    def label_phase(self) -> int:
        c = self.cfg
        # Positions per second per worker, from the last unstarved phase; a fresh machine starts from 15, about
        # what the two-tier scheme and the candidate search together reached on 2 idle cores.
        rate = self.state.get("rate") or 15.0
        n = max(c.chunk * c.workers, int(rate * c.workers * c.label_minutes * 60))
        t0 = time.time()
        carried = self.load_pending()
        cands = carried + (self.candidates(n - len(carried)) if len(carried) < n else [])
        self.save_pending(cands)  # a kill from here on loses none of them
        self.log(f"label: {len(cands)} positions ({len(carried)} carried over from the last phase, the rest new; "
                 f"{time.time() - t0:.0f} s to find), scheme {self.scheme()}")
        if not cands:
            return 0
        src_of = {f: s for s, f in cands}
        chunks = [[f for _, f in cands[i:i + c.chunk]] for i in range(0, len(cands), c.chunk)]
        from tqdm import tqdm

        pending: list = []
        cost = [0.0]  # core-seconds of the labels not yet in a shard
        core = [0.0]  # core-seconds of the whole phase
        done = [0]
        last_write = [time.time()]
        sf_name = raylabel.stockfish_name(self.stockfish)
        bar = tqdm(total=len(cands), unit="pos", desc=f"cycle {self.state['cycle']} label", smoothing=0.1,
                   mininterval=5, dynamic_ncols=True)

        def flush():
            if pending:
                info = self.store.add([(src_of.get(f, "?"), f, m) for f, m in pending], self.scheme().settings(sf_name),
                                      cost[0])
                for s in info:
                    self.log(f"store: + {s.file} ({s.positions} positions, {s.moves} moves)")
                pending.clear()
                cost[0] = 0.0
            last_write[0] = time.time()

        done_fens: list[str] = []

        def on_result(r):
            pending.extend(r["records"])
            done_fens.extend(r.get("fens") or [f for f, _ in r["records"]])  # skipped ones are not retried
            cost[0] += r["core_seconds"]
            core[0] += r["core_seconds"]
            done[0] += len(r["records"])
            bar.update(len(r["records"]))
            if shard_due(len(pending), time.time() - last_write[0], c):
                flush()

        # At most two chunks per worker in flight; the phase is sized by the rate of an unstarved phase (n
        # above), and none starts after label_wall_cap × label_minutes: on a machine shared with builds and
        # matches the phase stretches to finish its positions, but not for ever, and training gets its turn.
        t_label = time.time()
        raylabel.run_chunks(raylabel.label_chunk, chunks, (self.scheme(), self.stockfish, c.nice), on_result,
                            stop=self.stop, on_error=lambda e: self.log(f"label: a chunk was lost: {e!r}"[:500]),
                            max_in_flight=2 * c.workers, deadline=t0 + c.label_wall_cap * c.label_minutes * 60)
        flush()
        bar.close()
        finished = set(done_fens)
        left = [(src, f) for src, f in cands if f not in finished]
        self.save_pending(left)
        if left:
            self.log(f"label: {len(left)} positions left unlabelled at the deadline, kept for the next phase")
        el = time.time() - t0
        lab = time.time() - t_label
        busy = core[0] / max(1e-9, lab * c.workers)  # share of the workers' cores spent labelling
        self.log(f"label: {done[0]} positions in {el:.0f} s ({lab:.0f} s labelling, "
                 f"{core[0]:.0f} core-s, {busy:.0%} of {c.workers} cores)")
        if done[0] and el > 30 and busy >= BUSY_FOR_RATE:
            self.state["rate"] = round(done[0] / el / c.workers, 2)
        self.state["label_seconds"] = self.state.get("label_seconds", 0.0) + el
        self.state["label_round"] = self.label_round + 1
        return done[0]

    # ------------------------------------------------------------------ train
    def trainer(self, ds):
        from .kinds.multi_action_value import MAVTrainConfig, MAVTrainer

        cfg_path = os.path.join(self.run_dir, "config.json")
        if os.path.exists(cfg_path):
            # A run configured before ``micro`` existed gets the campaign's: it changes speed, not the update.
            tcfg = MAVTrainConfig(**{"micro": CAMPAIGN_MODEL["micro"], **json.load(open(cfg_path))})
        else:
            tcfg = MAVTrainConfig(**CAMPAIGN_MODEL)
            with open(cfg_path, "w") as f:
                json.dump(dataclasses.asdict(tcfg), f, indent=1)
        if self.cfg.lr > 0:
            tcfg = dataclasses.replace(tcfg, lr=self.cfg.lr)
        start = self.checkpoint_onnx if os.path.exists(self.checkpoint_onnx) else None
        if start and not os.path.exists(os.path.join(self.run_dir, "ckpt.pkl")):
            # Starting from the committed net: its shapes win over config.json (a net grown deeper by grow.py,
            # adopted from a GPU machine, trains as it is), and config.json is rewritten to match the checkpoints.
            from .kinds.multi_action_value import with_start_architecture
            from .onnx_import import import_onepass

            shaped = with_start_architecture(tcfg, import_onepass(start)[1])
            if shaped != tcfg:
                self.log(f"train: {start} has {shaped.layers} layers, width {shaped.dim}: config.json follows it")
                on_disk = json.load(open(cfg_path))
                on_disk.update({k: getattr(shaped, k) for k in dataclasses.asdict(shaped)
                                if getattr(shaped, k) != getattr(tcfg, k)})
                with open(cfg_path, "w") as f:
                    json.dump(on_disk, f, indent=1)
                tcfg = shaped

        class CampaignTrainer(MAVTrainer):
            def init_params(inner):
                if start:
                    from .onnx_import import import_onepass

                    params, mcfg = import_onepass(start)
                    self.log(f"train: starting from {start} (no checkpoint in {self.run_dir})")
                    return params
                return super().init_params()

        return CampaignTrainer(tcfg, self.run_dir, ds, self.log)

    def train_phase(self, ds) -> dict:
        c = self.cfg
        clock = PhaseClock(c.train_minutes * 60)
        tr = self.trainer(ds)
        st = tr.run(lambda: self.stop() or clock.done(),
                    lr_scale=lambda: decay_scale(clock.elapsed(), clock.budget, c.decay_frac, c.decay_to))
        return {"step": st["step"], "params": st["ema"], "trainer": tr}

    # ------------------------------------------------------------------ export / evaluate / gate / record
    def export_eval(self, ds, tr, step: int, ema) -> dict:
        from .kinds.multi_action_value import export, verify

        params = {k: np.asarray(v, np.float32) for k, v in ema.items()}
        cand = os.path.join(self.run_dir, f"candidate-{self.state['cycle']:04d}.onnx")
        export(params, tr.mcfg, cand, description=f"campaign {self.cfg.run} cycle {self.state['cycle']} step {step}")
        pos = tr.pd.val_pos[:8]
        tokens, actions, _, _ = tr.pd.batch(pos)
        diff = verify(params, tr.mcfg, cand, tokens, actions)
        if diff > 1e-3:
            raise RuntimeError(f"exported ONNX differs from JAX by {diff}")
        return self.evaluate(ds, cand)

    def evaluate(self, ds, cand: str) -> dict:
        """What a cycle measures of the net ``cand``: held-out action accuracy, τ and loss
        (``evaluate.eval_validation`` on :class:`HeldOut`), the policy head's accuracy and the puzzles."""
        from .evaluate import eval_puzzles, eval_validation
        from .kinds.multi_action_value import MAVPolicy

        held = HeldOut(ds, self.shared)
        pol = MAVPolicy(cand)
        rep = eval_validation(pol, held)
        rep["policy_accuracy"] = policy_accuracy(cand, held)
        puz = eval_puzzles(pol, os.path.join(self.shared, "data", "puzzles", "lichess_puzzles.csv"), self.cfg.puzzles) \
            if self.cfg.puzzles else {"puzzles": 0, "puzzle_accuracy": float("nan")}
        return {"candidate": cand, **rep, **puz}

    def gate(self, rep: dict) -> bool:
        best = self.state.get("best_accuracy")
        if best is None or rep["action_accuracy"] > best:
            shutil.copyfile(rep["candidate"], os.path.join(self.run_dir, "best.onnx"))
            shutil.copyfile(rep["candidate"], self.checkpoint_onnx + ".tmp")
            os.replace(self.checkpoint_onnx + ".tmp", self.checkpoint_onnx)
            self.state["best_accuracy"] = rep["action_accuracy"]
            return True
        return False

    def record(self, row: dict) -> None:
        if os.path.exists(self.curve_csv):
            with open(self.curve_csv) as f:
                old = list(csv.DictReader(f))
            if old and list(old[0].keys()) != CURVE_FIELDS:  # a column was added: rewrite with the new header
                with open(self.curve_csv, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=CURVE_FIELDS)
                    w.writeheader()
                    w.writerows({k: r.get(k, "") for k in CURVE_FIELDS} for r in old)
        new = not os.path.exists(self.curve_csv)
        with open(self.curve_csv, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CURVE_FIELDS)
            if new:
                w.writeheader()
            w.writerow({k: row.get(k, "") for k in CURVE_FIELDS})
        try:
            plot_curve(self.curve_csv, self.curve_csv[:-4] + ".png")
        except Exception as e:  # noqa: BLE001 - a plot failure must not stop the campaign
            self.log(f"plot failed: {e}")

    @property
    def cache_dir(self) -> str:
        return os.path.join(os.path.dirname(self.run_dir), "..", "data", "cache")

    def best_row(self) -> dict | None:
        """The curve's latest row with gate ``best`` (the net ``best.onnx`` holds), or ``None``."""
        if not os.path.exists(self.curve_csv):
            return None
        with open(self.curve_csv) as f:
            best = [r for r in csv.DictReader(f) if r.get("gate") == "best"]
        return best[-1] if best else None

    def adopt(self, net: str, passes: int | None = None, extra_seconds: float = 0.0, force: bool = False) -> dict:
        """Makes ``net``, a one-pass ONNX file trained elsewhere (a GPU machine's ``remote train`` snapshot,
        CAMPAIGN.md), the campaign's start, with the campaign stopped. It is measured as a cycle measures its
        candidate (:meth:`evaluate`); when its held-out action accuracy beats the gate's bar (or ``force``) it
        becomes ``candidate-<cycle>.onnx``, ``best.onnx`` and the committed checkpoint, the run's ``ckpt.pkl``
        moves aside to ``ckpt-cycle<N>-before-adopt.pkl`` (the next train phase starts from ``net``, at its
        own depth and width), a curve row is recorded (gate ``best``) and the state moves on: the next cycle
        (which labels first), ``passes_offset``, the bar, the wall hours plus ``extra_seconds`` (the remote run's).

        ``passes``: the net's position-passes in all; by default the best row's plus the ``step × batch`` of
        the ``remote train step N batch B`` its ``glimpse.description`` records (the remote run started from
        the best net). Returns ``{"adopted", "action_accuracy", "bar", …}`` (the report of :meth:`evaluate`).
        Raises ``ValueError`` when ``passes`` is not given and cannot be worked out."""
        import re

        from .data import MemDataset
        from .onnx_import import read_meta

        if passes is None:
            m = re.search(r"remote train step (\d+) batch (\d+)", read_meta(net).get("glimpse.description", ""))
            row = self.best_row()
            if not m or row is None:
                raise ValueError(f"{net}: give the position-passes (its description is not a remote train "
                                 f"snapshot's, or the curve has no best row)")
            passes = int(row["position_passes"]) + int(m.group(1)) * int(m.group(2))
        ds = MemDataset(self.files(), self.cache_dir, self.log)
        cyc = self.state["cycle"]
        cand = os.path.join(self.run_dir, f"candidate-{cyc:04d}.onnx")
        shutil.copyfile(net, cand)
        rep = self.evaluate(ds, cand)
        bar = self.state.get("best_accuracy")
        rep.update(adopted=False, bar=bar, passes=passes)
        self.log(f"adopt: {net}: held-out {rep['action_accuracy']:.4f} (bar {bar}), puzzles {rep['puzzle_accuracy']}")
        if not force and bar is not None and rep["action_accuracy"] <= bar:
            os.remove(cand)
            self.log("adopt: not better than the bar; nothing changed (--adopt-force adopts it anyway)")
            return rep
        self.state["best_accuracy"] = None  # the gate copies whatever beats None
        self.gate(rep)
        ckpt = os.path.join(self.run_dir, "ckpt.pkl")
        if os.path.exists(ckpt):
            os.replace(ckpt, os.path.join(self.run_dir, f"ckpt-cycle{cyc}-before-adopt.pkl"))
        has = np.bincount(ds.row_pos, minlength=len(ds.states)) > 0
        self.state["wall_seconds"] = self.state.get("wall_seconds", 0.0) + extra_seconds
        row = {"cycle": cyc, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "wall_hours": round(self.state["wall_seconds"] / 3600, 3),
               "store_positions": self.store.totals()["positions"], "train_positions": int((has & ~ds.val).sum()),
               "position_passes": passes, "step": 0, "heldout_positions": rep["val_positions"],
               "action_accuracy": round(rep["action_accuracy"], 4), "kendall_tau": round(rep["kendall_tau"], 4),
               "puzzles": rep["puzzles"],
               "policy_accuracy": "" if rep["policy_accuracy"] is None else round(rep["policy_accuracy"], 4),
               "puzzle_accuracy": round(rep["puzzle_accuracy"], 4), "gate": "best"}
        self.record(row)
        self.state.update(cycle=cyc + 1, passes_offset=passes)
        self.state.pop("labelled_cycle", None)
        save_state(self.state_path, self.state)
        self.log("adopt: cycle " + " ".join(f"{k}={v}" for k, v in row.items()))
        rep["adopted"] = True
        return rep

    # ------------------------------------------------------------------ loop
    def label_only(self) -> None:
        """The campaign on a machine with no GPU (and no ``--train-cpu``): label phases back to back until
        stopped (or ``cycles`` phases), each writing its shards to the store. No curve row: the net does not
        change, so the cycle number stays and the next trained cycle records every position labelled here."""
        self.log(f"no GPU and no --train-cpu: labelling only (cycle {self.state['cycle']} stays until a "
                 f"train phase runs)")
        phases = 0
        while not self.stop() and self.cfg.label_minutes > 0 and (not self.cfg.cycles or phases < self.cfg.cycles):
            t0 = time.time()
            self.log(f"=== label phase {self.label_round}: store {self.store.totals()}")
            n = self.label_with_ray()
            self.state["wall_seconds"] = self.state.get("wall_seconds", 0.0) + (time.time() - t0)
            self.state["labelled_cycle"] = self.state["cycle"]
            save_state(self.state_path, self.state)
            self.log(f"label: {n} positions labelled; store {self.store.totals()}")
            phases += 1
        save_state(self.state_path, self.state)
        self.log("campaign stopped; `make campaign` resumes")

    def run(self) -> None:
        from .data import MemDataset

        self.stop.install()
        cache = self.cache_dir
        gpu = gpu_backend()
        if not train_wanted(self.cfg, gpu):
            self.label_only()
            return
        self.log(f"training on {gpu or 'the CPU (--train-cpu)'}")
        while not self.stop() and (not self.cfg.cycles or self.state["cycle"] < self.cfg.cycles):
            cyc = self.state["cycle"]
            t0 = time.time()
            self.log(f"=== cycle {cyc}: store {self.store.totals()}")
            if self.cfg.label_minutes > 0 and self.state.get("labelled_cycle") == cyc:
                self.log(f"label: cycle {cyc} already labelled before the restart; training")
            elif self.cfg.label_minutes > 0:
                n = self.label_with_ray()
                self.log(f"label: {n} positions labelled; store {self.store.totals()}")
                if not self.stop():
                    self.state["labelled_cycle"] = cyc
                save_state(self.state_path, self.state)
            if self.stop():
                break
            ds = MemDataset(self.files(), cache, self.log)
            out = self.train_phase(ds)
            if self.stop():
                break
            tr, step = out["trainer"], out["step"]
            rep = self.export_eval(ds, tr, step, out["params"])
            gated = self.gate(rep)
            self.state["wall_seconds"] = self.state.get("wall_seconds", 0.0) + (time.time() - t0)
            row = {"cycle": cyc, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                   "wall_hours": round(self.state["wall_seconds"] / 3600, 3),
                   "store_positions": self.store.totals()["positions"], "train_positions": len(tr.pd.train_pos),
                   "position_passes": self.state.get("passes_offset", 0) + step * tr.cfg.batch, "step": step,
                   "heldout_positions": rep["val_positions"], "action_accuracy": round(rep["action_accuracy"], 4),
                   "kendall_tau": round(rep["kendall_tau"], 4), "puzzles": rep["puzzles"],
                   "policy_accuracy": "" if rep["policy_accuracy"] is None else round(rep["policy_accuracy"], 4),
                   "puzzle_accuracy": round(rep["puzzle_accuracy"], 4), "gate": "best" if gated else "kept"}
            self.record(row)
            self.log("cycle " + " ".join(f"{k}={v}" for k, v in row.items()))
            self.state["cycle"] = cyc + 1
            save_state(self.state_path, self.state)
        save_state(self.state_path, self.state)
        self.log("campaign stopped; `make campaign` resumes")


class HeldOut:
    """The fixed held-out split: validation positions (3 % by key hash) of ``<shared>/data/labels`` files,
    as the ``ds`` argument of ``evaluate.eval_validation``."""

    def __init__(self, ds, shared: str):
        shared_idx = [i for i, f in enumerate(ds.files)
                      if os.path.abspath(f).startswith(os.path.abspath(os.path.join(shared, "data", "labels")))]
        pos = np.flatnonzero(ds.val & np.isin(ds.source, shared_idx))
        rows = ds.subset_rows(pos)
        self.ds, self.val_rows = ds, rows
        self.row_pos, self.row_action, self.row_key = ds.row_pos, ds.row_action, ds.row_key
        self.row_bucket, self.row_p = ds.row_bucket, ds.row_p

    def tokens(self, rows):
        return self.ds.tokens(rows)


BLEND_WEIGHT = 0.05
"""Weight of ln P against Q under the engine's ``MoveChoice blend`` (``search::analysis::BLEND_WEIGHT``)."""
BLEND_MIN_POLICY = 1e-6
"""Floor of P under ``MoveChoice blend`` (``search::analysis::BLEND_MIN_POLICY``)."""


def policy_accuracy(onnx_path: str, held: "HeldOut", per_run: int = 256) -> float | None:
    """Share of held-out positions where the argmax of the net's ``policy`` output (Lc0-style head) is a
    Stockfish-best move; ``None`` when the net has no policy output."""
    return head_accuracies(onnx_path, held, per_run)["policy_accuracy"]


def head_accuracies(onnx_path: str, held: "HeldOut", per_run: int = 256,
                    blend_weight: float = BLEND_WEIGHT) -> dict[str, float | None]:
    """Held-out action accuracy of the net's policy head (``policy_accuracy``: argmax of the ``policy``
    logits) and of the engine's searchless default ``MoveChoice blend`` (``blend_accuracy``: argmax of
    Q + ``blend_weight`` · ln max(P, 1e-6), Q the expected win probability of the ``log_probs`` buckets, P the
    softmax of the policy logits over the position's labelled moves; `src/search/analysis.rs`). A move counts
    when it is a Stockfish-best move. Both ``None`` when the net has no policy output."""
    from .chessdata import BUCKET_CENTRES
    from .onnx_graph import ort_session

    sess = ort_session(onnx_path)
    if "policy" not in [o.name for o in sess.get_outputs()]:
        return {"policy_accuracy": None, "blend_accuracy": None}
    rows = held.val_rows
    pos = held.row_pos[rows]
    bounds = np.flatnonzero(np.diff(pos)) + 1
    groups = np.split(rows, bounds)
    ok_policy, ok_blend = [], []
    for g0 in range(0, len(groups), per_run):
        grp = groups[g0:g0 + per_run]
        m = max(len(g) for g in grp)
        tokens = np.zeros((len(grp), 78), np.int64)
        actions = np.zeros((len(grp), m), np.int64)
        mask = np.zeros((len(grp), m), bool)
        for i, g in enumerate(grp):
            tokens[i, 1:] = held.ds.states[held.row_pos[g[0]]]
            actions[i, : len(g)] = held.row_action[g]
            mask[i, : len(g)] = True
        lp, pol = sess.run(["log_probs", "policy"], {"tokens": tokens, "actions": actions})
        q = np.exp(lp.astype(np.float64)) @ BUCKET_CENTRES
        pol = np.where(mask, pol.astype(np.float64), -np.inf)
        log_p = pol - pol.max(axis=1, keepdims=True)
        log_p = log_p - np.log(np.exp(log_p).sum(axis=1, keepdims=True))
        blend = q + blend_weight * np.maximum(log_p, np.log(BLEND_MIN_POLICY))
        for i, g in enumerate(grp):
            keys = held.row_key[g]
            ok_policy.append(keys[int(np.argmax(pol[i, : len(g)]))] == keys.max())
            ok_blend.append(keys[int(np.argmax(blend[i, : len(g)]))] == keys.max())
    return {"policy_accuracy": float(np.mean(ok_policy)), "blend_accuracy": float(np.mean(ok_blend))}


def plot_curve(csv_path: str, png_path: str) -> None:
    """Held-out action accuracy and puzzle accuracy against positions labelled, position-passes and wall hours."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        return
    f = lambda k: [float(r[k]) if r[k] not in ("", "nan") else np.nan for r in rows]  # noqa: E731
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, (xk, xl) in zip(axes, [("store_positions", "positions in the label store"),
                                   ("position_passes", "position-passes (training)"),
                                   ("wall_hours", "campaign wall hours")]):
        ax.plot(f(xk), f("action_accuracy"), "o-", label="held-out action accuracy")
        ax.plot(f(xk), f("puzzle_accuracy"), "s-", label="puzzle accuracy")
        if "policy_accuracy" in rows[0]:
            ax.plot(f(xk), f("policy_accuracy"), "^--", label="held-out policy-head accuracy")
        ax.set_xlabel(xl)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy")
    axes[0].legend()
    fig.suptitle(f"campaign curve ({os.path.basename(csv_path)})")
    fig.tight_layout()
    fig.savefig(png_path, dpi=90)
    plt.close(fig)


def parse_args(argv=None) -> tuple[argparse.Namespace, CampaignConfig]:
    """The command line: the parsed arguments and the :class:`CampaignConfig` they give (a ``bool`` field is a
    flag, ``--train-cpu``). Exits through argparse on a bad value (``--mix``, ``--dagger-levels``)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--store", default="../data/labels", help="label store folder (committed)")
    ap.add_argument("--runs-dir", default="runs")
    ap.add_argument("--out-dir", default="campaign", help="committed outputs: resumable ONNX, curve CSV/PNG")
    ap.add_argument("--stockfish", default=None)
    for fl in dataclasses.fields(CampaignConfig):
        if isinstance(fl.default, bool):
            ap.add_argument("--" + fl.name.replace("_", "-"), dest=fl.name, action="store_true")
        else:
            ap.add_argument("--" + fl.name.replace("_", "-"), dest=fl.name, type=type(fl.default), default=fl.default)
    ap.add_argument("--adopt", default=None, metavar="NET",
                    help="instead of running: make NET (a net trained elsewhere) the campaign's start if it beats "
                         "the gate (Campaign.adopt); stop the campaign first")
    ap.add_argument("--adopt-passes", type=int, default=None, help="NET's position-passes in all (default: worked out)")
    ap.add_argument("--adopt-hours", type=float, default=0.0, help="wall hours to add to the curve (the remote run's)")
    ap.add_argument("--adopt-force", action="store_true", help="adopt NET even if it does not beat the gate's bar")
    a = ap.parse_args(argv)
    cfg = CampaignConfig(**{fl.name: getattr(a, fl.name) for fl in dataclasses.fields(CampaignConfig)})
    try:
        parse_mix(cfg.mix)
    except ValueError as e:
        ap.error(f"--mix: {e}")
    for level in cfg.dagger_levels.split(","):
        try:
            dagger_opponent(int(level))
        except ValueError as e:
            ap.error(f"--dagger-levels: {e}")
    return a, cfg


def main(argv=None):
    a, cfg = parse_args(argv)
    if a.adopt:
        try:
            rep = Campaign(cfg, a.shared, a.store, a.runs_dir, a.out_dir).adopt(
                a.adopt, a.adopt_passes, a.adopt_hours * 3600, a.adopt_force)
        except (ValueError, OSError) as e:
            print(f"campaign: {e}", file=sys.stderr)
            return 1
        return 0 if rep["adopted"] else 2
    sf = chessdata.find_stockfish(a.stockfish)
    Campaign(cfg, a.shared, a.store, a.runs_dir, a.out_dir, sf).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
