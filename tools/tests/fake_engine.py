#!/usr/bin/env python3
"""A deliberately faulty UCI engine for testing the measuring tools (not a chess engine).

Plays a random legal move (seeded by ``--seed``) and misbehaves on request after a number of its
own moves: ``--illegal-after N`` (sends an illegal move), ``--crash-after N`` (exits), ``--sleep-after
N --sleep S`` (thinks S seconds: a time forfeit at fast time controls), ``--none-after N`` (answers
``bestmove (none)`` in a position with legal moves). ``--name`` sets ``id name``.

For the endgame and scaling tools: ``--moves m1,m2,...`` plays these UCI moves as its first moves of
each game (after ``ucinewgame``; a move that is not legal there falls back to the normal choice),
``--mate-in-one`` plays a checkmating move whenever one exists, ``--declare NAME`` declares a
string option, ``--illegal-unless NAME=VALUE`` answers every ``go`` with an illegal move unless that
option was set to VALUE, ``--illegal-below-nodes K`` does so when ``go nodes`` is missing or below
K. The ``info`` line reports ``nodes`` = the ``go nodes`` value (1 without one).
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
    p.add_argument("--moves", default="", help="comma-separated UCI moves to play first in each game")
    p.add_argument("--mate-in-one", action="store_true")
    p.add_argument("--declare", action="append", default=[], metavar="NAME")
    p.add_argument("--illegal-unless", metavar="NAME=VALUE")
    p.add_argument("--illegal-below-nodes", type=int, default=0, metavar="K")
    a = p.parse_args()
    rng = random.Random(a.seed)
    board = chess.Board()
    moves_played = 0
    script = [m for m in a.moves.split(",") if m]
    game_moves = 0
    options: dict[str, str] = {}

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
            for name in a.declare:
                out(f"option name {name} type string default <empty>")
            out("uciok")
        elif cmd == "ucinewgame":
            game_moves = 0
        elif cmd == "setoption" and "name" in tokens:
            i = tokens.index("name")
            j = tokens.index("value") if "value" in tokens else len(tokens)
            options[" ".join(tokens[i + 1:j]).lower()] = " ".join(tokens[j + 1:])
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
            k = game_moves
            game_moves += 1
            nodes = int(tokens[tokens.index("nodes") + 1]) if "nodes" in tokens else None
            if n == a.crash_after:
                sys.exit(3)
            if n == a.sleep_after:
                time.sleep(a.sleep)
            legal = list(board.legal_moves)
            if not legal or n == a.none_after:
                out("bestmove (none)")
                continue
            unset = False
            if a.illegal_unless:
                name, value = a.illegal_unless.split("=", 1)
                unset = options.get(name.lower()) != value
            if n == a.illegal_after or unset or (a.illegal_below_nodes and (nodes or 0) < a.illegal_below_nodes):
                # A move of the side not to move, or a null-like nonsense move: surely illegal.
                out("bestmove a1a1" if board.piece_at(chess.A1) is None else "bestmove e1e8")
                continue
            move = rng.choice(legal)
            mates = [m for m in legal if _mates(board, m)] if a.mate_in_one else []
            if mates:
                move = mates[0]
            if k < len(script) and chess.Move.from_uci(script[k]) in legal:
                move = chess.Move.from_uci(script[k])
            out(f"info depth 1 score cp 0 nodes {nodes or 1} pv " + move.uci())
            out("bestmove " + move.uci())
        elif cmd == "quit":
            return


def _mates(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.is_checkmate()
    finally:
        board.pop()


if __name__ == "__main__":
    main()
