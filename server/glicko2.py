"""Glicko-2 ratings (Glickman, "Example of the Glicko-2 system", 2013), in the variant Lichess uses.

Pure arithmetic, no I/O: :func:`rate` is one rating period of one player, and Ply Arena (as Lichess)
makes every game a rating period of its own, so a rating changes after every rated game. Time away
counts through the periods that passed since the player's last game: :data:`RATING_PERIODS_PER_DAY`
of them a day, each adding the player's volatility to the deviation (Glickman's step 6), up to
:data:`MAX_DEVIATION`.

The constants are Lichess's (lichess-org/lila ``modules/rating/.../Glicko.scala`` and scalachess's
``chess.rating.glicko``): deviation kept within 45..500, provisional while it is 110 or more, volatility
at most 0.1, tau 0.75 and 0.21436 rating periods a day ("so a typical player's RD goes from 60 to 110 in
one year"). A new player starts at 1500 with deviation 350 and volatility 0.06, Glickman's defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SCALE = 173.7178
"""Glicko-2's internal scale: a Glicko rating r is mu = (r - 1500) / SCALE."""
TAU = 0.75
"""How much volatility may change in one period (Lichess's value; Glickman's example uses 0.5)."""
MIN_DEVIATION = 45.0
MAX_DEVIATION = 500.0
PROVISIONAL_DEVIATION = 110.0
"""A rating with a deviation at or above this is provisional (shown with a "?")."""
MAX_VOLATILITY = 0.1
"""Past this, Lichess notes, a rating might never settle again."""
RATING_PERIODS_PER_DAY = 0.21436
CONVERGENCE = 1e-6
"""Glickman's epsilon for the volatility's iteration (step 5)."""

DEFAULT_RATING = 1500.0
DEFAULT_DEVIATION = 350.0
DEFAULT_VOLATILITY = 0.06


@dataclass(frozen=True, slots=True)
class Glicko:
    """One player's rating in one game: rating and deviation on the Glicko scale, and volatility."""

    rating: float = DEFAULT_RATING
    deviation: float = DEFAULT_DEVIATION
    volatility: float = DEFAULT_VOLATILITY

    @property
    def provisional(self) -> bool:
        """Whether the rating is still too uncertain to be shown as established."""
        return self.deviation >= PROVISIONAL_DEVIATION


NEW_PLAYER = Glicko()


@dataclass(frozen=True, slots=True)
class Result:
    """One game of the period, seen by the player rated: the opponent before it and the score
    (1 won, 0.5 drawn, 0 lost)."""

    opponent: Glicko
    score: float


def periods_since(days: float) -> float:
    """The rating periods in ``days`` away (none for a negative span, a clock that went back)."""
    return max(days, 0.0) * RATING_PERIODS_PER_DAY


def aged(player: Glicko, periods: float) -> Glicko:
    """``player`` after ``periods`` rating periods without games: the deviation grows toward the maximum."""
    if periods <= 0:
        return player
    phi = player.deviation / SCALE
    grown = math.sqrt(phi * phi + max(periods, 0.0) * player.volatility**2) * SCALE
    return Glicko(player.rating, _clamp(grown, MIN_DEVIATION, MAX_DEVIATION), player.volatility)


def rate(player: Glicko, results: list[Result], *, periods: float = 1.0, tau: float = TAU) -> Glicko:
    """``player`` after one rating period holding ``results``, ``periods`` periods after their last.

    With ``periods=1`` and ``tau=0.5`` this is Glickman's worked example exactly; Ply Arena passes the
    periods since the player's last rated game (a fraction for games a few minutes apart).
    """
    if not results:
        return aged(player, periods)
    mu = (player.rating - DEFAULT_RATING) / SCALE
    phi = player.deviation / SCALE
    sigma = player.volatility
    # Steps 3 and 4: the estimated variance v of the rating from the games alone, and the improvement delta.
    inverse_v = 0.0
    improvement = 0.0
    for result in results:
        mu_j = (result.opponent.rating - DEFAULT_RATING) / SCALE
        g_j = _g(result.opponent.deviation / SCALE)
        expected = 1.0 / (1.0 + math.exp(-g_j * (mu - mu_j)))
        inverse_v += g_j * g_j * expected * (1.0 - expected)
        improvement += g_j * (result.score - expected)
    v = 1.0 / inverse_v
    delta = v * improvement
    # Step 5: the new volatility; steps 6 and 7: the new deviation and rating.
    sigma_new = min(_volatility(phi, sigma, v, delta, tau), MAX_VOLATILITY)
    phi_star = math.sqrt(phi * phi + max(periods, 0.0) * sigma_new * sigma_new)  # step 6: time away
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + inverse_v)
    mu_new = mu + phi_new * phi_new * improvement
    deviation = _clamp(phi_new * SCALE, MIN_DEVIATION, MAX_DEVIATION)
    return Glicko(mu_new * SCALE + DEFAULT_RATING, deviation, sigma_new)


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _volatility(phi: float, sigma: float, v: float, delta: float, tau: float) -> float:
    """Step 5 of Glickman's paper: the Illinois algorithm on f(x) = 0, x = ln(sigma'^2)."""
    a = math.log(sigma * sigma)
    delta2 = delta * delta
    phi2 = phi * phi

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta2 - phi2 - v - ex) / (2.0 * (phi2 + v + ex) ** 2) - (x - a) / (tau * tau)

    big_a = a
    if delta2 > phi2 + v:
        big_b = math.log(delta2 - phi2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    for _ in range(100):  # converges in a handful; the bound only guards against a float oddity
        if abs(big_b - big_a) <= CONVERGENCE or f_b == f_a:
            break
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)
