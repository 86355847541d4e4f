"""Where a fleet learns of open matches: a server's live lobby feed, or the MQTT lobby topics.

Both feed one :class:`LobbySink` (the fleet) with entries and removals, each
entry paired with the WebSocket URL to reach the match:

- :class:`ServerLobby` follows one server's ``lobby.subscribe`` feed over a
  :class:`bots.link.Link` (so it comes back after a restart, and the new
  snapshot replaces what it knew). Entries hosted by that server are reached at
  the URL the fleet was given; entries the server relays from other instances,
  at the URL they name.
- :class:`MqttLobby` subscribes to the lobby topics on a broker. Lobby entries
  are retained there, each naming its host instance and URL, so one fleet
  serves every instance that shares the broker, including ones it was never
  told of. An empty payload clears an entry; an instance whose status topic
  says it is offline takes its entries with it (they would be left retained by
  a server that died). It also keeps the fleet's offer retained on the broker
  (see :mod:`bots.offer`), cleared by an MQTT will if the fleet dies.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from typing import Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

import aiomqtt
import msgspec

from bots import wire
from bots.link import DEFAULT_BACKOFF, Backoff, Link

log = logging.getLogger(__name__)

LOBBY_TOPICS = "plyarena/v1/lobby/+/+"
"""``plyarena/v1/lobby/{instance}/{match_id}``: one retained entry per open public match."""
INSTANCE_TOPICS = "plyarena/v1/instances/+"
"""``plyarena/v1/instances/{instance}``: retained ``{"online": true|false, "url": ...}``, false by will when
one dies; ``url`` is where its matches are played."""


class LobbySink(Protocol):
    def lobby_snapshot(self, source: str, entries: list[tuple[wire.LobbyEntry, str]]) -> None:
        """Everything open on ``source`` now: replaces what the sink knew from it."""

    def lobby_entry(self, source: str, entry: wire.LobbyEntry, url: str) -> None:
        """A new or changed entry, reachable at ``url``."""

    def lobby_gone(self, source: str, match_id: str) -> None:
        """The entry is no longer in the lobby (filled, ended, cancelled)."""


class ServerLobby:
    """A server's live lobby feed; see the module docstring."""

    def __init__(
        self,
        url: str,
        sink: LobbySink,
        *,
        name: str,
        fleet_key: str | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self.url = url
        self.sink = sink
        self.link = Link(url, name, self, fleet_key=fleet_key, backoff=backoff)
        self._instance: str | None = None

    async def run(self) -> None:
        await self.link.run()

    async def close(self) -> None:
        await self.link.close()

    def _reach(self, entry: wire.LobbyEntry) -> str:
        return self.url if entry.host == self._instance or not entry.url else entry.url

    async def on_welcome(self, welcome: wire.Welcome) -> None:
        self._instance = welcome.instance
        await self.link.send(wire.LobbySubscribe())

    async def on_message(self, message: wire.Incoming) -> None:
        if isinstance(message, wire.LobbySnapshot):
            self.sink.lobby_snapshot(self.url, [(entry, self._reach(entry)) for entry in message.matches])
        elif isinstance(message, wire.LobbyUpdate):
            self.sink.lobby_entry(self.url, message.entry, self._reach(message.entry))
        elif isinstance(message, wire.LobbyRemove):
            self.sink.lobby_gone(self.url, message.match_id)


def broker_name(url: str) -> str:
    """``url`` as logs and errors show it: without the user and password it may hold."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def mqtt_client(url: str, identifier: str, will: aiomqtt.Will | None = None) -> aiomqtt.Client:
    """An aiomqtt client for ``mqtt://[user:password@]host[:port]`` (or ``mqtts://`` for TLS)."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise ValueError(
            f"unsupported MQTT URL {broker_name(url)!r}: use mqtt://host:port or mqtts://host:port"
        )
    return aiomqtt.Client(
        parts.hostname,
        parts.port or (8883 if parts.scheme == "mqtts" else 1883),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        identifier=identifier,
        will=will,
        tls_context=ssl.create_default_context() if parts.scheme == "mqtts" else None,
    )


_entry_decoder = msgspec.json.Decoder(wire.LobbyEntry)


