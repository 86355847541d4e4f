"""What docs/protocol.md promises a client written from it alone, held to a real server over real sockets:
null ids, stripped chat, where each square is in ``board``, the order of Othello's disc counts, a
``since`` past the log's end, and when keepalive pings come."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, ClassVar

import pytest
from support.client import ArenaClient
from support.fixtures import Connect, StartServer
from support.play import open_match, play_moves
from websockets.asyncio.client import ClientConnection
from websockets.frames import Opcode
from websockets.protocol import Event

import server.app
from server.app import Server
from server.listener import Listener

OTHELLO_EARLY_END = ("c4", "c5", "d6", "c3", "b4", "c6", "b6", "f4",
                     "b3", "c7", "b5", "a5", "b7", "a3", "d8", "b8")  # fmt: skip
"""Sixteen plies after which neither side can move, White (seat 1) ahead (as in tests/test_othello.py)."""


def checkers_cell(square: int) -> tuple[int, int]:
    """Where PDN square ``square`` is in ``board``, by docs/protocol.md's formula (row, column)."""
    row, offset = divmod(square - 1, 4)
    return row, 2 * offset + (1 if row % 2 == 0 else 0)


# --------------------------------------------------------------------------- ids


async def test_a_null_id_is_no_id_and_other_ids_are_refused(arena: Server, connect: Connect) -> None:
    client = await connect(arena)
    await client.send({"type": "match.create", "id": None, "game": "tictactoe"})
    before_hello = await client.expect(type_="error")
    assert (before_hello["code"], before_hello["id"]) == ("hello_required", None), "an error says null"
    await client.send({"type": "hello", "id": None, "name": "Nell"})
    assert "id" not in await client.expect(type_="welcome"), "a reply to no id has no id field"
    await client.send({"type": "lobby.subscribe", "id": None})
    assert "id" not in await client.expect(type_="lobby.snapshot")
    for bad_id in (True, 1.5, {"n": 1}, "i" * 65, 2**53 + 1):
        await client.send({"type": "lobby.unsubscribe", "id": bad_id})
        refused = await client.expect(type_="error")
        assert (refused["code"], refused["id"]) == ("bad_field", None), bad_id
        assert "$.id" in refused["message"], "the message names the field"


# --------------------------------------------------------------------------- chat


