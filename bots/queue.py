"""The fleet's waiting line: requests for a bot that came while every game was taken, served fairly.

Served oldest first, one player's flood of requests would make everyone who asks after it wait for the
whole flood. The line serves round-robin across the players who asked instead: each player's oldest
request in turn, the players in the order they came into line, one who was just served going to its
back. So a player who asks while another's flood waits is served after at most one request of each
player ahead of them. :meth:`WaitingLine.in_order` gives the order in which the line will be served,
which is the place in line a ``queued`` note tells each request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Item = TypeVar("Item")


@dataclass(slots=True)
class WaitingLine(Generic[Item]):
    """Requests by match id, each with the player who asked and what they asked for (an ``Item``)."""

    _by_player: dict[str, dict[str, Item]] = field(default_factory=dict)
    """Each player's waiting requests, oldest first; the players in the order they are served next."""
    _player_of: dict[str, str] = field(default_factory=dict)
    """The player behind each waiting match."""
    _noted: dict[str, int] = field(default_factory=dict)
    """The place in line last told to each waiting match (see :meth:`places_to_note`)."""

    def __len__(self) -> int:
        return len(self._player_of)

    def __contains__(self, match_id: object) -> bool:
        return match_id in self._player_of

    def add(self, match_id: str, player_id: str, item: Item) -> bool:
        """Put the request of ``player_id`` for ``match_id`` at the back of that player's requests; whether
        it is new (a match already waiting keeps its place)."""
        if match_id in self._player_of:
            return False
        self._player_of[match_id] = player_id
        self._by_player.setdefault(player_id, {})[match_id] = item
        return True

    def remove(self, match_id: str) -> Item | None:
        """Take ``match_id`` out of line (its match went, or was seated); what it asked for, if it waited."""
        player_id = self._player_of.pop(match_id, None)
        if player_id is None:
            return None
        self._noted.pop(match_id, None)
        requests = self._by_player[player_id]
        item = requests.pop(match_id)
        if not requests:
            del self._by_player[player_id]
        return item

    def pop(self) -> tuple[str, Item] | None:
        """The request to serve next, taken out of line: the oldest of the player whose turn it is, who
        then goes to the back of the line (if they still wait for more)."""
        if not self._by_player:
            return None
        player_id, requests = next(iter(self._by_player.items()))
        match_id = next(iter(requests))
        item = self.remove(match_id)
        assert item is not None
        if player_id in self._by_player:
            self._by_player[player_id] = self._by_player.pop(player_id)  # to the back
        return match_id, item

    def in_order(self) -> Iterator[tuple[str, Item]]:
        """Every waiting request in the order :meth:`pop` will serve them: the first request of each player
        in turn, then the second of each, and so on."""
        queues = [list(requests.items()) for requests in self._by_player.values()]
        for round_ in range(max(map(len, queues), default=0)):
            for requests in queues:
                if round_ < len(requests):
                    yield requests[round_]

    def places_to_note(self) -> list[tuple[str, Item, int]]:
        """Each waiting request whose place in line (from 1) changed since it was last given here, with
        that place, now counted as given."""
        changed = []
        for place, (match_id, item) in enumerate(self.in_order(), start=1):
            if self._noted.get(match_id) != place:
                self._noted[match_id] = place
                changed.append((match_id, item, place))
        return changed

    def forget_note(self, match_id: str) -> None:
        """The place told to ``match_id`` is lost (its server restarted): :meth:`places_to_note` gives it
        again."""
        self._noted.pop(match_id, None)
