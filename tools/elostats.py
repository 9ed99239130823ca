"""Match statistics shared by the tools (through ``enginelib``): Elo difference from a score and back, the
95 % interval and LOS of a W/D/L record (``elo_stats``), and the SPRT log-likelihood ratio (``sprt_llr``,
the trinomial model with the constrained maximum-likelihood fit) and its bounds.
"""

from __future__ import annotations

import dataclasses
import math


def elo_from_score(score: float) -> float:
    """Logistic Elo difference for an expected score in (0, 1); ±inf at the ends."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_from_elo(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


@dataclasses.dataclass
class EloResult:
    games: int
    score: float
    elo: float
    elo_low: float
    elo_high: float
    los: float

    def format(self) -> str:
        def f(x: float) -> str:
            return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x + 0.0:+.1f}"
        margin = (self.elo_high - self.elo_low) / 2 if math.isfinite(self.elo_high - self.elo_low) else math.inf
        m = "inf" if not math.isfinite(margin) else f"{margin:.1f}"
        return (f"Elo difference: {f(self.elo)} +/- {m} (95% interval {f(self.elo_low)} .. "
                f"{f(self.elo_high)}), LOS: {100 * self.los:.1f} %")


def elo_stats(wins: int, draws: int, losses: int) -> EloResult:
    """Elo difference with a 95 % interval and the likelihood of superiority.

    Trinomial model with the normal approximation (as cutechess-cli and fishtest's simple report):
    per-game variance of the score from the observed W/D/L frequencies, interval
    ``score ± 1.96·sqrt(var/n)`` mapped through the logistic Elo curve. LOS is
    ``½·(1 + erf((W − L)/sqrt(2(W + L))))``.
    """
    n = wins + draws + losses
    if n == 0:
        return EloResult(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    s = (wins + 0.5 * draws) / n
    var = (wins * (1 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s ** 2) / n
    se = math.sqrt(var / n)
    low, high = s - 1.959964 * se, s + 1.959964 * se
    los = 0.5 if wins + losses == 0 else 0.5 * (1 + math.erf((wins - losses) / math.sqrt(2 * (wins + losses))))
    return EloResult(n, s, elo_from_score(s), elo_from_score(low), elo_from_score(high), los)


def _constrained_mle(freqs: list[float], scores: list[float], target: float) -> list[float]:
    """Distribution p over outcomes maximising sum(f·log p) subject to sum(p·score) = target.

    The Lagrange solution is ``p_i = f_i / (1 + λ(score_i − target))``; λ is found by bisection on
    the interval where every denominator is positive (the constraint function is monotone there).
    """
    lo = -1.0 / (max(scores) - target) + 1e-12
    hi = 1.0 / (target - min(scores)) - 1e-12

    def g(lam: float) -> float:
        return sum(f * (a - target) / (1 + lam * (a - target)) for f, a in zip(freqs, scores))

    for _ in range(200):
        mid = (lo + hi) / 2
        if g(mid) > 0:
            lo = mid
        else:
            hi = mid
    lam = (lo + hi) / 2
    p = [f / (1 + lam * (a - target)) for f, a in zip(freqs, scores)]
    total = sum(p)
    return [x / total for x in p]


def sprt_llr(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """Log-likelihood ratio of H1 (elo1) against H0 (elo0), logistic Elo, trinomial GSPRT.

    Generalised SPRT as in fishtest: for each hypothesis the loss/draw/win distribution of highest
    likelihood whose expected score equals the hypothesis' score (``1/(1+10^(−elo/400))``) is found,
    and ``LLR = Σ count_i · log(p1_i/p0_i)``. Zero counts are replaced by 1e-3 so that the
    constrained fit exists. Returns 0 with no games.
    """
    if wins + draws + losses == 0:
        return 0.0
    counts = [max(float(x), 1e-3) for x in (losses, draws, wins)]
    n = sum(counts)
    freqs = [c / n for c in counts]
    outcome_scores = [0.0, 0.5, 1.0]
    p0 = _constrained_mle(freqs, outcome_scores, score_from_elo(elo0))
    p1 = _constrained_mle(freqs, outcome_scores, score_from_elo(elo1))
    real = [float(x) for x in (losses, draws, wins)]
    return sum(c * math.log(b / a) for c, a, b in zip(real, p0, p1) if c > 0)


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Lower and upper LLR bounds: ln(β/(1−α)) and ln((1−β)/α)."""
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def sprt_state(llr: float, alpha: float, beta: float) -> str | None:
    """``"H1 accepted"`` when ``llr`` reaches the upper bound of :func:`sprt_bounds`, ``"H0 accepted"`` at the
    lower one, ``None`` while the test goes on."""
    lo, hi = sprt_bounds(alpha, beta)
    if llr >= hi:
        return "H1 accepted"
    if llr <= lo:
        return "H0 accepted"
    return None
