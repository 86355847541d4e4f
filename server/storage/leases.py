"""Leases with a fence: which instance owns the open and live matches on a PostgreSQL database that
several instances share, and how a surviving instance takes a dead one's matches over.

An instance starts a lease when it claims its instance id (:func:`start_lease`): a new epoch, expiring
:data:`LEASE_S` later by the database's clock. Every transaction the instance commits first renews the
lease *for its epoch* (:func:`renew_lease`), in the same transaction: so renewal and fence are one
statement, and a commit that finds the epoch moved on is rolled back, writing nothing. Once a lease has
lapsed, any other instance may take the lapsed instance's matches over (:func:`adopt_lapsed`): in one
transaction it moves the epoch on and makes itself the host of those matches. The old owner, killed,
frozen or cut off, can then never commit a move again, even if it still runs and still has sockets
open; and one that comes back under the same id starts a new lease with none of them.

The database's row lock on the lease orders a renewal and a take-over: whichever commits first wins, and
the other sees its outcome. Times are the database's (``now()``), never an instance's own clock.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from server.storage.errors import InstanceTakenError

LEASE_S = 10.0
"""How long a lease lasts unrenewed: an instance that commits nothing renews it every
:data:`~server.storage.claims.CLAIM_CHECK_S`, so it lapses only when the instance cannot reach the
database (or is gone) for this long."""

_START = text(
    "INSERT INTO instance_leases (instance, epoch, expires_at)"
    " VALUES (:instance, 1, now() + make_interval(secs => :lease_s))"
    " ON CONFLICT (instance) DO UPDATE"
    " SET epoch = instance_leases.epoch + 1, expires_at = excluded.expires_at"
    " RETURNING epoch"
)
_RENEW = text(
    "UPDATE instance_leases SET expires_at = now() + make_interval(secs => :lease_s)"
    " WHERE instance = :instance AND epoch = :epoch"
)
_TAKE_LAPSED = text(
    "UPDATE instance_leases SET epoch = epoch + 1, expires_at = NULL"
    " WHERE instance <> :instance AND expires_at < now()"
    " AND EXISTS (SELECT 1 FROM instance_leases AS own"
    "             WHERE own.instance = :instance AND own.epoch = :epoch)"
    " RETURNING instance"
)
_MOVE_MATCHES = text(
    "UPDATE matches SET host = :instance"
    " WHERE host = ANY(:lapsed) AND status IN ('open', 'live')"
    " RETURNING id"
)


class LeaseLostError(InstanceTakenError):
    """This instance's lease moved on: another instance took its matches over, and none of its commits
    may be made any more."""


async def start_lease(connection: AsyncConnection, instance: str, lease_s: float = LEASE_S) -> int:
    """Start ``instance``'s lease, in a new epoch (the one it returns), and commit."""
    epoch = await connection.scalar(_START, {"instance": instance, "lease_s": lease_s})
    await connection.commit()
    assert epoch is not None
    return int(epoch)


async def renew_lease(
    connection: AsyncConnection, instance: str, epoch: int, lease_s: float = LEASE_S
) -> None:
    """Renew ``instance``'s lease of ``epoch`` in the connection's transaction, which is to commit what
    the instance writes: raises :class:`LeaseLostError` if the epoch moved on (the transaction must then
    be rolled back)."""
    result = await connection.execute(_RENEW, {"instance": instance, "epoch": epoch, "lease_s": lease_s})
    if result.rowcount != 1:
        raise LeaseLostError(
            f"instance {instance!r} lost its lease of epoch {epoch}: another instance took its matches over"
        )


async def adopt_lapsed(connection: AsyncConnection, instance: str, epoch: int) -> list[str]:
    """Take over, for ``instance`` (while its lease is of ``epoch``), the open and live matches of every
    other instance whose lease has lapsed, and commit; the ids of the matches taken over."""
    lapsed = list(await connection.scalars(_TAKE_LAPSED, {"instance": instance, "epoch": epoch}))
    adopted = []
    if lapsed:
        adopted = list(await connection.scalars(_MOVE_MATCHES, {"instance": instance, "lapsed": lapsed}))
    await connection.commit()
    return adopted
