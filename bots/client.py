"""The bot client: one bot identity on one server, playing any number of matches over protocol v1.

A :class:`BotPlayer` is an ordinary WebSocket client. It says hello as a bot
whose name tells its style, game and level (``alphabeta-c4-L5``), takes seats
when asked (:meth:`BotPlayer.join`), and for each match it holds a seat in
keeps a :class:`MatchSession`: the event log it follows, the last sequence
number it applied, the moves, the clocks. When its side is to move it asks the
fleet's :class:`bots.pool.SearchPool` for a move, with a time budget from its
clock, and sends the move with the search's info. Each match has a seed of its
own, from which each of its searches gets one (:func:`move_seed`): two matches
choose differently between equal moves, and a seeded bot's match replays.

When the connection drops or the server restarts, its :class:`bots.link.Link`
reconnects and says hello with the bot's token; the bot then asks, for every
match it follows, for the events after the last sequence number it saw (or a
full state), and plays on. A move is always sent with the ply it answers, so a
move sent twice across a reconnection is recognised by the server, never
played twice. A match that the server answers ``hosted_elsewhere`` (another
instance sharing its database hosts it, or took it over) is handed to the bot's
owner (:attr:`BotPlayer.elsewhere`), which plays it on at its host with the same
token: the fleet does so (:mod:`bots.hosts`). Draw and rematch offers are
answered by :mod:`bots.manners`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from bots import wire
from bots.capacity import Capacity, Ticket
from bots.levels import level as level_row
from bots.link import DEFAULT_BACKOFF, Backoff, Link, RequestFailed
from bots.manners import DEFAULT_MANNERS, Manners
from bots.pool import PoolFailedError, SearchError, ThinkRequest, ThinkResult
from bots.session import MatchSession, move_seed
from bots.spec import BotSpec
from bots.timing import think_budget_ms
from games import get_game

log = logging.getLogger(__name__)

RETRY_CODES = frozenset({"rate_limited", "unavailable", "internal"})
"""Error codes after which a move is sent again (nothing changed on the server)."""
RETRY_DELAY_S = 0.25
HOSTED_ELSEWHERE = "hosted_elsewhere"
"""The error code of a request for a match another instance hosts; its ``url`` says where."""


class Thinker(Protocol):
    """What a bot asks for its moves: the fleet's search pool, or an outside engine (:mod:`bots.engine`).

    Raises :class:`bots.pool.SearchError` or :class:`bots.pool.PoolFailedError` when no move comes.
    """

    async def think(self, request: ThinkRequest) -> ThinkResult: ...


Elsewhere = Callable[["BotPlayer", MatchSession, str | None, bool], None]
"""Called with a match a bot followed that its server no longer hosts, the host's URL if it said, and
whether it knows the match at all (``False``: that server does not share the match's database)."""


class BotPlayer:
    """One bot on one server; see the module docstring.

    ``capacity`` is the fleet's game limit: every match the bot plays holds one
    of its tickets (it also decides rematches); ``seed`` makes the bot's choices
    among equal moves reproducible, match by match (the same match id, the same
    choices; without it each match is seeded at random); ``token`` comes back as
    an existing player (another connection of the same bot, or the same bot after
    a fleet restart); ``fleet_key``, the server's, lets its connection post notes
    for the fleet.
    """

    def __init__(
        self,
        url: str,
        spec: BotSpec,
        pool: Thinker,
        *,
        manners: Manners = DEFAULT_MANNERS,
        capacity: Capacity | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        seed: int | None = None,
        token: str | None = None,
        fleet_key: str | None = None,
        resume: Callable[[str], bool] | None = None,
        welcomed: Callable[[BotPlayer], None] | None = None,
        elsewhere: Elsewhere | None = None,
    ) -> None:
        self.url = url
        self.spec = spec
        self.pool = pool
        self.manners = manners
        self.capacity = capacity if capacity is not None else Capacity(None)
        self.link = Link(url, spec.name, self, token=token, fleet_key=fleet_key, backoff=backoff, seed=seed)
        self.resume = resume
        """Whether to take up a match the server says we sit in but this bot does not follow (``None``:
        every one). Asked about each such match of a welcome in turn, once the ones before it are taken
        up (so :attr:`playing` counts them): a fleet whose bot shares its identity over several
        connections leaves a match to the connection that plays it, and stops at the games one
        connection may play (the rest it gives to other connections, with :meth:`play_on`)."""
        self.welcomed = welcomed
        """Called after each ``welcome``, once the matches it lists are taken up (a fleet keeps the
        token, which is new after a refused one)."""
        self.elsewhere = elsewhere
        """Given each match this bot followed that its server says another instance hosts, with that
        host's URL (``None`` if the server knows none), or a match taken over that the server does not know:
        the session is no longer this bot's, its ticket still held, for a bot at the host to
        :meth:`take_over`. ``None``: the match is let go."""
        self.sessions: dict[str, MatchSession] = {}
        self.results: dict[str, wire.MatchResult] = {}
        """How each finished match ended, by match id."""
        self.seed = seed
        self._rng = random.Random()
        """Seeds the matches of a bot without a seed."""
        self._level_budget_ms = level_row(spec.game, spec.level).time_ms
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Connect in the background (and stay connected)."""
        if self._task is None:
            self._task = asyncio.create_task(self.link.run(), name=f"bot {self.spec.name} @ {self.url}")

    async def close(self) -> None:
        """Stop playing: cancel searches, give back every ticket, disconnect."""
        for session in self.sessions.values():
            self._forget(session)
        self.sessions.clear()
        for task in self._tasks:
            task.cancel()
        await self.link.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def __aenter__(self) -> BotPlayer:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def playing(self) -> int:
        """Matches this bot holds a seat in that have not ended."""
        return sum(1 for session in self.sessions.values() if not session.over)

    # ------------------------------------------------------------------ asking for seats

    async def join(self, match_id: str, seat: int | None = None, ticket: Ticket | None = None) -> None:
        """Take a seat in ``match_id`` (any free one if ``seat`` is ``None``) and play it.

        Raises :class:`bots.link.RequestFailed` if the server refuses (seat taken,
        match gone), ``ConnectionError`` or ``TimeoutError`` if it cannot be asked.
        ``ticket`` is released when the match ends, or at once if the seat is refused.
        """
        if match_id in self.sessions:
            raise ValueError(f"{self.spec.name} already plays match {match_id!r}")
        # Taken up before waiting for the link: a seat being asked for counts as a game played here.
        session = self._take_up(match_id, ticket)
        try:
            await self._connected()
            await self.link.request(wire.JoinMatch(match_id=match_id, seat=seat))
        except BaseException:
            if session.log is None and self.sessions.get(match_id) is session:  # we are not in this match
                self._forget(self.sessions.pop(match_id))
            raise

    async def create(
        self,
        game: str,
        *,
        time_control: str = "untimed",
        seat: int | str = "random",
        visibility: str = "public",
        bot: wire.BotRequest | None = None,
        ticket: Ticket | None = None,
    ) -> str:
        """Open a match, seated in it (e.g. asking a fleet for a ``bot`` opponent); returns its id."""
        await self._connected()
        reply = await self.link.request(
            wire.CreateMatch(game=game, time_control=time_control, seat=seat, visibility=visibility, bot=bot)
        )
        if not isinstance(reply, wire.MatchState):
            raise RuntimeError(f"expected match.state in reply to match.create, got {type(reply).__name__}")
        self._take_up(reply.match_id, ticket)
        return reply.match_id

    def play_on(self, match_id: str) -> None:
        """Take up a match this bot's player sits in that this connection does not follow, and catch up
        on it: a fleet hands it over from the welcome of another connection of the same player, which had
        no room for it. It takes a place in :attr:`capacity` like any other game.

        Raises ``ConnectionError`` if the bot is not connected now (one that is not welcomed yet takes up
        what its own welcome lists, as :attr:`resume` lets it).
        """
        if not self.link.connected.is_set():
            raise ConnectionError(f"{self.spec.name} is not connected to {self.url}")
        if match_id not in self.sessions:
            self._spawn(self._catch_up(self._take_up(match_id)))

    def hand_over(self, match_id: str) -> MatchSession | None:
        """Stop playing ``match_id`` here, keeping its places in :attr:`capacity`, so that a bot of the same
        player at another server plays it on (:meth:`take_over`); ``None`` if this bot does not play it."""
        session = self.sessions.pop(match_id, None)
        if session is not None:
            if session.thinking is not None:
                session.thinking.cancel()
            if session.leave_timer is not None:
                session.leave_timer.cancel()
                session.leave_timer = None
        return session

    def take_over(self, session: MatchSession) -> None:
        """Play on a match a bot of the same player handed over (:meth:`hand_over`): catch up on it now if
        connected, else once welcomed."""
        if session.match_id in self.sessions:
            raise ValueError(f"{self.spec.name} already plays match {session.match_id!r}")
        self.sessions[session.match_id] = session
        session.taken_over = True
        if self.link.connected.is_set():
            self._spawn(self._catch_up(session))

    async def _connected(self) -> None:
        self.start()
        await self.link.wait_connected()

    # ------------------------------------------------------------------ link callbacks

    async def on_welcome(self, welcome: wire.Welcome) -> None:
        """(Re)connected: catch up on every match we follow, and on those the server says we sit in that
        :attr:`resume` lets us take up."""
        followed = [
            match_id
            for match_id, session in self.sessions.items()
            if session.log is not None or session.taken_over
        ]
        for match_id in followed:
            self._spawn(self._catch_up(self._take_up(match_id)))
        # Listed but not followed: one we never heard of, or one whose join reply the drop swallowed. Each is
        # taken up before resume is asked about the next.
        for match_id in dict.fromkeys(welcome.matches):
            session = self.sessions.get(match_id)
            if session is not None and (session.log is not None or session.taken_over):
                continue
            if self.resume is None or self.resume(match_id):
                self._spawn(self._catch_up(self._take_up(match_id)))
        if self.welcomed is not None:
            self.welcomed(self)

    async def on_message(self, message: wire.Incoming) -> None:
        if isinstance(message, wire.MatchState):
            self._adopt(message)
        elif isinstance(message, wire.MatchCatchup):
            session = self.sessions.get(message.match_id)
            if session is None:
                return
            if message.log != session.log:
                self._spawn(self._catch_up(session, full=True))
                return
            for event in message.events:
                await self._apply(session, event)
        elif isinstance(message, wire.MatchEvent):
            session = self.sessions.get(message.match_id)
            if session is not None:
                await self._apply(session, message)
        elif isinstance(message, wire.Error) and message.id is None:
            log.warning("%s: server error %s: %s", self.spec.name, message.code, message.message)
        elif isinstance(message, wire.Unknown):
            pass  # already logged by the link
        if isinstance(message, wire.MatchState | wire.MatchCatchup | wire.MatchEvent):
            session = self.sessions.get(message.match_id)
            if session is not None:
                self._think_if_our_turn(session)

    # ------------------------------------------------------------------ following a match

    async def _catch_up(self, session: MatchSession, *, full: bool = False) -> None:
        """Ask for what we missed of ``session`` (everything, if ``full`` or we never saw its state)."""
        if full or session.log is None:
            request = wire.WatchMatch(match_id=session.match_id)
        else:
            request = wire.WatchMatch(match_id=session.match_id, since=session.seq, log=session.log)
        try:
            await self.link.request(request)
        except RequestFailed as error:
            if self.sessions.get(session.match_id) is not session:
                return  # handed over meanwhile
            if error.error.code == HOSTED_ELSEWHERE or (
                error.error.code == "not_found" and session.taken_over
            ):
                # (a match taken over and not found here: this server does not share the database it is in)
                self._relocate(session, error.error.url, found=error.error.code == HOSTED_ELSEWHERE)
            elif error.error.code == "not_found":
                log.warning("%s: match %s is gone from %s", self.spec.name, session.match_id, self.url)
                self._forget(self.sessions.pop(session.match_id))
            else:
                log.warning("%s: cannot follow %s: %s", self.spec.name, session.match_id, error)
        except (ConnectionError, TimeoutError) as error:
            log.info("%s: catching up on %s failed (%s); will retry on reconnect", self.spec.name,
                     session.match_id, error)  # fmt: skip

    def _relocate(self, session: MatchSession, url: str | None, *, found: bool) -> None:
        """The server says another instance hosts ``session``'s match (``found``), or knows no such match:
        hand it to :attr:`elsewhere`."""
        where = url or "another instance" if found else "no instance sharing this server's database"
        log.info("%s: match %s is hosted at %s, not %s", self.spec.name, session.match_id, where, self.url)
        self.hand_over(session.match_id)
        if self.elsewhere is not None:
            self.elsewhere(self, session, url, found)
        else:
            self._forget(session)

    def _adopt(self, state: wire.MatchState) -> None:
        """Start over from a full state of the match."""
        session = self.sessions.get(state.match_id)
        if session is None:
            if state.you is None:
                return  # a match we only looked at
            session = self._take_up(state.match_id)
        session.log = state.log
        session.seq = state.seq
        session.game = state.game
        session.status = state.status
        session.you = state.you
        session.moves = list(state.moves)
        session.position = get_game(state.game).replay(state.moves)
        session.time_control = state.options.time_control
        self._set_clocks(session, state.clocks_ms)
        if session.over:
            self._finished(session, state.result or wire.MatchResult(state.status, None, state.status))
        offered = state.rematch_offer if session.over else state.draw_offer
        if offered is not None and offered != session.you:
            self._spawn(self._answer_rematch(session) if session.over else self._answer_offer(session))

    async def _apply(self, session: MatchSession, event: wire.MatchEvent) -> None:
        """Apply one event in sequence; a gap means we missed some: ask for them."""
        if session.log is None or event.seq <= session.seq:
            return  # before our first state, or a duplicate
        if event.seq != session.seq + 1:
            self._spawn(self._catch_up(session))
            return
        session.seq = event.seq
        if isinstance(event, wire.Started):
            session.status = "live"
            self._set_clocks(session, event.clocks_ms)
        elif isinstance(event, wire.Moved):
            if not self._record_move(session, event):
                self._spawn(self._catch_up(session, full=True))
        elif isinstance(event, wire.Ended):
            session.status = event.status
            self._set_clocks(session, event.clocks_ms)
            self._finished(session, wire.MatchResult(event.status, event.winner, event.reason))
        elif isinstance(event, wire.DrawOffered | wire.TakebackOffered) and event.seat != session.you:
            await self._answer_offer(session, event)
        elif isinstance(event, wire.RematchOffered) and event.seat != session.you:
            await self._answer_rematch(session)
        elif isinstance(event, wire.RematchDeclined | wire.RematchStarted):
            self._rematch_settled(session, event)

    def _record_move(self, session: MatchSession, event: wire.Moved) -> bool:
        """Play ``event``'s move on our copy; ``False`` if it does not fit (we are out of sync)."""
        if event.ply != session.ply or session.position is None:
            log.warning("%s: %s: move %r answers ply %d but we are at %d; resyncing", self.spec.name,
                        session.match_id, event.move, event.ply, session.ply)  # fmt: skip
            return False
        session.position = session.position.play(session.position.parse_move(event.move))
        session.moves.append(event.move)
        self._set_clocks(session, event.clocks_ms)
        return True

    def _set_clocks(self, session: MatchSession, clocks_ms: list[int] | None) -> None:
        session.clocks_ms = list(clocks_ms) if clocks_ms is not None else None
        session.clocks_seen_at = time.monotonic()

    # ------------------------------------------------------------------ playing

    def _think_if_our_turn(self, session: MatchSession) -> None:
        if not session.our_turn or (session.position is not None and session.position.outcome() is not None):
            return  # (a move that ended the game is sent before the game's end: nothing to answer)
        if session.thinking is not None and not session.thinking.done():
            if session.thinking_ply == session.ply:
                return  # already thinking about this ply
            # Still resending a move for a ply the game has left (its answer was lost, and the
            # catch-up shows it played): it would give up at its next look, but nothing would then
            # start the search for this ply.
            session.thinking.cancel()
        session.thinking_ply = session.ply
        name = f"{self.spec.name} {session.match_id} ply {session.ply}"
        session.thinking = asyncio.get_running_loop().create_task(
            self._think_and_move(session, session.ply), name=name
        )

    async def _think_and_move(self, session: MatchSession, ply: int) -> None:
        clock = session.clock()
        request = ThinkRequest(
            game=session.game,
            moves=tuple(session.moves),
            level=self.spec.level,
            budget_ms=think_budget_ms(self._level_budget_ms, clock),
            seed=move_seed(session.seed, ply),
            # Waiting for a worker costs clock time, so it comes off a clock's budget; an untimed
            # level's budget is its search time, counted from when the search starts.
            submitted_at=time.time() if clock is not None else None,
        )
        try:
            result = await self.pool.think(request)
        except (SearchError, PoolFailedError):
            log.exception("%s: search failed in %s; playing a random move", self.spec.name, session.match_id)
            # Nothing searched it, so it goes without search info.
            move = wire.PlayMove(match_id=session.match_id, ply=ply, move=session.any_move())
        else:
            session.last_score = result.score
            move = wire.PlayMove(
                match_id=session.match_id, ply=ply, move=result.move, engine=_engine_info(result)
            )
        while session.ply == ply and session.our_turn:
            await self.link.connected.wait()
            try:
                await self.link.request(move)
                return
            except RequestFailed as error:
                if error.error.code not in RETRY_CODES:
                    if error.error.code == HOSTED_ELSEWHERE:
                        self._spawn(self._catch_up(session))  # which follows the match to its host
                    elif error.error.code not in ("stale_ply", "not_your_turn", "match_over"):
                        log.error("%s: move %s refused in %s: %s", self.spec.name, move.move,
                                  session.match_id, error)  # fmt: skip
                    return
            except (ConnectionError, TimeoutError):
                pass  # resent once reconnected, unless the catch-up shows it was played
            await asyncio.sleep(RETRY_DELAY_S)

    # ------------------------------------------------------------------ offers and endings

    async def _answer_offer(self, session: MatchSession, offer: wire.MatchEvent | None = None) -> None:
        """Answer a draw offer (``offer`` ``None`` or a ``draw.offered``) or a takeback request (declined:
        bots/manners.py)."""
        if isinstance(offer, wire.TakebackOffered):
            answer: type[wire.DeclineTakeback | wire.AcceptDraw | wire.DeclineDraw] = wire.DeclineTakeback
        else:
            answer = wire.AcceptDraw if self.manners.accepts_draw(session.last_score) else wire.DeclineDraw
        await self.link.send(answer(match_id=session.match_id))

    async def _answer_rematch(self, session: MatchSession) -> None:
        if session.rematch_ticket is not None:
            return  # already accepted
        ticket = self.capacity.claim(f"rematch of {session.match_id}")
        if ticket is not None and self.manners.accepts_rematch(has_room=True):
            session.rematch_ticket = ticket
            await self.link.send(wire.AcceptRematch(match_id=session.match_id))
            return
        if ticket is not None:
            ticket.release()
        await self.link.send(wire.DeclineRematch(match_id=session.match_id))

    def _rematch_settled(self, session: MatchSession, event: wire.MatchEvent) -> None:
        ticket, session.rematch_ticket = session.rematch_ticket, None
        if isinstance(event, wire.RematchStarted):
            # The server follows the new match for us (its match.state comes next), and the old one no
            # more: that session ends here, with nothing to leave.
            if self.sessions.get(session.match_id) is session:
                del self.sessions[session.match_id]
                self._forget(session)
            if ticket is not None:
                self._take_up(event.new_match_id, ticket)
        elif ticket is not None:
            ticket.release()

    def _finished(self, session: MatchSession, result: wire.MatchResult) -> None:
        """The game is over: give back its place, and leave once a rematch can no longer come."""
        self.results[session.match_id] = result
        if session.ticket is not None:
            session.ticket.release()
        if session.thinking is not None:
            session.thinking.cancel()
        if session.leave_timer is None:
            log.info("%s: %s ended (%s, winner %s)", self.spec.name, session.match_id, result.reason,
                     result.winner)  # fmt: skip
            session.leave_timer = asyncio.get_running_loop().call_later(
                self.manners.rematch_window_s, lambda: self._spawn(self._leave(session.match_id))
            )

    async def _leave(self, match_id: str) -> None:
        session = self.sessions.pop(match_id, None)
        if session is None:
            return
        self._forget(session)
        await self.link.send(wire.LeaveMatch(match_id=match_id))

    def _take_up(self, match_id: str, ticket: Ticket | None = None) -> MatchSession:
        """The session of a match we play, holding one place in :attr:`capacity` for as long as it lasts.

        Every way into a match comes here (a join, a create, a rematch, a match the server's welcome
        lists after a reconnection or a fleet's restart), so each game counts once against the fleet's
        limit. The place is ``ticket`` when the caller claimed one before asking for the seat (so two
        lobbies cannot both take the last place); otherwise it is taken now, even past the limit: a
        game already under way must be played, not forfeited.
        """
        session = self.sessions.get(match_id)
        if session is None:
            session = self.sessions[match_id] = MatchSession(match_id, self.match_seed(match_id))
        if session.ticket is None:
            session.ticket = ticket if ticket is not None else self.capacity.claim_even_if_full(match_id)
        elif ticket is not None and ticket is not session.ticket:
            ticket.release()  # the match holds a place already
        return session

    def match_seed(self, match_id: str) -> int:
        """The seed of match ``match_id``'s searches: from the bot's seed and the match id where the bot
        has a seed (so a seeded match replays), else at random (so no two matches are alike)."""
        if self.seed is None:
            return self._rng.getrandbits(64)
        return random.Random(f"{self.seed}/{match_id}").getrandbits(64)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run ``coroutine`` beside the reading loop (see :meth:`bots.link.LinkOwner.on_message`)."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: %s failed", self.spec.name, task.get_coro(), exc_info=task.exception())

    def _forget(self, session: MatchSession) -> None:
        for ticket in (session.ticket, session.rematch_ticket):
            if ticket is not None:
                ticket.release()
        if session.thinking is not None:
            session.thinking.cancel()
        if session.leave_timer is not None:
            session.leave_timer.cancel()


def _engine_info(result: ThinkResult) -> wire.EngineInfo:
    """What the search said of its move, for the server to keep: its own time, not the pool's wait."""
    return wire.EngineInfo(
        score=result.score,
        depth=result.depth,
        nodes=result.nodes,
        pv=list(result.pv[: wire.MAX_PV_LENGTH]),
        time_ms=result.think_ms,
        source=result.source,
    )
