"""Limits that count players and matches, where a per-connection limit would count connections.

One player may hold many connections (each with its own request rate), and one address many players: so
a player's chat is limited across all their connections, a match's chat across both its players (and in
what it stores), the public matches waiting in the lobby per player and per client address, and the games
a person plays against bots at once (a fleet has only so many bots; see :mod:`server.stalls` for the games
that stall).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from server.addresses import Allowance
from server.config import ServerConfig
from server.connection import Connection
from server.errors import ErrorCode, ProtocolError
from server.live import Intent, MatchHost
from server.match import Match
from server.steps import Step


@dataclass(slots=True)
class ChatLimits:
    """Chat lines per player (all their connections together) and per match, and lines stored per match."""

    per_player: Allowance
    per_match: Allowance
    max_lines: int
    """Lines one match stores; 0: no cap."""

    @classmethod
    def of(cls, config: ServerConfig) -> ChatLimits:
        return cls(
            Allowance(config.chat_rate_per_s, config.chat_burst),
            Allowance(config.match_chat_rate_per_s, config.match_chat_burst),
            config.max_chat_lines,
        )

    def guard(self, chat: Callable[..., Step], player_id: str, match_id: str) -> Intent:
        """The intent of ``chat`` (a partial :meth:`Match.chat`), refused ``rate_limited`` past the player's
        or the match's rate. Only a line the match takes spends an allowance, so a refused one (a blank
        line, a full chat) costs nothing."""

        def guarded(match: Match, /, *, now: float) -> Step:
            step: Step = chat(match, now=now, max_lines=self.max_lines)
            if not self.per_player.take(player_id, now):
                raise ProtocolError(
                    ErrorCode.RATE_LIMITED,
                    f"you said more than {self.per_player.burst} chat lines at once "
                    f"(or {self.per_player.rate_per_s:g} a second), from all your connections: line dropped",
                )
            if not self.per_match.take(match_id, now):
                raise ProtocolError(
                    ErrorCode.RATE_LIMITED,
                    f"this match took more than {self.per_match.burst} chat lines at once "
                    f"(or {self.per_match.rate_per_s:g} a second): line dropped",
                )
            return step

        return guarded


def check_open_matches(
    config: ServerConfig, host: MatchHost, player_id: str, public: bool, address_key: str | None
) -> None:
    """Refuse ``not_allowed`` a new match past the player's cap on matches waiting for an opponent, on
    public ones among them, or its address's cap on public ones (``address_key`` ``None``: uncapped)."""
    if host.open_count(player_id) >= config.max_open_matches:
        raise ProtocolError(
            ErrorCode.NOT_ALLOWED,
            f"you have {config.max_open_matches} matches waiting for an opponent: "
            "wait for one to fill, or leave one (match.leave) to cancel it",
        )
    if not public:
        return
    cap = config.max_open_public_matches
    if cap and host.open_public_count(player_id) >= cap:
        raise ProtocolError(
            ErrorCode.NOT_ALLOWED,
            f"you have {cap} public matches waiting for an opponent: wait for one to fill, leave one "
            "(match.leave) to cancel it, or make this one private",
        )
    cap = config.max_open_public_matches_per_address
    if cap and address_key is not None and host.open_public_from(address_key) >= cap:
        raise ProtocolError(
            ErrorCode.NOT_ALLOWED,
            f"your address has {cap} public matches waiting for an opponent, the most it may: wait for "
            "one to fill, or make this one private",
        )


def plays_a_bot(match: Match, player_id: str) -> bool:
    """Whether ``match`` is unfinished and ``player_id`` plays a bot in it (or waits for the bot asked)."""
    seat = match.seat_of(player_id)
    if seat is None or match.is_over:
        return False
    opponent = match.seats[1 - seat]
    return match.options.bot is not None if opponent is None else opponent.bot


def seats_a_bot(match: Match) -> bool:
    """Whether a bot holds a seat of ``match``: a person who joins it plays a bot."""
    return any(player is not None and player.bot for player in match.seats)


def joins_a_bot(match: Match, joiner_is_bot: bool) -> bool:
    """Whether joining ``match`` is asking for another game against a bot: a bot sits in it, and the joiner
    is not a bot answering the match's request for one (serving a request is not asking)."""
    return seats_a_bot(match) and not (joiner_is_bot and match.options.bot is not None)


@dataclass(slots=True)
class BotGameCap:
    """The cap on the games one person plays against bots at once (see :attr:`ServerConfig.max_bot_games`),
    counted over the matches this instance hosts."""

    host: MatchHost
    cap: int
    """0: no cap."""
    asking: Counter[str] = field(default_factory=Counter)
    """For each person, their requests for a bot game under way (being stored): requests on several
    connections at once must not all pass the cap."""

    def count(self, player_id: str, besides: str | None = None) -> int:
        """The bot games ``player_id`` plays or waits for here, ``besides`` not counted, those being
        asked for included."""
        matches = (self.host.matches[match_id].match for match_id in self.host.unfinished_of(player_id))
        playing = sum(plays_a_bot(match, player_id) for match in matches if match.id != besides)
        return playing + self.asking[player_id]

    def check(self, player_id: str, besides: str | None = None) -> None:
        """Refuse ``too_many_bot_games`` another bot game to a player who plays the most they may."""
        if self.cap and self.count(player_id, besides) >= self.cap:
            raise ProtocolError(
                ErrorCode.TOO_MANY_BOT_GAMES,
                f"you play {self.cap} games against bots (or wait for their bots), the most you may at "
                "once: finish one, or leave the match that waits for its bot, first",
            )

    @contextlib.contextmanager
    def asked(self, asker: Connection, wants_a_bot: bool) -> Iterator[None]:
        """Check the cap for a request that, if ``wants_a_bot``, makes another bot game (a ``match.create``
        asking for a bot, a ``match.join`` into a bot's match), and count it while the block runs. A
        trusted fleet's connections are not held to it: ``bot: true`` alone exempts no one."""
        player_id = asker.player_id
        if not wants_a_bot or asker.trusted_fleet or player_id is None:
            yield
            return
        self.check(player_id)
        self.asking[player_id] += 1
        try:
            yield
        finally:
            self.asking[player_id] -= 1
            if not self.asking[player_id]:
                del self.asking[player_id]

    def guard_rematch(self, offer: Callable[..., Step], asker: Connection) -> Intent:
        """The intent of ``offer`` (a partial :meth:`Match.offer_rematch` or :meth:`Match.accept_rematch`),
        refused past the cap in a bot game: the rematch is another game against the bot."""
        player_id = asker.player_id

        def guarded(match: Match, /, *, now: float) -> Step:
            if player_id is not None and not asker.trusted_fleet and seats_a_bot(match):
                self.check(player_id, besides=match.id)
            step: Step = offer(match, now=now)
            return step

        return guarded
