"""The rows of each kind of write, checked: what :meth:`Store.commit <server.storage.store.Store.commit>`
stores, one write or several in one transaction.

Several commit together when they only make sense together: a game's last move (or its result) and
the rematch agreed during the game, which starts in the same step; a second player's seat and the
start it brings. Committed one after the other, a failure between the two would leave the store
holding half of a step that the server never announced.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeAlias

from server.storage.batches import Kind, Part
from server.storage.models import FINISHED_STATUSES, MATCH_STATUSES
from server.storage.records import ChatRecord, MatchFinish, MatchRecord, MoveRecord, PlayerRecord, SeatRecord

Write: TypeAlias = tuple[Part, ...]
"""One write's rows: they commit together or not at all."""


def new_player(player: PlayerRecord, token_hash: str) -> Write:
    row = {
        "id": player.id,
        "name": player.name,
        "token_hash": token_hash,
        "is_bot": player.is_bot,
        "created_at": player.created_at,
        "last_seen_at": player.created_at,
        "name_key": None,  # a guest: a name is claimed later, with a password (:func:`name_claim`)
        "password_hash": None,
    }
    return (Part(Kind.NEW_PLAYER, row),)


def player_seen(player_id: str, seen_at: datetime) -> Write:
    return (Part(Kind.PLAYER_SEEN, {"p_id": player_id, "p_seen_at": seen_at}),)


def new_match(match: MatchRecord, joined_at: datetime) -> Write:
    """A new match and the seats it already has (its moves come as :func:`new_move` writes)."""
    if match.status not in MATCH_STATUSES:
        raise ValueError(
            f"match {match.id!r} has unknown status {match.status!r}; use one of {MATCH_STATUSES}"
        )
    if match.moves:
        raise ValueError(f"match {match.id!r} is created with {len(match.moves)} moves; append them instead")
    row = {
        "id": match.id,
        "game": match.game,
        "options": match.options,
        "status": match.status,
        "winner": match.winner,
        "reason": match.reason,
        "host": match.host,
        "created_at": match.created_at,
        "started_at": match.started_at,
        "finished_at": match.finished_at,
        "rematch_of": match.rematch_of,
        "rated": bool(match.options.get("rated", False)),
    }
    return (Part(Kind.NEW_MATCH, row), *(new_seat(match.id, seat, joined_at)[0] for seat in match.seats))


def new_seat(match_id: str, seat: SeatRecord, joined_at: datetime) -> Write:
    if seat.seat not in (0, 1):
        raise ValueError(f"match {match_id!r} has no seat {seat.seat!r}; seats are 0 and 1")
    row = {"match_id": match_id, "seat": seat.seat, "player_id": seat.player_id, "joined_at": joined_at}
    return (Part(Kind.NEW_SEAT, row),)


def match_start(match_id: str, started_at: datetime) -> Write:
    return (Part(Kind.MATCH_START, {"p_id": match_id, "p_started_at": started_at}),)


_NEW_MOVE = Kind.NEW_MOVE
"""Looked up once: on Python 3.11 finding an enum's member costs twice the :class:`Part` it goes in, and
every move makes one."""


def new_move(move: MoveRecord, finish: MatchFinish | None = None) -> Write:
    """One ply and, when it ends the match, the result."""
    if move.ply < 0:
        raise ValueError(f"{_move_name(move)}: ply must not be negative")
    if move.seat not in (0, 1):
        raise ValueError(f"{_move_name(move)}: seat must be 0 or 1, not {move.seat!r}")
    if move.think_ms < 0:
        raise ValueError(f"{_move_name(move)}: think_ms must not be negative, not {move.think_ms!r}")
    if move.clocks_ms is not None and len(move.clocks_ms) != 2:
        raise ValueError(f"{_move_name(move)}: clocks_ms must hold two clocks, not {move.clocks_ms!r}")
    row = Part(_NEW_MOVE, move)  # (its parameters by name are made only if needed: see Part)
    return (row,) if finish is None else (row, *match_finish(move.match_id, finish))


