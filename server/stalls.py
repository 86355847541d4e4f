"""Stalled bot games: a person who stops moving against a bot ends the game, so that the bot is free again.

A fleet plays a bounded number of games at once, so an untimed game whose person never moves would hold
one of its bots for ever. As on Lichess, such a game ends once the person has let ``idle_s`` pass on
their turn: it is aborted (nobody wins) if they never made a move in it, and they lose it if they did.
A timed game needs no rule of its own: the person's clock runs on their turn and flags them as in any
game. Pure, like :mod:`server.match`: the live shell asks :func:`deadline` when to look, and :func:`tick`
what time decides.
"""

from __future__ import annotations

from server.match import ABORTED, FINISHED, LIVE, Match
from server.steps import Finish, Step


def person_against_bot(match: Match) -> int | None:
    """The seat of the person in a game between a person and a bot; ``None`` in any other game."""
    first, second = match.seats
    if first is None or second is None or first.bot == second.bot:
        return None
    return 1 if first.bot else 0


def stall_deadline(match: Match, idle_s: float | None) -> float | None:
    """When the person of a live untimed bot game has let ``idle_s`` pass on their turn; ``None`` if the
    rule does not apply now (``idle_s`` ``None``: never)."""
    if idle_s is None or match.status != LIVE or match.control is not None or match.turn_started is None:
        return None
    seat = person_against_bot(match)
    if seat is None or match.position.turn != seat:
        return None
    return match.turn_started + idle_s


def deadline(match: Match, idle_s: float | None) -> float | None:
    """The next time :func:`tick` has something to decide: :meth:`Match.deadline` or a stall."""
    due = match.deadline()
    stalled = stall_deadline(match, idle_s)
    if stalled is None:
        return due
    return stalled if due is None else min(due, stalled)


def tick(match: Match, now: float, idle_s: float | None) -> Step:
    """What time decides in ``match``: what :meth:`Match.tick` decides (a flag, a grace run out), else a
    stalled bot game ended (see the module docstring)."""
    step = match.tick(now)
    if step.match is not match:
        return step
    due = stall_deadline(match, idle_s)
    if due is None or now < due:
        return step
    seat = person_against_bot(match)
    assert seat is not None
    waited = f"{idle_s:g} s" if idle_s is not None else "too long"
    if any(position.turn == seat for position in match.positions[:-1]):
        finish = Finish(FINISHED, 1 - seat, f"seat {seat} stopped moving against a bot for {waited}")
    else:
        finish = Finish(ABORTED, None, f"seat {seat} made no first move against a bot within {waited}")
    return match.end_by_rule(finish, now)
