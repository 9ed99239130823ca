"""Tokenizer, 1968-move action table, win-probability buckets (searchless-chess conventions).

* ``tokenize(fen)``: 77 token ids of the exact FEN string (no normalisation), like the reference.
  Use ``canonical_fen`` (python-chess ``board.fen()``: ep square only when a legal ep capture exists)
  to get the string the engine tokenizes.
* ``ACTIONS`` / ``MOVE_TO_ACTION``: the 1968 UCI moves in the reference order.
* ``win_prob(cp)`` (Lichess formula), ``bucket_of(p)`` = searchsorted(edges, p, 'left'), K=128.
* ``position_key(fen)``: the deduplication and held-out split key; ``score_str``/``score_key``: Stockfish
  scores as label text and their order; ``find_stockfish``: the Stockfish binary.
* ``random_positions``/``tokens_actions``: seeded random-play boards and their one-pass network inputs.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess

import chess
import chess.engine
import numpy as np

VOCAB_CHARS = "0123456789abcdefghpnrkqPBNRQKw."
CHAR_TO_ID = {c: i for i, c in enumerate(VOCAB_CHARS)}
SEQ_STATE = 77
NUM_BUCKETS = 128
LICHESS_K = 0.00368208


def tokenize(fen: str) -> np.ndarray:
    """77 token ids (uint8) of a full 6-field FEN, exactly as the string is written.

    Raises ValueError for a malformed FEN (not 6 fields, unknown characters, clocks over 3 digits).
    """
    fields = fen.split(" ")
    if len(fields) != 6:
        raise ValueError(f"FEN must have 6 space-separated fields: {fen!r}")
    board, side, castling, ep, half, full = fields
    out: list[str] = [side]
    for ch in board:
        if ch.isdigit():
            out.extend("." * int(ch))
        elif ch != "/":
            out.append(ch)
    out.extend(castling.replace("-", "").ljust(4, ".") if castling != "-" else "....")
    out.extend(".." if ep == "-" else ep)
    if len(half) > 3 or len(full) > 3:
        raise ValueError(f"clock fields over 3 digits: {fen!r}")
    out.extend(half.ljust(3, "."))
    out.extend(full.ljust(3, "."))
    if len(out) != SEQ_STATE:
        raise ValueError(f"FEN gives {len(out)} tokens, expected 77: {fen!r}")
    try:
        return np.asarray([CHAR_TO_ID[c] for c in out], np.uint8)
    except KeyError as e:
        raise ValueError(f"character {e} not in vocabulary: {fen!r}") from None


def position_key(fen: str) -> str:
    """First four FEN fields (placement, side to move, castling, en passant): the deduplication key of the
    label store and the key whose hash picks the held-out split (``data.is_validation``)."""
    return " ".join(fen.split()[:4])


def canonical_fen(fen: str) -> str:
    """python-chess ``Board(fen).fen()``: the string the engine tokenizes."""
    return chess.Board(fen).fen()


def _build_actions() -> list[str]:
    moves: list[str] = []
    for sq in range(64):
        f, r = sq % 8, sq // 8
        queen = []
        for dst in range(64):
            if dst == sq:
                continue
            df, dr = dst % 8 - f, dst // 8 - r
            if df == 0 or dr == 0 or abs(df) == abs(dr):
                queen.append(dst)
        knight = [dst for dst in range(64)
                  if sorted((abs(dst % 8 - f), abs(dst // 8 - r))) == [1, 2]]
        for dst in queen + knight:
            moves.append(chess.square_name(sq) + chess.square_name(dst))
    for fr, tr in ((2, 1), (7, 8)):
        for fi in range(8):
            for df in (0, -1, 1):
                if 0 <= fi + df < 8:
                    for pc in "qrbn":
                        moves.append(f"{'abcdefgh'[fi]}{fr}{'abcdefgh'[fi + df]}{tr}{pc}")
    return moves


ACTIONS: list[str] = _build_actions()
MOVE_TO_ACTION: dict[str, int] = {m: i for i, m in enumerate(ACTIONS)}
assert len(ACTIONS) == 1968

BUCKET_EDGES = np.arange(1, NUM_BUCKETS, dtype=np.float64) / NUM_BUCKETS
BUCKET_CENTRES = (np.arange(NUM_BUCKETS, dtype=np.float64) + 0.5) / NUM_BUCKETS


def win_prob(cp: float) -> float:
    """Lichess formula: centipawns (mover's view) → win probability."""
    return 1.0 / (1.0 + math.exp(-LICHESS_K * cp))


def parse_score(s: str) -> float:
    """``"35"`` → win prob of 35 cp; ``"M3"`` → 1.0; ``"M-2"`` → 0.0 (mover's point of view)."""
    if s.startswith("M") or s.startswith("#"):
        n = int(s[1:])
        return 1.0 if n > 0 else 0.0
    return win_prob(float(s))


def score_str(score: chess.engine.PovScore) -> str:
    """Stockfish score from the mover's point of view as label text: ``cp`` or ``M<n>``/``M-<n>``."""
    s = score.relative
    if s.is_mate():
        m = s.mate()
        return f"M{m}" if m > 0 else f"M-{abs(m)}"
    return str(s.score())


def score_key(s: str) -> float:
    """Order key of a score string: mate-in-n above every cp score, mated-in-n below, shorter mates first."""
    if s.startswith("M"):
        n = int(s[1:])
        return 100000.0 - n if n > 0 else -100000.0 - n
    return float(s)


#: Where ``find_stockfish`` looks when no path is given (Debian's package and the usual install places).
SF_PATHS = ["/usr/games/stockfish", "/usr/bin/stockfish", "/usr/local/bin/stockfish"]

#: The native build of the same Stockfish 15.1 (``make stockfish-native``, ``native_stockfish.py``), used for
#: labelling when it is there with its ``build.json`` (written only after its bench matched the package's).
NATIVE_STOCKFISH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                ".cache", "stockfish", "stockfish")


