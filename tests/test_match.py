"""The pure match state machine, driven with a fake clock and no sockets."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

import pytest

from games import get_game
from server import offers, protocol
from server.errors import ErrorCode, ProtocolError
from server.event_log import EventLog
from server.live import LiveMatch
from server.match import CHAT_KEPT, MAX_THINK_MS, Match
from server.protocol import MatchOptions, PlayerInfo
from server.steps import CreateRematch, Finish, SaveChat, SaveFinish, SaveMove, SaveSeat, SaveStart, Step
from server.storage.records import ChatRecord, MatchRecord, MoveRecord, SeatRecord
from server.stored_match import restore_match

ALICE = PlayerInfo(id="p-alice", name="Alice", bot=False)
BOB = PlayerInfo(id="p-bob", name="Bob", bot=True)
CAROL = PlayerInfo(id="p-carol", name="Carol", bot=False)
GRACE_S = 30.0

# O (seat 0) wins tic-tac-toe on the top row.
TOP_ROW_WIN = ["a1", "a2", "b1", "b2", "c1"]


def options(time_control: str = "untimed") -> MatchOptions:
    return MatchOptions(time_control=time_control, visibility="public", bot=None)


def live_match(time_control: str = "untimed", now: float = 0.0) -> Match:
    match = Match.open("m1", get_game("tictactoe"), options(time_control), GRACE_S)
    match = match.join(ALICE, 0, now).match
    return match.join(BOB, 1, now).match


def play(match: Match, moves: list[str], now: float = 0.0) -> Step:
    step = Step(match)
    for text in moves:
        mover = step.match.seats[step.match.position.turn]
        assert mover is not None
        step = step.match.move(mover.id, step.match.ply, text, None, now)
    return step


def result(status: str, winner: int | None, reason: str) -> protocol.MatchResult:
    return protocol.MatchResult(status=status, winner=winner, reason=reason)


def refused(code: ErrorCode) -> pytest.RaisesContext[ProtocolError]:
    return pytest.raises(ProtocolError, match=f"^{code}:")


def test_match_starts_when_the_second_seat_fills() -> None:
    match = Match.open("m1", get_game("tictactoe"), options("5+3"), GRACE_S)
    first = match.join(ALICE, None, now=1.0)
    assert first.match.status == "open"
    assert first.effects == (SaveSeat(0, ALICE),)
    second = first.match.join(BOB, None, now=2.0)
    assert second.match.status == "live"
    assert second.effects == (SaveSeat(1, BOB), SaveStart())
    assert [type(e) for e in second.events] == [protocol.Seated, protocol.Started]
    assert [e.seq for e in (*first.events, *second.events)] == [1, 2, 3]
    assert second.match.clock is not None and second.match.clock.running == 0


def test_seat_choice_and_taken_seats() -> None:
    match = Match.open("m1", get_game("tictactoe"), options(), GRACE_S).join(ALICE, 1, 0.0).match
    assert match.seats == (None, ALICE)
    with refused(ErrorCode.SEAT_TAKEN):
        match.join(BOB, 1, 0.0)
    with refused(ErrorCode.NOT_ALLOWED):
        match.join(ALICE, 0, 0.0)
    live = match.join(BOB, None, 0.0).match
    with refused(ErrorCode.SEAT_TAKEN):
        live.join(CAROL, None, 0.0)


def test_a_complete_game_ends_by_the_rules_in_the_same_commit_as_its_last_move() -> None:
    step = play(live_match(), TOP_ROW_WIN)
    assert step.match.status == "finished"
    assert step.match.result == result("finished", 0, "three in a row")
    (saved,) = step.effects
    assert isinstance(saved, SaveMove)
    assert saved.finish == Finish("finished", 0, "three in a row")
    assert [type(e) for e in step.events] == [protocol.Moved, protocol.Ended]
    assert step.match.moves == tuple(TOP_ROW_WIN)


def test_moves_are_checked_for_seat_turn_ply_and_legality() -> None:
    match = live_match()
    with refused(ErrorCode.NOT_A_PLAYER):
        match.move(CAROL.id, 0, "a1", None, 0.0)
    with refused(ErrorCode.NOT_YOUR_TURN):
        match.move(BOB.id, 0, "a1", None, 0.0)
    with refused(ErrorCode.STALE_PLY):
        match.move(ALICE.id, 3, "a1", None, 0.0)
    with refused(ErrorCode.ILLEGAL_MOVE):
        match.move(ALICE.id, 0, "z9", None, 0.0)
    after = play(match, ["a1"]).match
    with pytest.raises(ProtocolError, match="is taken") as error:
        after.move(BOB.id, 1, "a1", None, 0.0)
    assert error.value.code == ErrorCode.ILLEGAL_MOVE


def test_each_refused_move_says_what_was_wrong_in_the_order_the_checks_run() -> None:
    """Seat, then a match neither waiting nor over, then time, then turn, then ply, then the game's rules:
    a move with several faults is refused for the first, in the words a client shows its player."""
    matches = {
        "live": live_match("0:02+0"),
        "waiting": Match.open("m1", get_game("tictactoe"), options(), GRACE_S).join(ALICE, 0, 0.0).match,
        "over": play(live_match(), TOP_ROW_WIN).match,
    }
    illegal = "'z9': expected a cell from a1 (top left) to c3 (bottom right)"
    cases = [
        ("live", CAROL, 7, 9.0, ErrorCode.NOT_A_PLAYER, "you hold no seat in match m1"),
        ("waiting", ALICE, 7, 9.0, ErrorCode.NOT_STARTED, "match m1 is waiting for a player"),
        ("over", BOB, 7, 9.0, ErrorCode.MATCH_OVER, "match m1 is over: three in a row"),
        ("live", BOB, 7, 2.5, ErrorCode.MATCH_OVER, "time ran out in match m1"),
        ("live", BOB, 7, 1.0, ErrorCode.NOT_YOUR_TURN, "it is seat 0's turn in match m1"),
        ("live", ALICE, 7, 1.0, ErrorCode.STALE_PLY, "match m1 is at ply 0; your move answers ply 7"),
        ("live", ALICE, 0, 1.0, ErrorCode.ILLEGAL_MOVE, illegal),
    ]
    for name, player, ply, now, code, message in cases:
        with pytest.raises(ProtocolError) as caught:
            matches[name].move(player.id, ply, "z9", None, now)
        assert (caught.value.code, caught.value.message) == (code, message)


def test_a_resent_move_is_recognised_and_not_replayed() -> None:
    after = play(live_match(), ["a1"]).match
    again = after.move(ALICE.id, 0, "A1", None, 5.0)
    assert again.duplicate and again.events == () and again.effects == () and again.match is after
    with refused(ErrorCode.STALE_PLY):
        play(after, ["b2"]).match.move(ALICE.id, 1, "c3", None, 0.0)


def test_a_move_resent_in_another_spelling_the_game_reads_is_recognised() -> None:
    """A checkers jump may be written by its start and end squares alone: sent again so, it is the
    same move (the first was stored as ``13x22x31``), not a move out of turn."""
    match = Match.open("m1", get_game("checkers"), options(), GRACE_S).join(ALICE, 0, 0.0).match
    match = match.join(BOB, 1, 0.0).match
    opening = ["11-16", "24-20", "10-15", "20x11", "7x16", "22-18", "15x22", "26x17", "9-13", "31-26"]
    after = play(match, [*opening, "13x31"]).match
    assert after.moves[-1] == "13x22x31"
    again = after.move(ALICE.id, len(opening), "13x31", None, 5.0)
    assert again.duplicate and again.match is after
    with refused(ErrorCode.NOT_YOUR_TURN):  # another jump is not a resend
        after.move(ALICE.id, len(opening), "13x22", None, 5.0)


def test_moves_are_refused_before_the_start_and_after_the_end() -> None:
    waiting = Match.open("m1", get_game("tictactoe"), options(), GRACE_S).join(ALICE, 0, 0.0).match
    with refused(ErrorCode.NOT_STARTED):
        waiting.move(ALICE.id, 0, "a1", None, 0.0)
    over = play(live_match(), TOP_ROW_WIN).match
    with refused(ErrorCode.MATCH_OVER):
        over.move(BOB.id, 5, "c3", None, 0.0)


def test_clocks_charge_the_mover_and_add_the_increment() -> None:
    match = live_match("1+2", now=0.0)
    step = match.move(ALICE.id, 0, "a1", None, now=10.0)
    (moved,) = step.events
    assert isinstance(moved, protocol.Moved)
    assert moved.think_ms == 10_000
    assert moved.clocks_ms == (52_000, 60_000)
    step = step.match.move(BOB.id, 1, "b2", None, now=13.5)
    assert step.events[0].clocks_ms == (52_000, 58_500)  # type: ignore[attr-defined]


def test_a_move_after_weeks_on_an_untimed_match_is_stored_as_thought_over_for_the_longest_it_can_be() -> None:
    """The column is a 32-bit integer: 30 days would not fit, and refusing the move would stall the game."""
    step = live_match(now=0.0).move(ALICE.id, 0, "a1", None, now=30 * 86_400.0)
    assert step.events[0].think_ms == MAX_THINK_MS == 2**31 - 1  # type: ignore[attr-defined]


def test_a_flag_falls_at_the_deadline_and_the_late_move_is_refused() -> None:
    match = live_match("0:02+0", now=0.0)
    assert match.deadline() == pytest.approx(2.0)
    assert match.tick(now=1.9).events == ()
    with refused(ErrorCode.MATCH_OVER):
        match.move(ALICE.id, 0, "a1", None, now=2.5)
    step = match.tick(now=2.0)
    assert step.effects == (SaveFinish(Finish("finished", 1, "seat 0 ran out of time")),)
    (ended,) = step.events
    assert isinstance(ended, protocol.Ended) and ended.winner == 1 and ended.clocks_ms == (0, 2_000)
    assert step.match.deadline() is None


def test_resignation_and_draw_agreement() -> None:
    match = live_match()
    resigned = match.resign(BOB.id, 0.0)
    assert resigned.match.result == result("finished", 0, "seat 1 resigned")

    with refused(ErrorCode.NOT_ALLOWED):
        offers.accept_draw(match, BOB.id, 0.0)
    offered = offers.offer_draw(match, ALICE.id, 0.0).match
    with refused(ErrorCode.NOT_ALLOWED):
        offers.offer_draw(offered, ALICE.id, 0.0)
    declined = offers.decline_draw(offered, BOB.id, 0.0)
    assert isinstance(declined.events[0], protocol.DrawDeclined) and declined.match.draw_offer is None
    agreed = offers.accept_draw(offered, BOB.id, 0.0)
    assert agreed.match.result == result("finished", None, "draw by agreement")
    assert agreed.effects == (SaveFinish(Finish("finished", None, "draw by agreement")),)


def test_crossing_offers_agree_and_a_move_declines_the_opponents_offer() -> None:
    offered = offers.offer_draw(live_match(), BOB.id, 0.0).match
    assert offers.offer_draw(offered, ALICE.id, 0.0).match.result.reason == "draw by agreement"  # type: ignore[union-attr]
    assert play(offered, ["a1"]).match.draw_offer is None
    mine = offers.offer_draw(live_match(), ALICE.id, 0.0).match
    assert play(mine, ["a1"]).match.draw_offer == 0, "moving does not withdraw your own offer"


def test_abort_only_before_both_sides_have_moved() -> None:
    waiting = Match.open("m1", get_game("tictactoe"), options(), GRACE_S).join(ALICE, 0, 0.0).match
    assert waiting.abort(ALICE.id, 0.0).match.status == "aborted"
    one_move = play(live_match(), ["a1"]).match
    aborted = one_move.abort(BOB.id, 0.0)
    assert aborted.match.result == result("aborted", None, "aborted by seat 1")
    with refused(ErrorCode.NOT_ALLOWED):
        play(one_move, ["b2"]).match.abort(ALICE.id, 0.0)
    with refused(ErrorCode.NOT_A_PLAYER):
        one_move.abort(CAROL.id, 0.0)


def test_rematch_swaps_seats_and_starts_at_once() -> None:
    over = play(live_match("1+0"), TOP_ROW_WIN).match
    with refused(ErrorCode.NOT_STARTED):
        offers.offer_rematch(
            Match.open("m1", get_game("tictactoe"), options(), GRACE_S).join(ALICE, 0, 0.0).match,
            ALICE.id,
            "m2",
            0.0,
        )
    offered = offers.offer_rematch(over, BOB.id, "m2", 0.0).match
    with refused(ErrorCode.NOT_ALLOWED):
        offers.offer_rematch(offered, BOB.id, "m2", 0.0)
    step = offers.accept_rematch(offered, ALICE.id, "m2", 0.0)
    (started,) = step.events
    assert isinstance(started, protocol.RematchStarted) and started.new_match_id == "m2"
    (created,) = step.effects
    rematch = created.match  # type: ignore[union-attr]
    assert rematch.id == "m2" and rematch.status == "live" and rematch.seats == (BOB, ALICE)
    assert rematch.seq == 0 and rematch.moves == ()
    with refused(ErrorCode.NOT_ALLOWED):
        offers.offer_rematch(step.match, ALICE.id, "m3", 0.0)
    declined = offers.decline_rematch(offers.offer_rematch(over, ALICE.id, "m2", 0.0).match, BOB.id, 0.0)
    assert declined.match.rematch_offer is None
    assert over.state(log="l", now=0.0, viewer=ALICE.id).rematch_id is None
    assert step.match.state(log="l", now=0.0, viewer=ALICE.id).rematch_id == "m2", (
        "the old match's page links on"
    )


def agreed_during_play(match: Match) -> Match:
    """``match`` with a rematch asked for by both players before its end."""
    offered = offers.offer_rematch(match, ALICE.id, "m-unused", 0.0)
    (event,) = offered.events
    assert isinstance(event, protocol.RematchOffered) and event.seat == 0 and not offered.effects
    agreed = offers.offer_rematch(offered.match, BOB.id, "m2", 0.0)  # meets Alice's offer: accepts it
    (event,) = agreed.events
    assert isinstance(event, protocol.RematchAgreed) and not agreed.effects
    state = agreed.match.state(log="l", now=0.0, viewer=BOB.id)
    assert state.rematch_agreed and state.rematch_offer is None and state.rematch_id is None
    return agreed.match


def test_a_rematch_agreed_during_play_starts_in_the_step_that_ends_the_game() -> None:
    match = agreed_during_play(play(live_match("1+0"), TOP_ROW_WIN[:2]).match)
    with refused(ErrorCode.NOT_ALLOWED):
        offers.offer_rematch(match, ALICE.id, "m3", 0.0)
    with refused(ErrorCode.NOT_ALLOWED):
        offers.accept_rematch(match, BOB.id, "m3", 0.0)
    step = play(match, TOP_ROW_WIN[2:])
    moved, ended, started = step.events
    assert isinstance(moved, protocol.Moved) and isinstance(ended, protocol.Ended)
    assert isinstance(started, protocol.RematchStarted) and started.new_match_id == "m2"
    assert [event.seq for event in step.events] == [match.seq + 3, match.seq + 4, match.seq + 5]
    saved, created = step.effects
    assert isinstance(saved, SaveMove) and saved.finish == Finish("finished", 0, "three in a row")
    rematch = created.match  # type: ignore[union-attr]
    assert (rematch.id, rematch.status, rematch.seats, rematch.moves) == ("m2", "live", (BOB, ALICE), ())
    over = step.match.state(log="l", now=0.0, viewer=ALICE.id)
    assert over.rematch_id == "m2" and not over.rematch_agreed

    # Any other end by play brings it too: a resignation, an agreed draw, a flag.
    resigned = match.resign(BOB.id, 1.0)
    assert [type(event) for event in resigned.events] == [protocol.Ended, protocol.RematchStarted]
    assert [type(effect) for effect in resigned.effects] == [SaveFinish, CreateRematch]
    flagged = match.tick(61.0)
    assert [type(event) for event in flagged.events] == [protocol.Ended, protocol.RematchStarted]


def test_an_agreed_rematch_lapses_when_the_game_is_aborted_or_a_player_leaves_and_can_be_withdrawn() -> None:
    match = agreed_during_play(live_match())
    aborted = match.abort(BOB.id, 0.0)
    assert [type(event) for event in aborted.events] == [protocol.Ended]
    assert aborted.match.rematch_agreed_id is None and aborted.match.rematch_id is None
    gone = match.disconnect(BOB.id, 0.0).match.tick(GRACE_S + 1)
    assert [type(event) for event in gone.events] == [protocol.Ended]
    assert gone.match.result == result("finished", 0, "seat 1 left and did not come back")
    assert gone.match.rematch_agreed_id is None
    # A result found stored after its commit answer was lost: the rematch starts if it was stored with
    # it (they commit together), and is not stored again; else it lapses.
    as_stored = match.end_as_stored(Finish("finished", 1, "seat 0 resigned"), 0.0, rematch=False)
    assert [type(event) for event in as_stored.events] == [protocol.Ended]
    assert as_stored.match.rematch_agreed_id is None and as_stored.match.rematch_id is None
    with_rematch = match.end_as_stored(Finish("finished", 1, "seat 0 resigned"), 0.0, rematch=True)
    assert [type(event) for event in with_rematch.events] == [protocol.Ended, protocol.RematchStarted]
    assert with_rematch.match.rematch_id == "m2" and with_rematch.stored
    # Either player may withdraw before the end; the offers start over.
    withdrawn = offers.decline_rematch(match, ALICE.id, 0.0)
    (event,) = withdrawn.events
    assert isinstance(event, protocol.RematchDeclined) and event.seat == 0
    assert withdrawn.match.rematch_agreed_id is None and withdrawn.match.rematch_offer is None
    assert [type(event) for event in play(withdrawn.match, TOP_ROW_WIN).events] == [
        protocol.Moved,
        protocol.Ended,
    ]
    # An offer made during play and not answered stands after the end.
    offered = offers.offer_rematch(live_match(), BOB.id, "m2", 0.0).match
    over = play(offered, TOP_ROW_WIN).match
    assert over.rematch_offer == 1
    assert isinstance(offers.accept_rematch(over, ALICE.id, "m3", 0.0).events[0], protocol.RematchStarted)


def test_chat_is_for_seated_players_and_cleaned() -> None:
    match = live_match()
    step = match.chat(ALICE.id, "  good luck  ", 0.0)
    (line,) = step.events
    assert isinstance(line, protocol.ChatLine) and line.text == "good luck" and line.name == "Alice"
    assert step.effects == (SaveChat(line),), "stored, with its seq, before anyone hears it"
    with refused(ErrorCode.NOT_A_PLAYER):
        match.chat(CAROL.id, "hi", 0.0)
    for bad in ["   ", "bell\x07", "x" * 201]:
        with refused(ErrorCode.BAD_FIELD):
            match.chat(ALICE.id, bad, 0.0)


def test_the_state_shows_the_last_chat_lines_as_they_were_sent() -> None:
    match = live_match()
    sent = []
    for index in range(CHAT_KEPT + 3):
        step = match.chat((ALICE, BOB)[index % 2].id, f"line {index}", 0.0)
        match = step.match
        sent.extend(step.events)
    shown = match.state(log="l", now=0.0, viewer=None).chat
    assert shown == sent[-CHAT_KEPT:], "the oldest lines go first, each as its chat event was"
    assert [line.seq for line in shown] == list(range(match.seq - CHAT_KEPT + 1, match.seq + 1))
    assert play(match, ["a1"]).match.chat_lines == match.chat_lines, "moves keep the chat"


def test_a_player_gone_past_the_grace_period_loses() -> None:
    match = live_match()
    gone = match.disconnect(BOB.id, now=10.0)
    (event,) = gone.events
    assert isinstance(event, protocol.PresenceChanged) and not event.connected and event.grace_ms == 30_000
    assert gone.match.deadline() == pytest.approx(40.0)
    assert gone.match.tick(39.0).events == ()
    back = gone.match.connect(BOB.id, now=20.0)
    assert back.match.connected == (True, True) and back.match.deadline() is None
    lost = gone.match.tick(40.0)
    assert lost.match.result == result("finished", 0, "seat 1 left and did not come back")


def test_the_state_says_how_long_an_absent_player_has_left() -> None:
    gone = live_match().disconnect(BOB.id, now=10.0).match
    assert gone.state(log="l", now=25.0, viewer=None).grace_left_ms == [None, 15_000]
    assert gone.state(log="l", now=45.0, viewer=None).grace_left_ms == [None, 0]
    back = gone.connect(BOB.id, now=20.0).match
    assert back.state(log="l", now=20.0, viewer=None).grace_left_ms == [None, None]
    lost = gone.tick(40.0).match
    assert lost.state(log="l", now=40.0, viewer=None).grace_left_ms == [None, None], "over: nobody waits"


def test_both_players_gone_abandons_the_match_and_an_empty_open_match_is_cancelled() -> None:
    match = live_match().disconnect(ALICE.id, 0.0).match.disconnect(BOB.id, 1.0).match
    assert match.tick(31.0).match.result == result("aborted", None, "both players left")
    assert match.tick(30.0).match.result == result("aborted", None, "both players left"), (
        "Bob, away too when Alice's grace runs out, does not win by her absence"
    )
    waiting = Match.open("m1", get_game("tictactoe"), options(), GRACE_S).join(ALICE, 0, 0.0).match
    cancelled = waiting.disconnect(ALICE.id, 0.0).match.tick(GRACE_S)
    assert cancelled.match.status == "aborted"


def test_restore_replays_moves_and_resumes_clocks_without_charging_downtime() -> None:
    at = datetime(2024, 1, 1, tzinfo=UTC)
    record = MatchRecord(
        id="m1",
        game="tictactoe",
        options={"time_control": "1+0", "visibility": "public", "bot": None},
        status="live",
        host="here",
        created_at=at,
        started_at=at,
        seats=(SeatRecord(0, ALICE.id, "Alice", False), SeatRecord(1, BOB.id, "Bob", True)),
        moves=(
            MoveRecord("m1", 1, 1, "b2", 3000, at, (50_000, 57_000)),
            MoveRecord("m1", 0, 0, "a1", 10_000, at, (50_000, 60_000)),
        ),
    )
    match = restore_match(record, get_game("tictactoe"), GRACE_S, now=1000.0)
    assert match.moves == ("a1", "b2") and match.position.turn == 0 and match.status == "live"
    assert match.clocks_ms(now=1004.0) == (46_000, 57_000)
    assert match.connected == (False, False)
    assert match.deadline() == pytest.approx(1000.0 + GRACE_S)
    assert match.seats == (ALICE, BOB)


def test_a_restored_match_shows_its_stored_chat_and_numbers_on_after_it() -> None:
    at = datetime(2024, 1, 1, tzinfo=UTC)
    chat = tuple(
        ChatRecord("m1", seq, seq % 2, ("Alice", "Bob")[seq % 2], f"line {seq}", at) for seq in (4, 7)
    )
    record = MatchRecord(
        id="m1",
        game="tictactoe",
        options={"time_control": "untimed", "visibility": "public", "bot": None},
        status="live",
        host="here",
        created_at=at,
        seats=(SeatRecord(0, ALICE.id, "Alice", False), SeatRecord(1, BOB.id, "Bob", False)),
        chat=chat,
        chat_count=9,
    )
    match = restore_match(record, get_game("tictactoe"), GRACE_S, now=1000.0)
    shown = match.state(log="L", now=1000.0, viewer=None).chat
    assert [(line.seq, line.seat, line.name, line.text) for line in shown] == [
        (4, 0, "Alice", "line 4"),
        (7, 1, "Bob", "line 7"),
    ]
    assert match.chat(ALICE.id, "back", now=1001.0).events[0].seq == 8, "no line takes an earlier number"
    # The cap on stored lines counts all that were stored, not only those shown again.
    assert match.chat(ALICE.id, "tenth", now=1001.0, max_lines=10).match.chat_count == 10
    with pytest.raises(ProtocolError) as full:
        match.chat(ALICE.id, "tenth", now=1001.0, max_lines=9)
    assert full.value.code == ErrorCode.NOT_ALLOWED and "chat is full" in full.value.message


def test_a_restored_open_match_has_no_clocks_until_it_starts() -> None:
    """As before the restart: an open match's clocks come with its start."""
    at = datetime(2024, 1, 1, tzinfo=UTC)
    record = MatchRecord(
        id="m1",
        game="tictactoe",
        options={"time_control": "1+0", "visibility": "public", "bot": None},
        status="open",
        host="here",
        created_at=at,
        seats=(SeatRecord(0, ALICE.id, "Alice", False),),
    )
    match = restore_match(record, get_game("tictactoe"), GRACE_S, now=1000.0)
    assert match.state(log="L", now=1000.0, viewer=None).clocks_ms is None
    with refused(ErrorCode.NOT_ALLOWED):  # its creator starts away, as every seated player after a restart
        match.join(BOB, 1, now=1001.0)
    started = match.connect(ALICE.id, now=1001.0).match.join(BOB, 1, now=1001.0).match
    assert started.status == "live" and started.clocks_ms(now=1001.0) == (60_000, 60_000)