def take_back(match_id: str, from_ply: int) -> Write:
    """Remove the moves of a live match from ``from_ply`` on: both players agreed to take them back."""
    if from_ply < 0:
        raise ValueError(f"match {match_id!r}: moves are taken back from ply 0 on at most, not {from_ply!r}")
    return (Part(Kind.TAKE_BACK, {"p_match_id": match_id, "p_from_ply": from_ply}),)


def _move_name(move: MoveRecord) -> str:
    """Names a move in errors: made only for one (every move is checked, few are refused)."""
    return f"move {move.ply!r} of match {move.match_id!r}"


def match_finish(match_id: str, finish: MatchFinish) -> Write:
    """How an open or live match ended."""
    if finish.status not in FINISHED_STATUSES:
        raise ValueError(
            f"match {match_id!r} cannot finish as {finish.status!r}; use one of {FINISHED_STATUSES}"
        )
    if finish.winner not in (None, 0, 1):
        raise ValueError(f"match {match_id!r} cannot be won by seat {finish.winner!r}")
    params = {
        "p_id": match_id,
        "p_status": finish.status,
        "p_winner": finish.winner,
        "p_reason": finish.reason,
        "p_finished_at": finish.finished_at,
    }
    return (Part(Kind.MATCH_FINISH, params),)


def new_chat(line: ChatRecord) -> Write:
    """A chat line, in place of any line stored at its ``seq``: one whose commit answer was lost, so no
    one heard it, and the match gave its number to this line."""
    where = f"chat line {line.seq!r} of match {line.match_id!r}"
    if line.seq < 1:
        raise ValueError(f"{where}: seq must be positive")
    if line.seat not in (0, 1):
        raise ValueError(f"{where}: seat must be 0 or 1, not {line.seat!r}")
    row: dict[str, Any] = {
        "match_id": line.match_id,
        "seq": line.seq,
        "seat": line.seat,
        "name": line.name,
        "text": line.text,
        "said_at": line.said_at,
    }
    return (
        Part(Kind.UNHEARD_CHAT, {"p_match_id": line.match_id, "p_seq": line.seq}),
        Part(Kind.NEW_CHAT, row),
    )


def name_claim(player_id: str, name: str, name_key: str, password_hash: str) -> Write:
    """A guest claims ``name`` (the unique ``name_key``) with a password, once: a second claim changes no
    row, and a name claimed by another player is a unique key repeated."""
    params = {"p_id": player_id, "p_name": name, "p_name_key": name_key, "p_password_hash": password_hash}
    return (Part(Kind.NAME_CLAIM, params),)


def new_session(player_id: str, token_hash: str, created_at: datetime) -> Write:
    """A login's token (its hash) for ``player_id``."""
    row = {
        "token_hash": token_hash,
        "player_id": player_id,
        "created_at": created_at,
        "last_seen_at": created_at,
    }
    return (Part(Kind.NEW_SESSION, row),)


def session_seen(token_hash: str, seen_at: datetime) -> Write:
    return (Part(Kind.SESSION_SEEN, {"p_token_hash": token_hash, "p_seen_at": seen_at}),)


def session_end(token_hash: str) -> Write:
    """The end of one login's token (none if it was the player's first token: see :func:`token_replace`)."""
    return (Part(Kind.SESSION_END, {"p_token_hash": token_hash}),)


def token_replace(player_id: str, token_hash: str) -> Write:
    """The player's first token replaced by the hash of one nobody holds: that token no longer works."""
    return (Part(Kind.TOKEN_REPLACE, {"p_id": player_id, "p_token_hash": token_hash}),)


def sessions_end(player_id: str, unheld_token_hash: str) -> Write:
    """Every token of the player revoked: all their logins' tokens, and their first one (see
    :func:`token_replace`)."""
    return (
        Part(Kind.SESSIONS_END, {"p_player_id": player_id}),
        *token_replace(player_id, unheld_token_hash),
    )