@functools.lru_cache(maxsize=8)
def _runs_here(binary: str) -> bool:
    """Whether ``binary bench 16 1 1`` exits cleanly on this machine (a native build copied to a CPU without
    its instructions dies of SIGILL)."""
    try:
        return subprocess.run([binary, "bench", "16", "1", "1"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def find_stockfish(explicit: str | None = None, native: bool = True) -> str:
    """Path of the Stockfish binary: ``explicit`` first, then (with ``native``) the verified native build
    ``NATIVE_STOCKFISH`` if it runs on this CPU, then ``SF_PATHS``; raises ``FileNotFoundError`` with the apt
    hint when absent."""
    built = [NATIVE_STOCKFISH] if (not explicit and native and os.path.exists(
        os.path.join(os.path.dirname(NATIVE_STOCKFISH), "build.json")) and _runs_here(NATIVE_STOCKFISH)) else []
    for p in ([explicit] if explicit else []) + built + SF_PATHS:
        if p and os.path.exists(p):
            return p
    raise FileNotFoundError("stockfish not found: apt-get install -y stockfish (15.1) or pass --stockfish")


def bucket_of(p) -> np.ndarray:
    """searchsorted(edges, p, side='left') for scalar or array win probabilities."""
    return np.searchsorted(BUCKET_EDGES, p, side="left")


def move_to_action(board: chess.Board, move: chess.Move) -> int:
    """Action id of a legal move (castling as the king's two-square move)."""
    return MOVE_TO_ACTION[move.uci()]


# ---------------------------------------------------------------------------------------------- mirroring
def mirror_uci(move: str) -> str:
    """``move`` with files mirrored (a↔h, b↔g, …): ``e2e4`` → ``d2d4``, ``g7h8q`` → ``b7a8q``."""
    f = {c: chr(ord("a") + ord("h") - ord(c)) for c in "abcdefgh"}
    return f[move[0]] + move[1] + f[move[2]] + move[3] + move[4:]


#: ``ACTION_MIRROR[a]``: the action id of action ``a``'s move with files mirrored (the table is symmetric).
ACTION_MIRROR = np.asarray([MOVE_TO_ACTION[mirror_uci(m)] for m in ACTIONS], np.int32)

_DOT = CHAR_TO_ID["."]
_FILE_IDS = np.arange(CHAR_TO_ID["a"], CHAR_TO_ID["h"] + 1)


def no_castling(states: np.ndarray) -> np.ndarray:
    """bool [B]: which 77-token states have no castling rights (tokens 65–68 all ``.``)."""
    return (states[:, 65:69] == _DOT).all(axis=1)


def mirror_states(states: np.ndarray) -> np.ndarray:
    """The 77-token states with the board mirrored left to right (each rank's 8 squares reversed) and the
    en-passant file mirrored; side, castling field and clocks as they are. Only meaningful without
    castling rights: a castling right is tied to its wing (Lc0's rule for mirroring training data)."""
    out = states.copy()
    board = out[:, 1:65].reshape(-1, 8, 8)
    out[:, 1:65] = board[:, :, ::-1].reshape(-1, 64)
    ep = out[:, 69]
    is_file = (ep >= _FILE_IDS[0]) & (ep <= _FILE_IDS[-1])
    out[:, 69] = np.where(is_file, _FILE_IDS[0] + _FILE_IDS[-1] - ep, ep)
    return out


# ---------------------------------------------------------------------------------------------- test positions
def random_positions(n: int, seed: int = 0) -> list[chess.Board]:
    """``n`` positions reached by seeded random play from the start (4–80 plies, none finished)."""
    rng = np.random.default_rng(seed)
    out: list[chess.Board] = []
    while len(out) < n:
        b = chess.Board()
        for _ in range(int(rng.integers(4, 81))):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(moves[int(rng.integers(len(moves)))])
        if not b.is_game_over():
            out.append(b)
    return out


def tokens_actions(boards: list[chess.Board]) -> tuple[np.ndarray, np.ndarray]:
    """The one-pass inputs of ``boards``: tokens [B, 78] and actions [B, M] (every legal move, ascending
    action id, padded with action 0), both int64."""
    moves = [sorted(MOVE_TO_ACTION[m.uci()] for m in b.legal_moves) for b in boards]
    m = max(len(x) for x in moves)
    tokens = np.zeros((len(boards), 78), np.int64)
    actions = np.zeros((len(boards), m), np.int64)
    for i, (b, ids) in enumerate(zip(boards, moves)):
        tokens[i, 1:] = tokenize(b.fen())
        actions[i, : len(ids)] = ids
    return tokens, actions
