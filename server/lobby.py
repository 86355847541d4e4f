"""The lobby: public matches that are open or live, for WebSocket subscribers and the bus.

Local matches come from this instance's own live matches. Open ones are also
published retained at ``plyarena/v1/lobby/{instance}/{match_id}`` (and cleared,
with an empty retained payload, once they fill or end), so bot fleets and other
instances can find them; entries that other instances publish there are shown
to this instance's subscribers too, each naming the URL that hosts it, as long
as that instance is online (``plyarena/v1/instances/{instance}``, kept by the bus
and set offline by the broker's last will when an instance dies). The bus is
believed only so far: another instance's entry is listed only from its own topic
and within the limits a local one keeps, and nothing on the bus replaces or
clears a match this instance hosts (see :meth:`Lobby._on_entry`).

A new subscriber gets a snapshot, bounded however large the lobby grows (see
:meth:`Lobby.snapshot`) that says how many entries of each kind it left out, then every
change as it happens.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime
from operator import attrgetter
from typing import Annotated, Literal

import msgspec

from server.bus import EventBus, Publish
from server.config import INSTANCE_ID
from server.connection import Connection, push_to
from server.errors import ProtocolError
from server.match import LIVE, OPEN, Match
from server.protocol import (
    MAX_BOT_STATUS_LENGTH,
    MAX_ID_LENGTH,
    MAX_NAME_LENGTH,
    BotRequest,
    BotStatus,
    BotStatusState,
    LobbyEntry,
    LobbyOmitted,
    LobbyRemove,
    LobbySnapshot,
    LobbyUpdate,
    MatchId,
    RequestId,
    encode,
)
from server.text import check_clean_name

log = logging.getLogger(__name__)

TOPIC_ROOT = "plyarena/v1"

SNAPSHOT_BOT_REQUESTS = 200
"""Open matches that ask for a bot, oldest first (the order fleets serve them in), in one snapshot."""
SNAPSHOT_OPEN = 100
"""Other open matches, newest first, in one snapshot."""
SNAPSHOT_LIVE = 100
"""Live matches (to watch), newest first, in one snapshot. With the two above, a snapshot holds at most
400 entries, some 120 kB and under 1 MiB even were every field at its limit, whatever the lobby holds: the
whole lobby of a busy server (5,000 live matches) would be 1.5 MB, past what clients of websockets read in
one message by default (1 MiB), and costly to encode for every subscriber."""

MAX_URL_LENGTH = 512
"""The longest ``url`` an entry from the bus may name (a local entry names this instance's own)."""
MAX_BUS_ENTRY_BYTES = 8192
"""An entry from the bus over this is refused before it is read: one within every limit is under 3 kB."""
BAD_MESSAGE_WARNING_EVERY_S = 60.0
"""At most one warning this often about bad messages on the lobby's topics, counting those it left out:
a broken or hostile publisher must not flood the log."""
_by_age = attrgetter("created_at")


def _check_name(name: str) -> None:
    """Raises ``ValueError`` (which msgspec reports where the name is) unless ``name`` is one that a local
    entry could show: as :func:`server.text.clean_name` leaves a name, not only within its length."""
    try:
        check_clean_name(name, MAX_NAME_LENGTH)
    except ProtocolError as error:
        raise ValueError(error.message) from None


class _BusPlayer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH)]
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]
    bot: bool

    def __post_init__(self) -> None:
        _check_name(self.name)


class _BusNote(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    state: BotStatusState
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_BOT_STATUS_LENGTH)]
    by: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]

    def __post_init__(self) -> None:
        _check_name(self.by)


class _BusEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A :class:`LobbyEntry` as another instance may publish it: open, within the limits that the requests
    behind a local entry keep (server/protocol.py), and with no field a local entry does not have."""

    match_id: MatchId
    game: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]
    status: Literal["open"]
    time_control: Annotated[str, msgspec.Meta(min_length=1, max_length=16)]
    seats: Annotated[list[_BusPlayer | None], msgspec.Meta(min_length=2, max_length=2)]
    bot: BotRequest | None
    host: Annotated[str, msgspec.Meta(pattern=f"^{INSTANCE_ID.pattern}\\Z")]
    url: Annotated[str, msgspec.Meta(pattern="^wss?://", max_length=MAX_URL_LENGTH)]
    created_at: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH)]
    rated: bool = False
    bot_status: _BusNote | None = None


class _InstanceStatus(msgspec.Struct, frozen=True):
    online: bool = False
    url: Annotated[str, msgspec.Meta(pattern="^wss?://", max_length=MAX_URL_LENGTH)] | None = None
    """The WebSocket URL the instance serves at, where clients of its matches are sent."""


_bus_entry_decoder = msgspec.json.Decoder(_BusEntry)
_instance_status_decoder = msgspec.json.Decoder(_InstanceStatus)


class BadLobbyMessage(ValueError):
    """A message on the lobby's topics that breaks their rules: it is dropped, with a warning."""


