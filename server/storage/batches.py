"""How a batch of queued writes reaches the database: one statement per kind of row.

A batch's writes are sorted into rows by kind (new players, matches, seats,
starts, moves taken back, moves, results, chat lines) and each kind is applied as one multi-row statement, in
the order of :class:`Kind` (the foreign keys' order, and the order in which any one
match's writes are queued). Few statements matter more than few rows: each is a
trip through the event loop on an asyncio driver.

Two ways to apply a batch share those statements:

- :func:`apply_batch` runs them on an SQLAlchemy connection (PostgreSQL through
  asyncpg, whose I/O is the event loop's own).
- :class:`SqliteBatches` converts each row's values on the loop, as SQLAlchemy
  would (a move's straight from its record, with no dictionary of parameters
  between: moves are most of the rows), and hands the batch to SQLite's writer
  process, which runs the
  statements on a plain ``sqlite3`` connection and commits: the statements'
  CPU and the fsync are off the event loop's thread, and off its GIL
  (:mod:`server.storage.sqlite_writer` says why not a thread). A commit through
  SQLAlchemy and aiosqlite costs several times the CPU of one there
  (``plyarena bench store``, docs/benchmarks.md).

Both raise if any write of the batch would fail (a duplicate, a missing row, a
match in the wrong status) and leave nothing of the batch stored; the store then
retries its writes one by one to tell which failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import chain, groupby
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
from sqlalchemy import Dialect, bindparam, delete, insert, or_, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Delete, Insert, Update

from server.storage.models import (
    UNFINISHED_STATUSES,
    ChatLineRow,
    MatchRow,
    MoveRow,
    PlayerRow,
    SeatRow,
    SessionRow,
)
from server.storage.records import MoveRecord
from server.storage.sqlite_writer import Answered, Batch, BatchMismatchError, SqliteWriter, Statement


class Kind(IntEnum):
    """A kind of row that a write inserts or updates; its value is the place of its statement in the order
    in which a batch applies them.

    That order is the foreign keys' (and the order in which any one match's writes are queued): a player
    before the matches that seat it, a match before its seats, start, moves, result and chat lines, a
    match's start before its moves and its moves before its result (a finished match takes no more), and
    an unheard chat line's removal before the line that takes its seq again. A value is also the
    statement's index in :data:`BATCH_STATEMENTS` and in SQLite's writer process, so a row's statement is
    found by indexing, with no lookup per row.
    """

    NEW_PLAYER = 0
    PLAYER_SEEN = 1
    NEW_MATCH = 2
    NEW_SEAT = 3
    MATCH_START = 4
    TAKE_BACK = 5
    NEW_MOVE = 6
    MATCH_FINISH = 7
    UNHEARD_CHAT = 8
    NEW_CHAT = 9
    NAME_CLAIM = 10
    TOKEN_REPLACE = 11
    SESSIONS_END = 12
    SESSION_END = 13
    NEW_SESSION = 14
    SESSION_SEEN = 15


# The updates must each change one row; their parameters are prefixed so as not to clash with column names.
_STATEMENTS: dict[Kind, Insert | Update | Delete] = {
    Kind.NEW_PLAYER: insert(PlayerRow),
    Kind.PLAYER_SEEN: update(PlayerRow)
    .where(PlayerRow.id == bindparam("p_id"))
    .values(last_seen_at=bindparam("p_seen_at")),
    Kind.NEW_MATCH: insert(MatchRow),
    Kind.NEW_SEAT: insert(SeatRow),
    Kind.MATCH_START: update(MatchRow)
    .where(MatchRow.id == bindparam("p_id"), MatchRow.status == "open")
    .values(status="live", started_at=bindparam("p_started_at")),
    # Moves both players agreed to take back (a match takes one request at a time, so no move of the same
    # batch is among them: a move played in their place comes after, in the order of Kind).
    Kind.TAKE_BACK: delete(MoveRow).where(
        MoveRow.match_id == bindparam("p_match_id"), MoveRow.ply >= bindparam("p_from_ply")
    ),
    Kind.NEW_MOVE: insert(MoveRow),
    Kind.MATCH_FINISH: update(MatchRow)
    .where(
        MatchRow.id == bindparam("p_id"), or_(*(MatchRow.status == status for status in UNFINISHED_STATUSES))
    )
    .values(  # (no ``in_``: its expanding parameter cannot be used with executemany)
        status=bindparam("p_status"),
        winner=bindparam("p_winner"),
        reason=bindparam("p_reason"),
        finished_at=bindparam("p_finished_at"),
    ),
    # A chat line takes its event's seq from a line stored there by a commit whose answer was lost (so
    # refused, and heard by no one): the match numbers its next event with that seq again.
    Kind.UNHEARD_CHAT: delete(ChatLineRow).where(
        ChatLineRow.match_id == bindparam("p_match_id"), ChatLineRow.seq == bindparam("p_seq")
    ),
    Kind.NEW_CHAT: insert(ChatLineRow),
    # Accounts (server/accounts.py): a name is claimed once; logging out ends sessions before a login in
    # the same batch starts one.
    Kind.NAME_CLAIM: update(PlayerRow)
    .where(PlayerRow.id == bindparam("p_id"), PlayerRow.password_hash.is_(None))
    .values(
        name=bindparam("p_name"), name_key=bindparam("p_name_key"), password_hash=bindparam("p_password_hash")
    ),
    Kind.TOKEN_REPLACE: update(PlayerRow)
    .where(PlayerRow.id == bindparam("p_id"))
    .values(token_hash=bindparam("p_token_hash")),
    Kind.SESSIONS_END: delete(SessionRow).where(SessionRow.player_id == bindparam("p_player_id")),
    Kind.SESSION_END: delete(SessionRow).where(SessionRow.token_hash == bindparam("p_token_hash")),
    Kind.NEW_SESSION: insert(SessionRow),
    Kind.SESSION_SEEN: update(SessionRow)
    .where(SessionRow.token_hash == bindparam("p_token_hash"))
    .values(last_seen_at=bindparam("p_seen_at")),
}
BATCH_STATEMENTS: tuple[Insert | Update | Delete, ...] = tuple(_STATEMENTS[kind] for kind in Kind)
"""The statement of each :class:`Kind`, indexed by it: the order in which a batch applies them."""
if [int(kind) for kind in Kind] != list(range(len(Kind))):
    raise RuntimeError(f"Kind's values must be 0, 1, 2... in order, to index statements: {list(Kind)}")


class Part(msgspec.Struct, frozen=True, gc=False):
    """One row a write inserts or updates: a row of ``kind``, from ``source``.

    ``source`` is the statement's parameters by name, except for a new move, where it is the
    :class:`MoveRecord` itself: SQLite's batches take a move's values straight from it, and its
    parameters by name are made only where SQLAlchemy binds them (:attr:`params`).
    """

    kind: Kind
    source: dict[str, Any] | MoveRecord

    @property
    def params(self) -> dict[str, Any]:
        """The statement's parameters by name, as SQLAlchemy binds them."""
        source = self.source
        return move_row(source) if isinstance(source, MoveRecord) else source


