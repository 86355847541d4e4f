"""Tic-tac-toe against the known counts of its game tree."""

from __future__ import annotations

from collections import Counter

import pytest

from games import IllegalMoveError, perft
from games.tictactoe import RULES, TicTacToe


def count_games(position: TicTacToe, results: Counter) -> None:
    outcome = position.outcome()
    if outcome is not None:
        results[outcome.winner] += 1
        return
    for move in position.legal_moves():
        count_games(position.play(move), results)


def test_complete_games_match_the_published_counts() -> None:
    results: Counter = Counter()
    count_games(TicTacToe(), results)
    assert sum(results.values()) == 255_168
    assert results[0] == 131_184  # first player wins
    assert results[1] == 77_904
    assert results[None] == 46_080


def test_reachable_positions() -> None:
    seen = {TicTacToe().key()}
    frontier = [TicTacToe()]
    while frontier:
        position = frontier.pop()
        for move in position.legal_moves():
            child = position.play(move)
            if child.key() not in seen:
                seen.add(child.key())
                frontier.append(child)
    assert len(seen) == 5_478


def test_perft_counts_every_sequence() -> None:
    assert [perft(TicTacToe(), depth) for depth in range(1, 4)] == [9, 72, 504]


def test_cells_are_named_from_the_top_left() -> None:
    position = RULES.replay(["a1", "b1"])
    assert str(position) == "OX.\n...\n..."
    assert position.turn == 0


def test_a_taken_cell_is_refused_with_its_reason() -> None:
    position = RULES.replay(["b2"])
    with pytest.raises(IllegalMoveError, match="taken"):
        position.parse_move("b2")
