"""Limits that count players and matches, where a per-connection limit would count connections.

One player may hold many connections (each with its own request rate), and one address many players: so
a player's chat is limited across all their connections, a match's chat across both its players (and in
what it stores), and the public matches waiting in the lobby per player and per client address.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from server.addresses import Allowance
from server.config import ServerConfig
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
