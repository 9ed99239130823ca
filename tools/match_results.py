"""The results of ``match.py``: one game (``GameResult``) and the running W/D/L tally with its Elo, LOS and
SPRT figures (``Tally``).
"""

from __future__ import annotations

import dataclasses
import statistics




# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class GameResult:
    """One finished game. ``a_white``: engine A had White. ``result`` is "1-0", "0-1", "1/2-1/2"."""

    number: int
    a_white: bool
    result: str
    termination: str
    reason: str
    plies: int
    opening: str
    pgn: str = ""
    illegal: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    forfeits: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    crashes: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    stalls: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    engine_errors: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    move_time: dict = dataclasses.field(default_factory=lambda: {"A": [0.0, 0], "B": [0.0, 0]})
    min_clock: dict = dataclasses.field(default_factory=lambda: {"A": None, "B": None})
    #: Sum of the ``nodes`` the engine reported and the number of its moves that reported any.
    nodes: dict = dataclasses.field(default_factory=lambda: {"A": [0, 0], "B": [0, 0]})
    #: The ``nodes`` of each of those moves, in order (their median: ``Tally.median_nodes``).
    node_counts: dict = dataclasses.field(default_factory=lambda: {"A": [], "B": []})
    #: python-chess ``Termination`` name (``CHECKMATE``, ``FIFTY_MOVES``, ...) when the rules ended
    #: the game (termination "normal"), else None.
    outcome: str | None = None
    #: FEN of the final position.
    final_fen: str = ""

    def a_points(self) -> float:
        if self.result == "1/2-1/2":
            return 0.5
        white_won = self.result == "1-0"
        return 1.0 if white_won == self.a_white else 0.0


@dataclasses.dataclass
class Tally:
    wins: int = 0
    draws: int = 0
    losses: int = 0
    white: list = dataclasses.field(default_factory=lambda: [0, 0, 0])  # A's W/D/L as White
    illegal: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    forfeits: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    crashes: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    stalls: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    engine_errors: dict = dataclasses.field(default_factory=lambda: {"A": 0, "B": 0})
    error_samples: dict = dataclasses.field(default_factory=lambda: {"A": [], "B": []})
    move_time: dict = dataclasses.field(default_factory=lambda: {"A": [0.0, 0], "B": [0.0, 0]})
    min_clock: dict = dataclasses.field(default_factory=lambda: {"A": None, "B": None})
    nodes: dict = dataclasses.field(default_factory=lambda: {"A": [0, 0], "B": [0, 0]})
    node_counts: dict = dataclasses.field(default_factory=lambda: {"A": [], "B": []})
    terminations: dict = dataclasses.field(default_factory=dict)

    def add(self, g: GameResult) -> None:
        p = g.a_points()
        k = 0 if p == 1.0 else 1 if p == 0.5 else 2
        if k == 0:
            self.wins += 1
        elif k == 1:
            self.draws += 1
        else:
            self.losses += 1
        if g.a_white:
            self.white[k] += 1
        for side in ("A", "B"):
            self.illegal[side] += g.illegal[side]
            self.forfeits[side] += g.forfeits[side]
            self.crashes[side] += g.crashes[side]
            self.stalls[side] += g.stalls[side]
            self.engine_errors[side] += g.engine_errors[side]
            for text in getattr(g, "error_samples", {}).get(side, []):
                if len(self.error_samples[side]) < 5:
                    self.error_samples[side].append(text)
            self.move_time[side][0] += g.move_time[side][0]
            self.move_time[side][1] += g.move_time[side][1]
            self.nodes[side][0] += g.nodes[side][0]
            self.nodes[side][1] += g.nodes[side][1]
            self.node_counts[side].extend(g.node_counts[side])
            mc = g.min_clock[side]
            if mc is not None and (self.min_clock[side] is None or mc < self.min_clock[side]):
                self.min_clock[side] = mc
        self.terminations[g.termination] = self.terminations.get(g.termination, 0) + 1

    def median_nodes(self, side: str) -> float | None:
        """Median ``nodes`` a move of engine ``side`` ("A" or "B") over the moves that reported any; ``None``
        without one. Beside the mean it shows how far a few huge counts (a kept subtree, a mate or tablebase
        line searched to the end) pull the mean up."""
        counts = self.node_counts[side]
        return float(statistics.median(counts)) if counts else None

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def short(self) -> str:
        n = self.games
        s = (self.wins + 0.5 * self.draws) / n if n else 0.0
        return f"+{self.wins} ={self.draws} -{self.losses} [{s:.3f}] {n}"
