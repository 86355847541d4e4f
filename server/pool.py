"""Quick pairing's decisions, with no I/O: who waits in which pool, and who is paired with whom.

A :class:`Pool` holds every waiter this instance knows of, its own and those other instances announce on
the bus, each in the pool of one game, time control and rated flag. :meth:`Pool.pairs` pairs waiters of one
pool whose ratings are within range, the range widening with waiting time (:class:`RatingRange`): longest
waiter first, each with the closest rating in range, so that whoever has waited longest is served first.
Lichess's pools (lila ``modules/pool``) find a maximum weighted matching every few seconds; with the few
waiters of a pool here, the greedy rule keeps the same promises (within range, the longest waiter first) and
is easy to check. A waiter is in one pool at a time and leaves it when paired, so no one is paired twice;
waiters being confirmed by another instance are held back (:meth:`Pool.hold`) until the answer comes.

Times are wall-clock seconds (``time.time()``), comparable across the instances that share a broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from server.protocol_base import PlayerInfo


@dataclass(frozen=True)
class RatingRange:
    """How far from a waiter's rating an opponent may be: ``start`` at first, ``step`` more every
    ``every_s`` seconds of waiting, at most ``cap``."""

    start: float = 100.0
    step: float = 50.0
    every_s: float = 5.0
    cap: float = 500.0

    def after(self, waited_s: float) -> float:
        """The half-width of the range after waiting ``waited_s`` seconds."""
        steps = max(0, int(waited_s // self.every_s))
        return min(self.cap, self.start + self.step * steps)


PoolKey = tuple[str, str, bool]
"""A pool: its game, time control and whether its games are rated."""


@dataclass(frozen=True)
class Waiter:
    """One player waiting in one pool, at the instance whose connection they wait on."""

    player: PlayerInfo
    instance: str
    game: str
    time_control: str
    rated: bool
    rating: float
    since: float
    """When they started waiting (wall clock): the longer waiter of a pair decides it."""
    away_since: float | None = None
    """When their connection went (their place is kept a while, but they are not paired meanwhile)."""

    @property
    def pool(self) -> PoolKey:
        return (self.game, self.time_control, self.rated)

    def order(self) -> tuple[float, str]:
        """Who waited longer sorts first; equal times by player id, the same on every instance."""
        return (self.since, self.player.id)


@dataclass(frozen=True)
class Pair:
    """Two waiters to seat in one match; ``first`` waited longer, and its instance makes the match."""

    first: Waiter
    second: Waiter


@dataclass(frozen=True)
class PoolView:
    """What a waiter is told while waiting: how many wait in their pool, and their rating range now."""

    waiting: int
    low: float
    high: float
    waited_s: float


@dataclass
class Pool:
    """Every known waiter by player id; see the module docstring."""

    range: RatingRange = field(default_factory=RatingRange)
    waiters: dict[str, Waiter] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)
    """Waiters in a pair another instance is asked to confirm: not paired again meanwhile."""

    def join(self, waiter: Waiter) -> Waiter:
        """Put ``waiter`` in its pool, out of any other. A player who comes back to the pool they wait in
        (a new connection after a lost one) keeps their place. Returns the waiter as kept."""
        before = self.waiters.get(waiter.player.id)
        if before is not None and before.pool == waiter.pool and before.instance == waiter.instance:
            waiter = replace(waiter, since=before.since)
        self.waiters[waiter.player.id] = waiter
        return waiter

    def leave(self, player_id: str) -> Waiter | None:
        """Take ``player_id`` out of the pool they wait in; the waiter, or ``None`` if they waited nowhere."""
        self.held.discard(player_id)
        return self.waiters.pop(player_id, None)

    def away(self, player_id: str, now: float) -> None:
        """``player_id``'s connection went: keep their place, but pair them with no one till they are back."""
        waiter = self.waiters.get(player_id)
        if waiter is not None and waiter.away_since is None:
            self.waiters[player_id] = replace(waiter, away_since=now)

    def drop_away(self, now: float, grace_s: float, instance: str) -> list[Waiter]:
        """Drop ``instance``'s waiters away for ``grace_s`` or more (gone for good); the dropped."""
        gone = [
            waiter
            for waiter in self.waiters.values()
            if waiter.instance == instance
            and waiter.away_since is not None
            and now >= waiter.away_since + grace_s
        ]
        for waiter in gone:
            self.leave(waiter.player.id)
        return gone

    def drop_instance(self, instance: str) -> list[Waiter]:
        """Drop every waiter of ``instance`` (it went offline); the dropped."""
        gone = [waiter for waiter in self.waiters.values() if waiter.instance == instance]
        for waiter in gone:
            self.leave(waiter.player.id)
        return gone

    def hold(self, player_id: str) -> None:
        self.held.add(player_id)

    def release(self, player_id: str) -> None:
        self.held.discard(player_id)

    def pairable(self, waiter: Waiter) -> bool:
        return waiter.away_since is None and waiter.player.id not in self.held

    def pairs(self, now: float) -> list[Pair]:
        """Pair every waiter that can be paired now (see the module docstring), without taking anyone out:
        the caller takes out those it seats. Longest waiter first; each with the closest rating within the
        wider of the two ranges (the longer waiter's), the longer waiter of equals first."""
        ready = sorted((w for w in self.waiters.values() if self.pairable(w)), key=Waiter.order)
        taken: set[str] = set()
        found: list[Pair] = []
        for index, first in enumerate(ready):
            if first.player.id in taken:
                continue
            reach = self.range.after(now - first.since)
            best: Waiter | None = None
            for second in ready[index + 1 :]:
                if second.player.id in taken or second.pool != first.pool:
                    continue
                if second.player.id == first.player.id:
                    continue
                gap = abs(second.rating - first.rating)
                if gap <= reach and (best is None or gap < abs(best.rating - first.rating)):
                    best = second
            if best is not None:
                taken |= {first.player.id, best.player.id}
                found.append(Pair(first, best))
        return found

    def view(self, player_id: str, now: float) -> PoolView | None:
        """What ``player_id`` is told of their pool now; ``None`` if they wait in none."""
        waiter = self.waiters.get(player_id)
        if waiter is None:
            return None
        waiting = sum(other.pool == waiter.pool for other in self.waiters.values())
        waited = max(0.0, now - waiter.since)
        reach = self.range.after(waited)
        return PoolView(waiting, waiter.rating - reach, waiter.rating + reach, waited)

    def local(self, instance: str) -> list[Waiter]:
        """``instance``'s own waiters."""
        return [waiter for waiter in self.waiters.values() if waiter.instance == instance]
