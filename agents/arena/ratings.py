"""Ratings from game results: a Bradley–Terry fit on the Elo scale, pairing statistics and tests.

The model. Player i has a rating r_i (Elo); the expected score of i against j
is ``E_ij = 1 / (1 + 10 ** ((r_j - r_i) / 400))``, Elo's own formula. The
ratings maximise the Bradley–Terry likelihood of all games at once (not just
head-to-head), with **a draw counted as half a win and half a loss** (the
quasi-likelihood whose fitted expected scores equal the observed ones).

Confidence intervals come from the inverse Fisher information, with the
per-game variance corrected for draws: a game's score has variance
``E(1 - E) - d / 4`` when draws happen with probability d (a trinomial, not a
coin), so the information is scaled by the dispersion
``phi = sum(E(1-E) - draw/4) / sum(E(1-E))`` estimated from the games.
Frequent draws therefore narrow the intervals, as they should. The anchor
player's rating is fixed (default 0), so each interval is the uncertainty of
that player's difference from the anchor.

A weak prior keeps ratings finite when a player won or lost every game:
each pairing that was played gets ``prior_games`` virtual games scored as
draws (default 1; 0 turns it off, at the risk of an infinite rating).

Pairings also get W/D/L, score, an Elo difference from that score with a 95%
interval (Wilson's, with the trinomial variance), the likelihood of superiority, a one-sided sign test on decisive
games ("A is stronger than B": the p-value of W or more wins among W + L
decisive games if both were equal) and a GSPRT on the trinomial scores.

Colour-swapped pairs (two games from one opening, each player Red once) are not independent games. The
pentanomial model scores each pair as one observation, a's points 0, 0.5, 1, 1.5 or 2 (LL, LD, DD or WL,
WD, WW): `pentanomial_stats` gives the score, an Elo interval from the variance of the pair scores, the
normalised Elo and a GSPRT on the pairs (`pentanomial_sprt`), next to the trinomial figures above.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional, Sequence

import numpy as np

ELO_SCALE = 400.0 / math.log(10.0)
"""Elo points per natural-log unit of odds."""
Z95 = 1.959963984540054


class RatingError(ValueError):
    """Results that cannot be rated (an unknown player, an unconnected group, a bad score)."""


def expected_score(elo_diff: float) -> float:
    """Expected score of a player `elo_diff` Elo above the opponent."""
    return 1.0 / (1.0 + 10.0 ** (-elo_diff / 400.0))


def elo_from_score(score: float, games: Optional[int] = None) -> float:
    """Elo difference that gives expected `score` in [0, 1] (logistic model), within +-1200.

    A score of 0 or 1 is first moved in from the edge: by half a game of `games`
    when the count is given (so a 10-game sweep reads less than a 100-game one),
    else by 0.001."""
    eps = 1.0 / (2 * max(1, games)) if games is not None else 1e-3
    s = min(max(score, eps), 1 - eps)
    return max(-1200.0, min(1200.0, -400.0 * math.log10(1.0 / s - 1.0)))


@dataclass(frozen=True)
class GameResult:
    """One game between players `a` and `b`: `score` is a's (1 win, 0.5 draw, 0 loss)."""

    a: str
    b: str
    score: float


@dataclass
class PairStats:
    """Head-to-head statistics of `a` against `b` (from a's side)."""

    a: str
    b: str
    wins: int
    draws: int
    losses: int
    score: float
    """a's mean score per game."""
    elo_diff: float
    """Elo difference a - b implied by the score (clipped to +-1200)."""
    elo_low: float
    elo_high: float
    los: float
    """Likelihood of superiority: P(a stronger than b) from the decisive games."""
    p_value: float
    """One-sided sign test: P(at least `wins` wins among the decisive games | equal strength)."""
    sprt_llr: float
    sprt: str
    """GSPRT verdict for elo0 vs elo1: 'H1' (a is stronger by elo1), 'H0', or 'continue'."""

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses


@dataclass
class Rating:
    name: str
    elo: float
    """Rating on the Elo scale, relative to the anchor."""
    ci_low: float
    ci_high: float
    games: int
    score: float
    """Mean score over all of this player's games."""


