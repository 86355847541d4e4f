"""Durable storage for the server: players, matches, seats, moves and chat.

The rest of the server talks to :class:`Store` and gets frozen records back; ORM
rows and sessions never leave this package.
"""

from server.storage.errors import (
    ConflictError,
    DatabaseOpenError,
    DatabaseUnavailableError,
    DuplicateMoveError,
    InstanceTakenError,
    NameTakenError,
    NotFoundError,
    SeatTakenError,
    StorageError,
    StoreClosedError,
)
from server.storage.models import FINISHED_STATUSES, MATCH_STATUSES, UNFINISHED_STATUSES
from server.storage.records import (
    ChatRecord,
    EngineInfo,
    MatchFinish,
    MatchRecord,
    MoveRecord,
    PlayerRecord,
    SeatRecord,
)
from server.storage.stats import Histogram, WriteStats
from server.storage.store import MAX_LIST_LIMIT, Store

__all__ = [
    "FINISHED_STATUSES",
    "MATCH_STATUSES",
    "MAX_LIST_LIMIT",
    "UNFINISHED_STATUSES",
    "ChatRecord",
    "ConflictError",
    "DatabaseOpenError",
    "DatabaseUnavailableError",
    "DuplicateMoveError",
    "EngineInfo",
    "Histogram",
    "InstanceTakenError",
    "MatchFinish",
    "MatchRecord",
    "MoveRecord",
    "NameTakenError",
    "NotFoundError",
    "PlayerRecord",
    "SeatRecord",
    "SeatTakenError",
    "StorageError",
    "Store",
    "StoreClosedError",
    "WriteStats",
]