async def test_chat_loses_its_surrounding_spaces_and_keeps_the_rest(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    match_id = (await alice.request("match.create", game="tictactoe"))["match_id"]
    line = "g  g\u200d!"
    said = await alice.request("chat", match_id=match_id, text=f" \u00a0\u3000{line}\u2003 ")
    assert (said["type"], said["text"]) == ("chat", line), "spaces within, and a joiner, are kept"
    state = await (await connect.player(arena, "Sam")).request("match.watch", match_id=match_id)
    assert [chat["text"] for chat in state["chat"]] == [line], "match.state's chat holds it stripped"
    for end in ("\t", "\n"):
        refused = await alice.request("chat", match_id=match_id, text=f"{end}gg")
        assert refused["code"] == "bad_field", "a tab or a line break at an end is refused, not stripped"


# --------------------------------------------------------------------------- boards and results


async def test_checkers_squares_sit_in_board_where_the_doc_says(arena: Server, connect: Connect) -> None:
    black, white = await connect.player(arena, "Black"), await connect.player(arena, "White")
    state = await open_match(black, white, "checkers")
    assert state["turn"] == 0, "Black, seat 0, moves first"
    board = state["board"]
    dark = {checkers_cell(square): square for square in range(1, 33)}
    for row, line in enumerate(board):
        for column, cell in enumerate(line):
            square = dark.get((row, column))
            expected = " " if square is None else "x" if square <= 12 else "o" if square >= 21 else "."
            assert cell == expected, f"board[{row}][{column}] (square {square})"
    assert [checkers_cell(square) for square in (1, 4, 5, 29, 32)] == [(0, 1), (0, 7), (1, 0), (7, 0), (7, 6)]
    steps = ["11-15", "22-18"]
    black_step, white_step = await play_moves("checkers", (black, white), state["match_id"], steps)
    for moved, (origin, destination), piece in ((black_step, (11, 15), "x"), (white_step, (22, 18), "o")):
        (from_row, from_column), (to_row, to_column) = checkers_cell(origin), checkers_cell(destination)
        assert moved["board"][from_row][from_column] == "."
        assert moved["board"][to_row][to_column] == piece
    assert to_row < from_row, "White advances up the board"


async def test_othello_gives_the_winners_disc_count_first(arena: Server, connect: Connect) -> None:
    black, white = await connect.player(arena, "Black"), await connect.player(arena, "White")
    match_id = (await open_match(black, white, "othello"))["match_id"]
    last = (await play_moves("othello", (black, white), match_id, list(OTHELLO_EARLY_END)))[-1]
    ended = await black.expect(type_="ended", match_id=match_id)
    black_discs = sum(line.count("x") for line in last["board"])
    white_discs = sum(line.count("o") for line in last["board"])
    assert white_discs > black_discs > 0
    assert (ended["winner"], ended["reason"]) == (1, f"more discs: {white_discs}-{black_discs}")


# --------------------------------------------------------------------------- resuming


async def test_a_since_past_the_last_event_gets_the_full_state(arena: Server, connect: Connect) -> None:
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    state = await open_match(alice, bob, "tictactoe")
    spectator = await connect.player(arena, "Sam")
    fields = {"match_id": state["match_id"], "log": state["log"]}
    caught_up = await spectator.request("match.watch", since=state["seq"], **fields)
    assert (caught_up["type"], caught_up["events"]) == ("match.catchup", []), "the last event: nothing missed"
    beyond = await spectator.request("match.watch", since=state["seq"] + 1, **fields)
    assert (beyond["type"], beyond["seq"]) == ("match.state", state["seq"])


# --------------------------------------------------------------------------- keepalive

INTERVAL_S = 1.0
"""The beat these tests give the server in place of its 20 s, so that it takes seconds, not a minute."""


class _PingedClient(ClientConnection):
    """A client connection that notes when each ping from the server arrives."""

    pinged_at: ClassVar[list[float]]

    def process_event(self, event: Event) -> None:
        if getattr(event, "opcode", None) is Opcode.PING:
            self.pinged_at.append(self.loop.time())
        super().process_event(event)


def _pinged_client() -> type[_PingedClient]:
    return type("Pinged", (_PingedClient,), {"pinged_at": []})


async def test_a_quiet_connection_is_first_pinged_between_one_beat_and_two(
    start_server: StartServer, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    passed: dict[str, Any] = {}
    start = Listener.start

    async def short_beat_start(host: str | None, port: int, **options: Any) -> Listener:
        passed.update(options)
        return await start(host, port, **{**options, "ping_interval": INTERVAL_S, "ping_timeout": INTERVAL_S})

    monkeypatch.setattr(server.app.Listener, "start", short_beat_start)
    arena = await start_server()
    defaults = inspect.signature(Listener).parameters
    for option in ("ping_interval", "ping_timeout"):
        assert passed.get(option, defaults[option].default) == 20, f"the doc's 20 s: {option}"

    loop = asyncio.get_running_loop()
    quiet: list[tuple[float, float, type[_PingedClient]]] = []
    for _ in range(6):
        pinged = _pinged_client()
        asked = loop.time()
        await connect(arena, create_connection=pinged, ping_interval=None)
        quiet.append((asked, loop.time(), pinged))
    talker_class = _pinged_client()
    talker: ArenaClient = await connect(arena, create_connection=talker_class, ping_interval=None)
    await talker.hello("Chatty")
    until = loop.time() + 2.5 * INTERVAL_S
    while loop.time() < until:  # (a frame every fifth of a beat: never quiet for a whole one)
        assert (await talker.request("lobby.unsubscribe"))["type"] == "ok"
        await asyncio.sleep(INTERVAL_S / 5)
    for asked, opened, pinged in quiet:
        assert pinged.pinged_at, "every quiet connection is pinged"
        first = pinged.pinged_at[0]
        assert first - asked >= INTERVAL_S, "not before a whole beat"
        assert first - opened <= 2.5 * INTERVAL_S, "within two (and a margin for a busy machine)"
    assert talker_class.pinged_at == [], "a connection that talks every beat is never pinged"
