"""What the command line accepts, checked before a command starts, and the error of one that cannot.

Each function here is an argparse ``type``: it turns the option's text into its
value or raises :class:`argparse.ArgumentTypeError`, which argparse prints as
``plyarena COMMAND: error: argument --port: ...`` with exit status 2. The
checks are the ones the server, the store and the bus apply themselves, so a
bad value is refused at once, in one line, rather than as a traceback once
the server is half started.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

from websockets.exceptions import InvalidURI
from websockets.uri import parse_uri

from games import GAMES, IllegalMoveError, Position, get_game
from server.bus import BrokerAddress
from server.clock import TimeControl
from server.config import MAX_PORT, check_fleet_key
from server.storage.engine import async_url


class CommandError(Exception):
    """A command cannot go on for a reason its user can fix (a port in use, a database not found).

    :func:`plyarena.cli.main` prints the message alone, as ``plyarena COMMAND: error: ...``, and exits 1.
    """


def checked_by(check: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type that keeps the text when ``check`` accepts it, and refuses it with its message."""

    def accept(text: str) -> str:
        try:
            check(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text

    return accept


FLEET_KEY_ENV = "PLYARENA_FLEET_KEY"
"""The environment variable that gives a server, or a fleet, the fleet key (when no file does)."""


def add_fleet_key_option(
    parser: argparse.ArgumentParser, what: str, default: str = f"${FLEET_KEY_ENV}, else none"
) -> None:
    """``--fleet-key-file``: a file, not the key itself, so that the key shows in no process list."""
    parser.add_argument(
        "--fleet-key-file",
        type=Path,
        metavar="PATH",
        help=f"{what}, as the file's one line (default: {default}; see docs/bots.md)",
    )


def fleet_key(path: Path | None) -> str | None:
    """The fleet key in the file at ``path`` (its one line, without the line end), else in
    ``$PLYARENA_FLEET_KEY``, else ``None``; a key that cannot be one is a :class:`CommandError`."""
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read the fleet key from {path}: {error}") from None
        source = str(path)
    else:
        text = os.environ.get(FLEET_KEY_ENV, "").strip()
        source = f"${FLEET_KEY_ENV}"
        if not text:
            return None
    try:
        check_fleet_key(text)
    except ValueError as error:
        raise CommandError(f"{source}: {error}") from None
    return text


def engine_command(text: str) -> tuple[str, list[str]]:
    """An outside engine as ``NAME=COMMAND`` (``stockfish=/usr/games/stockfish``): name and command line."""
    from bots.engine import parse_engine  # python-chess's engine module only where an engine is asked for

    try:
        return parse_engine(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _websocket_url(text: str) -> None:
    try:
        parse_uri(text)
    except (InvalidURI, ValueError):
        raise ValueError(f"{text!r} is not a WebSocket URL: use ws://host:port/ws or wss://...") from None


def _http_url(text: str) -> None:
    scheme, separator, rest = text.partition("://")
    if scheme not in ("http", "https") or not separator or not rest.strip("/"):
        raise ValueError(f"{text!r} is not an http:// or https:// URL")


database_url = checked_by(async_url)
"""A database URL the store can open: SQLite or PostgreSQL."""
mqtt_url = checked_by(BrokerAddress.parse)
"""An ``mqtt://`` or ``mqtts://`` broker URL."""
websocket_url = checked_by(_websocket_url)
"""A server's WebSocket endpoint, ``ws://`` or ``wss://``."""
http_url = checked_by(_http_url)
"""A public ``http://`` or ``https://`` address."""
time_control = checked_by(TimeControl.parse)
"""A match's time control as the server reads it: ``5+3``, ``0:30+1`` or ``untimed``."""


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free one)."""
    value = _integer(text)
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{value} is not a port: use 0 to {MAX_PORT} (0: any free one)")
    return value


def positive_int(text: str) -> int:
    """A whole number, 1 or more."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: use 1 or more")
    return value


def non_negative_int(text: str) -> int:
    """A whole number, 0 or more."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: use 0 or more")
    return value


def finite_float(text: str) -> float:
    """Any finite number (``nan`` and ``inf`` would never compare as meant)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def non_negative_float(text: str) -> float:
    """A finite number, 0 or more (a duration, a time budget)."""
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative: use 0 or more")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def moves_of(game: str, text: str) -> list[str]:
    """The moves in ``text``, space-separated notation; for Connect Four a digit string like ``4453``
    is also a move per digit, as Pons' test sets write games."""
    tokens = text.split()
    if game == "connect4" and len(tokens) == 1 and tokens[0].isdigit():
        return list(tokens[0])
    return tokens


def position_after(game: str, moves: str, fen: str | None = None) -> Position:
    """The position ``--moves`` reaches in ``game``, from ``--fen`` if given, else from the start;
    :class:`CommandError` naming a FEN that is no position of the game, or the first bad move.

    Checked in the command, not by argparse, because the moves mean something only in their game.
    """
    rules = get_game(game)
    if fen is None:
        position = rules.start()
    elif rules.from_fen is None:
        raise CommandError(f"--fen: {game} has no FEN; the games that have: {', '.join(games_with_fen())}")
    else:
        try:
            position = rules.from_fen(fen)
        except ValueError as error:
            raise CommandError(f"--fen: {error}") from None
    try:
        for text in moves_of(game, moves):
            position = position.play(position.parse_move(text))
    except IllegalMoveError as error:
        raise CommandError(f"cannot replay --moves: {error}") from None
    return position


def games_with_fen() -> list[str]:
    """The games whose positions can be given as FEN (``--fen``)."""
    return sorted(name for name, rules in GAMES.items() if rules.from_fen is not None)


def check_writable(path: Path) -> None:
    """Raise :class:`CommandError` unless ``path`` can be written, before the work that ends in writing it.

    Opening the file for appending is the one test that answers for every reason (a missing directory,
    a directory in the way, permissions, a read-only file system); a file that did not exist is removed
    again, and one that did is left as it was.
    """
    if path.is_dir():
        raise CommandError(f"cannot write {path}: it is a directory")
    existed = path.exists()
    try:
        with path.open("a"):
            pass
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror or error}") from None
    if not existed:
        path.unlink(missing_ok=True)
