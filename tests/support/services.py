"""Services of a test's own, to break at will: a private Mosquitto, a private PostgreSQL, and a TCP
relay that can be cut.

Fault tests stop brokers and cut databases; they never touch the machine's
shared services (Mosquitto on 1883, PostgreSQL on 5432), which other tests and
other people use. A missing binary skips the test, or fails it when
``PLYARENA_REQUIRE_SERVICES=1`` (as CI sets), the policy of tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import asyncpg
import pytest

from support.process import free_port

SERVICES_REQUIRED = "PLYARENA_REQUIRE_SERVICES"
MOSQUITTO_PATHS = ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")
READY_TIMEOUT_S = 10.0


def missing(what: str, why: str, required_by: str = SERVICES_REQUIRED) -> None:
    """Skip the test because ``what`` is not available, or fail it when the variable ``required_by`` is
    ``1`` (as CI sets it): the one policy of every test that needs something beyond the repository."""
    message = f"{what} is not available: {why}"
    if os.environ.get(required_by) == "1":
        pytest.fail(f"{message} (required: {required_by}=1)", pytrace=False)
    pytest.skip(message)


def mosquitto_binary() -> str:
    found = shutil.which("mosquitto") or next((p for p in MOSQUITTO_PATHS if os.path.exists(p)), None)
    if found is None:
        missing("Mosquitto", "no mosquitto binary (apt-get install mosquitto)")
    assert found is not None
    return found


def postgres_binaries() -> str:
    """The directory of PostgreSQL's server programs (``initdb``, ``postgres``), the newest installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(path.split("/")[4]))
    initdb = found[-1] if found else shutil.which("initdb")
    if initdb is None:
        missing("PostgreSQL's server programs", "no initdb (apt-get install postgresql)")
    assert initdb is not None
    return os.path.dirname(initdb)


async def wait_for_port(port: int, timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on port {port} after {timeout} s") from None
            await asyncio.sleep(0.05)
        else:
            writer.close()
            return


class PrivateMosquitto:
    """``mosquitto -p PORT`` on a free port (local connections only), stopped and started again at will."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start the broker on its port (the same one every time) and wait until it accepts clients."""
        self.process = await asyncio.create_subprocess_exec(
            self.binary, "-p", str(self.port),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await wait_for_port(self.port)

    async def stop(self) -> None:
        """Stop the broker; it keeps nothing (no persistence), as a broker that crashed and lost its state."""
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()
        self.process = None


class TcpProxy:
    """A TCP relay to ``target`` that can be cut (every connection broken, new ones refused) and resumed,
    on the same port: to its clients, what a restart of the service behind it looks like."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._relays: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port, reuse_address=True)

    async def cut(self) -> None:
        """Stop listening and break every open connection, without a goodbye."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def close(self) -> None:
        await self.cut()
        for relay in self._relays:
            relay.cancel()
        await asyncio.gather(*self._relays, return_exceptions=True)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            try:
                target_reader, target_writer = await asyncio.open_connection(*self.target)
            except OSError:
                client_writer.transport.abort()
                return
            self._writers |= {client_writer, target_writer}
            await asyncio.gather(
                self._pipe(client_reader, target_writer),
                self._pipe(target_reader, client_writer),
                return_exceptions=True,
            )
        finally:
            self._relays.discard(task)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            with contextlib.suppress(OSError):
                writer.transport.abort()


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own, in a scratch directory, on a free port: stopped as an
    operator's restart stops it (a fast shutdown: every session is told ``terminating connection due to
    administrator command`` and closed) and started again, on the same port, with its data.

    PostgreSQL will not run as root, so as root (CI) it runs as the ``postgres`` user, in a directory
    given to that user."""

    def __init__(self, binaries: str) -> None:
        self.binaries = binaries
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix="plyarena-postgres-")
        self.process: asyncio.subprocess.Process | None = None
        self._user: dict[str, object] = {}
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                missing("PostgreSQL's server programs", "running as root, and there is no postgres user")
            os.chown(self.directory, account.pw_uid, account.pw_gid)
            self._user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        subprocess.run(
            [os.path.join(binaries, "initdb"), "-D", self.directory, "-U", "postgres", "--auth=trust",
             "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True, **self._user,  # type: ignore[arg-type]
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    async def start(self) -> None:
        """Start the cluster on its port (the same one every time) and wait until it takes connections."""
        self.process = await asyncio.create_subprocess_exec(
            os.path.join(self.binaries, "postgres"), "-D", self.directory, "-p", str(self.port),
            "-k", self.directory, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, **self._user,
        )  # fmt: skip
        await wait_for_port(self.port)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:  # (it listens before it takes sessions: "the database system is starting up")
            try:
                connection = await asyncpg.connect(host="127.0.0.1", port=self.port, user="postgres")
            except (OSError, asyncpg.PostgresError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
            else:
                await connection.close()
                return

    async def stop(self) -> None:
        """A fast shutdown (SIGINT), as ``pg_ctl restart -m fast`` begins one; wait until it is down."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)
            await self.process.wait()
        self.process = None

    async def close(self) -> None:
        await self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
