"""Protocol v1 messages: strict decoding with limits, errors that keep the request id, compact encoding."""

from __future__ import annotations

import json
import random

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from games import GAMES
from server import decoding, protocol
from server.errors import ErrorCode
from server.protocol import UndecodableRequest, decode_request, encode
from server.protocol_base import MAX_PV_LENGTH

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
        "pool.join": {"game": "chess", "time_control": "5+3"},
        "pool.leave": {},
        "pool.accept_bot": {},
        "account.register": {"password": "a long password"},
        "account.logout": {},
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


@pytest.mark.parametrize(
    ("frame", "request_id"),
    [
        (rb'{"type":"move","id":7,"match_id":"x","ply":0,"move":"\ud800"}', 7),
        (rb'{"type": "chat\udfff", "id": "r1"}', "r1"),
        (rb'{"id": 2, "type": "hello", "name": "x\ud83dy"}', 2),  # a high half alone
        (rb'{"id": 2, "type": "hello", "name": "\ude00\ud83d"}', 2),  # halves swapped
        (rb'{"type": "move", "id": 3, "engine": {"pv": ["a1", "\udbff"]}}', 3),
        (rb'{"type": "move", "\udc00": 1, "id": 4}', 4),  # in a key
        (b'{"type": "move", "id": 5, "x": [' + b"0," * 1000 + rb'"\ud800"]}', 5),  # far in
        (rb'{"type": "move", "id": "\ud800"}', None),  # an id that cannot be echoed
        # (ids that cannot be echoed, after the surrogate: one before it is refused first, as bad_field)
        (rb'{"type": "move", "move": "\ud800", "id": 1.5}', None),
        (rb'{"type": "move", "move": "\ud800", "id": "' + b"i" * 65 + b'"}', None),
    ],
)
def test_a_lone_surrogate_is_refused_saying_so_with_the_id_when_readable(
    frame: bytes, request_id: object
) -> None:
    """msgspec refuses the lone surrogate before it reads the id; the error says what is wrong, and still
    carries the id."""
    error = refusal(frame)
    assert (error.code, error.request_id) == (ErrorCode.BAD_JSON, request_id)
    assert error.message.startswith("strings must be valid Unicode: a lone surrogate escape"), error.message
    json.loads(encode(protocol.error_message(error.code, error.message, error.request_id)))  # valid UTF-8


def test_surrogates_that_make_a_character_or_are_only_text_are_read() -> None:
    hello = decode_request(rb'{"type": "hello", "id": 1, "name": "\ud83d\ude00 \\ud800"}', LIMIT)
    assert isinstance(hello, protocol.Hello) and hello.name == "\U0001f600 \\ud800"


@pytest.mark.parametrize(
    "frame",
    [
        rb'{"type": "move", "id": 7, "move": "\ud800"} xyz',  # not JSON either: trailing garbage
        rb'{"type": "move", "id": 7, "move": "\ud800", "ply": NaN}',  # nor here
        rb'{"type": "move", "id": 7, "move": "\ud800"',  # nor here: cut short
        rb'{"type": "move", "id": 7, "move": "\\ud800", "x": }',  # text that only looks like an escape
        b'{"type": "move", "id": 7, "x": ' + b"[" * 1900 + rb'"\ud800"' + b"]" * 1900 + b"}",  # too deep
        rb'["\ud800", 7]',  # not an object
    ],
)
def test_a_lone_surrogate_in_a_frame_that_is_not_json_otherwise_is_not_looked_for(frame: bytes) -> None:
    error = refusal(frame)
    assert (error.code, error.request_id) == (ErrorCode.BAD_JSON, None)
    assert "surrogate escape" not in error.message


def test_only_a_failed_frame_with_a_surrogate_escape_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second look costs nothing on the way of a good request, or of a bad one with no surrogate."""

    def second_look(*args: object, **kwargs: object) -> object:
        raise AssertionError("read again")

    monkeypatch.setattr(decoding.json, "loads", second_look)
    assert isinstance(decode({"type": "lobby.subscribe", "id": 7}), protocol.LobbySubscribe)
    assert refusal(b'{"type": "move", "id": 7, "move": "\xff"}').code == ErrorCode.BAD_JSON
    assert refusal(b'{"type": "move", "id": 7, "move": 1, }').code == ErrorCode.BAD_JSON
    with pytest.raises(AssertionError, match="read again"):
        refusal(rb'{"type": "move", "id": 7, "move": "\ud800"}')


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


def move_with_pv(pv: list[object]) -> dict[str, object]:
    return {
        "type": "move",
        "id": 11,
        "match_id": "m",
        "ply": 0,
        "move": "4",
        "engine": {"score": 3, "pv": pv},
    }


@pytest.mark.parametrize(
    "pv",
    [
        pytest.param(["4", "4", "3"], id="connect4"),
        pytest.param(["b2", "A1", "c3"], id="tictactoe"),
        pytest.param(["d3", "pass", "h8"], id="othello"),
        pytest.param(["11-15", "22x15x8", "9x18"], id="checkers"),
        pytest.param(["O-O-O", "e8=Q+", "Qxf7#", "P*5e"], id="notations-to-come"),
    ],
)
def test_a_pv_of_moves_in_notation_is_accepted(pv: list[str]) -> None:
    request = decode(move_with_pv(pv))
    assert isinstance(request, protocol.PlayMove) and request.engine is not None
    assert request.engine.pv == pv


@pytest.mark.parametrize(
    "move",
    [
        pytest.param("\u202eevil.com\u202c", id="bidi-override"),
        pytest.param("a\nb", id="line-break"),
        pytest.param("4\n", id="trailing-line-break"),
        pytest.param("\x00", id="nul"),
        pytest.param("visit http://x.io", id="sentence"),
        pytest.param("http://x.io", id="address"),
        pytest.param("\u200b", id="zero-width-space"),
        pytest.param("4\u034f", id="combining-grapheme-joiner"),
        pytest.param("\uff14", id="fullwidth-digit"),
        pytest.param("<b>4</b>", id="markup"),
        pytest.param("-4", id="no-letter-or-digit-first"),
        pytest.param("4" * 33, id="too-long"),
    ],
)
def test_a_pv_entry_that_is_not_move_notation_is_refused_naming_it(move: str) -> None:
    """A pv is broadcast to everyone following the match and stored for replays: free text there would be
    a chat without chat's rules."""
    error = refusal(move_with_pv(["4", move, "3"]))
    assert (error.code, error.request_id) == (ErrorCode.BAD_FIELD, 11)
    assert error.message.endswith("at `$.engine.pv[1]`")


