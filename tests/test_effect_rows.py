"""The rows the store is given for each kind of effect a match's step brings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from games import get_game
from server import offers
from server.effect_rows import rows_for
from server.match import Match
from server.protocol import EngineInfo, MatchOptions, Moved, PlayerInfo
from server.recovery import replay_stored_move
from server.steps import SaveChat, SaveFinish, SaveMove
from server.storage import records
from server.storage.batches import Kind
from server.storage.records import MoveRecord

ALICE = PlayerInfo(id="p-alice", name="Alice", bot=False)
BOB = PlayerInfo(id="p-bob", name="Bob", bot=True)
AT = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
HOST = "instance-a"


def opened() -> Match:
    return Match.open(
        "m1", get_game("tictactoe"), MatchOptions(time_control="untimed", visibility="public", bot=None), 30.0
    )


def started() -> Match:
    match = opened().join(ALICE, 0, 0.0).match
    return match.join(BOB, 1, 0.0).match


def test_a_second_seat_is_its_seat_and_the_start_in_one_step() -> None:
    step = opened().join(ALICE, 0, 0.0).match.join(BOB, 1, 0.0)
    writes = rows_for("m1", step.effects, AT, HOST)
    assert [[part.kind for part in write] for write in writes] == [[Kind.NEW_SEAT], [Kind.MATCH_START]]
    seat = writes[0][0].source
    assert seat == {"match_id": "m1", "seat": 1, "player_id": BOB.id, "joined_at": AT}
    assert writes[1][0].source == {"p_id": "m1", "p_started_at": AT}


def test_a_move_is_its_record_with_the_engine_line_and_the_time_it_was_stored() -> None:
    engine = EngineInfo(score=12, depth=5, nodes=900, pv=["b2", "c3"], time_ms=40, source="searched")
    step = started().move(ALICE.id, 0, "a1", engine, 1.5)
    (write,) = rows_for("m1", step.effects, AT, HOST)
    (part,) = write
    assert part.kind is Kind.NEW_MOVE
    move = part.source
    assert isinstance(move, MoveRecord)
    (effect,) = step.effects
    assert isinstance(effect, SaveMove)
    assert (move.match_id, move.ply, move.seat, move.notation) == ("m1", 0, 0, "a1")
    assert (move.think_ms, move.played_at, move.clocks_ms) == (effect.think_ms, AT, None)
    assert move.engine == records.EngineInfo(12, 5, 900, ("b2", "c3"), "searched", 40)


def test_the_last_move_carries_the_result_in_the_same_write() -> None:
    match = started()
    for ply, text in enumerate(["a1", "b1", "a2", "b2"]):
        match = match.move(match.seats[ply % 2].id, ply, text, None, 0.0).match  # type: ignore[union-attr]
    step = match.move(ALICE.id, 4, "a3", None, 0.0)
    (write,) = rows_for("m1", step.effects, AT, HOST)
    assert [part.kind for part in write] == [Kind.NEW_MOVE, Kind.MATCH_FINISH]
    assert write[1].source == {
        "p_id": "m1",
        "p_status": "finished",
        "p_winner": 0,
        "p_reason": "three in a row",
        "p_finished_at": AT,
    }


@pytest.mark.parametrize(
    "engine",
    [
        EngineInfo(score=999_995, pv=["a3"], time_ms=0, source="book"),
        EngineInfo(score=999_999, nodes=17, pv=["a3"], time_ms=2, source="solved"),
        EngineInfo(score=999_999, depth=1, nodes=9, pv=["a3"], time_ms=1, source="searched"),
        EngineInfo(score=999_999, depth=1, pv=["a3"]),  # an older bot's: no source
    ],
)
def test_a_stored_move_replayed_after_a_lost_commit_says_what_its_bot_said(engine: EngineInfo) -> None:
    """A last move whose commit answer was lost is played again as stored: its ``moved`` carries the
    bot's word as the first one would have, nothing added."""
    match = started()
    for ply, text in enumerate(["a1", "b1", "a2", "b2"]):
        match = match.move(match.seats[ply % 2].id, ply, text, None, 0.0).match  # type: ignore[union-attr]
    (write,) = rows_for("m1", match.move(ALICE.id, 4, "a3", engine, 0.0).effects, AT, HOST)
    stored = write[0].source
    assert isinstance(stored, MoveRecord)
    moved = replay_stored_move(match, stored, 0.0).events[0]
    assert isinstance(moved, Moved) and moved.engine == engine


def test_a_resignation_is_a_finish_and_a_chat_line_replaces_an_unheard_one() -> None:
    resigned = started().resign(BOB.id, 0.0)
    assert [type(effect) for effect in resigned.effects] == [SaveFinish]
    (finish,) = rows_for("m1", resigned.effects, AT, HOST)
    assert finish[0].kind is Kind.MATCH_FINISH and finish[0].source["p_winner"] == 0
    said = started().chat(ALICE.id, "good luck", 0.0)
    assert [type(effect) for effect in said.effects] == [SaveChat]
    (chat,) = rows_for("m1", said.effects, AT, HOST)
    assert [part.kind for part in chat] == [Kind.UNHEARD_CHAT, Kind.NEW_CHAT]
    assert chat[1].source["text"] == "good luck" and chat[1].source["said_at"] == AT


def test_an_agreed_rematch_is_a_new_live_match_hosted_here_with_both_seats() -> None:
    over = started().resign(BOB.id, 0.0).match
    offered = offers.offer_rematch(over, ALICE.id, "m2", 0.0).match
    step = offers.accept_rematch(offered, BOB.id, "m3", 0.0)
    writes = rows_for("m1", step.effects, AT, HOST)
    (rematch,) = [write for write in writes if write[0].kind is Kind.NEW_MATCH]
    row = rematch[0].source
    assert (row["status"], row["host"], row["rematch_of"], row["started_at"]) == ("live", HOST, "m1", AT)
    assert sorted(part.source["player_id"] for part in rematch[1:]) == [ALICE.id, BOB.id]
    assert all(part.kind is Kind.NEW_SEAT for part in rematch[1:])