@dataclass
class RatingTable:
    """The fit: ratings (best first), the anchor, covariance of the ratings [P, P] and the draw dispersion."""

    ratings: list[Rating]
    anchor: str
    players: list[str]
    covariance: np.ndarray = field(repr=False)
    dispersion: float = 1.0
    prior_games: float = 1.0

    def elo(self, name: str) -> float:
        return self.ratings[self._index(name)].elo

    def _index(self, name: str) -> int:
        for k, r in enumerate(self.ratings):
            if r.name == name:
                return k
        raise RatingError(f"no rating for player {name!r}")

    def difference(self, a: str, b: str) -> tuple[float, float, float]:
        """(elo_a - elo_b, low, high): the fitted difference with its 95% interval."""
        try:
            i, j = self.players.index(a), self.players.index(b)
        except ValueError:
            raise RatingError(f"unknown player in ({a!r}, {b!r}); rated: {', '.join(self.players)}") from None
        c = self.covariance
        var = max(c[i, i] + c[j, j] - 2 * c[i, j], 0.0)
        d = self.elo(a) - self.elo(b)
        half = Z95 * math.sqrt(var)
        return d, d - half, d + half

    def to_dict(self) -> dict[str, Any]:
        return {
            "anchor": self.anchor,
            "model": "Bradley-Terry on the Elo scale, draws as half points, draw-corrected Fisher 95% CIs",
            "dispersion": self.dispersion,
            "prior_games": self.prior_games,
            "ratings": [asdict(r) for r in self.ratings],
        }


