"""Password hashes for claimed names: argon2id (argon2-cffi), computed in threads so the loop never waits.

A hash takes tens of milliseconds of CPU and 64 MiB by design; on the event loop it would stall every
connection for that long. So each runs in a thread (``asyncio.to_thread``), at most
:data:`MAX_CONCURRENT_HASHES` at once: a flood of logins queues here instead of taking every core.
"""

from __future__ import annotations

import asyncio

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 256
MAX_CONCURRENT_HASHES = 2


class Passwords:
    """Hashes and checks passwords with argon2id, in threads, a few at a time."""

    def __init__(self, hasher: PasswordHasher | None = None) -> None:
        self._hasher = hasher or PasswordHasher()  # argon2id, RFC 9106's low-memory profile
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_HASHES)
        self._decoy = self._hasher.hash("a password no one has")
        """Checked against when a name is unknown, so that an unknown name takes as long as a wrong
        password: the time of an answer does not tell which names are claimed."""

    async def hash(self, password: str) -> str:
        async with self._slots:
            return await asyncio.to_thread(self._hasher.hash, password)

    async def check(self, stored_hash: str | None, password: str) -> bool:
        """Whether ``password`` is the one ``stored_hash`` was made from; ``None`` (no such account) takes
        as long and is never a match."""
        async with self._slots:
            return await asyncio.to_thread(self._matches, stored_hash, password)

    def _matches(self, stored_hash: str | None, password: str) -> bool:
        try:
            matched = self._hasher.verify(stored_hash or self._decoy, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        return matched and stored_hash is not None
