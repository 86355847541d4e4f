"""Takebacks as pure steps of a match (server/offers.py): how far back they go, and when they are refused."""

from __future__ import annotations

import pytest

from games import get_game
from server import offers
from server.errors import ErrorCode, ProtocolError
from server.match import Match
from server.protocol import MatchOptions, PlayerInfo
from server.steps import Step, TakeBack

ALICE = PlayerInfo(id="p-alice", name="Alice", bot=False)
BOB = PlayerInfo(id="p-bob", name="Bob", bot=False)
BOT = PlayerInfo(id="p-bot", name="alphabeta-c4-L8", bot=True)


def live(rated: bool, second: PlayerInfo = BOB, time_control: str = "untimed") -> Match:
    options = MatchOptions(time_control=time_control, visibility="public", bot=None, rated=rated)
    match = Match.open("m1", get_game("connect4"), options, 30.0)
    return match.join(ALICE, 0, 0.0).match.join(second, 1, 0.0).match


def play(match: Match, moves: list[str], now: float = 0.0) -> Match:
    for move in moves:
        player = match.seats[match.position.turn]
        assert player is not None
        match = match.move(player.id, match.ply, move, None, now).match
    return match


def take_back(match: Match, asker: PlayerInfo, answerer: PlayerInfo, now: float = 0.0) -> Step:
    offered = offers.offer_takeback(match, asker.id, now).match
    return offers.accept_takeback(offered, answerer.id, now)


def test_a_takeback_goes_back_to_the_askers_last_move() -> None:
    match = play(live(False), ["4", "4", "3"])
    step = take_back(match, ALICE, BOB)  # Alice moved last: her move alone
    assert (step.match.moves, step.effects) == (("4", "4"), (TakeBack(2),))
    step = take_back(match, BOB, ALICE)  # Bob's turn again: his move and Alice's reply
    assert (step.match.moves, step.match.position.turn, step.effects) == (("4",), 1, (TakeBack(1),))


def test_the_clocks_go_back_to_what_they_showed_before_the_moves_taken_back() -> None:
    match = play(live(False, time_control="1+2"), ["4"], now=10.0)
    match = play(match, ["4"], now=15.0)
    after_first = match.move_clocks[0]
    assert after_first == (52_000, 60_000)
    step = take_back(match, BOB, ALICE, now=40.0)
    clock = step.match.clock
    assert clock is not None and (clock.remaining_ms, clock.running) == (after_first, 1)


def test_a_rated_game_between_people_refuses_takebacks_once_the_opponent_has_moved_twice() -> None:
    early = play(live(True), ["4", "4", "3"])
    assert take_back(early, ALICE, BOB).match.ply == 2, "Bob has moved once: Alice may ask"
    with pytest.raises(ProtocolError) as refused:
        offers.offer_takeback(early, BOB.id, 0.0)  # Alice has moved twice
    assert refused.value.code == ErrorCode.NOT_ALLOWED and "rated" in refused.value.message
    offered = offers.offer_takeback(early, ALICE.id, 0.0).match
    with pytest.raises(ProtocolError):
        offers.accept_takeback(play(offered, []), ALICE.id, 0.0)  # (only the opponent accepts)

    casual = play(live(False), ["4", "4", "3", "3"])
    assert take_back(casual, ALICE, BOB).match.ply == 2
    against_a_bot = play(live(True, BOT), ["4", "4", "3", "3"])
    assert take_back(against_a_bot, ALICE, BOT).match.ply == 2, "the rule is for games between people"


def test_nothing_to_take_back_and_no_request_to_answer_are_refused() -> None:
    match = live(False)
    with pytest.raises(ProtocolError, match="no move to take back"):
        offers.offer_takeback(match, ALICE.id, 0.0)
    with pytest.raises(ProtocolError, match="no takeback request"):
        offers.decline_takeback(play(match, ["4"]), BOB.id, 0.0)
    offered = offers.offer_takeback(play(match, ["4"]), ALICE.id, 0.0).match
    assert offers.decline_takeback(offered, BOB.id, 0.0).match.takeback_offer is None
    assert play(offered, ["4"]).takeback_offer is None, "a move lets the request lapse"
