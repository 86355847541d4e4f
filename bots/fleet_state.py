"""A fleet's state file: the token of each bot identity, so a restarted fleet comes back as the same players.

A server knows a returning player by the secret token its first ``welcome`` gave; a bot that says hello
without it is a new player, and the games of the old one end by forfeit when their grace runs out. The
file keeps, per server URL and bot name, the latest token the fleet was welcomed with::

    {"version": 1, "tokens": {"ws://arena:8765/ws": {"alphabeta-c4-L3": "..."}}}

It is written whole and atomically (a temporary file in the same directory, then ``os.replace``), so a
fleet killed while writing leaves the old file or the new one, never half of one, and readable by its
owner only (mode 0o600): the tokens are secrets. One fleet per file: two sharing one would each write
what it knows and lose the other's tokens.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

VERSION = 1


class FleetStateError(Exception):
    """The state file cannot be read or written; the message names the file and why."""


class _File(msgspec.Struct, frozen=True):
    version: int
    tokens: dict[str, dict[str, str]]


@dataclass(slots=True)
class FleetState:
    """The tokens kept in :attr:`path`, by server URL and bot name; see the module docstring."""

    path: Path
    tokens: dict[str, dict[str, str]] = field(default_factory=dict)
    _unsaved: bool = field(default=False, init=False, repr=False)
    """The last write failed: the next :meth:`remember` tries again."""

    @classmethod
    def open(cls, path: Path) -> FleetState:
        """The state in ``path`` (none yet if there is no such file), written back at once.

        Writing it at start proves the way every later write takes (the directory, the permissions), so
        a file that cannot be kept is refused before the fleet starts, not found out mid-game.
        """
        state = cls.load(path)
        state.save()
        return state

    @classmethod
    def load(cls, path: Path) -> FleetState:
        """The state in ``path``, or an empty one if the file does not exist yet."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        except OSError as error:
            raise FleetStateError(f"cannot read fleet state {path}: {error.strerror or error}") from None
        try:
            stored = msgspec.json.decode(data, type=_File)
        except msgspec.DecodeError as error:
            raise FleetStateError(
                f"{path} is not a fleet state file ({error}); move it away to start as new bot players"
            ) from None
        if stored.version != VERSION:
            raise FleetStateError(f"{path} is a fleet state file of version {stored.version}; "
                                  f"this fleet reads version {VERSION}")  # fmt: skip
        return cls(path, {url: dict(bots) for url, bots in stored.tokens.items()})

    def identities(self) -> Iterator[tuple[str, str, str]]:
        """Every bot identity kept: its server URL, bot name and token."""
        for url, bots in self.tokens.items():
            for name, token in bots.items():
                yield url, name, token

    def token(self, url: str, name: str) -> str | None:
        """The token of the bot called ``name`` at ``url``, if one is kept."""
        return self.tokens.get(url, {}).get(name)

    def remember(self, url: str, name: str, token: str) -> bool:
        """Keep ``token`` as the bot ``name``'s at ``url``, writing the file if that changes it (or if the
        last write failed); whether it wrote. Raises :class:`FleetStateError` if the write fails."""
        if self.token(url, name) == token and not self._unsaved:
            return False
        self.tokens.setdefault(url, {})[name] = token
        self.save()
        return True

    def save(self) -> None:
        """Write the whole state atomically, mode 0o600; raise :class:`FleetStateError` saying why not."""
        data = msgspec.json.format(msgspec.json.encode(_File(VERSION, self.tokens)), indent=2) + b"\n"
        self._unsaved = True
        try:
            # mkstemp creates the file for its owner alone (0o600) and in the target's directory, so
            # os.replace is a rename on one file system: atomic.
            handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(data)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as error:
            raise FleetStateError(
                f"cannot write fleet state {self.path}: {error.strerror or error}"
            ) from None
        self._unsaved = False
