"""Properties every game's rules must have, checked for each registered game."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import GAMES, IllegalMoveError, get_game

ALL_GAMES = sorted(GAMES)


def random_game(name: str, seed: int, max_plies: int = 400) -> list:
    """Positions of one random game, from the start until it ends (or ``max_plies``)."""
    rng = random.Random(seed)
    position = get_game(name).start()
    positions = [position]
    while position.outcome() is None and len(positions) <= max_plies:
        position = position.play(rng.choice(position.legal_moves()))
        positions.append(position)
    return positions


def test_the_four_games_are_registered() -> None:
    assert {"tictactoe", "connect4", "othello", "checkers"} <= set(GAMES)


@pytest.mark.parametrize("name", ALL_GAMES)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_notation_round_trips_every_move_of_random_games(name: str, seed: int) -> None:
    for position in random_game(name, seed):
        for move in position.legal_moves():
            text = position.format_move(move)
            assert position.parse_move(text) == move, (text, move)


@pytest.mark.parametrize("name", ALL_GAMES)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_positions_are_consistent_along_random_games(name: str, seed: int) -> None:
    positions = random_game(name, seed)
    for ply, position in enumerate(positions):
        assert position.ply == ply
        assert position.turn in (0, 1)
        moves = position.legal_moves()
        assert len(moves) == len(set(moves)), "duplicate legal moves"
        assert (position.outcome() is None) == bool(moves)
        hash(position.key())
    for before, after in zip(positions, positions[1:], strict=False):
        assert after.key() != before.key() or after.turn != before.turn


@pytest.mark.parametrize("name", ALL_GAMES)
def test_replay_reaches_the_same_position(name: str) -> None:
    positions = random_game(name, seed=7)
    moves = [p.format_move(m) for p, m in zip(positions, _moves_between(positions), strict=False)]
    assert get_game(name).replay(moves).key() == positions[-1].key()


def _moves_between(positions: list) -> list:
    """Recover the moves of a random game by matching successors (tests only)."""
    moves = []
    for before, after in zip(positions, positions[1:], strict=False):
        matching = [m for m in before.legal_moves() if before.play(m).key() == after.key()]
        moves.append(matching[0])
    return moves


@pytest.mark.parametrize("name", ALL_GAMES)
@pytest.mark.parametrize("text", ["", "zz", "99", "a9", "!", "1-", "x" * 200, "\x00"])
def test_malformed_moves_raise_one_error_that_names_the_move(name: str, text: str) -> None:
    position = get_game(name).start()
    with pytest.raises(IllegalMoveError) as caught:
        position.parse_move(text)
    assert caught.value.move == text
    assert caught.value.reason
    assert repr(text) in str(caught.value)


@pytest.mark.parametrize("name", ALL_GAMES)
def test_moves_after_the_end_are_refused(name: str) -> None:
    final = random_game(name, seed=3, max_plies=10_000)[-1]
    assert final.outcome() is not None
    assert final.legal_moves() == []


@pytest.mark.parametrize("name", ALL_GAMES)
def test_grid_draws_every_position_with_the_shared_alphabet(name: str) -> None:
    for position in random_game(name, seed=11):
        rows = position.grid()
        assert rows and len({len(row) for row in rows}) == 1
        assert set("".join(rows)) <= set(".xoXO ")
