"""How many games a fleet plays at once: tickets handed out up to a limit.

A ticket is claimed *before* a bot asks to be seated (so two lobbies seen at
the same moment cannot both take the last place) and released exactly once,
when the game ends or the seat was refused. A game a bot finds it already
plays (after a reconnection, or a fleet's restart) is counted too, even past
the limit: it must be played, not forfeited.
"""

from __future__ import annotations

from collections.abc import Callable


class Ticket:
    """One place in a :class:`Capacity`; :meth:`release` is idempotent."""

    __slots__ = ("_capacity", "label")

    def __init__(self, capacity: Capacity, label: str) -> None:
        self._capacity: Capacity | None = capacity
        self.label = label

    @property
    def held(self) -> bool:
        return self._capacity is not None

    def release(self) -> None:
        capacity, self._capacity = self._capacity, None
        if capacity is not None:
            capacity.in_use -= 1
            if capacity.on_release is not None:
                capacity.on_release(self)

    def __repr__(self) -> str:
        return f"<Ticket {self.label} {'held' if self.held else 'released'}>"


class Capacity:
    """At most ``limit`` tickets out at once (``None``: no limit), but for those claimed even if full.

    ``on_release`` is called with each ticket given back, so an owner waiting
    for room can act at once; ``on_claim`` with each ticket handed out, so an
    owner that says how busy it is can say it when it fills up.
    """

    def __init__(
        self,
        limit: int | None,
        on_release: Callable[[Ticket], None] | None = None,
        on_claim: Callable[[Ticket], None] | None = None,
    ) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"a game limit must be >= 0, got {limit}")
        self.limit = limit
        self.in_use = 0
        self.on_release = on_release
        self.on_claim = on_claim

    @property
    def full(self) -> bool:
        return self.limit is not None and self.in_use >= self.limit

    def claim(self, label: str) -> Ticket | None:
        """A ticket, or ``None`` when full; ``label`` names what it is for, in logs."""
        if self.full:
            return None
        return self.claim_even_if_full(label)

    def claim_even_if_full(self, label: str) -> Ticket:
        """A ticket whatever the load, for a game already under way (one a bot finds it still plays after a
        reconnection or a restart): it takes a place like any other, and the capacity stays full until
        enough come back."""
        self.in_use += 1
        ticket = Ticket(self, label)
        if self.on_claim is not None:
            self.on_claim(ticket)
        return ticket
