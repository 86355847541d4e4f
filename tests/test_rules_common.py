"""Properties every game's rules must have, checked for each registered game."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import GAMES, IllegalMoveError, get_game

ALL_GAMES = sorted(GAMES)


def random_game(name: str, seed: int, max_plies: int = 400) -> list:
    """Positions of one random game, from the start until it ends (or ``max_plies``)."""
    return random_game_with_moves(name, seed, max_plies)[0]


def random_game_with_moves(name: str, seed: int, max_plies: int = 400) -> tuple[list, list]:
    """Positions of one random game and the moves between them."""
    rng = random.Random(seed)
    position = get_game(name).start()
    positions, moves = [position], []
    while position.outcome() is None and len(moves) < max_plies:
        moves.append(rng.choice(position.legal_moves()))
        position = position.play(moves[-1])
        positions.append(position)
    return positions, moves


def test_the_five_games_are_registered() -> None:
    assert {"tictactoe", "connect4", "othello", "checkers", "chess"} <= set(GAMES)


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
def test_legal_notation_names_the_legal_moves_in_order(name: str, seed: int) -> None:
    for position in random_game(name, seed):
        assert position.legal_notation() == [position.format_move(move) for move in position.legal_moves()]


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
    for before, after in itertools.pairwise(positions):
        assert after.key() != before.key() or after.turn != before.turn


@pytest.mark.parametrize("name", ALL_GAMES)
def test_replay_reaches_the_same_position(name: str) -> None:
    positions, moves = random_game_with_moves(name, seed=7)
    notation = [position.format_move(move) for position, move in zip(positions, moves, strict=False)]
    assert get_game(name).replay(notation).key() == positions[-1].key()


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
def test_grid_draws_every_position_with_the_games_own_pieces(name: str) -> None:
    pieces = get_game(name).pieces
    assert all(piece.seat in (0, 1) and piece.name for piece in pieces.values())
    assert not set(pieces) & set(". "), "empty and unused squares are the same in every game"
    for position in random_game(name, seed=11):
        rows = position.grid()
        assert rows and len({len(row) for row in rows}) == 1
        assert set("".join(rows)) <= set(pieces) | set(". ")


@pytest.mark.parametrize("name", ALL_GAMES)
def test_display_notation_names_the_same_moves(name: str) -> None:
    """People's notation (SAN in chess) is read back as the same move, wherever a game has its own."""
    game = get_game(name)
    positions, moves = random_game_with_moves(name, seed=5, max_plies=120)
    notation = [position.format_move(move) for position, move in zip(positions, moves, strict=False)]
    shown = game.displayed(positions, notation)
    if game.display_notation is None:
        assert shown is None
        assert all(p.display_move(m) == p.format_move(m) for p, m in zip(positions, moves, strict=False))
        return
    assert shown is not None and len(shown) == len(moves)
    for position, move, text in zip(positions, moves, shown, strict=False):
        assert position.parse_move(text) == move, text
