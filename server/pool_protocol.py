"""Quick pairing's messages: on the wire (``pool.*`` and ``paired``, in docs/protocol.md) and on the bus.

The requests and replies join server/protocol.py's unions. The bus messages are how instances sharing a
broker pool their waiters (docs/scaling.md): each announces its waiters retained at
``plyarena/v1/pool/{instance}/{player_id}``, and a pair across two instances is settled through their
inboxes at ``plyarena/v1/pool-inbox/{instance}/{sender}``: a claim, its answer, and the match made (the
sender's instance in the topic, which a broker's ACL lets only that instance write).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from server.decoding import MAX_ID_LENGTH
from server.errors import ProtocolError
from server.protocol_base import MAX_NAME_LENGTH, PlayerInfo, Request, ServerMessage
from server.text import check_clean_name

TOPIC_ROOT = "plyarena/v1"

GameName = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]
TimeControlText = Annotated[str, msgspec.Meta(min_length=1, max_length=16)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH)]
Rating = Annotated[float, msgspec.Meta(ge=0, le=10_000)]


# --------------------------------------------------------------------------- client -> server


class JoinPool(Request, tag="pool.join", kw_only=True, frozen=True):
    """Wait to be paired with a person of about your rating, in the pool of a game and time control."""

    game: GameName
    time_control: TimeControlText
    rated: bool = True


class LeavePool(Request, tag="pool.leave", kw_only=True, frozen=True):
    pass


class AcceptPoolBot(Request, tag="pool.accept_bot", kw_only=True, frozen=True):
    """Stop waiting and play the bot the pool offers instead (see ``pool.waiting``'s ``bot``)."""


# --------------------------------------------------------------------------- server -> client


class BotOffer(msgspec.Struct, frozen=True):
    """A bot of about the waiter's rating that a fleet offers now: ``pool.accept_bot`` plays it."""

    level: int
    style: str
    name: str
    rating: int


class PoolWaiting(ServerMessage, tag="pool.waiting", kw_only=True, frozen=True):
    """How the pool looks to a waiter: the reply to ``pool.join``, then again as it changes."""

    game: str
    time_control: str
    rated: bool
    waiting: int
    """How many wait in this pool, the receiver included."""
    rating: int
    range: tuple[int, int]
    """The ratings an opponent may have now: it widens as the wait goes on."""
    waited_ms: int
    bot: BotOffer | None = None
    """A bot offered instead, once the wait is long enough and a fleet offers one."""


class Paired(ServerMessage, tag="paired", kw_only=True, frozen=True):
    """The pool paired you: your match is live at ``url`` (``match.watch`` it there if it is another
    instance's), and you hold ``seat``."""

    match_id: str
    game: str
    time_control: str
    rated: bool
    seat: int
    opponent: PlayerInfo
    host: str
    url: str


class PoolLeft(ServerMessage, tag="pool.left", kw_only=True, frozen=True):
    """You no longer wait in the pool, not at your request: ``reason`` says why."""

    game: str
    time_control: str
    reason: str


# --------------------------------------------------------------------------- instance -> instance


class BusPlayer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A waiter's player as another instance announces them: within the limits of a local player, the
    name as :func:`server.text.clean_name` leaves one (it is shown to their opponent)."""

    id: Id
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]
    bot: bool

    def __post_init__(self) -> None:
        try:
            check_clean_name(self.name, MAX_NAME_LENGTH)
        except ProtocolError as error:
            raise ValueError(error.message) from None


class BusWaiter(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A waiter as its instance announces it (retained; an empty payload withdraws it)."""

    player: BusPlayer
    game: GameName
    time_control: TimeControlText
    rated: bool
    rating: Rating
    since: Annotated[float, msgspec.Meta(ge=0, le=1e11)]
    """When they started waiting, in seconds since 1970."""


class Claim(msgspec.Struct, frozen=True, tag="claim", forbid_unknown_fields=True):
    """'I pair my waiter with yours': the instance of the longer waiter asks the other to confirm."""

    claim_id: Id
    player_id: Id
    """The other instance's waiter."""


class Answer(msgspec.Struct, frozen=True, tag="answer", forbid_unknown_fields=True):
    """The answer to a :class:`Claim`: ``free`` when the waiter was still waiting, now taken out."""

    claim_id: Id
    free: bool


class Made(msgspec.Struct, frozen=True, tag="made", forbid_unknown_fields=True):
    """The match of a confirmed claim is made: tell the waiter (``match_id`` ``None``: it failed)."""

    claim_id: Id
    paired: Paired | None


InboxMessage = Claim | Answer | Made


def waiter_topic(instance: str, player_id: str) -> str:
    return f"{TOPIC_ROOT}/pool/{instance}/{player_id}"


def inbox_topic(instance: str, sender: str) -> str:
    """Where ``sender`` writes to ``instance``."""
    return f"{TOPIC_ROOT}/pool-inbox/{instance}/{sender}"


def inbox_pattern(instance: str) -> str:
    """What ``instance`` reads: everything written to it."""
    return f"{TOPIC_ROOT}/pool-inbox/{instance}/+"


WAITERS_PATTERN = f"{TOPIC_ROOT}/pool/+/+"
INSTANCES_PATTERN = f"{TOPIC_ROOT}/instances/+"