class MqttLobby:
    """The lobby topics on a broker, and the fleet's retained offer; see the module docstring."""

    def __init__(
        self,
        mqtt_url: str,
        sink: LobbySink,
        *,
        identifier: str,
        offer_topic: str | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self.url = mqtt_url
        self.sink = sink
        self.identifier = identifier
        self.offer_topic = offer_topic
        self.backoff = backoff
        self.connected = asyncio.Event()
        self._offer: bytes | None = None
        self._client: aiomqtt.Client | None = None
        self._offline: set[str] = set()
        self._urls: dict[str, str] = {}
        """Each instance's WebSocket URL, as its status says."""
        self._entries: dict[str, set[str]] = {}
        """Match ids of the entries seen, by host instance."""
        mqtt_client(mqtt_url, identifier)  # refuse a bad URL now, not in the background

    async def run(self) -> None:
        """Follow the lobby until cancelled, reconnecting with backoff when the broker goes away."""
        will = aiomqtt.Will(self.offer_topic, b"", retain=True) if self.offer_topic else None
        delays = self.backoff.delays(random.Random())
        while True:
            try:
                async with mqtt_client(self.url, self.identifier, will) as client:
                    self._client = client
                    await client.subscribe(INSTANCE_TOPICS, qos=1)
                    await client.subscribe(LOBBY_TOPICS, qos=1)
                    if self._offer is not None and self.offer_topic is not None:
                        await client.publish(self.offer_topic, self._offer, qos=1, retain=True)
                    self.connected.set()
                    delays = self.backoff.delays(random.Random())
                    async for message in client.messages:
                        self._deliver(str(message.topic), message.payload)
            except aiomqtt.MqttError as error:
                log.info("lobby broker %s lost (%s); reconnecting", broker_name(self.url), error)
            finally:
                self._client = None
                self.connected.clear()
            await asyncio.sleep(next(delays))

    def _deliver(self, topic: str, payload: object) -> None:
        data = payload if isinstance(payload, bytes | bytearray) else str(payload or "").encode()
        levels = topic.split("/")
        if len(levels) == 4 and levels[2] == "instances":
            self._instance_status(levels[3], bytes(data))
            return
        if len(levels) != 5 or levels[2] != "lobby":
            return
        instance, match_id = levels[3], levels[4]
        if not data:
            self._gone(instance, match_id)
            return
        try:
            entry = _entry_decoder.decode(data)
        except msgspec.DecodeError as error:
            log.warning("ignoring a lobby entry on %s: %s", topic, error)
            return
        if not entry.url:
            log.warning("ignoring lobby entry %s on %s: it names no URL to reach it", entry.match_id, topic)
            return
        # An instance publishes its own matches on its own topics: an entry naming another host or match,
        # or for a match another instance lists, is not believed (it could send a bot to another URL).
        if (
            entry.host != instance
            or entry.match_id != match_id
            or self._host_of(match_id) not in (None, instance)
        ):
            log.warning(
                "ignoring lobby entry %s of %s on %s: not that instance's", entry.match_id, entry.host, topic
            )
            return
        self._entries.setdefault(instance, set()).add(entry.match_id)
        if instance not in self._offline:
            self.sink.lobby_entry(self.url, entry, entry.url)

    def _gone(self, instance: str, match_id: str) -> None:
        """An entry cleared, from the topic of the instance that listed it (from another, it is not)."""
        listed = self._entries.get(instance, set())
        if match_id in listed:
            listed.discard(match_id)
            self.sink.lobby_gone(self.url, match_id)

    def _host_of(self, match_id: str) -> str | None:
        return next((instance for instance, listed in self._entries.items() if match_id in listed), None)

    def instance_urls(self, *, online: bool) -> set[str]:
        """The WebSocket URLs of the instances whose statuses say they are online (or offline)."""
        return {url for instance, url in self._urls.items() if (instance not in self._offline) == online}

    def _instance_status(self, instance: str, data: bytes) -> None:
        try:
            status = msgspec.json.decode(data) if data else {}
            online = bool(status.get("online", False))
            url = status.get("url")
        except (msgspec.DecodeError, AttributeError):
            log.warning("ignoring the status of instance %s: %r", instance, data[:100])
            return
        if isinstance(url, str) and url.startswith(("ws://", "wss://")):
            self._urls[instance] = url
        if online:
            self._offline.discard(instance)
            return
        self._offline.add(instance)
        for match_id in list(self._entries.get(instance, ())):
            self._gone(instance, match_id)

    async def announce(self, payload: bytes) -> None:
        """Keep ``payload`` retained on the offer topic (now if connected, else on connecting)."""
        self._offer = payload
        client = self._client
        if client is not None and self.offer_topic is not None:
            try:
                await client.publish(self.offer_topic, payload, qos=1, retain=True)
            except aiomqtt.MqttError as error:
                log.info("offer not published yet (%s); it will be on reconnect", error)
