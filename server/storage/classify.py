"""What a database's error means for a write: which :mod:`server.storage.errors` error it becomes.

The store tells three things apart here, and acts on each differently: a database it cannot reach now
(the rest of a batch fails at once, the writer's connection is dropped), a refusal of the data written
(a duplicate, a missing match: the connection is as good as it was), and anything else. Messages name
the write by its first row and quote the driver's first line only: no SQL, no parameters.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from server.storage.batches import Kind, Part
from server.storage.errors import (
    ConflictError,
    DatabaseUnavailableError,
    DuplicateMoveError,
    NameTakenError,
    NotFoundError,
    SeatTakenError,
    StorageError,
    StoreClosedError,
)
from server.storage.models import UNFINISHED_STATUSES, MatchRow

_NAMES = {
    Kind.NEW_PLAYER: "player {name!r}",
    Kind.PLAYER_SEEN: "last seen time of player {p_id!r}",
    Kind.NEW_MATCH: "match {id!r}",
    Kind.NEW_SEAT: "seat {seat} of match {match_id!r}",
    Kind.MATCH_START: "start of match {p_id!r}",
    Kind.TAKE_BACK: "takeback of the moves of match {p_match_id!r} from ply {p_from_ply}",
    Kind.NEW_MOVE: "move {ply} of match {match_id!r}",
    Kind.MATCH_FINISH: "result of match {p_id!r}",
    Kind.UNHEARD_CHAT: "chat line {p_seq} of match {p_match_id!r}",
    Kind.NEW_CHAT: "chat line {seq} of match {match_id!r}",
    Kind.NAME_CLAIM: "claimed name of player {p_id!r}",
    Kind.TOKEN_REPLACE: "token of player {p_id!r}",
    Kind.SESSIONS_END: "end of the sessions of player {p_player_id!r}",
    Kind.SESSION_END: "end of a session",
    Kind.NEW_SESSION: "session of player {player_id!r}",
    Kind.SESSION_SEEN: "last seen time of a session",
}
"""How error messages name a write, by the kind of its first row, filled in from that row."""


def write_name(part: Part) -> str:
    """Names the write that ``part`` begins in error messages, e.g. "move 12 of match 'k3x9'"."""
    return _NAMES[part.kind].format_map(part.params)


def closed_error(parts: tuple[Part, ...]) -> StoreClosedError:
    """The error for a write given to a store that is closed."""
    return StoreClosedError(f"{write_name(parts[0])} not stored: the store is closed")


def storage_error(first: Part, error: Exception) -> StorageError:
    """What the caller of the write that ``first`` begins is told, ``error`` having failed it."""
    if isinstance(error, StorageError):
        return error
    if is_unavailable(error):
        return DatabaseUnavailableError(
            f"{write_name(first)} not stored: database unavailable: {reason(error)}"
        )
    if isinstance(error, IntegrityError):
        refused = violation(error)
        if refused == "unique":
            return duplicate_error(first)
        if refused == "foreign_key":
            return NotFoundError(
                f"{write_name(first)} not stored: it names a match or player that does not exist"
            )
    return StorageError(f"{write_name(first)} not stored: {reason(error)}")


def duplicate_error(first: Part) -> StorageError:
    """The error for a write that would store something already stored (a unique key it repeats)."""
    params = first.params
    if first.kind == Kind.NEW_PLAYER:
        return ConflictError("another player already has this token hash")
    if first.kind == Kind.NEW_MATCH:
        return ConflictError(f"match id {params['id']!r} is already used")
    if first.kind == Kind.NEW_SEAT:
        return SeatTakenError(params["match_id"], params["seat"])
    if first.kind == Kind.NEW_MOVE:
        return DuplicateMoveError(params["match_id"], params["ply"])
    if first.kind == Kind.NAME_CLAIM:
        return NameTakenError(f"the name {params['p_name']!r} is claimed by another player")
    return ConflictError(f"{write_name(first)} is already stored")


async def why_not_updated(connection: AsyncConnection, part: Part) -> StorageError:
    """Why an update of ``part`` changed no row: its player or match is missing, or the match's status."""
    if part.kind in (Kind.PLAYER_SEEN, Kind.TOKEN_REPLACE):
        return NotFoundError(f"no player {part.params['p_id']!r}")
    if part.kind == Kind.NAME_CLAIM:
        return ConflictError(f"player {part.params['p_id']!r} has claimed a name already, or is gone")
    if part.kind == Kind.SESSION_SEEN:
        return NotFoundError("that session has ended")
    action, allowed = (
        ("start", ("open",)) if part.kind == Kind.MATCH_START else ("finish", UNFINISHED_STATUSES)
    )
    match_id = part.params["p_id"]
    status = await connection.scalar(select(MatchRow.status).where(MatchRow.id == match_id))
    if status is None:
        return NotFoundError(f"cannot {action} match {match_id!r}: no such match")
    return ConflictError(f"cannot {action} match {match_id!r}: it is {status}, not {' or '.join(allowed)}")


def reason(error: BaseException) -> str:
    """The driver's own first line about ``error``: no SQL, no parameters (a token hash must not leak)."""
    original = getattr(error, "orig", None) or error
    lines = str(original).strip().splitlines()
    return lines[0] if lines else type(original).__name__


def violation(error: IntegrityError) -> str | None:
    """``"unique"``, ``"foreign_key"`` or ``"check"``, from PostgreSQL's SQLSTATE or SQLite's error name."""
    original = error.orig
    sqlstate = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    if sqlstate is not None:
        return {"23505": "unique", "23503": "foreign_key", "23514": "check"}.get(sqlstate)
    name = getattr(original, "sqlite_errorname", "") or ""
    for suffix, refused in (("PRIMARYKEY", "unique"), ("UNIQUE", "unique"), ("FOREIGNKEY", "foreign_key")):
        if name.endswith(suffix):
            return refused
    return "check" if name.endswith("CHECK") else None


UNAVAILABLE_SQLSTATES = ("08", "25006", "40001", "40P01", "53", "55000", "55P03", "57", "58")
"""SQLSTATE prefixes that say the database cannot serve now, whatever was asked: a connection exception
(class 08); a read-only transaction (25006: a standby, mid-failover); a serialization failure or deadlock
(40001, 40P01: worth a retry); insufficient resources (class 53: a full disk, too many connections); a
database not accepting connections (55000) or a lock not available in time (55P03); an operator's
intervention (class 57: a statement timeout, or the server shutting down, starting up or gone); a system
error (class 58: an I/O error). asyncpg's errors reach SQLAlchemy as a plain ``DBAPIError`` with that
code."""


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error`` is about reaching the database rather than about the data written."""
    if isinstance(error, DBAPIError):
        if error.connection_invalidated:
            return True
        sqlstate = getattr(error.orig, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(UNAVAILABLE_SQLSTATES):
            return True
    return isinstance(error, OperationalError | InterfaceError | OSError | TimeoutError)


def is_about_the_data(error: BaseException) -> bool:
    """Whether ``error`` refuses the data written (a duplicate, a missing match, a value too long), which
    leaves the connection as good as it was; any other error may have broken it."""
    return isinstance(error, StorageError | IntegrityError | DataError)
