"""Connect Four's level 8 plays perfectly: every move has the best exact score, from the book or the solver.

Held against the project's own exact solver (compiled: the level's time budget
assumes it, and so do these tests, which solve every position of several games).
"""

from __future__ import annotations

import random

import pytest

from bots import perfect
from bots.connect4_book import shipped_book
from bots.connect4_solver import CompiledSearch, analyze
from bots.levels import Level, choose_move, level
from games.connect4 import ConnectFour

pytestmark = pytest.mark.skipif(
    CompiledSearch is None, reason="perfect play within a move's time needs the compiled solver"
)

PERFECT = level("connect4", 8)
BOOK = shipped_book()


def assert_best_move(position: ConnectFour, move: int) -> None:
    """``move`` has the best exact score of ``position``'s moves: a book move by the book's stored scores
    (checked against the solver in tests/test_connect4_book.py), any other by the solver, now."""
    assert BOOK is not None
    entry = BOOK.lookup(position)
    if entry is not None:
        assert move == entry.move, f"{position}: played {move + 1}, the book says {entry.move + 1}"
        return
    scores = analyze(position)
    best = max(scores.values())
    assert scores[move] == best, f"{position}: column {move + 1} scores {scores[move]}, the best {best}"


def noisy_perfect(position: ConnectFour, rng: random.Random) -> int:
    """A perfect player, level 8 for its own side, who plays a random move one time in four."""
    if rng.random() < 0.25:
        return rng.choice(position.legal_moves())
    return choose_move(position, PERFECT, rng)[0]


def random_mover(position: ConnectFour, rng: random.Random) -> int:
    return rng.choice(position.legal_moves())


def play(bot_seat: int, opponent: object, seed: int, bot: Level = PERFECT) -> ConnectFour:
    """A game from the empty board, every move of the bot's checked as it is played."""
    rng = random.Random(seed)
    position = ConnectFour()
    while position.outcome() is None:
        if position.turn == bot_seat:
            move, _ = choose_move(position, bot, rng)
            assert_best_move(position, move)
        else:
            move = opponent(position, rng)  # type: ignore[operator]
        position = position.play(move)
    return position


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("opponent", [random_mover, noisy_perfect], ids=["random", "noisy-perfect"])
@pytest.mark.parametrize("bot_seat", [0, 1], ids=["first", "second"])
def test_every_move_from_the_empty_board_has_the_best_exact_score(
    bot_seat: int, opponent: object, seed: int
) -> None:
    final = play(bot_seat, opponent, seed)
    outcome = final.outcome()
    assert outcome is not None
    if bot_seat == 0:
        assert outcome.winner == 0  # the first player wins Connect Four, and level 8 keeps the win


def test_the_beginners_line_that_beat_the_old_level_8_no_longer_does() -> None:
    """4,4,4,3,3,3,5,2 as first player won in 15 plies against a level that played "the first move that does
    not lose at once" when lost: a perfect defender punishes it, and the first player then does not win."""
    script = [3, 3, 3, 2, 2, 2, 4, 1]
    rng = random.Random(0)
    position = ConnectFour()
    while position.outcome() is None:
        if position.turn == 1:
            move, _ = choose_move(position, PERFECT, rng)
            assert_best_move(position, move)
        elif script and script[0] in position.legal_moves():
            move = script.pop(0)
        else:
            script.clear()
            move = choose_move(position, PERFECT, rng)[0]  # from here on the first player plays perfectly
        position = position.play(move)
    outcome = position.outcome()
    assert outcome is not None and outcome.winner != 0, position


def random_position(rng: random.Random, stones: int) -> ConnectFour:
    """A position of random moves with ``stones`` stones, nobody's four yet."""
    while True:
        position = ConnectFour()
        while position.outcome() is None and position.ply < stones:
            position = position.play(rng.choice(position.legal_moves()))
        if position.outcome() is None:
            return position


@pytest.mark.parametrize("seed", range(6))
def test_in_positions_with_fourteen_stones_or_more_it_plays_the_best_exact_score(seed: int) -> None:
    rng = random.Random(seed)
    position = random_position(rng, 14 + seed)
    move, result = choose_move(position, PERFECT, rng)
    assert_best_move(position, move)
    assert result.score == perfect.score_from_pons(max(analyze(position).values()), position.ply)
