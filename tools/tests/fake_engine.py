#!/usr/bin/env python3
"""A deliberately faulty UCI engine for testing the measuring tools (not a chess engine).

Plays a random legal move (seeded by ``--seed``) and misbehaves on request after a number of its
own moves: ``--illegal-after N`` (sends an illegal move), ``--crash-after N`` (exits), ``--sleep-after
N --sleep S`` (thinks S seconds: a time forfeit at fast time controls), ``--none-after N`` (answers
``bestmove (none)`` in a position with legal moves). ``--name`` sets ``id name``.
"""

import argparse
import random
import sys
import time

import chess


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="FakeEngine")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--illegal-after", type=int, default=-1)
    p.add_argument("--crash-after", type=int, default=-1)
    p.add_argument("--none-after", type=int, default=-1)
    p.add_argument("--sleep-after", type=int, default=-1)
    p.add_argument("--sleep", type=float, default=0.0)
    a = p.parse_args()
    rng = random.Random(a.seed)
    board = chess.Board()
    moves_played = 0

    def out(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        tokens = line.split()
        if not tokens:
            continue
        cmd = tokens[0]
        if cmd == "uci":
            out(f"id name {a.name}")
            out("id author nobody")
            out("option name Threads type spin default 1 min 1 max 8")
            out("uciok")
        elif cmd == "isready":
            out("readyok")
        elif cmd == "position":
            if tokens[1] == "startpos":
                board = chess.Board()
                rest = tokens[2:]
            else:
                idx = tokens.index("moves") if "moves" in tokens else len(tokens)
                board = chess.Board(" ".join(tokens[2:idx]))
                rest = tokens[idx:]
            if rest and rest[0] == "moves":
                for uci in rest[1:]:
                    board.push_uci(uci)
        elif cmd == "go":
            n = moves_played
            moves_played += 1
            if n == a.crash_after:
                sys.exit(3)
            if n == a.sleep_after:
                time.sleep(a.sleep)
            legal = list(board.legal_moves)
            if not legal or n == a.none_after:
                out("bestmove (none)")
                continue
            if n == a.illegal_after:
                # A move of the side not to move, or a null-like nonsense move: surely illegal.
                out("bestmove a1a1" if board.piece_at(chess.A1) is None else "bestmove e1e8")
                continue
            move = rng.choice(legal)
            out("info depth 1 score cp 0 nodes 1 pv " + move.uci())
            out("bestmove " + move.uci())
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
