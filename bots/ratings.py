"""Elo ratings of bot levels from tournament games, with confidence intervals, and the shipped table.

The model is Elo's own: the first mover, rated ``r_f``, is expected to score
``1 / (1 + 10 ** ((r_s - r_f - a) / 400))`` against the second, rated ``r_s``,
where ``a`` is the first mover's advantage (fitted too: it is large in Connect
Four). A game scores 1, ½ or 0, so a draw is half a point (Bradley-Terry with
draws as half points). The ratings maximise the likelihood of the games'
scores by Newton's method on the log-likelihood (concave, so it converges in a
few steps), with one rating held at the anchor so the scale is fixed: a level
(level 1 at 1000), or, where the levels played anchors (:mod:`bots.anchors`,
Stockfish at a fixed ``UCI_Elo``), each anchor at its published rating, which
puts the levels on the engine's scale.

Two choices, stated because they shape the numbers:

- **A weak prior.** ``prior_draws`` virtual drawn games between each pair of
  neighbouring levels keep a level that won every game finite (plain maximum
  likelihood would send it to infinity) and pull gaps slightly towards zero,
  which only makes a claimed gap harder to earn. With ``prior_draws=0`` the fit
  is plain maximum likelihood.
- **Intervals** come from the observed Fisher information (the inverse of the
  log-likelihood's negative Hessian at the optimum), as normal 95% intervals.
  The model treats a game as a Bernoulli trial; drawn games vary less than
  that, so where draws are common the intervals are conservative (too wide,
  never too narrow).

Everything is a few small matrices (one row per level), so the linear algebra
is plain Python rather than a dependency.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from statistics import NormalDist

import msgspec

from bots.anchors import Player, player_order

ELO_PER_LOGIT = 400 / math.log(10)
"""Elo points per unit of log-odds: a 400-point gap is 10-to-1 odds."""
DEFAULT_ANCHOR_LEVEL = 1
DEFAULT_ANCHOR_RATING = 1000.0
DEFAULT_PRIOR_DRAWS = 1.0
DEFAULT_CONFIDENCE = 0.95
MAX_NEWTON_STEPS = 100
TOLERANCE = 1e-9
"""Newton stops when no rating moves by more than this many log-odds units."""
MAX_LOGIT = 25.0
"""Past this (about 4,300 Elo from the anchor) a rating is running away, not converging."""
RATINGS_PATH = Path(__file__).with_name("ratings.json")


@dataclass(frozen=True, slots=True)
class Encounter:
    """One game as the fit sees it: the players at seat 0 and seat 1, and what seat 0 scored."""

    first: Player
    second: Player
    first_points: float


@dataclass(frozen=True, slots=True)
class LevelRating:
    """A level's fitted rating and its confidence interval (an anchor's is its fixed rating)."""

    level: Player
    rating: float
    ci_low: float
    ci_high: float
    games: int
    """Real games the level played (the prior's virtual ones not counted)."""
    points: float
    losses: int


@dataclass(frozen=True, slots=True)
class Step:
    """How much stronger ``upper`` is than ``lower``, with the interval of that difference."""

    lower: Player
    upper: Player
    gap: float
    ci_low: float
    ci_high: float

    @property
    def distinct(self) -> bool:
        """Whether the whole interval lies above zero: ``upper`` is measurably stronger."""
        return self.ci_low > 0


@dataclass(frozen=True, slots=True)
class Ladder:
    """The fitted ratings of a set of levels; see the module docstring for the model."""

    ratings: tuple[LevelRating, ...]
    first_move_advantage: float
    first_move_ci: tuple[float, float]
    covariance: dict[tuple[Player, Player], float]
    """Covariance of the ratings in Elo², by pair of players (an anchor's row is zero)."""
    fixed: dict[Player, float]
    """The players whose ratings were held: one level, or the anchors that played."""
    confidence: float
    prior_draws: float
    games: int

    @property
    def anchor_level(self) -> int | None:
        """The level held at :attr:`anchor_rating`, or ``None`` where anchors hold the scale."""
        (player, *others) = self.fixed
        return player if isinstance(player, int) and not others else None

    @property
    def anchor_rating(self) -> float | None:
        return None if self.anchor_level is None else self.fixed[self.anchor_level]

    @property
    def anchors(self) -> list[LevelRating]:
        """The anchors' rows (held at their fixed ratings), weakest first."""
        return [row for row in self.ratings if isinstance(row.level, str)]

    @property
    def scale(self) -> str:
        """What holds the scale, for titles: ``level 1 = 1000``, or the anchors."""
        if self.anchor_level is not None:
            return f"level {self.anchor_level} = {self.anchor_rating:.0f}"
        return "anchors " + ", ".join(str(row.level) for row in self.anchors)

    def rating(self, level: Player) -> LevelRating:
        for row in self.ratings:
            if row.level == level:
                return row
        raise KeyError(f"{level} is not in this ladder; it has {[r.level for r in self.ratings]}")

    def step(self, lower: Player, upper: Player) -> Step:
        """The gap from ``lower`` to ``upper`` with its own interval (their errors are correlated)."""
        gap = self.rating(upper).rating - self.rating(lower).rating
        cov = self.covariance
        variance = cov[upper, upper] + cov[lower, lower] - 2 * cov[upper, lower]
        half = _z(self.confidence) * math.sqrt(max(variance, 0.0))
        return Step(lower, upper, gap, gap - half, gap + half)

    def steps(self) -> list[Step]:
        """Each level against the one below it (anchors are not steps of the ladder)."""
        levels = [row.level for row in self.ratings if isinstance(row.level, int)]
        return [self.step(low, high) for low, high in itertools.pairwise(levels)]


def encounters_of(records: Iterable[object]) -> list[Encounter]:
    """Encounters from tournament records (anything with ``first``, ``second`` and ``first_points``)."""
    return [Encounter(r.first, r.second, r.first_points) for r in records]  # type: ignore[attr-defined]


def fit_ladder(
    encounters: Sequence[Encounter],
    *,
    anchor_level: int = DEFAULT_ANCHOR_LEVEL,
    anchor_rating: float = DEFAULT_ANCHOR_RATING,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    confidence: float = DEFAULT_CONFIDENCE,
    first_move: bool = True,
    anchors: Mapping[Player, float] | None = None,
) -> Ladder:
    """Fit Elo ratings to ``encounters`` (see the module docstring); ``first_move`` fits its advantage.

    ``anchors`` are players held at the given ratings (Stockfish at its ``UCI_Elo``); when
    given, they fix the scale in place of ``anchor_level``. Raises ``ValueError`` when no
    anchor played, when the games leave some levels unconnected to an anchor, or when a plain
    maximum-likelihood fit (``prior_draws=0``) has no finite optimum because a level won or
    lost every game.
    """
    if not encounters:
        raise ValueError("no games to rate")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if prior_draws < 0:
        raise ValueError(f"prior draws must be 0 or more, got {prior_draws}")
    for encounter in encounters:
        if encounter.first == encounter.second:
            raise ValueError(f"level {encounter.first} cannot play itself")
        if encounter.first_points not in (0.0, 0.5, 1.0):
            raise ValueError(f"a game scores 0, 0.5 or 1, got {encounter.first_points}")
    players = {e.first for e in encounters} | {e.second for e in encounters}
    if anchors:
        fixed = {player: float(rating) for player, rating in anchors.items() if player in players}
        if not fixed:
            raise ValueError(f"none of the anchors ({', '.join(map(str, anchors))}) played a game")
    else:
        fixed = {anchor_level: anchor_rating}
    levels = sorted(players, key=lambda player: player_order(player, fixed))
    if not fixed.keys() <= players:
        raise ValueError(f"the anchor, level {anchor_level}, played no game; levels that did: {levels}")
    _check_connected(levels, encounters, fixed, prior_draws)

    free = [number for number in levels if number not in fixed]
    index = {number: i for i, number in enumerate(free)}
    size = len(free) + (1 if first_move else 0)
    # Free ratings are fitted in log-odds from the first fixed one; the fixed ones are offsets from it.
    reference = next(iter(fixed.values()))
    offsets = {player: (rating - reference) / ELO_PER_LOGIT for player, rating in fixed.items()}
    # Terms of the log-likelihood: (first, second, games, points of first, counts the first-move term).
    tally: dict[tuple[Player, Player], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for e in encounters:
        tally[e.first, e.second][0] += 1
        tally[e.first, e.second][1] += e.first_points
    terms = [(first, second, n, points, first_move) for (first, second), (n, points) in tally.items()]
    if prior_draws > 0:
        neighbours = itertools.pairwise(number for number in levels if isinstance(number, int))
        terms += [(low, high, prior_draws, prior_draws / 2, False) for low, high in neighbours]

    def design(first: Player, second: Player, with_advantage: bool) -> Row:
        entries = []
        if first in index:
            entries.append((index[first], 1.0))
        if second in index:
            entries.append((index[second], -1.0))
        if with_advantage:
            entries.append((size - 1, 1.0))
        return entries, offsets.get(first, 0.0) - offsets.get(second, 0.0)

    rows = [(*design(first, second, adv), n, points) for first, second, n, points, adv in terms]
    theta = [0.0] * size

    def log_likelihood(values: list[float]) -> float:
        total = 0.0
        for entries, offset, n, points in rows:
            eta = offset + sum(values[i] * sign for i, sign in entries)
            total += points * _log_sigmoid(eta) + (n - points) * _log_sigmoid(-eta)
        return total

    unbounded = ValueError(
        "the ratings do not converge: some level won or lost every game, so its rating is "
        "unbounded; fit with a prior (prior_draws > 0) or play more games"
    )
    current = log_likelihood(theta)
    for _ in range(MAX_NEWTON_STEPS):
        gradient, information = _derivatives(rows, theta, size)
        if max(map(abs, theta), default=0.0) > MAX_LOGIT:
            raise unbounded
        step = _solve(information, gradient)
        scale = 1.0
        while True:  # step halving keeps every step uphill
            candidate = [t + scale * s for t, s in zip(theta, step, strict=True)]
            value = log_likelihood(candidate)
            if value >= current - 1e-12 or scale < 1e-6:
                break
            scale /= 2
        theta, current = candidate, value
        if max((abs(scale * s) for s in step), default=0.0) < TOLERANCE:
            break
    else:
        raise unbounded
    _, information = _derivatives(rows, theta, size)
    inverse = _invert(information)
    return _ladder(
        levels, encounters, theta, inverse, index, first_move, fixed, reference, confidence, prior_draws
    )  # fmt: skip


Row = tuple[list[tuple[int, float]], float]
"""A term's design: (index of a free rating, its sign) pairs, and the offset of the fixed ratings in it."""


def _ladder(
    levels: list[Player],
    encounters: Sequence[Encounter],
    theta: list[float],
    inverse: list[list[float]],
    index: dict[Player, int],
    first_move: bool,
    fixed: dict[Player, float],
    reference: float,
    confidence: float,
    prior_draws: float,
) -> Ladder:
    z = _z(confidence)
    games: Counter[Player] = Counter()
    points: Counter[Player] = Counter()
    losses: Counter[Player] = Counter()
    for e in encounters:
        games[e.first] += 1
        games[e.second] += 1
        points[e.first] += e.first_points
        points[e.second] += 1 - e.first_points
        losses[e.first if e.first_points == 0 else e.second] += e.first_points in (0.0, 1.0)
    covariance = {
        (a, b): inverse[index[a]][index[b]] * ELO_PER_LOGIT**2 if a in index and b in index else 0.0
        for a in levels
        for b in levels
    }
    ratings = []
    for number in levels:
        rating = fixed[number] if number in fixed else reference + theta[index[number]] * ELO_PER_LOGIT
        half = z * math.sqrt(max(covariance[number, number], 0.0))
        low, high = rating - half, rating + half
        ratings.append(LevelRating(number, rating, low, high, games[number], points[number], losses[number]))
    if first_move:
        advantage = theta[-1] * ELO_PER_LOGIT
        half = z * math.sqrt(max(inverse[-1][-1], 0.0)) * ELO_PER_LOGIT
        advantage_ci = (advantage - half, advantage + half)
    else:
        advantage, advantage_ci = 0.0, (0.0, 0.0)
    return Ladder(
        tuple(ratings), advantage, advantage_ci, covariance, fixed, confidence, prior_draws, len(encounters)
    )  # fmt: skip


def _check_connected(
    levels: list[Player], encounters: Sequence[Encounter], fixed: Mapping[Player, float], prior_draws: float
) -> None:
    """Every level must be linked to an anchor by games (or the prior), or its rating means nothing."""
    links: dict[Player, set[Player]] = defaultdict(set)
    if prior_draws > 0:  # the prior links every pair of neighbouring levels
        numbers = [number for number in levels if isinstance(number, int)]
        for low, high in itertools.pairwise(numbers):
            links[low].add(high)
            links[high].add(low)
    for e in encounters:
        links[e.first].add(e.second)
        links[e.second].add(e.first)
    reached, frontier = set(fixed), list(fixed)
    while frontier:
        for other in links[frontier.pop()] - reached:
            reached.add(other)
            frontier.append(other)
    if missing := [level for level in levels if level not in reached]:
        held = ", ".join(f"level {p}" if isinstance(p, int) else p for p in fixed)
        raise ValueError(f"levels {missing} played no game linking them to the anchor ({held})")


def _derivatives(
    rows: list[tuple[list[tuple[int, float]], float, float, float]], theta: list[float], size: int
) -> tuple[list[float], list[list[float]]]:
    """The log-likelihood's gradient and its negative Hessian (the observed information)."""
    gradient = [0.0] * size
    information = [[0.0] * size for _ in range(size)]
    for entries, offset, n, points in rows:
        eta = offset + sum(theta[i] * sign for i, sign in entries)
        expected = 1 / (1 + math.exp(-eta))
        residual = points - n * expected
        weight = n * expected * (1 - expected)
        for i, sign_i in entries:
            gradient[i] += residual * sign_i
            for j, sign_j in entries:
                information[i][j] += weight * sign_i * sign_j
    return gradient, information


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    inverse = _invert(matrix)
    return [sum(row[j] * vector[j] for j in range(len(vector))) for row in inverse]


def _invert(matrix: list[list[float]]) -> list[list[float]]:
    """The inverse of a small positive-definite matrix, by Gauss-Jordan elimination with pivoting."""
    size = len(matrix)
    work = [list(row) + [1.0 if i == j else 0.0 for j in range(size)] for i, row in enumerate(matrix)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda r: abs(work[r][column]))
        if abs(work[pivot][column]) < 1e-12:
            raise ValueError("the games do not determine the ratings (a singular information matrix)")
        work[column], work[pivot] = work[pivot], work[column]
        lead = work[column][column]
        work[column] = [value / lead for value in work[column]]
        for r in range(size):
            if r != column and work[r][column]:
                factor = work[r][column]
                work[r] = [a - factor * b for a, b in zip(work[r], work[column], strict=True)]
    return [row[size:] for row in work]


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


# ---------------------------------------------------------------------------------------------
# The shipped table: bots/ratings.json


class ShippedLevel(msgspec.Struct, frozen=True):
    """One level's rating as shipped: what ``/api/bots`` and the browser show."""

    level: int
    rating: int
    ci_low: int
    ci_high: int
    games: int
    losses: int
    """Games it lost: a level that lost none plays perfectly as far as the tournament could tell."""


class ShippedStep(msgspec.Struct, frozen=True):
    """The gap from one level to the next, with its own interval."""

    lower: int
    upper: int
    gap: int
    ci_low: int
    ci_high: int


class ShippedAnchor(msgspec.Struct, frozen=True):
    """An outside engine held at a published rating (``stockfish@1500``), which the levels played."""

    name: str
    rating: int
    games: int
    losses: int


class ShippedLadder(msgspec.Struct, frozen=True, omit_defaults=True):
    """One game's ladder as shipped, with what it was measured from (a ladder without anchors lists none)."""

    anchor_level: int | None
    """The level held at ``anchor_rating``; ``None`` where ``anchors`` hold the scale."""
    anchor_rating: int | None
    confidence: float
    prior_draws: float
    games: int
    first_move_advantage: int
    levels: list[ShippedLevel]
    steps: list[ShippedStep]
    source: str = ""
    """How the games were played (the tournament command lines), to regenerate them."""
    anchors: list[ShippedAnchor] = msgspec.field(default_factory=list)


class ShippedRatings(msgspec.Struct):
    games: dict[str, ShippedLadder] = msgspec.field(default_factory=dict)


def shipped_ladder(ladder: Ladder, source: str = "") -> ShippedLadder:
    """``ladder`` rounded to whole Elo points for shipping."""
    anchor_rating = ladder.anchor_rating
    return ShippedLadder(
        anchor_level=ladder.anchor_level,
        anchor_rating=None if anchor_rating is None else round(anchor_rating),
        confidence=ladder.confidence,
        prior_draws=ladder.prior_draws,
        games=ladder.games,
        first_move_advantage=round(ladder.first_move_advantage),
        levels=[
            ShippedLevel(r.level, round(r.rating), round(r.ci_low), round(r.ci_high), r.games, r.losses)
            for r in ladder.ratings
            if isinstance(r.level, int)
        ],
        steps=[
            ShippedStep(s.lower, s.upper, round(s.gap), round(s.ci_low), round(s.ci_high))
            for s in ladder.steps()
        ],
        source=source,
        anchors=[ShippedAnchor(str(r.level), round(r.rating), r.games, r.losses) for r in ladder.anchors],
    )


def read_ratings(path: Path = RATINGS_PATH) -> ShippedRatings:
    """The ratings table at ``path``; an absent file is an empty table. Raises ``ValueError`` if malformed."""
    if not path.exists():
        return ShippedRatings()
    try:
        return msgspec.json.decode(path.read_bytes(), type=ShippedRatings)
    except msgspec.DecodeError as error:
        raise ValueError(f"{path}: not a ratings table: {error}") from None


def write_ratings(table: ShippedRatings, path: Path = RATINGS_PATH) -> None:
    """Write ``table`` as indented JSON, games in name order, so diffs stay readable."""
    ordered = ShippedRatings(dict(sorted(table.games.items())))
    path.write_bytes(msgspec.json.format(msgspec.json.encode(ordered), indent=2) + b"\n")


@cache
def shipped_ratings() -> ShippedRatings:
    """The table that ships with the project, read once."""
    return read_ratings(RATINGS_PATH)


def shipped_rating(game: str, level: int, table: ShippedRatings | None = None) -> ShippedLevel | None:
    """The rating of ``level`` of ``game`` in ``table`` (default: the shipped one), or ``None`` if unrated."""
    ladder = (shipped_ratings() if table is None else table).games.get(game)
    if ladder is None:
        return None
    return next((row for row in ladder.levels if row.level == level), None)
