"""Topics, patterns and local subscriptions, by MQTT's rules: what both buses of server/bus.py share.

A topic is published to; a pattern is subscribed to, ``+`` standing for one level and a final ``#`` for
any number of levels, including none. :class:`Subscription` is one reader's bounded queue, whichever bus
fills it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Self

log = logging.getLogger("server.bus")  # (the bus's log, as before the bus was split in modules)

Message = tuple[str, bytes]

DEFAULT_MAX_QUEUED = 10_000  # messages a slow subscriber may fall behind before the oldest are dropped
MAX_TOPIC_BYTES = 65_535


# ------------------------------------------------------------------ topics


def check_topic(topic: str) -> None:
    """Raise ``ValueError`` unless ``topic`` can be published to (no wildcards).

    A good topic, every match event's, passes one expression; the checks one by one run only to say
    what is wrong with a bad one.
    """
    if topic and "\0" not in topic and "+" not in topic and "#" not in topic and len(topic) <= _SURELY_SHORT:
        return
    _check_length(topic)
    if "+" in topic or "#" in topic:
        raise ValueError(f"topic {topic!r} contains a wildcard; wildcards are only for subscribing")


def check_pattern(pattern: str) -> None:
    """Raise ``ValueError`` unless ``pattern`` is a valid subscription (``+`` a level, ``#`` the last)."""
    _check_length(pattern)
    levels = pattern.split("/")
    for index, level in enumerate(levels):
        if ("+" in level or "#" in level) and len(level) > 1:
            raise ValueError(f"pattern {pattern!r}: a wildcard must be a whole level, not {level!r}")
        if level == "#" and index != len(levels) - 1:
            raise ValueError(f"pattern {pattern!r}: '#' must be the last level")


def topic_matches(pattern: str, topic: str) -> bool:
    """Whether ``topic`` matches subscription ``pattern``, by MQTT's rules.

    ``a/#`` matches ``a``, ``a/b`` and ``a/b/c``; ``a/+`` matches ``a/b`` only;
    a leading wildcard does not match the broker's own ``$`` topics.
    """
    return _levels_match(pattern.split("/"), topic.split("/"), topic.startswith("$"))


def _levels_match(pattern: Sequence[str], topic: Sequence[str], system_topic: bool) -> bool:
    """:func:`topic_matches` on levels already split, so that one split of a topic serves every pattern."""
    if system_topic and pattern[0] in ("+", "#"):
        return False
    for index, level in enumerate(pattern):
        if level == "#":
            return True
        if index >= len(topic) or (level != "+" and level != topic[index]):
            return False
    return len(pattern) == len(topic)


def _literal_prefix(levels: Sequence[str]) -> str:
    """The text every matching topic starts with: the pattern's levels before its first wildcard,
    without the slash after them (``a/#`` matches ``a`` itself)."""
    literal = []
    for level in levels:
        if level in ("+", "#"):
            break
        literal.append(level)
    return "/".join(literal)


def _check_length(text: str) -> None:
    if not text:
        raise ValueError("a topic or pattern cannot be empty")
    if "\0" in text:
        raise ValueError(f"topic {text!r} contains a NUL character")
    if len(text) > _SURELY_SHORT and len(text.encode()) > MAX_TOPIC_BYTES:
        raise ValueError(f"topic {text[:40]!r}... is longer than {MAX_TOPIC_BYTES} bytes")


_SURELY_SHORT = MAX_TOPIC_BYTES // 4
"""A text of at most this many characters is within :data:`MAX_TOPIC_BYTES`: UTF-8 takes at most 4 bytes
a character, so only a longer one is encoded to be measured."""


def _is_wildcard(pattern: str) -> bool:
    return "+" in pattern or "#" in pattern


# ------------------------------------------------------------ subscriptions


class Subscription:
    """The messages for one pattern, in order; iterate it inside ``async with``.

    Each subscription has its own bounded queue, so one slow reader never holds
    up the bus or other readers: past ``max_queued`` unread messages the oldest
    are dropped (and counted in ``dropped``). Iteration ends when the bus closes.
    """

    def __init__(
        self,
        pattern: str,
        attach: Callable[[Subscription], Awaitable[None]],
        detach: Callable[[Subscription], Awaitable[None]],
        max_queued: int,
    ) -> None:
        self.pattern = pattern
        self.levels = tuple(pattern.split("/"))
        self.prefix = _literal_prefix(self.levels)
        """What every topic this pattern matches starts with (see :class:`_Subscribers`)."""
        self.dropped = 0
        self._attach, self._detach = attach, detach
        self._queue: asyncio.Queue[Message | None] = asyncio.Queue(max_queued)
        self._ended = False

    async def __aenter__(self) -> Self:
        await self._attach(self)
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # Cancelled while attaching, and the cancellation swallowed on the way (Python 3.11's
            # asyncio.wait_for can, in the MQTT client's subscribe): stop now, or it would read for ever.
            await self._detach(self)
            raise asyncio.CancelledError
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._detach(self)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Message:
        if self._ended:
            raise StopAsyncIteration
        message = await self._queue.get()
        if message is None:
            self._ended = True
            raise StopAsyncIteration
        return message

    def deliver(self, topic: str, payload: bytes) -> None:
        """Queue one message without waiting, dropping the oldest if the reader is too far behind."""
        self._put((topic, payload))

    def end(self) -> None:
        """Let the reader finish what is queued, then stop its iteration."""
        self._put(None)

    def _put(self, item: Message | None) -> None:
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("subscriber of %r is behind: %d messages dropped", self.pattern, self.dropped)
        self._queue.put_nowait(item)


@dataclass(eq=False)
class _Subscribers:
    """Local subscriptions indexed for delivery: exact topics by dict, wildcard patterns by scan.

    Most topics match no wildcard pattern (here, every match's events), so a topic is first held
    against the patterns' literal prefixes, all at once in one C call, and split into levels only
    if one of them fits: with the server's three patterns, 3,300 instructions a topic instead of
    18,800 (cachegrind).
    """

    exact: dict[str, set[Subscription]] = field(default_factory=dict)
    wildcard: set[Subscription] = field(default_factory=set)
    wildcard_prefixes: tuple[str, ...] = ()

    def add(self, subscription: Subscription) -> None:
        if _is_wildcard(subscription.pattern):
            self.wildcard.add(subscription)
            self.wildcard_prefixes = tuple({sub.prefix for sub in self.wildcard})
        else:
            self.exact.setdefault(subscription.pattern, set()).add(subscription)

    def remove(self, subscription: Subscription) -> None:
        if subscription in self.wildcard:
            self.wildcard.discard(subscription)
            self.wildcard_prefixes = tuple({sub.prefix for sub in self.wildcard})
        same_topic = self.exact.get(subscription.pattern)
        if same_topic is not None:
            same_topic.discard(subscription)
            if not same_topic:
                del self.exact[subscription.pattern]

    def matching(self, topic: str) -> list[Subscription]:
        found: list[Subscription] = []
        if topic.startswith(self.wildcard_prefixes):  # (never with no wildcard pattern: no prefixes)
            levels, system_topic = topic.split("/"), topic.startswith("$")
            found = [  # (each pattern's own prefix first: a lobby entry's topic is split against one)
                sub
                for sub in self.wildcard
                if topic.startswith(sub.prefix) and _levels_match(sub.levels, levels, system_topic)
            ]
        found.extend(self.exact.get(topic, ()))
        return found

    def all(self) -> list[Subscription]:
        return [*self.wildcard, *(sub for subs in self.exact.values() for sub in subs)]
