"""The messages of accounts (docs/protocol.md, "Accounts"): claiming a name with a password, logging out.

Logging in is a ``hello`` with a name and a password (server/protocol.py); these are what a connection
that said hello may do about its account.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from server.protocol_base import Name, PlayerInfo, Request, ServerMessage

MAX_PASSWORD_LENGTH = 256
Password = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PASSWORD_LENGTH)]
"""A password as the wire takes it; a new one must also be long enough (server/passwords.py)."""


class Register(Request, tag="account.register", kw_only=True, frozen=True):
    """Claim a name with a password: this player's own name, or ``name`` (which becomes theirs)."""

    password: Password
    name: Name | None = None


class Logout(Request, tag="account.logout", kw_only=True, frozen=True):
    """End this connection's token, or with ``everywhere`` every token of the player."""

    everywhere: bool = False


class AccountClaimed(ServerMessage, tag="account.claimed", kw_only=True, frozen=True):
    """The reply to ``account.register``: the player, under the name now theirs alone."""

    player: PlayerInfo


class LoggedOut(ServerMessage, tag="account.logged_out", kw_only=True, frozen=True):
    """The reply to ``account.logout``, and the word to every other connection whose token it ended
    (all of the player's, logging out everywhere): the server closes each such connection right after."""

    everywhere: bool
