"""What one player offers the other in a match, and the answers: draws, rematches and takebacks.

Intents of the pure state machine in :mod:`server.match`, kept apart so that it stays about moves,
clocks and endings: each function takes the immutable :class:`~server.match.Match` and returns its
:class:`~server.steps.Step` (or raises :class:`~server.errors.ProtocolError`), and the server binds
them as it binds the match's own methods (``server/match_actions.py``).
"""

from __future__ import annotations

from msgspec.structs import replace

from server import protocol
from server.clock import Clock
from server.errors import ErrorCode, ProtocolError
from server.match import FINISHED, LIVE, Match
from server.steps import Finish, Step, TakeBack

# ----------------------------------------------------------------- draws


def offer_draw(match: Match, player_id: str, now: float) -> Step:
    seat = match._require_seat(player_id)
    match._require_live()
    if match.draw_offer == 1 - seat:
        return accept_draw(match, player_id, now)
    if match.draw_offer == seat:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "you have already offered a draw")
    offered = protocol.DrawOffered(match_id=match.id, seq=0, seat=seat)
    return replace(match, draw_offer=seat)._step([offered])


def accept_draw(match: Match, player_id: str, now: float) -> Step:
    seat = match._require_seat(player_id)
    match._require_live()
    if match.draw_offer != 1 - seat:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "there is no draw offer from your opponent to accept")
    return match._finish(Finish(FINISHED, None, "draw by agreement"), now)


def decline_draw(match: Match, player_id: str, now: float) -> Step:
    seat = match._require_seat(player_id)
    match._require_live()
    if match.draw_offer != 1 - seat:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "there is no draw offer from your opponent to decline")
    declined = protocol.DrawDeclined(match_id=match.id, seq=0, seat=seat)
    return replace(match, draw_offer=None)._step([declined])


# ----------------------------------------------------------------- rematches


def offer_rematch(match: Match, player_id: str, new_match_id: str, now: float) -> Step:
    """Offer a rematch, after the game or during it; an offer that meets the opponent's accepts it."""
    seat = match._require_seat(player_id)
    match._require_rematch_to_agree()
    if match.rematch_offer == 1 - seat:
        return accept_rematch(match, player_id, new_match_id, now)
    if match.rematch_offer == seat:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "you have already offered a rematch")
    offered = protocol.RematchOffered(match_id=match.id, seq=0, seat=seat)
    return replace(match, rematch_offer=seat)._step([offered])


def accept_rematch(match: Match, player_id: str, new_match_id: str, now: float) -> Step:
    """Accept the opponent's rematch offer: the rematch starts as ``new_match_id`` now if the game is
    over, or the moment it ends (a pair playing a series loses no time between games)."""
    seat = match._require_seat(player_id)
    match._require_rematch_to_agree()
    if match.rematch_offer != 1 - seat:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "there is no rematch offer from your opponent to accept")
    if not match.is_over:
        agreed = protocol.RematchAgreed(match_id=match.id, seq=0)
        return replace(match, rematch_offer=None, rematch_agreed_id=new_match_id)._step([agreed])
    over, started, create = match._rematch(new_match_id, now)
    return over._step([started], [create])


def decline_rematch(match: Match, player_id: str, now: float) -> Step:
    """Decline the opponent's rematch offer, or, during the game, withdraw from an agreed rematch."""
    seat = match._require_seat(player_id)
    match._require_rematch_possible()
    if match.rematch_offer != 1 - seat and match.rematch_agreed_id is None:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "there is no rematch offer from your opponent to decline")
    declined = protocol.RematchDeclined(match_id=match.id, seq=0, seat=seat)
    return replace(match, rematch_offer=None, rematch_agreed_id=None)._step([declined])


# ----------------------------------------------------------------- takebacks

RATED_TAKEBACK_MOVES = 2
"""In a rated game between people, a takeback may be asked for only until the asker's opponent has made
this many moves: past that a takeback could undo a game the opponent has committed to."""


