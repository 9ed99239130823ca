"""Generates tests/data/repetition_cases.jsonl: python-chess 1.11.2's repetition verdicts.

For random games biased towards back-and-forth piece moves (so that repetitions happen), records
for the final position every legal move's `is_fivefold_repetition() or
can_claim_threefold_repetition()` after the move (the searchless reference engines' rule), and the
same verdict for the final position itself. Run: python gen_repetition_cases.py > repetition_cases.jsonl
"""
import json
import random

import chess

START_FENS = [
    chess.STARTING_FEN,
    "r3k2r/ppp2ppp/2n1b3/8/2pPp3/2N5/PP3PPP/R1B1KB1R b KQkq d3 0 12",
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1",
    "8/2k5/8/8/8/8/5K2/8 w - - 0 1",
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
]


def pick(board, rng):
    moves = list(board.legal_moves)
    if len(board.move_stack) >= 2 and rng.random() < 0.75:
        back = board.move_stack[-2]
        undo = chess.Move(back.to_square, back.from_square)
        if undo in moves:
            return undo
    quiet = [m for m in moves if not board.is_zeroing(m)]
    if quiet and rng.random() < 0.85:
        return rng.choice(sorted(quiet, key=lambda m: m.uci()))
    return rng.choice(sorted(moves, key=lambda m: m.uci()))


def main():
    rng = random.Random(12345)
    for i in range(240):
        start = START_FENS[i % len(START_FENS)]
        board = chess.Board(start)
        history = []
        for _ in range(rng.randint(4, 40)):
            if board.is_game_over():
                break
            m = pick(board, rng)
            history.append(m.uci())
            board.push(m)
        verdicts = {}
        for m in sorted(board.legal_moves, key=lambda m: m.uci()):
            board.push(m)
            verdicts[m.uci()] = board.is_fivefold_repetition() or board.can_claim_threefold_repetition()
            board.pop()
        here = board.is_fivefold_repetition() or board.can_claim_threefold_repetition()
        print(json.dumps({"start_fen": start, "history_uci": history, "fen": board.fen(),
                          "current": here, "moves": verdicts}))


if __name__ == "__main__":
    main()
