"""A match as a pure state machine: intents in, events and records out.

Like the sans-I/O core of ``websockets``, nothing here touches a socket, the
database or the time: each intent is a method of the immutable :class:`Match`
that takes ``now`` (monotonic seconds) and returns a :class:`Step` holding the
match's next state, the events to broadcast (numbered by ``seq``) and the
effects to commit first, or raises :class:`~server.errors.ProtocolError`.
The server commits a step's effects, and only then adopts its state and sends
its events, so a refused request or a failed commit changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec.structs import replace

from games import GAMES, Game, IllegalMoveError, Position
from server import protocol
from server.clock import Clock, TimeControl
from server.errors import ErrorCode, ProtocolError
from server.protocol import EngineInfo, MatchEvent, MatchOptions, PlayerInfo
from server.protocol_base import MAX_CHAT_LENGTH
from server.steps import (
    CreateRematch,
    Effect,
    Finish,
    SaveChat,
    SaveFinish,
    SaveMove,
    SaveSeat,
    SaveStart,
    Step,
)
from server.text import clean_text

CHAT_KEPT = 50
"""Chat lines a match keeps for ``match.state``, and a restarted server reads back from the store."""
MAX_THINK_MS = 2**31 - 1
"""A move's thinking time is stored as a 32-bit integer: a move after more than 24.8 days on an
untimed match is stored as thought over for that long, rather than refused."""

OPEN, LIVE, FINISHED, ABORTED = "open", "live", "finished", "aborted"


class Match(msgspec.Struct, frozen=True, gc=False):
    """Everything the server knows about one match, as an immutable value.

    A struct rather than a dataclass for its C ``replace``: every intent makes a
    new match, and ``dataclasses.replace`` took about 6% of a loaded server's time.
    Its effects, its :class:`Step` and its clock are structs too, for their C
    ``__init__`` (see :mod:`server.storage.records`).
    Untracked by the garbage collector (``gc=False``), like the protocol's
    messages: it holds only values (positions, strings, numbers, other structs),
    so it can never close a reference cycle, and each move's new match would
    otherwise wait, with its commit, through a young and a middle collection.
    """

    id: str
    game: Game
    options: MatchOptions
    control: TimeControl | None
    grace_s: float
    """How long a seated player may stay disconnected before losing (or, while open, cancelling)."""
    status: str = OPEN
    seats: tuple[PlayerInfo | None, PlayerInfo | None] = (None, None)
    positions: tuple[Position, ...] = ()
    moves: tuple[str, ...] = ()
    clock: Clock | None = None
    turn_started: float | None = None
    draw_offer: int | None = None
    takeback_offer: int | None = None
    """The seat asking for a takeback (:mod:`server.offers`), until answered or a move is played."""
    move_clocks: tuple[tuple[int, int] | None, ...] = ()
    """Both remaining times after each move, as stored with it: where a takeback sets the clocks back."""
    rematch_offer: int | None = None
    rematch_agreed_id: str | None = None
    """The id of the rematch both players asked for during play: it starts as this game ends."""
    rematch_id: str | None = None
    result: protocol.MatchResult | None = None
    chat_lines: tuple[protocol.ChatLine, ...] = ()
    """The last :data:`CHAT_KEPT` chat lines, for ``match.state`` (a reloaded page shows them again)."""
    chat_count: int = 0
    """How many chat lines the match has stored, for the cap on them (see :meth:`chat`)."""
    connected: tuple[bool, bool] = (False, False)
    absent_since: tuple[float | None, float | None] = (None, None)
    seq: int = 0

    # ----------------------------------------------------------------- construction

    @classmethod
    def open(cls, match_id: str, game: Game, options: MatchOptions, grace_s: float) -> Match:
        """A new match with no one seated. Raises ``ValueError`` for a bad time control."""
        control = TimeControl.parse(options.time_control)
        return cls(match_id, game, options, control, grace_s, positions=(game.start(),))

    # ----------------------------------------------------------------- reading

    @property
    def position(self) -> Position:
        return self.positions[-1]

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def rated(self) -> bool:
        """Whether the game counts for people's ratings."""
        return self.options.rated

    @property
    def is_over(self) -> bool:
        return self.status in (FINISHED, ABORTED)

    @property
    def creator_away(self) -> bool:
        """Open, and the player who opened it is gone: it ends with their grace period unless they come
        back, so meanwhile no one may join it (a bot or a person would only win by forfeit)."""
        return self.status == OPEN and any(
            player is not None and not here for player, here in zip(self.seats, self.connected, strict=True)
        )

    def seat_of(self, player_id: str) -> int | None:
        first, second = self.seats  # (two seats, no loop: every request of a player asks this)
        if first is not None and first.id == player_id:
            return 0
        if second is not None and second.id == player_id:
            return 1
        return None

    def clocks_ms(self, now: float) -> tuple[int, int] | None:
        return None if self.clock is None else self.clock.remaining(now)

    def deadline(self) -> float | None:
        """The next time :meth:`tick` has something to decide (a flag, an expired grace), if any."""
        status = self.status  # (every move asks: no call to :attr:`is_over`)
        if status in (FINISHED, ABORTED):
            return None
        flag = self.clock.deadline() if status == LIVE and self.clock is not None else None
        if self.absent_since == (None, None):  # (nearly always: no one is away, only the clock can decide)
            return flag
        times = [since + self.grace_s for since in self.absent_since if since is not None]
        if flag is not None:
            times.append(flag)
        return min(times, default=None)

    def state(self, *, log: str, now: float, viewer: str | None) -> protocol.MatchState:
        """The full ``match.state`` for ``viewer`` (a player id, or ``None``)."""
        live = self.status == LIVE
        return protocol.MatchState(
            match_id=self.id,
            log=log,
            seq=self.seq,
            game=self.game.name,
            options=self.options,
            status=self.status,
            seats=list(self.seats),
            moves=list(self.moves),
            display=self.game.displayed(self.positions, self.moves),
            turn=self.position.turn if live else None,
            clocks_ms=self.clocks_ms(now),
            clock_running=self.clock.running if live and self.clock else None,
            connected=list(self.connected),
            grace_left_ms=[
                None if since is None else max(0, round((since + self.grace_s - now) * 1000))
                for since in self.absent_since
            ],
            draw_offer=self.draw_offer,
            takeback_offer=self.takeback_offer,
            rematch_offer=self.rematch_offer,
            rematch_agreed=self.rematch_agreed_id is not None,
            result=self.result,
            you=self.seat_of(viewer) if viewer else None,
            board=self.position.grid(),
            legal=tuple(self.position.legal_notation()) if live else (),
            chat=list(self.chat_lines),
            rematch_id=self.rematch_id,
        )

    # ----------------------------------------------------------------- intents

    def join(self, player: PlayerInfo, seat: int | None, now: float) -> Step:
        """Seat ``player`` (in ``seat``, or the first free one); the match starts once both are seated."""
        self._require_not_over()
        if (held := self.seat_of(player.id)) is not None:
            raise ProtocolError(ErrorCode.NOT_ALLOWED, f"you already hold seat {held} of match {self.id}")
        if self.status != OPEN:
            raise ProtocolError(ErrorCode.SEAT_TAKEN, f"match {self.id} has started: watch it instead")
        if self.creator_away:
            raise ProtocolError(
                ErrorCode.NOT_ALLOWED,
                f"the player who opened match {self.id} has gone: it can be joined if they come back",
            )
        free = [s for s in (0, 1) if self.seats[s] is None]
        if seat is None:
            seat = free[0]
        elif seat not in free:
            raise ProtocolError(ErrorCode.SEAT_TAKEN, f"seat {seat} of match {self.id} is taken")
        seats = list(self.seats)
        seats[seat] = player
        match = replace(self, seats=(seats[0], seats[1]))
        match = match._present(seat, now)
        events: list[MatchEvent] = [protocol.Seated(match_id=self.id, seq=0, seat=seat, player=player)]
        effects: list[Effect] = [SaveSeat(seat, player)]
        if None not in match.seats:
            clock = None if self.control is None else Clock.new(self.control).start(match.position.turn, now)
            match = replace(match, status=LIVE, clock=clock, turn_started=now)
            position = match.position
            events.append(
                protocol.Started(
                    match_id=self.id,
                    seq=0,
                    clocks_ms=match.clocks_ms(now),
                    turn=position.turn,
                    board=position.grid(),
                    legal=tuple(position.legal_notation()),
                )
            )
            effects.append(SaveStart())
        return match._step(events, effects)

    def move(self, player_id: str, ply: int, text: str, engine: EngineInfo | None, now: float) -> Step:
        """Play ``text`` for the player, answering ``ply``; a repeat of the move at that ply is a no-op."""
        seat = self._require_seat(player_id)
        if ply < len(self.moves) and self._played(ply, seat, text):
            return Step(self, duplicate=True)
        self._require_turn(seat, ply, now)
        position = self.positions[-1]
        try:
            chosen = position.parse_move(text)
            after = position.play(chosen)
        except IllegalMoveError as error:
            raise ProtocolError(ErrorCode.ILLEGAL_MOVE, f"{text!r}: {error.reason}") from None
        return self._advance(seat, ply, position.format_move(chosen), after, engine, now)

    def resign(self, player_id: str, now: float) -> Step:
        seat = self._require_seat(player_id)
        self._require_live()
        return self._finish(Finish(FINISHED, 1 - seat, f"seat {seat} resigned"), now)

    def abort(self, player_id: str, now: float) -> Step:
        """Call the match off: always while it is open, once live only until both sides have moved."""
        seat = self._require_seat(player_id)
        self._require_not_over()
        if self.status == LIVE and self.ply >= 2:
            raise ProtocolError(
                ErrorCode.NOT_ALLOWED, "both sides have moved: resign or offer a draw instead"
            )
        return self._finish(Finish(ABORTED, None, f"aborted by seat {seat}"), now)

    def chat(self, player_id: str, text: str, now: float, max_lines: int = 0) -> Step:
        """A chat line from a seated player (spectators watch, they do not speak); refused once the match
        has stored ``max_lines`` (0: no cap), so that no one fills the store through one match."""
        seat = self._require_seat(player_id)
        player = self.seats[seat]
        assert player is not None
        line = clean_text(text, "chat text", MAX_CHAT_LENGTH)
        if max_lines and self.chat_count >= max_lines:
            raise ProtocolError(
                ErrorCode.NOT_ALLOWED,
                f"this match's chat is full: it holds the most lines it may ({max_lines})",
            )
        chat = protocol.ChatLine(match_id=self.id, seq=self.seq + 1, seat=seat, name=player.name, text=line)
        kept = (*self.chat_lines, chat)[-CHAT_KEPT:]
        return replace(self, chat_lines=kept, chat_count=self.chat_count + 1)._step([chat], [SaveChat(chat)])

    def end_as_stored(self, finish: Finish, now: float, *, rematch: bool) -> Step:
        """End the match as the store says it ended (a result whose commit answer was lost): announced,
        with nothing left to commit. ``rematch``: the rematch agreed during play is stored too (it
        commits with the result that starts it), so it starts; else it lapses."""
        if self.is_over:
            return Step(self)
        match, ended = self._end(finish, now)
        return replace(match._closing_step((ended,), (), now, rematch=rematch), stored=True)

    def end_by_rule(self, finish: Finish, now: float) -> Step:
        """End the match by a server rule (a stalled bot game, :mod:`server.stalls`); no rematch starts."""
        self._require_not_over()
        return self._finish(finish, now, left=True)

    def connect(self, player_id: str, now: float) -> Step:
        """A seated player has a connection following the match again."""
        seat = self.seat_of(player_id)
        if seat is None or self.connected[seat]:
            return Step(self)
        event = protocol.PresenceChanged(match_id=self.id, seq=0, seat=seat, connected=True, grace_ms=None)
        return self._present(seat, now)._step([event])

    def disconnect(self, player_id: str, now: float) -> Step:
        """A seated player's last connection to the match is gone: the grace period starts."""
        seat = self.seat_of(player_id)
        if seat is None or not self.connected[seat]:
            return Step(self)
        connected = list(self.connected)
        absent = list(self.absent_since)
        connected[seat] = False
        absent[seat] = None if self.is_over else now
        match = replace(self, connected=(connected[0], connected[1]), absent_since=(absent[0], absent[1]))
        grace_ms = None if self.is_over else round(self.grace_s * 1000)
        event = protocol.PresenceChanged(
            match_id=self.id, seq=0, seat=seat, connected=False, grace_ms=grace_ms
        )
        return match._step([event])

    def tick(self, now: float) -> Step:
        """Decide what time alone decides: a flag fall, or a player gone past the grace period."""
        if self.is_over:
            return Step(self)
        flagged = self._flagged(now)
        if flagged is not None:
            return self._finish(Finish(FINISHED, 1 - flagged, f"seat {flagged} ran out of time"), now)
        if self.absent_since == (None, None):  # (nearly always: no one is away, no grace to run out)
            return Step(self)
        return self._grace_over(now)

    # ----------------------------------------------------------------- helpers

    def _require_seat(self, player_id: str) -> int:
        seat = self.seat_of(player_id)
        if seat is None:
            raise self._not_a_player()
        return seat

    def _not_a_player(self) -> ProtocolError:
        return ProtocolError(ErrorCode.NOT_A_PLAYER, f"you hold no seat in match {self.id}")

    def _require_not_over(self) -> None:
        if self.is_over:
            assert self.result is not None
            raise ProtocolError(ErrorCode.MATCH_OVER, f"match {self.id} is over: {self.result.reason}")

    def _require_live(self) -> None:
        self._require_not_over()
        if self.status == OPEN:
            raise ProtocolError(ErrorCode.NOT_STARTED, f"match {self.id} is waiting for a player")

    def _played(self, ply: int, seat: int, text: str) -> bool:
        """Whether ``seat`` played ``text`` at ``ply``, in whichever spelling the game reads (``B2`` for
        ``b2``, a checkers jump ``13x31`` for ``13x22x31``): a client sending its move again after a lost
        answer."""
        position = self.positions[ply]
        if position.turn != seat:
            return False
        try:
            return position.format_move(position.parse_move(text)) == self.moves[ply]
        except IllegalMoveError:
            return False

    def _require_turn(self, seat: int, ply: int, now: float) -> None:
        """Refuse a move from ``seat`` answering ``ply`` unless the match is live, time has not run out,
        it is that seat's turn and the move answers the last ply played."""
        if self.status != LIVE:  # (a live match is neither open nor over: no call to say so)
            self._require_live()
        if self._flagged(now) is not None:
            raise ProtocolError(ErrorCode.MATCH_OVER, f"time ran out in match {self.id}")
        turn = self.positions[-1].turn
        if turn != seat:
            raise ProtocolError(ErrorCode.NOT_YOUR_TURN, f"it is seat {turn}'s turn in match {self.id}")
        played = len(self.moves)
        if ply != played:
            raise ProtocolError(
                ErrorCode.STALE_PLY, f"match {self.id} is at ply {played}; your move answers ply {ply}"
            )

    def _advance(
        self, seat: int, ply: int, notation: str, after: Position, engine: EngineInfo | None, now: float
    ) -> Step:
        """The step of a checked move that led to ``after``: the match one ply on, its ``moved`` event and
        the move to store, and the game's end in the same step when the move ends it."""
        outcome = after.outcome()
        finish = None if outcome is None else Finish(FINISHED, outcome.winner, outcome.reason)
        clock = self._pressed(after.turn, finish, now)
        think_ms = self._think_ms(now)
        # A move that does not end the game is numbered here, so that its match is made once (most moves);
        # one that does is numbered with the game's end, in :meth:`_closing_step`.
        seq = self.seq + 1 if finish is None else self.seq
        # Both times as they stand now: the clock just pressed (or stopped) has run for no time yet.
        clocks = None if clock is None else clock.remaining_ms
        match = replace(
            self,
            positions=(*self.positions, after),
            moves=(*self.moves, notation),
            move_clocks=(*self.move_clocks, clocks),
            clock=clock,
            turn_started=now,
            draw_offer=None if self.draw_offer == 1 - seat else self.draw_offer,
            takeback_offer=None,
            seq=seq,
        )
        shown = self.game.displayed(self.positions[-1:], (notation,))  # SAN, in chess
        moved = protocol.Moved(
            match_id=self.id,
            seq=seq if finish is None else 0,
            ply=ply,
            seat=seat,
            move=notation,
            display=shown[0] if shown else None,
            think_ms=think_ms,
            clocks_ms=clocks,
            board=after.grid(),
            legal=tuple(after.legal_notation()),
            # A bot's search is kept from everyone until the game is over: its opponent would read the
            # bot's plan (stored with the move, it is in the record once the match is over).
            engine=engine if finish is not None else None,
        )
        saved = SaveMove(ply, seat, notation, think_ms, clocks, engine, finish)
        if finish is None:
            return Step(match, (moved,), (saved,))
        match, ended = match._end(finish, now)
        return match._closing_step((moved, ended), (saved,), now)

    def _pressed(self, turn: int, finish: Finish | None, now: float) -> Clock | None:
        """The clock once a move is played: ``turn``'s time running, or both stopped if the game is over."""
        clock = self.clock
        if clock is None:
            return None
        clock = clock.press(turn, now)
        return clock if finish is None else clock.stop(now)

    def _think_ms(self, now: float) -> int:
        """How long the mover thought, in the milliseconds the store can hold (see :data:`MAX_THINK_MS`)."""
        if self.turn_started is None:
            return 0
        thought = round((now - self.turn_started) * 1000)
        return 0 if thought < 0 else thought if thought < MAX_THINK_MS else MAX_THINK_MS

    def _flagged(self, now: float) -> int | None:
        """The seat whose time has run out in this live match, if any."""
        if self.status != LIVE or self.clock is None:
            return None
        return self.clock.flagged(now)

    def _grace_over(self, now: float) -> Step:
        """End the match for a player away past the grace period: an open match is cancelled, a match with
        both players away is abandoned (neither may win by the other's absence), else the one away loses."""
        gone = [since is not None and now >= since + self.grace_s for since in self.absent_since]
        if not any(gone):
            return Step(self)
        if self.status == OPEN:
            return self._finish(Finish(ABORTED, None, "the player who opened the match left"), now)
        if None not in self.absent_since:
            return self._finish(Finish(ABORTED, None, "both players left"), now)
        seat = gone.index(True)
        return self._finish(
            Finish(FINISHED, 1 - seat, f"seat {seat} left and did not come back"), now, left=True
        )

    def _require_rematch_possible(self) -> None:
        if self.status == OPEN:
            raise ProtocolError(ErrorCode.NOT_STARTED, f"match {self.id} is waiting for a player")
        if None in self.seats:
            raise ProtocolError(ErrorCode.NOT_ALLOWED, f"match {self.id} never had two players")
        if self.rematch_id is not None:
            raise ProtocolError(ErrorCode.NOT_ALLOWED, f"the rematch has started as match {self.rematch_id}")

    def _require_rematch_to_agree(self) -> None:
        self._require_rematch_possible()
        if self.rematch_agreed_id is not None:
            raise ProtocolError(ErrorCode.NOT_ALLOWED, "the rematch is agreed: it starts when this game ends")

    def _present(self, seat: int, now: float) -> Match:
        connected = list(self.connected)
        absent = list(self.absent_since)
        connected[seat], absent[seat] = True, None
        return replace(self, connected=(connected[0], connected[1]), absent_since=(absent[0], absent[1]))

    def _end(self, finish: Finish, now: float) -> tuple[Match, protocol.Ended]:
        clock = None if self.clock is None else self.clock.stop(now)
        result = protocol.MatchResult(status=finish.status, winner=finish.winner, reason=finish.reason)
        match = replace(
            self,
            status=finish.status,
            clock=clock,
            result=result,
            draw_offer=None,
            takeback_offer=None,
            absent_since=(None, None),
        )
        ended = protocol.Ended(
            match_id=self.id,
            seq=0,
            status=finish.status,
            winner=finish.winner,
            reason=finish.reason,
            clocks_ms=match.clocks_ms(now),
        )
        return match, ended

    def _finish(self, finish: Finish, now: float, *, left: bool = False) -> Step:
        """End the match now (not by a move); ``left``: because a player stayed away."""
        match, ended = self._end(finish, now)
        return match._closing_step((ended,), (SaveFinish(finish),), now, rematch=not left)

    def _closing_step(
        self, events: tuple[MatchEvent, ...], effects: tuple[Effect, ...], now: float, *, rematch: bool = True
    ) -> Step:
        """The step that ends the match (``self`` is already over), with the rematch agreed during play
        if there is one: it starts in the same step, unless the game was aborted or a player left."""
        new_match_id = self.rematch_agreed_id
        if new_match_id is None:
            return self._step(events, effects)
        over = replace(self, rematch_agreed_id=None)
        if not rematch or self.status != FINISHED:
            return over._step(events, effects)
        match, started, create = over._rematch(new_match_id, now)
        return match._step((*events, started), (*effects, create))

    def _rematch(self, new_match_id: str, now: float) -> tuple[Match, protocol.RematchStarted, CreateRematch]:
        """This finished match pointing to its rematch, the event that announces it and the effect that
        stores it: a new match with the same options, seats swapped, live at once.

        The players' connections go on to the rematch, so the finished match has them away, and its
        ``rematch.started`` says where they went (the players get no ``presence`` of their own going).
        """
        rematch = Match.open(new_match_id, self.game, self.options, self.grace_s)
        for new_seat, player in ((0, self.seats[1]), (1, self.seats[0])):
            assert player is not None
            rematch = rematch.join(player, new_seat, now).match
        absent = tuple(None if connected else now for connected in self.connected)
        rematch = replace(rematch, seq=0, connected=self.connected, absent_since=(absent[0], absent[1]))
        started = protocol.RematchStarted(match_id=self.id, seq=0, new_match_id=new_match_id)
        over = replace(
            self,
            rematch_offer=None,
            rematch_id=new_match_id,
            connected=(False, False),
            absent_since=(None, None),
        )
        return over, started, CreateRematch(rematch)

    def _step(self, events: Sequence[MatchEvent], effects: Sequence[Effect] = ()) -> Step:
        """Number ``events`` after this match's last event and wrap everything in a :class:`Step`."""
        seq = self.seq
        if len(events) == 1:  # (most steps, a move's among them: no comprehension to call)
            numbered: tuple[MatchEvent, ...] = (replace(events[0], seq=seq + 1),)
        else:
            numbered = tuple([replace(event, seq=seq + index) for index, event in enumerate(events, start=1)])
        return Step(replace(self, seq=seq + len(numbered)), numbered, tuple(effects))


def requested_game(game_name: str, time_control: str) -> tuple[Game, TimeControl | None]:
    """The game and time control (``None``: untimed) a request for a new match names (``match.create``,
    ``pool.join``), refused as the protocol says: ``not_found`` for an unknown game, ``bad_field`` for a
    bad control."""
    game = GAMES.get(game_name)
    if game is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"unknown game {game_name!r}; known games: {', '.join(sorted(GAMES))}"
        )
    try:
        return game, TimeControl.parse(time_control)
    except ValueError as error:
        raise ProtocolError(ErrorCode.BAD_FIELD, str(error)) from None