@pytest.mark.parametrize("source", ["book", "solved", "searched"])
def test_a_move_says_where_it_came_from(source: str) -> None:
    request = decode(move_with_pv(["4"]) | {"engine": {"score": 3, "pv": ["4"], "source": source}})
    assert isinstance(request, protocol.PlayMove) and request.engine is not None
    assert request.engine.source == source
    unknown = decode(move_with_pv(["4"]))  # an older bot's: the source is not known
    assert (
        isinstance(unknown, protocol.PlayMove)
        and unknown.engine is not None
        and unknown.engine.source is None
    )


@pytest.mark.parametrize("source", ["Book", "tablebase", "", 1, True])
def test_a_source_of_another_kind_is_refused_naming_it(source: object) -> None:
    error = refusal(move_with_pv(["4"]) | {"engine": {"score": 3, "source": source}})
    assert (error.code, error.request_id) == (ErrorCode.BAD_FIELD, 11)
    assert error.message.endswith("at `$.engine.source`")


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_move_a_game_can_name_passes_as_a_pv_entry(game: str) -> None:
    """A bot's pv is made of the game's own notation: whatever a position lists as legal, through whole
    random games, is never refused."""
    chooser = random.Random(game)
    named: set[str] = set()
    for _ in range(10):
        position = GAMES[game].start()
        while position.outcome() is None:
            legal = position.legal_notation()
            named.update(legal)
            position = position.play(position.parse_move(chooser.choice(legal)))
    for start in range(0, len(named), MAX_PV_LENGTH):
        pv = sorted(named)[start : start + MAX_PV_LENGTH]
        request = decode(move_with_pv(pv))
        assert isinstance(request, protocol.PlayMove) and request.engine is not None
        assert request.engine.pv == pv


def _nested(levels: int) -> bytes:
    return (
        b'{"type": "move", "id": 7, "match_id": "m", "ply": 0, "move": '
        + b"[" * levels
        + b"]" * levels
        + b"}"
    )


def test_nesting_past_the_limit_is_refused_before_any_parser_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A parser recurses once a level; near Python's recursion limit anything else that runs then (a
    garbage collection's callbacks) fails for want of stack. So the depth is counted first."""
    within = refusal(_nested(protocol.MAX_NESTING - 1))  # (the object itself is the first level)
    assert within.code == ErrorCode.BAD_FIELD, "read, and refused for what the field holds"

    def parser(*args: object, **kwargs: object) -> object:
        raise AssertionError("a parser read a frame nested too deep")

    monkeypatch.setattr(protocol, "_any_request_decoder", parser)
    monkeypatch.setattr(decoding, "_id_decoder", parser)
    monkeypatch.setattr(decoding.json, "loads", parser)
    for levels in (protocol.MAX_NESTING, 1900):
        error = refusal(_nested(levels))
        assert (error.code, error.request_id) == (ErrorCode.BAD_JSON, None)
        assert (
            error.message == f"not a request: arrays and objects nested more than {protocol.MAX_NESTING} deep"
        )
        assert protocol.peek_request_id(_nested(levels), LIMIT) is None


def test_brackets_within_strings_are_no_nesting() -> None:
    text = '[{"\\"[' * 20
    chat = decode({"type": "chat", "id": 1, "match_id": "m", "text": text})
    assert isinstance(chat, protocol.SendChat) and chat.text == text


_EVENTS = (
    protocol.Moved(
        match_id="m1",
        seq=3,
        ply=2,
        seat=0,
        move="d",
        think_ms=5,
        clocks_ms=[1, 2],
        board=["...."],
        legal=["a"],
    ),
    protocol.ChatLine(match_id="m,2", seq=9, seat=1, name='"a", b', text='{"type":"x","id":1}, ,'),
    protocol.Ended(match_id="m3", seq=40, status="finished", winner=None, reason="draw", clocks_ms=None),
)


@given(
    st.sampled_from(_EVENTS),
    st.one_of(
        st.none(),
        st.integers(-(2**53), 2**53),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=protocol.MAX_ID_LENGTH),
    ),
)
def test_a_reply_spliced_from_the_broadcast_copy_is_the_reply_encoded_whole(
    event: protocol.MatchEvent, request_id: protocol.RequestId
) -> None:
    """The mover's copy of an event is made from everyone's by putting the id in: the same bytes as
    encoding the event with its id."""
    whole = encode(msgspec.structs.replace(event, id=request_id))
    assert protocol.as_reply(encode(event), request_id) == whole
    assert msgspec.json.decode(whole)["type"] == msgspec.json.decode(encode(event))["type"]
