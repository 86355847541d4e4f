"""The second kind of load: real bots (:class:`bots.client.BotPlayer`) at level 1, two per match.

Each bot is one connection that thinks in a small :class:`bots.pool.SearchPool`
of its process and sends each move with its search info, exactly as a fleet's
bots do; they play at their own pace, as fast as they think and the server
answers. A pair plays one match after another: one bot opens it, the other
joins. Their links are :class:`TimedLink`, which time each move from sending
to its reply.
"""

from __future__ import annotations

import asyncio

from bench.loadgen.recording import Recorder
from bots import wire
from bots.client import BotPlayer, BotSpec
from bots.link import REPLY_TIMEOUT_S, Link, RequestFailed
from bots.pool import SearchPool

RESULT_POLL_S = 0.25
"""How often a pair looks whether its match has ended (a new one may then start a little late)."""


class TimedLink(Link):
    """A bot's link that files the round trip of every move it sends with a :class:`Recorder`."""

    def __init__(self, url: str, name: str, owner: BotPlayer, recorder: Recorder, seed: int) -> None:
        super().__init__(url, name, owner, seed=seed)
        self.recorder = recorder

    async def request(self, request: wire.Request, timeout: float = REPLY_TIMEOUT_S) -> wire.Incoming:
        if not isinstance(request, wire.PlayMove):
            return await super().request(request, timeout)
        loop = asyncio.get_running_loop()
        sent_at = loop.time()
        try:
            reply = await super().request(request, timeout)
        except RequestFailed as error:
            self.recorder.error(error.error.code, loop.time())
            raise
        self.recorder.round_trip(sent_at, loop.time())
        return reply


def timed_bot(url: str, spec: BotSpec, pool: SearchPool, recorder: Recorder, seed: int) -> BotPlayer:
    bot = BotPlayer(url, spec, pool, seed=seed)
    bot.link = TimedLink(url, spec.name, bot, recorder, seed)
    return bot


class BotPair:
    """Two bots of one spec that play each other, one match after another."""

    def __init__(
        self, url: str, spec: BotSpec, pool: SearchPool, recorder: Recorder, time_control: str, seed: int
    ) -> None:
        self.spec = spec
        self.recorder = recorder
        self.time_control = time_control
        self.host = timed_bot(url, spec, pool, recorder, seed)
        self.guest = timed_bot(url, spec, pool, recorder, seed + 1)

    async def connect(self) -> None:
        for bot in (self.host, self.guest):
            bot.start()
            await bot.link.wait_connected(timeout=60.0)

    async def play_until(self, end: float) -> None:
        """Start matches until ``end`` (monotonic seconds); the last one may still be under way then."""
        loop = asyncio.get_running_loop()
        while loop.time() < end:
            match_id = await self.host.create(self.spec.game, time_control=self.time_control, seat=0)
            await self.guest.join(match_id)
            while match_id not in self.host.results:
                await asyncio.sleep(RESULT_POLL_S)
            self.recorder.game_ended(loop.time())

    async def close(self) -> None:
        await asyncio.gather(self.host.close(), self.guest.close())
