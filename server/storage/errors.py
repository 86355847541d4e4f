"""What the store raises when a write is refused or cannot be made durable.

Every one of these means the same for the caller: nothing of that write was
stored. The subclasses say why, so the server can answer with the right error
code (a duplicate move is a stale request, an unknown match a bad id, an
unavailable database a retry-later).
"""

from __future__ import annotations


class StorageError(Exception):
    """A write was not committed; nothing of it is stored."""


class StoreClosedError(StorageError):
    """The store was closed before the write reached the database."""


class DatabaseUnavailableError(StorageError):
    """The database could not be reached or did not answer (a restart, a full disk, a lock timeout)."""


class ConflictError(StorageError):
    """The write contradicts what is stored: a taken seat, a finished match, a reused id."""


class DuplicateMoveError(ConflictError):
    """A move for a ply that is already stored (a resent or stale move)."""

    def __init__(self, match_id: str, ply: int) -> None:
        super().__init__(f"match {match_id!r} already has a move for ply {ply}")
        self.match_id = match_id
        self.ply = ply


class SeatTakenError(ConflictError):
    """A seat that another player already holds."""

    def __init__(self, match_id: str, seat: int) -> None:
        super().__init__(f"seat {seat} of match {match_id!r} is already taken")
        self.match_id = match_id
        self.seat = seat


class NameTakenError(ConflictError):
    """A name claimed already by another player (compared as :func:`server.accounts.name_key` folds it)."""


class NotFoundError(StorageError, LookupError):
    """A write that names a match or player the database does not have."""


class DatabaseOpenError(Exception):
    """The database cannot be opened or brought to the current schema (not found, refused, not a
    database). Not a :class:`StorageError`: no write was attempted. The message says why, with no
    password in it."""


class InstanceTakenError(Exception):
    """Another server runs under this instance id on the same database: two would restore, host and
    announce the same matches."""
