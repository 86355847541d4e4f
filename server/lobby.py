"""The lobby: public matches that are open or live, for WebSocket subscribers and the bus.

Local matches come from this instance's own live matches. Open ones are also
published retained at ``plyarena/v1/lobby/{instance}/{match_id}`` (and cleared,
with an empty retained payload, once they fill or end), so bot fleets and other
instances can find them; entries that other instances publish there are shown
to this instance's subscribers too, each naming the URL that hosts it, as long
as that instance is online (``plyarena/v1/instances/{instance}``, kept by the bus
and set offline by the broker's last will when an instance dies).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

import msgspec

from server.bus import EventBus
from server.connection import Connection, push_to
from server.protocol import LobbyEntry, LobbyRemove, LobbySnapshot, LobbyUpdate, RequestId, encode

log = logging.getLogger(__name__)

TOPIC_ROOT = "plyarena/v1"
_entry_decoder = msgspec.json.Decoder(LobbyEntry)


def lobby_topic(instance: str, match_id: str) -> str:
    return f"{TOPIC_ROOT}/lobby/{instance}/{match_id}"


def match_topic(match_id: str) -> str:
    return f"{TOPIC_ROOT}/match/{match_id}"


class Lobby:
    """Entries by match id, the connections that follow them, and their retained copies on the bus."""

    def __init__(self, instance: str, publish: Callable[[str, bytes, bool], None]) -> None:
        self.instance = instance
        self._publish = publish
        self.entries: dict[str, LobbyEntry] = {}
        self.subscribers: set[Connection] = set()
        self.offline: set[str] = set()
        """Other instances known to be offline: their leftover retained entries are not shown."""

    def snapshot(self, request_id: RequestId) -> LobbySnapshot:
        entries = sorted(self.entries.values(), key=lambda entry: entry.created_at)
        return LobbySnapshot(matches=entries, id=request_id)

    def show(self, entry: LobbyEntry) -> None:
        """Add or update a local entry; retained on the bus while it is open, cleared once it is not."""
        self._set(entry)
        payload = encode(entry) if entry.status == "open" else b""
        self._publish(lobby_topic(self.instance, entry.match_id), payload, True)

    def hide(self, match_id: str) -> None:
        """Drop a local entry (the match ended, or was never public)."""
        if match_id in self.entries:
            self._drop(match_id)
            self._publish(lobby_topic(self.instance, match_id), b"", True)

    def withdraw(self) -> None:
        """Clear this instance's entries from the bus (on shutdown: nobody can join them meanwhile)."""
        for entry in self.entries.values():
            if entry.host == self.instance:
                self._publish(lobby_topic(self.instance, entry.match_id), b"", True)

    async def follow_bus(self, bus: EventBus, is_local_and_open: Callable[[str], bool]) -> None:
        """Mirror other instances' entries while they are online; clear stale retained entries of ours."""

        async def follow(pattern: str, handle: Callable[[str, bytes], None]) -> None:
            async with bus.subscribe(pattern) as messages:
                async for topic, payload in messages:
                    try:
                        handle(topic, payload)
                    except Exception:
                        log.exception("ignoring bad message on %s", topic)

        async with asyncio.TaskGroup() as group:
            group.create_task(follow(f"{TOPIC_ROOT}/instances/+", self._on_instance_status))
            group.create_task(
                follow(
                    f"{TOPIC_ROOT}/lobby/+/+",
                    lambda topic, payload: self._on_entry(topic, payload, is_local_and_open),
                )
            )

    def _on_instance_status(self, topic: str, payload: bytes) -> None:
        """An instance that went offline (its last will, or a clean stop) takes its entries with it."""
        instance = topic.rsplit("/", 1)[-1]
        if instance == self.instance:
            return
        if payload and not json.loads(payload).get("online", False):
            self.offline.add(instance)
            for match_id in [m for m, entry in self.entries.items() if entry.host == instance]:
                self._drop(match_id)
        else:
            self.offline.discard(instance)

    def _on_entry(self, topic: str, payload: bytes, is_local_and_open: Callable[[str], bool]) -> None:
        *_, instance, match_id = topic.split("/")
        if instance == self.instance:
            if payload and not is_local_and_open(match_id):
                self._publish(topic, b"", True)  # left over from before a restart
            return
        if not payload:
            if match_id in self.entries:
                self._drop(match_id)
            return
        entry = _entry_decoder.decode(payload)
        if entry.host == instance and entry.match_id == match_id and instance not in self.offline:
            self._set(entry)

    def _set(self, entry: LobbyEntry) -> None:
        if self.entries.get(entry.match_id) != entry:
            self.entries[entry.match_id] = entry
            push_to(self.subscribers, encode(LobbyUpdate(entry=entry)))

    def _drop(self, match_id: str) -> None:
        del self.entries[match_id]
        push_to(self.subscribers, encode(LobbyRemove(match_id=match_id)))
