"""Generates tests/data/chess960_cases.jsonl with python-chess 1.11.2 (chess960=True boards).

For a few Chess960 start positions (Scharnagl numbers): the start FEN, perft counts at depths 1-3,
and a random game (king-takes-rook castling notation) with python-chess's `board.fen()` and sorted
legal moves after every ply. Run: python gen_chess960_cases.py > chess960_cases.jsonl
"""
import json
import random

import chess


def perft(board, depth):
    if depth == 1:
        return board.legal_moves.count()
    n = 0
    for m in board.legal_moves:
        board.push(m)
        n += perft(board, depth - 1)
        board.pop()
    return n


def main():
    rng = random.Random(960)
    for scharnagl in [0, 105, 218, 359, 518, 711, 959]:
        board = chess.Board.from_chess960_pos(scharnagl)
        start = board.fen()
        counts = [perft(board, d) for d in (1, 2, 3)]
        plies = []
        for _ in range(40):
            moves = sorted(board.legal_moves, key=lambda m: m.uci())
            if not moves:
                break
            castles = [m for m in moves if board.is_castling(m)]
            m = castles[0] if castles and rng.random() < 0.5 else rng.choice(moves)
            board.push(m)
            plies.append({"move": m.uci(), "fen": board.fen(),
                          "legal": sorted(x.uci() for x in board.legal_moves)})
        print(json.dumps({"scharnagl": scharnagl, "start_fen": start, "perft": counts, "plies": plies}))


if __name__ == "__main__":
    main()