def _pair_arrays(results: Iterable[GameResult], players: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    index = {p: k for k, p in enumerate(players)}
    n = len(players)
    games = np.zeros((n, n))
    points = np.zeros((n, n))
    draws = np.zeros((n, n))
    for g in results:
        if g.a not in index or g.b not in index:
            raise RatingError(f"game between {g.a!r} and {g.b!r}: not among the players {', '.join(players)}")
        if g.a == g.b:
            raise RatingError(f"player {g.a!r} cannot play itself")
        if g.score not in (0.0, 0.5, 1.0):
            raise RatingError(f"game {g.a!r} vs {g.b!r}: score {g.score!r} is not 0, 0.5 or 1")
        i, j = index[g.a], index[g.b]
        games[i, j] += 1
        games[j, i] += 1
        points[i, j] += g.score
        points[j, i] += 1.0 - g.score
        if g.score == 0.5:
            draws[i, j] += 1
            draws[j, i] += 1
    return games, points, draws


def _check_connected(games: np.ndarray, players: Sequence[str], anchor: int) -> None:
    seen = {anchor}
    todo = [anchor]
    while todo:
        i = todo.pop()
        for j in np.nonzero(games[i] > 0)[0]:
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    missing = [players[k] for k in range(len(players)) if k not in seen]
    if missing:
        raise RatingError(f"no chain of games links {', '.join(missing)} to the anchor {players[anchor]!r}")


def fit_ratings(
    results: Iterable[GameResult],
    players: Optional[Sequence[str]] = None,
    *,
    anchor: Optional[str] = None,
    anchor_elo: float = 0.0,
    prior_games: float = 1.0,
    iterations: int = 100,
) -> RatingTable:
    """Maximum-likelihood Bradley–Terry ratings (Elo scale) of all `results` together.

    players: the names to rate (default: in order of first appearance);
    anchor: the player whose rating is fixed at `anchor_elo` (default: the
    first). See the module docstring for the draw treatment and the prior."""
    results = list(results)
    if players is None:
        seen: dict[str, None] = {}
        for g in results:
            seen.setdefault(g.a, None)
            seen.setdefault(g.b, None)
        players = list(seen)
    players = list(players)
    if len(set(players)) != len(players):
        raise RatingError(f"duplicate player names in {players}")
    if not players:
        raise RatingError("no players to rate")
    if prior_games < 0:
        raise RatingError(f"prior_games={prior_games} must be >= 0")
    anchor = players[0] if anchor is None else anchor
    if anchor not in players:
        raise RatingError(f"anchor {anchor!r} is not among the players {', '.join(players)}")
    a = players.index(anchor)
    n = len(players)
    games, points, draws = _pair_arrays(results, players)
    _check_connected(games, players, a)
    played = games > 0
    g_fit = games + prior_games * played
    p_fit = points + 0.5 * prior_games * played
    free = [k for k in range(n) if k != a]
    r = np.zeros(n)  # natural-log units
    for _ in range(iterations):
        diff = r[:, None] - r[None, :]
        e = 1.0 / (1.0 + np.exp(-diff))
        grad = (p_fit - g_fit * e).sum(axis=1)
        w = g_fit * e * (1.0 - e)
        hess = np.diag(w.sum(axis=1)) - w  # minus the Hessian of the log-likelihood
        if not free:
            break
        hf = hess[np.ix_(free, free)]
        try:
            step = np.linalg.solve(hf, grad[free])
        except np.linalg.LinAlgError:
            raise RatingError("ratings diverge (a player won or lost every game): use prior_games > 0") from None
        step = np.clip(step, -3.0, 3.0)
        r[free] += step
        if np.max(np.abs(step)) < 1e-10:
            break
    if np.any(np.abs(r) > 50):
        raise RatingError("ratings diverge (a player won or lost every game): use prior_games > 0")
    diff = r[:, None] - r[None, :]
    e = 1.0 / (1.0 + np.exp(-diff))
    # Draw-corrected dispersion from the real games (not the prior).
    bern = (games * e * (1.0 - e)).sum() / 2
    tri = bern - draws.sum() / 2 / 4
    dispersion = float(np.clip(tri / bern, 0.05, 1.0)) if bern > 0 else 1.0
    w = g_fit * e * (1.0 - e)
    hess = np.diag(w.sum(axis=1)) - w
    cov = np.zeros((n, n))
    if free:
        cov[np.ix_(free, free)] = np.linalg.inv(hess[np.ix_(free, free)]) * dispersion
    cov *= ELO_SCALE**2
    elo = r * ELO_SCALE + anchor_elo - r[a] * ELO_SCALE
    total_games = games.sum(axis=1)
    total_points = points.sum(axis=1)
    ratings = []
    for k in range(n):
        half = Z95 * math.sqrt(max(cov[k, k], 0.0))
        ratings.append(
            Rating(
                name=players[k],
                elo=float(elo[k]),
                ci_low=float(elo[k] - half),
                ci_high=float(elo[k] + half),
                games=int(total_games[k]),
                score=float(total_points[k] / total_games[k]) if total_games[k] else 0.0,
            )
        )
    order = sorted(range(n), key=lambda k: -ratings[k].elo)
    return RatingTable(
        ratings=[ratings[k] for k in order],
        anchor=anchor,
        players=players,
        covariance=cov,
        dispersion=dispersion,
        prior_games=prior_games,
    )


# --- head to head ------------------------------------------------------------------------------
def sign_test_p_value(wins: int, losses: int) -> float:
    """One-sided exact binomial P(X >= wins), X ~ Bin(wins + losses, 1/2): small means "a is stronger"."""
    n = wins + losses
    if n == 0:
        return 1.0
    total = 0.0
    for k in range(wins, n + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2))
    return min(1.0, total)


def likelihood_of_superiority(wins: int, losses: int) -> float:
    """P(a stronger than b) in the usual normal approximation on decisive games."""
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


def _trinomial_log_likelihood(wins: int, draws: int, losses: int, score: float) -> float:
    """Largest log-likelihood of W/D/L over the win/draw/loss probabilities whose expected score is `score`.

    With p_draw = t the others are p_win = score - t/2 and p_loss = 1 - score - t/2; the
    log-likelihood is concave in t and its stationary point is the smaller root of
    (n/2) t^2 - (D + W (1 - score) + L score) t + 2 D score (1 - score) = 0 (t = 0 when D = 0)."""
    n = wins + draws + losses
    b = draws + wins * (1 - score) + losses * score
    c = 2 * draws * score * (1 - score)
    t = 2 * c / (b + math.sqrt(max(b * b - 2 * n * c, 0.0))) if c > 0 else 0.0
    total = 0.0
    for count, p in ((wins, score - t / 2), (draws, t), (losses, 1 - score - t / 2)):
        if count:
            total += count * math.log(p)
    return total


