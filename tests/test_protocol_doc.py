"""docs/protocol.md is complete enough to write a client from: it names every message and error code,
and its example bot plays a real match."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from support.fixtures import Connect

from server import protocol
from server.app import Server
from server.errors import ErrorCode

DOC = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"


def test_every_message_type_and_error_code_is_documented() -> None:
    text = DOC.read_text()
    messages = [cls for cls in protocol.ServerMessage.__subclasses__() if cls is not protocol.MatchEvent]
    messages += protocol.MatchEvent.__subclasses__()
    for name in [*protocol.REQUEST_TYPES, *(cls.__struct_config__.tag for cls in messages)]:
        assert f'"type": "{name}"' in text, f"no example of {name}"
    for code in ErrorCode:
        assert f"| `{code}` |" in text, f"error code {code} is not in the table"


async def test_the_example_bot_plays_a_match(arena: Server, connect: Connect) -> None:
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert code is not None
    script = code.group(1).replace("ws://127.0.0.1:8765/ws", arena.ws_url)
    bot = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        opponent = await connect.player(arena, "Xavier")
        await opponent.request("lobby.subscribe")
        entry = (
            await opponent.expect(type_="lobby.update", where=lambda m: m["entry"]["game"] == "tictactoe")
        )["entry"]
        match_id = entry["match_id"]
        await opponent.request("match.join", match_id=match_id)
        for ply, cell in ((1, "a2"), (3, "b2")):
            await opponent.expect(type_="moved", ply=ply - 1)
            assert (await opponent.request("move", match_id=match_id, ply=ply, move=cell))["type"] == "moved"
        ended = await opponent.expect(type_="ended")
        assert (ended["winner"], ended["reason"]) == (0, "three in a row")
        output, _ = await asyncio.wait_for(bot.communicate(), 10)
        assert output.decode().strip() == "result: 0 three in a row"
    finally:
        if bot.returncode is None:
            bot.kill()
            await bot.wait()