def test_state_tells_each_viewer_their_seat() -> None:
    match = play(live_match("1+0"), ["a1"], now=0.0).match
    state = match.state(log="L", now=0.0, viewer=BOB.id)
    assert (state.you, state.turn, state.seq, state.moves) == (1, 1, 4, ["a1"])
    assert match.state(log="L", now=0.0, viewer=None).you is None


def test_event_log_returns_exactly_what_was_missed_or_admits_it_cannot() -> None:
    step = play(live_match(), TOP_ROW_WIN)
    match = live_match()
    log = EventLog(id="L", capacity=4)
    events = []
    for text in TOP_ROW_WIN:
        mover = match.seats[match.position.turn]
        assert mover is not None
        step = match.move(mover.id, match.ply, text, None, 0.0)
        match = step.match
        log.append(step.events)
        events.extend(step.events)
    assert log.last_seq == match.seq == 3 + len(TOP_ROW_WIN) + 1
    assert log.since("L", match.seq) == []
    assert log.since("L", match.seq - 2) == events[-2:]
    assert log.since("L", match.seq - 4) == events[-4:]
    assert log.since("L", match.seq - 5) is None, "fell out of the log"
    assert log.since("other", match.seq) is None, "another log's numbers mean nothing here"
    assert log.since("L", match.seq + 1) is None, "from the future"


async def test_a_match_is_in_use_while_a_request_holds_its_lock_or_waits_for_it() -> None:
    """What keeps a finished match from being forgotten under a request: the lock's holder, and a waiter
    it was handed to but that has not woken yet (the lock is still held, for it)."""
    live = LiveMatch(live_match(), EventLog(id="L", capacity=4), datetime.now(UTC))
    assert not live.in_use
    await live.lock.acquire()
    assert live.in_use
    waiter = asyncio.create_task(live.lock.acquire())
    await asyncio.sleep(0)  # (one turn of the loop: the waiter queues up)
    live.lock.release()
    assert live.lock.locked() and live.in_use, "handed over, not woken yet"
    await waiter
    live.lock.release()
    assert not live.in_use
    await live.lock.acquire()
    gave_up = asyncio.create_task(live.lock.acquire())
    await asyncio.sleep(0)
    gave_up.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await gave_up
    live.lock.release()
    assert not live.in_use, "a request that stopped waiting no longer counts"
