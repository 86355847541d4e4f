"""Stalled bot games: a player who stops moving in a game against a bot ends it, so the bot is free again.

A fleet plays a bounded number of games at once, so an untimed game whose person never moves would hold
one of its bots for ever. As on Lichess, such a game ends once the player to move has let ``idle_s``
pass on their turn: it is aborted (nobody wins) if they never made a move in it, and they lose it if they
did. The rule holds for whoever is to move in an untimed game where a bot (a player who said ``bot:
true``) holds a seat: a person, or a client that calls itself a bot to play a fleet's bot (a fleet's own
bots move in seconds). A timed game needs no rule of its own: the clock of the player to move runs and
flags them as in any game. Pure, like :mod:`server.match`: the live shell asks :func:`deadline` when to
look, and :func:`tick` what time decides.
"""

from __future__ import annotations

from server.match import ABORTED, FINISHED, LIVE, Match
from server.steps import Finish, Step


def against_a_bot(match: Match) -> bool:
    """Whether both seats of ``match`` are taken and a bot holds one of them."""
    first, second = match.seats
    return first is not None and second is not None and (first.bot or second.bot)


def stall_deadline(match: Match, idle_s: float | None) -> float | None:
    """When the player to move in a live untimed game against a bot has let ``idle_s`` pass on their turn;
    ``None`` if the rule does not apply (``idle_s`` ``None``: never)."""
    if idle_s is None or match.status != LIVE or match.control is not None or match.turn_started is None:
        return None
    return match.turn_started + idle_s if against_a_bot(match) else None


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
    assert idle_s is not None  # (a stall was due)
    seat = match.position.turn
    if any(position.turn == seat for position in match.positions[:-1]):
        finish = Finish(FINISHED, 1 - seat, f"seat {seat} left its turn unplayed for {idle_s:g} s")
    else:
        finish = Finish(ABORTED, None, f"seat {seat} made no first move within {idle_s:g} s")
    return match.end_by_rule(finish, now)
