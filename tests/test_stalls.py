"""The stalled-bot-game rule, pure: a fake clock, no sockets (server/stalls.py)."""

from __future__ import annotations

from games import get_game
from server import stalls
from server.match import Match
from server.protocol import MatchOptions, PlayerInfo
from server.steps import SaveFinish

PERSON = PlayerInfo(id="p-alice", name="Alice", bot=False)
BOT = PlayerInfo(id="p-bot", name="alphabeta-ttt-L1", bot=True)
OTHER_PERSON = PlayerInfo(id="p-carol", name="Carol", bot=False)
IDLE_S = 120.0


def started(first: PlayerInfo, second: PlayerInfo, time_control: str = "untimed", now: float = 0.0) -> Match:
    options = MatchOptions(time_control=time_control, visibility="public", bot=None)
    match = Match.open("m1", get_game("tictactoe"), options, 30.0)
    match = match.join(first, 0, now).match
    return match.join(second, 1, now).match


def test_a_person_who_never_moves_against_a_bot_has_the_game_aborted_at_the_idle_limit() -> None:
    match = started(PERSON, BOT, now=10.0)
    assert stalls.deadline(match, IDLE_S) == 10.0 + IDLE_S
    assert stalls.tick(match, 10.0 + IDLE_S - 0.001, IDLE_S).match is match, "not yet"

    step = stalls.tick(match, 10.0 + IDLE_S, IDLE_S)

    assert step.match.status == "aborted" and step.match.result is not None
    assert step.match.result.winner is None
    assert step.match.result.reason == "seat 0 made no first move within 120 s"
    assert [type(effect) for effect in step.effects] == [SaveFinish]
    assert stalls.deadline(step.match, IDLE_S) is None


def test_a_person_who_stops_moving_after_a_move_loses() -> None:
    match = started(BOT, PERSON)
    match = match.move(BOT.id, 0, "b2", None, now=1.0).match
    match = match.move(PERSON.id, 1, "a1", None, now=2.0).match
    match = match.move(BOT.id, 2, "c3", None, now=3.0).match
    assert stalls.deadline(match, IDLE_S) == 3.0 + IDLE_S, "the person's turn began with the bot's move"

    step = stalls.tick(match, 3.0 + IDLE_S, IDLE_S)

    assert step.match.status == "finished" and step.match.result is not None
    assert step.match.result.winner == 0
    assert step.match.result.reason == "seat 1 left its turn unplayed for 120 s"


def test_the_rule_holds_for_whoever_is_to_move_in_untimed_games_with_a_bot_only() -> None:
    bots_turn = started(BOT, PERSON, now=4.0)
    assert stalls.deadline(bots_turn, IDLE_S) == 4.0 + IDLE_S, "a bot (or a client calling itself one) too"
    assert stalls.tick(bots_turn, 4.0 + IDLE_S, IDLE_S).match.status == "aborted"
    people = started(PERSON, OTHER_PERSON)
    assert stalls.deadline(people, IDLE_S) is None
    assert stalls.tick(people, 10 * IDLE_S, IDLE_S).match is people
    timed = started(PERSON, BOT, time_control="5+0")
    assert stalls.deadline(timed, IDLE_S) == timed.deadline(), "the clock decides a timed game"
    assert stalls.deadline(started(PERSON, BOT), None) is None, "no idle limit configured"


def test_a_grace_that_runs_out_first_is_decided_as_before() -> None:
    match = started(PERSON, BOT)
    match = match.disconnect(PERSON.id, now=5.0).match
    assert stalls.deadline(match, IDLE_S) == 5.0 + 30.0
    step = stalls.tick(match, 5.0 + 30.0, IDLE_S)
    assert step.match.result is not None
    assert step.match.result.reason == "seat 0 left and did not come back"
