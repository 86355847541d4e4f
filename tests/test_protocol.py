"""Protocol v1 messages: strict decoding with limits, errors that keep the request id, compact encoding."""

from __future__ import annotations

import json

import pytest

from server import protocol
from server.errors import ErrorCode
from server.protocol import UndecodableRequest, decode_request, encode

LIMIT = 4096


def decode(message: object) -> protocol.Request:
    return decode_request(json.dumps(message).encode(), LIMIT)


def refusal(frame: object) -> UndecodableRequest:
    data = frame if isinstance(frame, bytes) else json.dumps(frame).encode()
    with pytest.raises(UndecodableRequest) as error:
        decode_request(data, LIMIT)
    return error.value


def test_every_request_type_decodes_from_its_minimal_form() -> None:
    minimal = {
        "hello": {"name": "Ann"},
        "match.create": {"game": "connect4"},
        "move": {"match_id": "m", "ply": 0, "move": "4"},
        "chat": {"match_id": "m", "text": "hi"},
        "bot.status": {"match_id": "m", "state": "queued", "reason": "fleet full"},
        "lobby.subscribe": {},
        "lobby.unsubscribe": {},
    }
    for tag, cls in protocol.REQUEST_TYPES.items():
        fields = minimal.get(tag, {"match_id": "m"})
        request = decode({"type": tag, "id": "r1", **fields})
        assert type(request) is cls and request.id == "r1"


def test_defaults_of_match_create() -> None:
    request = decode({"type": "match.create", "game": "othello"})
    assert isinstance(request, protocol.CreateMatch)
    assert (request.time_control, request.seat, request.visibility, request.bot) == (
        "untimed",
        "random",
        "public",
        None,
    )


@pytest.mark.parametrize(
    ("message", "code", "request_id"),
    [
        (b"{oops", ErrorCode.BAD_JSON, None),
        (b"[1]", ErrorCode.BAD_JSON, None),
        (b'"hello"', ErrorCode.BAD_JSON, None),
        ({"id": 4}, ErrorCode.BAD_FIELD, 4),
        ({"type": "dance", "id": "x"}, ErrorCode.UNKNOWN_TYPE, "x"),
        ({"type": "hello", "id": 1, "name": "A" * 129}, ErrorCode.BAD_FIELD, 1),  # over what the wire takes
        ({"type": "hello", "id": 1, "name": ""}, ErrorCode.BAD_FIELD, 1),
        ({"type": "hello", "id": 2, "nick": "A"}, ErrorCode.BAD_FIELD, 2),
        ({"type": "move", "id": 3, "match_id": "m", "ply": -1, "move": "4"}, ErrorCode.BAD_FIELD, 3),
        (
            {"type": "move", "id": 3, "match_id": "m", "ply": 0, "move": "4", "engine": {"pv": ["4"] * 65}},
            ErrorCode.BAD_FIELD,
            3,
        ),
        (
            {"type": "move", "id": 3, "match_id": "m", "ply": 0, "move": "4", "engine": {"mood": 1}},
            ErrorCode.BAD_FIELD,
            3,
        ),
        ({"type": "match.create", "id": 5, "game": "c4", "seat": 2}, ErrorCode.BAD_FIELD, 5),
        ({"type": "match.create", "id": 5, "game": "c4", "bot": {"level": 0}}, ErrorCode.BAD_FIELD, 5),
        (
            {"type": "match.create", "id": 5, "game": "c4", "bot": {"level": 3, "style": "alpha\u202ebeta"}},
            ErrorCode.BAD_FIELD,
            5,
        ),
        (
            {"type": "match.create", "id": 5, "game": "c4", "bot": {"level": 3, "style": "Sharp!"}},
            ErrorCode.BAD_FIELD,
            5,
        ),
        ({"type": "chat", "id": 6, "match_id": "m", "text": "x" * 801}, ErrorCode.BAD_FIELD, 6),
        ({"type": "lobby.subscribe", "id": "i" * 65}, ErrorCode.BAD_FIELD, None),
        ({"type": "lobby.subscribe", "id": True}, ErrorCode.BAD_FIELD, None),
    ],
)
def test_bad_requests_are_refused_with_a_code_and_their_id_when_readable(
    message: object, code: ErrorCode, request_id: object
) -> None:
    error = refusal(message)
    assert (error.code, error.request_id) == (code, request_id)
    assert error.message


