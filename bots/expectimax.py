"""Expectimax: play for the best expected result against a fallible opponent.

Minimax assumes the opponent always finds the best reply, so between two moves
that both draw against perfect play it has no preference, even when one of them
leaves a person many ways to go wrong. Expectimax models the opponent as a
probability distribution over its replies and averages over them instead: at
the bot's own moves it takes the best, at the opponent's it takes the expected
value. Scores are from the root player's side throughout (there is no negation:
the two kinds of node are not symmetric), on the same scale as the other
searches, and rounded to an integer in the result.

Two opponent models:

- :class:`UniformOpponent`: every legal reply equally likely (a beginner, or a cat
  on the keyboard);
- :class:`EpsilonGreedyOpponent`: the best reply of a shallow alpha-beta search,
  except with probability ``epsilon`` a uniformly random one (a casual player
  who sees a move or two ahead and sometimes slips).

There is no pruning (every reply counts towards the average), so expectimax
searches shallower than alpha-beta for the same time; a cache of values met
before (keyed by position, ply and depth) saves the transpositions. As every
root move's value is exact, a search given an ``rng`` plays any of the moves
that tie for the best at random: a bot should not play the same game twice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Protocol

from bots.deadline import CHECK_MASK, Deadline, OutOfTime
from bots.evaluation import Evaluator
from bots.negamax import MAX_DEPTH, AlphaBeta
from bots.result import SearchResult, outcome_score
from bots.transposition import TranspositionTable
from games import Move, Position

CACHE_LIMIT = 1_000_000
"""Cached values kept at most; the cache starts afresh when it is full."""
TIE_TOLERANCE = 1e-9
"""Root values this close (relatively, or absolutely near zero) tie: the same average summed in another
order (a mirror image's moves) may differ in its last bits."""

Replies = list[tuple[Move, float]]
"""A distribution over legal replies: (move, probability) pairs whose probabilities sum to 1."""


class OpponentModel(Protocol):
    """How the opponent is expected to choose among its legal moves."""

    def replies(self, position: Position) -> tuple[Replies, int]:
        """The distribution of the opponent's replies in ``position`` and the nodes it cost to find."""
        ...


@dataclass(frozen=True, slots=True)
class UniformOpponent:
    """Every legal reply equally likely."""

    def replies(self, position: Position) -> tuple[Replies, int]:
        moves = position.legal_moves()
        return [(move, 1 / len(moves)) for move in moves], 0


@dataclass(slots=True)
class EpsilonGreedyOpponent:
    """The best reply of a ``depth``-ply search, except with probability ``epsilon`` a random one.

    Replies that tie for best share the greedy probability equally.
    """

    evaluator: Evaluator
    epsilon: float
    depth: int = 1
    _searcher: AlphaBeta = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.epsilon <= 1:
            raise ValueError(f"epsilon must be a probability between 0 and 1, got {self.epsilon}")
        if self.depth < 1:
            raise ValueError(f"the opponent's search depth must be at least 1, got {self.depth}")
        self._searcher = AlphaBeta(self.evaluator, TranspositionTable(size_log2=14))

    def replies(self, position: Position) -> tuple[Replies, int]:
        analysis = self._searcher.analyze(position, self.depth)
        best_score = max(result.score for result in analysis.values())
        best = [move for move, result in analysis.items() if result.score == best_score]
        random_share = self.epsilon / len(analysis)
        greedy_share = (1 - self.epsilon) / len(best)
        distribution = [(move, random_share + (greedy_share if move in best else 0.0)) for move in analysis]
        return distribution, self._searcher.nodes


class Expectimax:
    """A reusable expectimax searcher for one game and one opponent model."""

    def __init__(self, evaluator: Evaluator, opponent: OpponentModel) -> None:
        self.evaluator = evaluator
        self.opponent = opponent
        self.nodes = 0
        self.heuristic_leaves = 0
        self._root_turn = 0
        self._deadline: Deadline | None = None
        self._values: dict[Hashable, float] = {}
        self._replies: dict[Hashable, Replies] = {}

    def search(
        self,
        position: Position,
        depth: int | None = None,
        time_ms: float | None = None,
        rng: random.Random | None = None,
    ) -> SearchResult:
        """The move with the best expected score, searched to ``depth`` plies or for ``time_ms``.

        Iterative deepening as in :class:`bots.negamax.AlphaBeta`: with a time budget
        the deepest iteration completed in time counts, and the first always completes.
        Of moves that tie for the best, ``rng`` picks one; without it, the first by
        the game's ``order_key``.
        """
        if depth is None and time_ms is None:
            raise ValueError("a search needs a depth, a time budget, or both")
        if depth is not None and depth < 1:
            raise ValueError(f"search depth must be at least 1, got {depth}")
        moves = position.legal_moves()
        if not moves:
            raise ValueError(f"no move to search: the game is over ({position.outcome()})")
        order_key = self.evaluator.order_key
        if order_key is not None:  # only to break ties between equal expectations sensibly
            moves.sort(key=lambda move: order_key(position, move), reverse=True)
        deadline = Deadline(time_ms)
        self.nodes = 0
        self._root_turn = position.turn
        self._values.clear()  # values are from the root player's side: another root, another cache
        self._deadline = None  # the first iteration always completes
        values: list[tuple[Move, float]] = []
        completed = 0
        for iteration in range(1, min(depth or MAX_DEPTH, MAX_DEPTH) + 1):
            self.heuristic_leaves = 0
            try:
                values = self._search_root(position, moves, iteration)
            except OutOfTime:
                break
            completed = iteration
            self._deadline = deadline if time_ms is not None else None
            if self.heuristic_leaves == 0:
                break  # every line reached the end of the game: deeper changes nothing
            if deadline.remaining_ms() <= 0:
                break
        self._deadline = None
        assert values  # the first iteration has no deadline
        move, value = _best(values, rng)
        pv = self._principal_line(position, move, completed)
        return SearchResult(move, round(value), completed, self.nodes, pv, deadline.elapsed_ms())

    def _search_root(self, position: Position, moves: list[Move], depth: int) -> list[tuple[Move, float]]:
        """Every root move with its expected score, ``depth`` plies deep."""
        self.nodes += 1
        return [(move, self._value(position.play(move), depth - 1, 1)) for move in moves]

    def _value(self, position: Position, depth: int, ply: int) -> float:
        """The expected score of ``position`` for the root player, ``depth`` plies deep."""
        self.nodes += 1
        if not self.nodes & CHECK_MASK and self._deadline is not None:
            self._deadline.check()
        key = (position.key(), position.turn, ply, depth)
        cached = self._values.get(key)
        if cached is not None:
            return cached
        outcome = position.outcome()
        if outcome is not None:
            value: float = outcome_score(outcome, self._root_turn, ply)
        elif depth == 0:
            self.heuristic_leaves += 1
            score = self.evaluator.evaluate(position)
            value = score if position.turn == self._root_turn else -score
        elif position.turn == self._root_turn:
            value = max(
                self._value(position.play(move), depth - 1, ply + 1) for move in position.legal_moves()
            )
        else:
            value = sum(
                probability * self._value(position.play(move), depth - 1, ply + 1)
                for move, probability in self._distribution(position)
            )
        if len(self._values) >= CACHE_LIMIT:
            self._values.clear()
        self._values[key] = value
        return value

    def _distribution(self, position: Position) -> Replies:
        key = (position.key(), position.turn)
        replies = self._replies.get(key)
        if replies is None:
            replies, nodes = self.opponent.replies(position)
            self.nodes += nodes
            if len(self._replies) >= CACHE_LIMIT:
                self._replies.clear()
            self._replies[key] = replies
        return replies

    def _principal_line(self, position: Position, move: Move, depth: int) -> tuple[Move, ...]:
        """The bot's best moves and the opponent's most likely replies, ``depth`` plies long."""
        line = [move]
        position = position.play(move)
        while len(line) < depth and position.outcome() is None:
            remaining, ply = depth - len(line), len(line)
            if position.turn == self._root_turn:
                move = max(
                    position.legal_moves(),
                    key=lambda m, p=position: self._value(p.play(m), remaining - 1, ply + 1),
                )
            else:
                move = max(self._distribution(position), key=lambda pair: pair[1])[0]
            line.append(move)
            position = position.play(move)
        return tuple(line)


def _best(values: list[tuple[Move, float]], rng: random.Random | None) -> tuple[Move, float]:
    """The best of ``values``: the first of those that tie for it, or one at random with ``rng``."""
    top = max(value for _, value in values)
    tied = [
        pair for pair in values if math.isclose(pair[1], top, rel_tol=TIE_TOLERANCE, abs_tol=TIE_TOLERANCE)
    ]
    return tied[0] if rng is None else rng.choice(tied)