def sprt(
    wins: int, draws: int, losses: int, elo0: float = 0.0, elo1: float = 30.0, alpha: float = 0.05, beta: float = 0.05
) -> tuple[float, str]:
    """Generalised SPRT on trinomial results: (LLR, 'H1' | 'H0' | 'continue').

    H0: a is elo0 stronger than b; H1: a is elo1 stronger. The LLR is the exact one of the
    games: the log-likelihood of W/D/L under the best win/draw/loss probabilities whose
    expected score is E(elo1), minus the same under E(elo0), and Wald's bounds
    log((1 - beta) / alpha) and log(beta / (1 - alpha)) decide.

    No verdict comes from fewer games than this likelihood supports: nothing is
    estimated, so a run of one result (zero observed variance, where the normal
    approximation divides by zero) moves the LLR only by what those games carry. One
    win adds log(E1 / E0) (0.083 at the defaults), so a clean sweep needs 36 wins for
    H1; a draw or a loss moves it about as little. Nothing is decided from no games."""
    n = wins + draws + losses
    if n == 0:
        return 0.0, "continue"
    s0, s1 = expected_score(elo0), expected_score(elo1)
    llr = _trinomial_log_likelihood(wins, draws, losses, s1) - _trinomial_log_likelihood(wins, draws, losses, s0)
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    verdict = "H1" if llr >= upper else ("H0" if llr <= lower else "continue")
    return float(llr), verdict