@pytest.mark.parametrize(
    ("frame", "request_id"),
    [
        (b'{"type":"lobby.list","id":7} xyz', 7),
        (b' \n{"type": "lobby.subscribe", "id": "r1"}}', "r1"),
        (b'{"type": "hello", "id": 8, "name": "A"} {"type": "hello", "id": 9}', 8),
        ('{"type": "hello", "id": 8, "name": "Zoë"},', 8),
        (b'{"type": "lobby.subscribe", "id": 7 xyz}', None),  # garbage inside the object: not read
        (b'{"id": 7, "x": ' + b"[" * 3000 + b"]" * 3000 + b"} xyz", None),
    ],
)
def test_a_request_with_trailing_garbage_is_bad_json_that_keeps_its_id(
    frame: bytes | str, request_id: object
) -> None:
    """The frame is not JSON, yet it opens with a whole object: its id can be read and echoed."""
    with pytest.raises(UndecodableRequest) as error:
        decode_request(frame, LIMIT * 2)
    assert (error.value.code, error.value.request_id) == (ErrorCode.BAD_JSON, request_id)
    assert protocol.peek_request_id(frame, LIMIT * 2) == request_id  # (a rate-limited frame's id, too)


def test_an_id_that_cannot_be_echoed_is_not_peeked_even_before_trailing_garbage() -> None:
    for frame in (b'{"id": true} xyz', b'{"id": 1.5} xyz', b'{"id": "' + b"i" * 65 + b'"} xyz', b"[7] xyz"):
        assert protocol.peek_request_id(frame, LIMIT) is None, frame


def test_a_frame_over_the_limit_is_refused_before_decoding_yet_keeps_its_id() -> None:
    error = refusal({"type": "chat", "id": 9, "match_id": "m", "text": "x" * 5000})
    assert (error.code, error.request_id) == (ErrorCode.FRAME_TOO_LARGE, 9)


def test_a_binary_frame_is_refused_unread_yet_keeps_its_id_and_the_size_limit_comes_first() -> None:
    frame = json.dumps({"type": "lobby.subscribe", "id": 3}).encode()
    with pytest.raises(UndecodableRequest) as error:
        decode_request(frame, LIMIT, binary=True)
    assert (error.value.code, error.value.request_id) == (ErrorCode.BINARY_FRAME, 3)
    assert isinstance(decode_request(frame, LIMIT), protocol.LobbySubscribe)  # the same, as text
    with pytest.raises(UndecodableRequest) as error:
        decode_request(b"\x00\xff" * LIMIT, LIMIT, binary=True)
    assert (error.value.code, error.value.request_id) == (ErrorCode.FRAME_TOO_LARGE, None)


def test_server_messages_leave_out_an_absent_id_but_errors_always_carry_one() -> None:
    moved = protocol.Moved(
        match_id="m", seq=1, ply=0, seat=0, move="4", think_ms=5, clocks_ms=None, board=[], legal=[]
    )
    assert "id" not in json.loads(encode(moved))
    assert json.loads(encode(protocol.error_message(ErrorCode.BAD_JSON, "no", None)))["id"] is None
    assert json.loads(encode(protocol.Ok(id="q")))["id"] == "q"


def test_server_messages_round_trip_for_python_clients() -> None:
    ended = protocol.Ended(
        match_id="m", seq=2, status="finished", winner=None, reason="board full", clocks_ms=None
    )
    catchup = protocol.MatchCatchup(
        match_id="m", log="L", seq=2, events=[ended], clocks_ms=None, clock_running=None, id=3
    )
    assert protocol.decode_server_message(encode(catchup)) == catchup