def offer_takeback(match: Match, player_id: str, now: float) -> Step:
    """Ask the opponent to take back the asker's last move (and the opponent's reply, if there is one
    since); an offer that meets the opponent's own accepts it."""
    seat = match._require_seat(player_id)
    match._require_live()
    if match.takeback_offer == 1 - seat:
        return accept_takeback(match, player_id, now)
    if match.takeback_offer == seat:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "you have already asked for a takeback")
    _require_takeback_allowed(match, seat)
    offered = protocol.TakebackOffered(match_id=match.id, seq=0, seat=seat)
    return replace(match, takeback_offer=seat)._step([offered])


def accept_takeback(match: Match, player_id: str, now: float) -> Step:
    """Take back the asker's last move, as Lichess does: one ply if the asker moved last, two (the
    opponent's reply too) if it is the asker's turn again. The moves leave the store in the same commit,
    and both clocks go back to what they showed before the first move taken back."""
    seat = match._require_seat(player_id)
    match._require_live()
    asker = 1 - seat
    if match.takeback_offer != asker:
        raise ProtocolError(
            ErrorCode.NOT_ALLOWED, "there is no takeback request from your opponent to accept"
        )
    _require_takeback_allowed(match, asker)
    turns = [position.turn for position in match.positions[:-1]]
    ply = len(turns) - 1 - turns[::-1].index(asker)  # the asker's last move, and every move after it
    clock = _clock_at(match, ply, now)
    back = replace(
        match,
        positions=match.positions[: ply + 1],
        moves=match.moves[:ply],
        move_clocks=match.move_clocks[:ply],
        clock=clock,
        turn_started=now,
        draw_offer=None,
        takeback_offer=None,
    )
    position = back.position
    taken = protocol.TakebackAccepted(
        match_id=match.id,
        seq=0,
        seat=asker,
        ply=ply,
        turn=position.turn,
        clocks_ms=None if clock is None else clock.remaining_ms,
        board=position.grid(),
        legal=tuple(position.legal_notation()),
    )
    return back._step([taken], [TakeBack(ply)])


def decline_takeback(match: Match, player_id: str, now: float) -> Step:
    seat = match._require_seat(player_id)
    match._require_live()
    if match.takeback_offer != 1 - seat:
        raise ProtocolError(
            ErrorCode.NOT_ALLOWED, "there is no takeback request from your opponent to decline"
        )
    declined = protocol.TakebackDeclined(match_id=match.id, seq=0, seat=seat)
    return replace(match, takeback_offer=None)._step([declined])


def _require_takeback_allowed(match: Match, asker: int) -> None:
    """Refuse a takeback for ``asker`` before it has moved, or in a rated game between people once its
    opponent has moved :data:`RATED_TAKEBACK_MOVES` times."""
    turns = [position.turn for position in match.positions[:-1]]
    if asker not in turns:
        raise ProtocolError(ErrorCode.NOT_ALLOWED, "you have made no move to take back")
    people = all(player is not None and not player.bot for player in match.seats)
    if match.rated and people and turns.count(1 - asker) >= RATED_TAKEBACK_MOVES:
        raise ProtocolError(
            ErrorCode.NOT_ALLOWED,
            f"this game is rated: no takebacks once your opponent has moved {RATED_TAKEBACK_MOVES} times",
        )


def _clock_at(match: Match, ply: int, now: float) -> Clock | None:
    """The clock as it stood when ply ``ply`` was to be played: the times stored with the move before
    it (the start's if none), running from ``now`` for the side to move then."""
    clock = match.clock
    if clock is None or match.status != LIVE:
        return clock
    stored = match.move_clocks[ply - 1] if ply > 0 else None
    restored = Clock(clock.control, stored) if stored is not None else Clock.new(clock.control)
    return restored.start(match.positions[ply].turn, now)
