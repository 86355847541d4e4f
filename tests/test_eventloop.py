"""Long-running commands run on uvloop unless PLYARENA_EVENT_LOOP says asyncio."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from server import eventloop


async def running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_uvloop_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(eventloop.EVENT_LOOP_VARIABLE, raising=False)
    assert isinstance(eventloop.run(running_loop()), uvloop.Loop)


def test_asyncio_can_be_chosen_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.EVENT_LOOP_VARIABLE, " AsyncIO ")
    loop = eventloop.run(running_loop())
    assert not isinstance(loop, uvloop.Loop) and isinstance(loop, asyncio.BaseEventLoop)


def test_another_name_is_refused_naming_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.EVENT_LOOP_VARIABLE, "trio")
    with pytest.raises(ValueError, match="expected one of uvloop, asyncio"):
        eventloop.loop_factory()