def lobby_topic(instance: str, match_id: str) -> str:
    return f"{TOPIC_ROOT}/lobby/{instance}/{match_id}"


def match_topic(instance: str, match_id: str) -> str:
    """Named after the instance that hosts the match, as its lobby entries are: a broker's ACL can then
    let each instance publish only its own (deploy/mosquitto/acl)."""
    return f"{TOPIC_ROOT}/match/{instance}/{match_id}"


def lobby_entry(
    match: Match, created_at: datetime, bot_status: BotStatus | None, host: str, url: str
) -> LobbyEntry | None:
    """How the lobby shows ``match``, hosted by instance ``host`` at ``url``; ``None`` when it shows it
    not at all (a private match, one over, an open one whose creator is away)."""
    if match.options.visibility != "public" or match.status not in (OPEN, LIVE) or match.creator_away:
        return None
    return LobbyEntry(
        match_id=match.id,
        game=match.game.name,
        status=match.status,
        time_control=match.options.time_control,
        seats=list(match.seats),
        bot=match.options.bot,
        rated=match.options.rated,
        host=host,
        url=url,
        created_at=created_at.isoformat(),
        bot_status=bot_status if match.status == OPEN else None,
    )


class _Complaints:
    """Warnings about bad messages, at most one per ``every_s``, each saying how many were not told."""

    def __init__(self, every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self._clock = clock
        self._quiet_until = float("-inf")
        self._untold = 0

    def bad(self, topic: str, why: str) -> None:
        now = self._clock()
        if now < self._quiet_until:
            self._untold += 1
            return
        untold = f" ({self._untold} more since the last warning)" if self._untold else ""
        log.warning("dropped a bad message on %s: %s%s", topic, why[:200], untold)
        self._quiet_until = now + self.every_s
        self._untold = 0


def _asks_for_bot(entry: LobbyEntry) -> bool:
    return entry.status == "open" and entry.bot is not None


class Lobby:
    """Entries by match id, the connections that follow them, and their retained copies on the bus."""

    def __init__(self, instance: str, publish: Publish) -> None:
        self.instance = instance
        self._publish = publish
        self.entries: dict[str, LobbyEntry] = {}
        self.subscribers: set[Connection] = set()
        self.offline: set[str] = set()
        """Other instances known to be offline: their leftover retained entries are not shown."""
        self.instance_urls: dict[str, str] = {}
        """Other instances' WebSocket URLs, as their statuses on the bus say: where their matches are."""
        self._bot_requests = 0
        """How many entries are open and ask for a bot."""
        self._snapshot: tuple[list[LobbyEntry], LobbyOmitted] | None = None
        """The entries of the next snapshot and how many of each kind it leaves out: chosen once per change
        of the lobby, not per subscriber."""
        self._complaints = _Complaints(BAD_MESSAGE_WARNING_EVERY_S)

    def snapshot(self, request_id: RequestId) -> LobbySnapshot:
        """What a new subscriber sees first, bounded: the oldest open matches that ask for a bot, the newest
        other open ones, the newest live ones (see :data:`SNAPSHOT_BOT_REQUESTS` and the two after it),
        and how many of each kind it left out.

        Every later change reaches the subscriber as it happens; a bot request left out for want of room
        is sent as it moves up into that room (see :meth:`_bring_bot_requests_into_view`).
        """
        if self._snapshot is None:
            asking: list[LobbyEntry] = []
            other_open: list[LobbyEntry] = []
            live: list[LobbyEntry] = []
            for entry in self.entries.values():
                kind = asking if _asks_for_bot(entry) else other_open if entry.status == "open" else live
                kind.append(entry)
            # (sorted, not heapq: entries mostly come in order of age already, which Timsort reads at once)
            matches = [
                *sorted(asking, key=_by_age)[:SNAPSHOT_BOT_REQUESTS],
                *sorted(other_open, key=_by_age, reverse=True)[:SNAPSHOT_OPEN],
                *sorted(live, key=_by_age, reverse=True)[:SNAPSHOT_LIVE],
            ]
            omitted = LobbyOmitted(
                bot_requests=max(0, len(asking) - SNAPSHOT_BOT_REQUESTS),
                open=max(0, len(other_open) - SNAPSHOT_OPEN),
                live=max(0, len(live) - SNAPSHOT_LIVE),
            )
            self._snapshot = matches, omitted
        matches, omitted = self._snapshot
        return LobbySnapshot(matches=matches, omitted=omitted, id=request_id)

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
                    except BadLobbyMessage as error:
                        self._complaints.bad(topic, str(error))
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
        try:
            status = _instance_status_decoder.decode(payload) if payload else _InstanceStatus(online=True)
        except msgspec.DecodeError as error:
            raise BadLobbyMessage(f"not an instance status: {error}") from None
        if status.url is not None:
            self.instance_urls[instance] = status.url
        if status.online:
            self.offline.discard(instance)
            return
        self.offline.add(instance)
        self._drop(*[match_id for match_id, entry in self.entries.items() if entry.host == instance])

    def _on_entry(self, topic: str, payload: bytes, is_local_and_open: Callable[[str], bool]) -> None:
        """Another instance's entry, or its clearing, as published on its own topic.

        A match this instance hosts is listed as this instance says, whatever comes over the bus: a
        message there could otherwise delist it, or send whoever joins it to another URL. An entry is
        cleared only from the topic of the instance that hosts it, and listed only if it keeps the limits
        of a local one (:class:`_BusEntry`).
        """
        *_, instance, match_id = topic.split("/")
        if instance == self.instance:
            if payload and not is_local_and_open(match_id):
                self._publish(topic, b"", True)  # left over from before a restart
            return
        if not payload:
            self._on_entry_cleared(instance, match_id)
            return
        entry = self._read_bus_entry(payload)
        self._check_claim(entry, instance, match_id, is_local_and_open)
        if instance not in self.offline:
            self._set(entry)

    def _on_entry_cleared(self, instance: str, match_id: str) -> None:
        """Drop the entry of an empty retained message, but only if ``instance``, whose topic it came on,
        hosts the match: no instance may delist another's."""
        listed = self.entries.get(match_id)
        if listed is not None and listed.host == instance:
            self._drop(match_id)

    def _check_claim(
        self, entry: LobbyEntry, instance: str, match_id: str, is_local_and_open: Callable[[str], bool]
    ) -> None:
        """Raise :class:`BadLobbyMessage` unless ``entry``, read from the topic of ``instance`` and
        ``match_id``, is for that match on that instance, and no other instance (this one included)
        already lists the match as its own."""
        if entry.host != instance or entry.match_id != match_id:
            raise BadLobbyMessage(f"an entry for {entry.host}/{entry.match_id} on another instance's topic")
        listed = self.entries.get(match_id)
        if is_local_and_open(match_id) or (listed is not None and listed.host != instance):
            host = self.instance if listed is None else listed.host
            raise BadLobbyMessage(f"match {match_id} is hosted by {host}, not {instance}")

    @staticmethod
    def _read_bus_entry(payload: bytes) -> LobbyEntry:
        if len(payload) > MAX_BUS_ENTRY_BYTES:
            raise BadLobbyMessage(f"an entry of {len(payload)} bytes (at most {MAX_BUS_ENTRY_BYTES})")
        try:
            checked = _bus_entry_decoder.decode(payload)
        except msgspec.DecodeError as error:
            raise BadLobbyMessage(f"not a lobby entry: {error}") from None
        return msgspec.convert(checked, LobbyEntry, from_attributes=True)

    def _set(self, entry: LobbyEntry) -> None:
        before = self.entries.get(entry.match_id)
        if before == entry:
            return
        self.entries[entry.match_id] = entry
        self._snapshot = None
        push_to(self.subscribers, encode(LobbyUpdate(entry=entry)))
        was_asking = before is not None and _asks_for_bot(before)
        self._bot_requests += _asks_for_bot(entry) - was_asking
        if was_asking and not _asks_for_bot(entry):
            self._bring_bot_requests_into_view(left=1)

    def _drop(self, *match_ids: str) -> None:
        left = 0
        for match_id in match_ids:
            left += _asks_for_bot(self.entries.pop(match_id))
            push_to(self.subscribers, encode(LobbyRemove(match_id=match_id)))
        self._snapshot = None
        self._bot_requests -= left
        self._bring_bot_requests_into_view(left)

    def _bring_bot_requests_into_view(self, left: int) -> None:
        """``left`` bot requests just left the lobby: send again those that moved up into the room they made
        among the oldest :data:`SNAPSHOT_BOT_REQUESTS`, which a subscriber whose snapshot had no room for them
        has not seen. So every subscriber comes to see every bot request, the oldest first; one it has seen
        comes again, unchanged."""
        if not left or not self.subscribers or self._bot_requests + left <= SNAPSHOT_BOT_REQUESTS:
            return
        asking = sorted((entry for entry in self.entries.values() if _asks_for_bot(entry)), key=_by_age)
        for entry in asking[max(0, SNAPSHOT_BOT_REQUESTS - left) : SNAPSHOT_BOT_REQUESTS]:
            push_to(self.subscribers, encode(LobbyUpdate(entry=entry)))
