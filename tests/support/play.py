"""Scripted games and the moves of a match between two test clients."""

from __future__ import annotations

import random
from functools import cache

from games import get_game
from support.client import DEFAULT_TIMEOUT, ArenaClient, Message

SCRIPTED_WINS = {
    "tictactoe": ["a1", "a2", "b1", "b2", "c1"],  # O takes the top row
    "connect4": ["1", "2", "1", "2", "1", "2", "1"],  # Red stacks four in column 1
}


@cache
def decisive_game(name: str, tries: int = 400) -> tuple[str, ...]:
    """Moves of a game that the rules decide with a winner: scripted where short, else the shortest of
    ``tries`` seeded random games (deterministic, so every run plays the same game)."""
    if name in SCRIPTED_WINS:
        return tuple(SCRIPTED_WINS[name])
    game = get_game(name)
    best: list[str] | None = None
    for seed in range(tries):
        rng = random.Random(seed)
        position, moves = game.start(), []
        while position.outcome() is None and (best is None or len(moves) < len(best)):
            move = rng.choice(position.legal_moves())
            moves.append(position.format_move(move))
            position = position.play(move)
        outcome = position.outcome()
        if outcome is not None and outcome.winner is not None and (best is None or len(moves) < len(best)):
            best = moves
    assert best is not None, f"no decisive {name} game in {tries} random games"
    return tuple(best)


async def open_match(creator: ArenaClient, joiner: ArenaClient, game: str, **options: object) -> Message:
    """Create a match with ``creator`` in seat 0 and seat ``joiner`` in 1; the joiner's ``match.state``."""
    state = await creator.request("match.create", game=game, seat=0, **options)
    assert state["type"] == "match.state", state
    joined = await joiner.request("match.join", match_id=state["match_id"])
    assert joined["type"] == "match.state" and joined["status"] == "live", joined
    await creator.expect(type_="seated", match_id=state["match_id"])
    await creator.expect(type_="started", match_id=state["match_id"])
    return joined


async def play_moves(
    game: str,
    seats: tuple[ArenaClient, ArenaClient],
    match_id: str,
    moves: list[str],
    played: tuple[str, ...] = (),
) -> list[Message]:
    """Play ``moves`` after ``played``, each sent by the client of the seat to move; the ``moved`` replies."""
    position = get_game(game).replay(played)
    replies = []
    for move in moves:
        reply = await seats[position.turn].request("move", match_id=match_id, ply=position.ply, move=move)
        assert reply["type"] == "moved", reply
        replies.append(reply)
        position = position.play(position.parse_move(move))
    return replies


async def play_against_bot(
    person: ArenaClient,
    game: str,
    match_id: str,
    played: tuple[str, ...] = (),
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> Message:
    """Play ``match_id`` (after ``played``) to its end: ``person`` in seat 0 plays the first legal move, a bot
    in seat 1 answers within ``timeout``; the ``ended`` event."""
    position = get_game(game).replay(played)
    while position.outcome() is None:
        if position.turn == 0:
            move = position.format_move(position.legal_moves()[0])
            reply = await person.request("move", match_id=match_id, ply=position.ply, move=move)
            assert reply["type"] == "moved", reply
        else:
            answer = await person.expect(
                type_="moved", match_id=match_id, ply=position.ply, seat=1, timeout=timeout
            )
            move = answer["move"]
        position = position.play(position.parse_move(move))
    return await person.expect(type_="ended", match_id=match_id, timeout=timeout)