Rows = list[tuple[Kind, list[Part]]]
"""A batch's rows: each kind it has, in :class:`Kind`'s order, with the parts that are its rows."""


_KIND = attrgetter("kind")


def batch_rows(writes: Iterable[Sequence[Part]]) -> Rows:
    """Sort the parts of ``writes`` by kind, each kind keeping their order (a stable sort, in C: no
    Python code runs for each part, and a batch of moves alone is sorted already)."""
    return [
        (kind, list(parts)) for kind, parts in groupby(sorted(chain.from_iterable(writes), key=_KIND), _KIND)
    ]


MOVE_COLUMNS = (
    "match_id",
    "ply",
    "seat",
    "notation",
    "think_ms",
    "played_at",
    "clock0_ms",
    "clock1_ms",
    "score",
    "depth",
    "nodes",
    "pv",
    "source",
    "time_ms",
)
"""The parameters of ``insert(MoveRow)``, in the order in which :func:`_move_fields` gives their values."""
_PLAYED_AT, _PV = MOVE_COLUMNS.index("played_at"), MOVE_COLUMNS.index("pv")


def _move_fields(move: MoveRecord) -> list[Any]:
    """The values of ``insert(MoveRow)``'s parameters for ``move``, in :data:`MOVE_COLUMNS`' order, not
    converted for a driver."""
    clocks, engine = move.clocks_ms, move.engine
    values = [
        move.match_id,
        move.ply,
        move.seat,
        move.notation,
        move.think_ms,
        move.played_at,
        clocks[0] if clocks else None,
        clocks[1] if clocks else None,
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    if engine:
        pv = list(engine.pv) if engine.pv else None
        values[8:] = engine.score, engine.depth, engine.nodes, pv, engine.source, engine.time_ms
    return values


def move_row(move: MoveRecord) -> dict[str, Any]:
    """The parameters of ``insert(MoveRow)`` for ``move``, by name."""
    return dict(zip(MOVE_COLUMNS, _move_fields(move), strict=True))


async def apply_batch(connection: AsyncConnection, rows: Rows) -> None:
    """Apply ``rows`` in one statement per kind on an SQLAlchemy connection (inside its transaction)."""
    exact_rowcount = connection.dialect.supports_sane_multi_rowcount
    for kind, parts in rows:
        statement = BATCH_STATEMENTS[kind]
        params = [part.params for part in parts]
        if not isinstance(statement, Update):
            await connection.execute(statement, params)
        elif exact_rowcount or len(params) == 1:
            if (await connection.execute(statement, params)).rowcount != len(params):
                raise BatchMismatchError(
                    f"{statement.table.description}: fewer than {len(params)} rows changed"
                )
        else:  # PostgreSQL's drivers cannot count the rows of a multi-row update: one at a time
            for one in params:
                if (await connection.execute(statement, one)).rowcount != 1:
                    raise BatchMismatchError(
                        f"{statement.table.description}: no row changed for {one['p_id']!r}"
                    )


Conversions = tuple[tuple[int, Callable[[Any], Any], Any], ...]
"""Where a statement's value needs converting for the driver, how, and what ``None`` becomes there
(computed once: a move's engine fields are mostly ``None``, and the JSON type's processor takes a
microsecond for it)."""


@dataclass(frozen=True, slots=True)
class _Positional:
    """A batch statement compiled once for a dialect: its SQL, and how the source of a :class:`Part` of its
    kind becomes the list of values the driver takes, in the statement's order and converted as SQLAlchemy
    converts them (timestamps, JSON)."""

    sql: str
    is_update: bool
    values: Callable[[Any], list[Any]]

    @classmethod
    def compile(cls, kind: Kind, dialect: Dialect) -> _Positional:
        statement = BATCH_STATEMENTS[kind]
        compiled = statement.compile(dialect=dialect)
        names = tuple(compiled.positiontup or ())
        binds = [compiled.binds[name] for name in names]
        converters = (bind.type.dialect_impl(dialect).bind_processor(dialect) for bind in binds)
        conversions = tuple(
            (index, convert, convert(None)) for index, convert in enumerate(converters) if convert
        )
        # Values that the statement itself binds (``status = 'open'``), by parameter name.
        constants = {
            name: bind.value for name, bind in zip(names, binds, strict=True) if bind.value is not None
        }
        values_of = _move_values if kind == Kind.NEW_MOVE else _row_values
        return cls(
            sql=str(compiled),
            is_update=isinstance(statement, Update),
            values=values_of(names, conversions, constants),
        )


def _row_values(
    names: tuple[str, ...], conversions: Conversions, constants: dict[str, Any]
) -> Callable[[dict[str, Any]], list[Any]]:
    """How a row's parameters by name become the statement's values."""
    pick = itemgetter(*names) if len(names) > 1 else lambda row: (row[names[0]],)

    def row_values(row: dict[str, Any]) -> list[Any]:
        values = list(pick(constants | row if constants else row))
        for index, convert, none in conversions:
            value = values[index]
            values[index] = none if value is None else convert(value)
        return values

    return row_values


def _move_values(
    names: tuple[str, ...], conversions: Conversions, constants: dict[str, Any]
) -> Callable[[MoveRecord], list[Any]]:
    """How a move's record becomes the values of ``insert(MoveRow)``: the values :func:`_row_values` makes
    from :func:`move_row`'s parameters (``tests/test_storage_batches.py`` holds the two equal), without
    that dictionary, its pick and the loop over conversions, which cost a move more than its own fields.

    Refuses a statement whose parameters or conversions are not the ones written out here (a changed
    model), rather than convert a move wrongly.
    """
    converted = {names[index]: (convert, none) for index, convert, none in conversions}
    if names != MOVE_COLUMNS or converted.keys() != {"played_at", "pv"} or constants:
        raise RuntimeError(
            f"insert(MoveRow) binds {names} and converts {sorted(converted)}: not the columns and "
            f"conversions that _move_values writes out ({MOVE_COLUMNS}; played_at and pv converted)"
        )
    timestamp = converted["played_at"][0]  # (given ``None``, it gives what the generic path stores)
    pv_json, no_pv = converted["pv"]

    def move_values(move: MoveRecord) -> list[Any]:
        values = _move_fields(move)
        values[_PLAYED_AT] = timestamp(values[_PLAYED_AT])
        pv = values[_PV]
        values[_PV] = no_pv if pv is None else pv_json(pv)
        return values

    return move_values


_SOURCE = attrgetter("source")


class SqliteBatches:
    """Batches for an SQLite file: converted on the loop as SQLAlchemy would convert them, committed by
    the writer process (:mod:`server.storage.sqlite_writer`)."""

    def __init__(self, path: str, dialect: Dialect) -> None:
        self._statements = tuple(_Positional.compile(kind, dialect) for kind in Kind)
        self._writer = SqliteWriter(path, self.statements)

    def convert(self, rows: Rows) -> Batch:
        """``rows`` as the writer takes them: by statement, each row's values in order and converted (the
        statement by its index, a plain ``int``: pickled, a :class:`Kind` would make the writer process
        import this module)."""
        statements = self._statements
        return [(int(kind), list(map(statements[kind].values, map(_SOURCE, parts)))) for kind, parts in rows]

    @property
    def statements(self) -> list[Statement]:
        """The statements as the writer takes them, indexed by :class:`Kind`."""
        return [(statement.sql, statement.is_update) for statement in self._statements]

    @property
    def writer_pid(self) -> int | None:
        """The writer process's id, while it runs (for measuring it)."""
        return self._writer.pid

    async def apply(self, rows: Rows) -> None:
        """Apply ``rows`` in one transaction and commit; on any failure nothing of them is stored."""
        await self._writer.commit(self.convert(rows))

    async def start(self) -> None:
        """Start the writer process unless it runs (:meth:`send` needs it)."""
        await self._writer.start()

    def send(self, batch: Batch, answered: Answered) -> None:
        """Hand ``batch`` (rows :meth:`convert`-ed) to the writer, to be applied in one transaction and
        committed after the batches sent before; ``answered`` gets ``None`` once it is, else why not
        (nothing of it stored)."""
        self._writer.send(batch, answered)

    async def close(self) -> None:
        await self._writer.close()
