"""The claim that one server alone runs as an instance on a database, and the connection that holds it.

Every match row names the instance that hosts it, so two servers under one instance id would restore,
host and announce the same matches. On PostgreSQL the claim is a session advisory lock on the writer's
connection, through which every write goes: no write is made without it. On an SQLite file it is an
exclusive ``flock`` on a lock file beside the database. An in-memory SQLite database needs none: no
other server can reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import secrets

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from server.storage import leases
from server.storage.classify import is_unavailable, reason
from server.storage.errors import DatabaseOpenError, InstanceTakenError

log = logging.getLogger(__name__)

INSTANCE_LOCK_SPACE = int.from_bytes(b"plya", "big")
"""The first key of instance locks (``pg_try_advisory_lock(space, hashtext(instance_id))``)."""
CLAIM_CHECK_S = 2.0
"""On PostgreSQL, how long the writer's connection (which holds the instance's claim) may sit idle
before it is checked, and taken again with the claim if it was lost: after an outage the claim is this
server's again within about this long, before another server started meanwhile can take it."""
CLAIM_CHECK_TIMEOUT_S = 5.0
"""How long that check may take (a database that does not answer): the writer has writes to fail."""
ORPHAN_CLAIM_WAIT_S = 2.0
"""How long a claim held by an orphaned session of this store's (see :meth:`InstanceClaim._take`) may
take to be let go once that session is ended."""


class InstanceClaim:
    """A store's claim on its instance, and on PostgreSQL the writer's connection, which holds it."""

    def __init__(self, engine: AsyncEngine, sqlite_path: str | None) -> None:
        self._engine = engine
        self._sqlite_path = sqlite_path
        """The SQLite file, whose lock file holds the claim; ``None`` on PostgreSQL or in memory."""
        self._loop = asyncio.get_running_loop()
        self._connection: AsyncConnection | None = None
        """The writer's connection on PostgreSQL, kept from batch to batch: taking one from the pool
        costs a ping and a reset, two more round trips for every commit. Once an instance is claimed,
        it holds the claim: a write is never made without it (see :meth:`connection`)."""
        self._instance_id: str | None = None
        """The instance claimed on PostgreSQL (:meth:`claim`)."""
        self.lease_s = leases.LEASE_S
        self.epoch: int | None = None
        """The epoch of the instance's lease on its matches, on PostgreSQL (see :mod:`server.storage.leases`):
        every transaction of the writer renews it, and fails if another instance took the matches over."""
        self.lost = asyncio.Event()
        """Set when the claim, lost with the writer's connection, is found taken by another server: the
        store then refuses every write, and its server must stop (two would host the same matches)."""
        self._held = False
        """Whether the claim was taken once: refused after that, it is lost, not refused at start-up."""
        self._writer_name = f"plyarena-writer-{secrets.token_hex(8)}"
        """The writer's connections' ``application_name`` on PostgreSQL, this store's alone: a session of
        one that the database still holds after this store let go of it (a network cut hid the close) is
        known as an orphan of its own, not another server's, and ended (see :meth:`_take`)."""
        self._lock_file: int | None = None
        """The descriptor of the lock file that holds it on an SQLite file."""

    @property
    def needs_checking(self) -> bool:
        """Whether the idle writer must :meth:`check` the claim now and then: one is held on PostgreSQL."""
        return self._instance_id is not None

    async def claim(self, instance_id: str, lease_s: float = leases.LEASE_S) -> None:
        """Hold, until :meth:`close`, the claim that one server runs as ``instance_id``.

        Raises :class:`InstanceTakenError` while another server holds it. On PostgreSQL, a session
        advisory lock on the writer's connection: released when the store closes, or by the database
        when the process dies or the connection is lost (a restart, a failover). A lost one is taken
        again with the next connection, or, if another server took it meanwhile, :attr:`lost` is set. On
        an SQLite file, see :func:`lock_instance_file`: :class:`DatabaseOpenError` if that file cannot be
        opened or locked (say, a read-only directory).
        """
        if self._instance_id is not None or self._lock_file is not None:
            return
        if self._engine.dialect.name == "sqlite":
            if self._sqlite_path is not None:
                self._lock_file = lock_instance_file(self._sqlite_path, instance_id)
            return
        await self.drop_connection()  # (one opened before the claim does not hold it)
        self._instance_id, self.lease_s = instance_id, lease_s
        try:
            connection = await self.connection()
            self.epoch = await leases.start_lease(connection, instance_id, self.lease_s)
        except BaseException:
            self._instance_id = None
            await self.drop_connection()
            raise

    async def fence(self, connection: AsyncConnection) -> None:
        """Renew the instance's lease in ``connection``'s transaction, before what it commits: raises
        :class:`~server.storage.leases.LeaseLostError` (and the claim is lost) if another instance took
        the instance's matches over. Nothing to do where there is no lease (SQLite)."""
        if self._instance_id is None or self.epoch is None:
            return
        try:
            await leases.renew_lease(connection, self._instance_id, self.epoch, self.lease_s)
        except leases.LeaseLostError:
            self._lose(self._instance_id, "its lease lapsed and another instance took its matches over")
            raise

    async def adopt_lapsed(self) -> list[str]:
        """Take over the open and live matches of the instances whose lease lapsed (on PostgreSQL): the
        ids of those now hosted here. On a pooled connection: the writer's is the writer task's."""
        if self._instance_id is None or self.epoch is None or self.lost.is_set():
            return []
        async with self._engine.connect() as connection:
            return await leases.adopt_lapsed(connection, self._instance_id, self.epoch)

    async def connection(self) -> AsyncConnection:
        """The writer's connection on PostgreSQL, opened if there is none, with the instance's claim
        taken on it first: raises :class:`InstanceTakenError` if another server holds the claim."""
        if self._connection is not None:
            return self._connection
        instance_id = self._instance_id
        if instance_id is not None and self.lost.is_set():
            raise InstanceTakenError(f"another server took instance {instance_id!r} on this database")
        connection = await self._engine.connect()
        try:
            if instance_id is not None:
                await self._take(connection, instance_id)
        except BaseException as error:
            await _let_go(connection)
            if isinstance(error, InstanceTakenError) and self._held:
                self._lose(instance_id, "another server has taken it with the database connection")
            raise
        self._connection = connection
        self._held = instance_id is not None
        return connection

    async def _take(self, connection: AsyncConnection, instance_id: str) -> None:
        """Take the claim on ``connection``, named as this store's writer. Refused, end this store's own
        orphaned sessions, whose lock may be the one in the way, and try again for a moment; then raise
        :class:`InstanceTakenError`."""
        await connection.execute(text("SELECT set_config('application_name', :name, false)"),
                                 {"name": self._writer_name})  # fmt: skip
        key = {"space": INSTANCE_LOCK_SPACE, "id": instance_id}
        claim = text("SELECT pg_try_advisory_lock(:space, hashtext(:id))")
        claimed = await connection.scalar(claim, key)
        if not claimed and self._held:
            orphans = text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = :name AND pid <> pg_backend_pid()"
            )
            if await connection.scalar(orphans, {"name": self._writer_name}):
                deadline = self._loop.time() + ORPHAN_CLAIM_WAIT_S
                while not (claimed := await connection.scalar(claim, key)) and self._loop.time() < deadline:
                    await asyncio.sleep(0.05)
        await connection.commit()  # (the lock is the session's, not the transaction's)
        if not claimed:
            verb = "took" if self._held else "runs as"
            raise InstanceTakenError(f"another server {verb} instance {instance_id!r} on this database")

    def _lose(self, instance_id: str | None, why: str) -> None:
        if not self.lost.is_set():
            log.critical("lost instance %r: %s; refusing every write from now on", instance_id, why)
            self.lost.set()

    async def check(self) -> None:
        """See that the idle writer's connection, and the claim it holds, are still there, renewing the
        lease (:meth:`fence`); if not, open another and take the claim again at once (see
        :data:`CLAIM_CHECK_S`)."""
        for _ in range(2):  # (a broken connection, then a new one)
            try:
                async with asyncio.timeout(CLAIM_CHECK_TIMEOUT_S):
                    connection = await self.connection()
                    async with connection.begin():
                        await self.fence(connection)
                return
            except InstanceTakenError:
                return  # (lost for good: see connection)
            except Exception as error:
                await self.drop_connection()
                if not is_unavailable(error):
                    log.warning("checking the database connection failed: %s", reason(error))

    async def drop_connection(self) -> None:
        """Let go of the writer's connection after a failure: it may be broken (the database restarted).
        The instance's claim goes with it, and is taken again with the next one."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await _let_go(connection)

    async def close(self) -> None:
        """Let go of the claim: the writer's connection on PostgreSQL, the lock file on SQLite."""
        await self.drop_connection()
        if self._lock_file is not None:
            os.close(self._lock_file)  # (the lock goes with it; the file stays, see lock_instance_file)
            self._lock_file = None