def score_interval(wins: int, draws: int, losses: int) -> tuple[float, float]:
    """95% interval of the expected score from W/D/L: Wilson's interval with the trinomial variance.

    Unlike the plain normal interval it does not shrink to a point at a clean sweep."""
    n = wins + draws + losses
    if n == 0:
        return 0.0, 1.0
    s = (wins + 0.5 * draws) / n
    var = (wins * (1 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s**2) / n
    # Wilson uses the Bernoulli variance s(1-s); scale it by the observed draw dispersion.
    # (floored: a run of draws alone is weak evidence that every game is a draw).
    phi = max(var / (s * (1 - s)), 0.1) if 0 < s < 1 else 1.0
    z2 = Z95**2 * phi
    centre = (s + z2 / (2 * n)) / (1 + z2 / n)
    half = math.sqrt(z2) / (1 + z2 / n) * math.sqrt(s * (1 - s) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def pair_stats(
    a: str,
    b: str,
    wins: int,
    draws: int,
    losses: int,
    *,
    elo0: float = 0.0,
    elo1: float = 30.0,
    alpha: float = 0.05,
    beta: float = 0.05,
) -> PairStats:
    """W/D/L of `a` against `b` turned into score, Elo difference with a 95% interval and tests."""
    n = wins + draws + losses
    s = (wins + 0.5 * draws) / n if n else 0.5
    low, high = score_interval(wins, draws, losses)
    llr, verdict = sprt(wins, draws, losses, elo0, elo1, alpha, beta)
    return PairStats(
        a=a,
        b=b,
        wins=wins,
        draws=draws,
        losses=losses,
        score=s,
        elo_diff=elo_from_score(s),
        elo_low=elo_from_score(low),
        elo_high=elo_from_score(high),
        los=likelihood_of_superiority(wins, losses),
        p_value=sign_test_p_value(wins, losses),
        sprt_llr=llr,
        sprt=verdict,
    )


def head_to_head(
    results: Iterable[GameResult], *, elo0: float = 0.0, elo1: float = 30.0, alpha: float = 0.05, beta: float = 0.05
) -> list[PairStats]:
    """PairStats for every pair that met, `a` being the first of the two to appear in `results`."""
    tally: dict[tuple[str, str], list[int]] = {}
    for g in results:
        key = (g.a, g.b) if (g.b, g.a) not in tally else (g.b, g.a)
        flip = key != (g.a, g.b)
        s = 1.0 - g.score if flip else g.score
        wdl = tally.setdefault(key, [0, 0, 0])
        wdl[0 if s == 1.0 else (1 if s == 0.5 else 2)] += 1
    return [pair_stats(a, b, *wdl, elo0=elo0, elo1=elo1, alpha=alpha, beta=beta) for (a, b), wdl in tally.items()]


# --- colour-swapped pairs: the pentanomial model ------------------------------------------------
PAIR_CLASSES = ("LL", "LD", "DD/WL", "WD", "WW")
"""A colour-swapped pair's classes, by the points the first player took from its two games: 0, 0.5, 1, 1.5, 2."""
SPRT_MIN_PAIRS = 10
"""Complete pairs below which `pentanomial_sprt` gives no verdict, whatever its LLR."""


def pair_class(first: float, second: float) -> int:
    """The class (index into `PAIR_CLASSES`) of a pair in which one player scored `first` and `second`."""
    for s in (first, second):
        if s not in (0.0, 0.5, 1.0):
            raise RatingError(f"pair ({first!r}, {second!r}): score {s!r} is not 0, 0.5 or 1")
    return int(round(2 * (first + second)))


def _checked_counts(counts: Sequence[int]) -> list[int]:
    out = [int(c) for c in counts]
    if len(out) != len(PAIR_CLASSES) or any(c < 0 for c in out) or list(counts) != out:
        raise RatingError(
            f"pentanomial counts {list(counts)}: five counts of pairs ({', '.join(PAIR_CLASSES)}), none below 0"
        )
    return out


def pentanomial_moments(counts: Sequence[int]) -> tuple[int, float, float]:
    """(pairs, mean, variance) of the pair scores per game (a pair's points / 2: 0, 0.25 ... 1) of `counts`
    [LL, LD, DD/WL, WD, WW]; (0, 0.5, 0.0) for no pairs. The variance is the observed one (divided by the
    number of pairs, as the likelihood has it)."""
    c = _checked_counts(counts)
    n = sum(c)
    if n == 0:
        return 0, 0.5, 0.0
    mean = sum(k * ck for k, ck in enumerate(c)) / (4 * n)
    var = sum(ck * (k / 4 - mean) ** 2 for k, ck in enumerate(c)) / n
    return n, mean, var


def _pentanomial_log_likelihood(counts: Sequence[int], score: float) -> float:
    """Largest log-likelihood of pair counts over the five-class distributions whose expected score per game
    is `score` (0 < score < 1).

    With d_k = k/4 - score the maximiser is p_k = n_k / (N + lam d_k), lam the root of
    sum n_k d_k / (N + lam d_k) = 0 in the interval where every N + lam d_k >= 0 (all five classes, seen or
    not). Where the root would lie beyond that interval, the end is taken and the unseen outer class (LL or
    WW) holds the rest of the probability: that is how a run of alike pairs (zero variance) keeps a finite
    likelihood under either hypothesis."""
    n = sum(counts)
    d = [k / 4 - score for k in range(len(PAIR_CLASSES))]
    seen = [k for k, c in enumerate(counts) if c]

    def slope(lam: float) -> float:
        return sum(counts[k] * d[k] / (n + lam * d[k]) for k in seen)

    lo, hi = -n / d[-1], -n / d[0]  # where the WW, resp. the LL class's denominator reaches 0
    if not counts[-1] and slope(lo) <= 0:
        lam = lo
    elif not counts[0] and slope(hi) >= 0:
        lam = hi
    else:
        a, b = lo, hi
        for _ in range(200):  # the slope falls with lam: bisection to the root
            m = 0.5 * (a + b)
            if m in (a, b):
                break
            a, b = (m, b) if slope(m) > 0 else (a, m)
        lam = 0.5 * (a + b)
    return sum(counts[k] * math.log(n / (n + lam * d[k])) for k in seen)


def pentanomial_sprt(
    counts: Sequence[int],
    elo0: float = 0.0,
    elo1: float = 30.0,
    alpha: float = 0.05,
    beta: float = 0.05,
    *,
    min_pairs: int = SPRT_MIN_PAIRS,
) -> tuple[float, str]:
    """Generalised SPRT on colour-swapped pairs [LL, LD, DD/WL, WD, WW]: (LLR, 'H1' | 'H0' | 'continue').

    H0: the first player is elo0 stronger (logistic Elo); H1: elo1 stronger. Each pair is one observation
    of a five-class distribution; the LLR is the exact one of the counts, the log-likelihood under the best
    distribution whose expected score per game is E(elo1) minus the same under E(elo0), and Wald's bounds
    log((1 - beta) / alpha) and log(beta / (1 - alpha)) decide.

    The rule for a verdict: none from fewer than `min_pairs` complete pairs (SPRT_MIN_PAIRS by default),
    and none from fewer than the likelihood supports. Nothing is estimated, so pairs that all scored alike
    (zero variance, where a normal approximation divides by zero) move the LLR only by what they carry: a
    pair moves it by at most log(E1 / E0) towards H1 (0.083 at the defaults, as one won game in the
    trinomial test), so H1 needs 36 pairs at the defaults, H0 about as many."""
    c = _checked_counts(counts)
    if sum(c) == 0:
        return 0.0, "continue"
    s0, s1 = expected_score(elo0), expected_score(elo1)
    llr = _pentanomial_log_likelihood(c, s1) - _pentanomial_log_likelihood(c, s0)
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    verdict = "continue"
    if sum(c) >= min_pairs:
        verdict = "H1" if llr >= upper else ("H0" if llr <= lower else "continue")
    return float(llr), verdict


@dataclass
class PentanomialStats:
    """Head-to-head statistics of `a` against `b` from their colour-swapped pairs (from a's side)."""

    a: str
    b: str
    counts: list[int]
    """Pairs by class [LL, LD, DD/WL, WD, WW] (a's points 0, 0.5, 1, 1.5, 2)."""
    draws: int
    """Drawn games among the paired games."""
    unpaired: int
    """Games outside a complete pair (a lone game, an odd last game): counted in the trinomial figures only."""
    score: float
    """a's mean score per game over the pairs."""
    pair_sd: float
    """Standard deviation of a pair's score per game (its points / 2)."""
    elo_diff: float
    elo_low: float
    elo_high: float
    """95% interval: the score +- 1.96 sd / sqrt(pairs) in Elo. While the pair scores have not varied (one
    pair, or every pair alike) the observed sd is no estimate: then Wilson's interval with the largest
    variance a score in [0, 1] can have, s (1 - s); no pairs: the whole range +-1200."""
    nelo: Optional[float]
    """Normalised Elo: (score - 0.5) / (pair_sd * sqrt 2) * 800 / ln 10; None while pair_sd is 0."""
    draw_ratio: float
    """Drawn games / paired games."""
    sprt_llr: float
    sprt: str
    """`pentanomial_sprt`'s verdict: 'H1', 'H0' or 'continue'."""

    @property
    def pairs(self) -> int:
        return sum(self.counts)


def pentanomial_stats(
    a: str,
    b: str,
    counts: Sequence[int],
    *,
    draws: int = 0,
    unpaired: int = 0,
    elo0: float = 0.0,
    elo1: float = 30.0,
    alpha: float = 0.05,
    beta: float = 0.05,
) -> PentanomialStats:
    """Pair counts [LL, LD, DD/WL, WD, WW] of `a` against `b` turned into score, Elo with its 95% interval
    (normal approximation on the pair scores, as chess engine testing does), nElo, draw ratio and the GSPRT."""
    c = _checked_counts(counts)
    n, s, var = pentanomial_moments(c)
    sd = math.sqrt(var)
    if n >= 2 and var > 0:
        half = Z95 * sd / math.sqrt(n)
        low, high = elo_from_score(s - half), elo_from_score(s + half)
    elif n:  # no observed spread: Wilson's interval with the largest variance a score in [0, 1] can have
        z2 = Z95**2
        centre = (s + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 / (1 + z2 / n) * math.sqrt(s * (1 - s) / n + z2 / (4 * n * n))
        low, high = elo_from_score(centre - half), elo_from_score(centre + half)
    else:
        low, high = -1200.0, 1200.0
    llr, verdict = pentanomial_sprt(c, elo0, elo1, alpha, beta)
    return PentanomialStats(
        a=a,
        b=b,
        counts=c,
        draws=draws,
        unpaired=unpaired,
        score=s,
        pair_sd=sd,
        elo_diff=elo_from_score(s),
        elo_low=low,
        elo_high=high,
        nelo=(s - 0.5) / (sd * math.sqrt(2.0)) * 2 * ELO_SCALE if sd > 0 else None,
        draw_ratio=draws / (2 * n) if n else 0.0,
        sprt_llr=llr,
        sprt=verdict,
    )