async def _let_go(connection: AsyncConnection) -> None:
    """Close the writer's connection for good, not back into the pool: its session, and the claim it may
    hold, end with it (a pooled connection would keep the lock, and the next one be refused it)."""
    with contextlib.suppress(Exception):
        await connection.invalidate()
    with contextlib.suppress(Exception):
        await connection.close()


def lock_instance_file(database: str, instance_id: str) -> int:
    """Lock ``<database>.instance-<sha256 of the id, 16 hex digits>.lock`` beside the SQLite file, and
    return its descriptor: the lock lasts as long as it stays open, in this process.

    An ``flock`` belongs to the open file, not to the process, so a second store is refused whether it
    runs in another process or in this one; the kernel drops it when the process dies, so a killed
    server's successor gets it at once. The file is never deleted: a server deleting it while another has just
    opened it (and not yet locked it) would let a third lock a new file under the same name. Open and
    lock are each a system call that does not wait, so this runs on the event loop.
    """
    digest = hashlib.sha256(instance_id.encode()).hexdigest()[:16]
    lock_path = f"{os.path.realpath(database)}.instance-{digest}.lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise DatabaseOpenError(
            f"cannot claim instance {instance_id!r}: cannot open its lock file {lock_path}: "
            f"{error.strerror or error}"
        ) from error
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InstanceTakenError(
            f"another server runs as instance {instance_id!r} on the database file {database} "
            f"(it holds {lock_path})"
        ) from None
    except OSError as error:
        os.close(fd)
        raise DatabaseOpenError(
            f"cannot claim instance {instance_id!r}: cannot lock its lock file {lock_path}: "
            f"{error.strerror or error}"
        ) from error
    return fd
