"""Who a connection is: guests by token, claimed names by password, and logging out.

A player made by ``hello`` with a name is a *guest*: their token (kept as its hash in ``players``) is
their one key, and guests' names may repeat. A guest claims a name with a password
(``account.register``): the name is then theirs alone, compared as :func:`name_key` folds it, and
``hello`` with that name and password from any device gives a new token for the same player (a
*session*, its hash kept in ``sessions``). Logging out ends this connection's token; logging out
everywhere ends every token of the player and closes each of their connections, on every instance that
shares the bus (:data:`LOGOUTS_PATTERN`).

Passwords are argon2id hashes (server/passwords.py), checked in threads; logins and registrations are
limited per address and per name (server/login_limits.py). Neither a password nor a token is logged or
sent anywhere but the token to its owner.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

from websockets.frames import CloseCode

from server import protocol
from server.addresses import AddressQuota
from server.bus import EventBus
from server.config import ServerConfig
from server.connection import Connection
from server.errors import ErrorCode, ProtocolError
from server.live import player_info
from server.lobby import TOPIC_ROOT
from server.login_limits import LoginGuard, seconds_text
from server.passwords import MIN_PASSWORD_LENGTH, Passwords
from server.storage import PlayerRecord, Store, writes
from server.text import clean_name, name_key
from server.tokens import hash_token, new_token

log = logging.getLogger(__name__)

LOGGED_OUT_REASON = "logged out"
LOGOUTS_PATTERN = f"{TOPIC_ROOT}/logouts/+/+"
"""What every instance follows on the bus: the players who logged out everywhere, by the instance that
logged them out (``logouts/{instance}/{player_id}``), so that each closes their connections too."""


def logout_topic(instance: str, player_id: str) -> str:
    return f"{TOPIC_ROOT}/logouts/{instance}/{player_id}"


class Accounts:
    """Says who a connection is (``hello``), and handles ``account.register`` and ``account.logout``."""

    def __init__(
        self,
        config: ServerConfig,
        store: Store,
        quota: AddressQuota,
        bus: EventBus,
        now: Callable[[], float],
        passwords: Passwords | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.quota = quota
        self.bus = bus
        self.now = now
        self.passwords = passwords or Passwords()
        self.guard = LoginGuard(
            config.login_rate_per_s,
            config.login_burst,
            config.login_free_failures,
            config.login_max_lockout_s,
        )
        self.connections: defaultdict[str, set[Connection]] = defaultdict(set)
        """The connections that said hello, by player id: those logging out everywhere closes."""
        self.token_hashes: dict[Connection, tuple[str, bool]] = {}
        """Each connection's token hash, and whether it is a login's (a session) or the player's first."""

    # ----------------------------------------------------------------- hello

    async def identify(self, connection: Connection, request: protocol.Hello) -> tuple[PlayerRecord, str]:
        """The player ``request`` says hello as, and the token to give back; raises :class:`ProtocolError`
        (``bad_token``, ``bad_login``, ``rate_limited``, ``bad_field``) with nothing changed."""
        if request.token is None and request.password is not None:  # (a token outranks a name and password)
            if request.name is None:
                raise ProtocolError(ErrorCode.BAD_FIELD, "a login is hello with a name and a password")
            return await self._log_in(connection, request.name, request.password)
        if request.token is not None:
            token = request.token
            owner = await self.store.token_owner(hash_token(token))
            if owner is None:
                raise ProtocolError(ErrorCode.BAD_TOKEN, "that token belongs to no player here")
            player, is_session = owner
            if is_session:
                await self.store.commit(writes.session_seen(hash_token(token), datetime.now(UTC)))
            self._said_hello(connection, player, token, is_session)
            return player, token
        if request.name is not None:
            name = clean_name(request.name, protocol.MAX_NAME_LENGTH)
            if not self.quota.may_create_player(connection.address, self.now()):
                raise ProtocolError(
                    ErrorCode.RATE_LIMITED,
                    f"your address made {self.config.new_players_burst} new players lately, the most it may "
                    "at once: come back as one of them (hello with its token), or try again later",
                )
            token = new_token()
            player = await self.store.create_player(name, hash_token(token), is_bot=request.bot)
            self._said_hello(connection, player, token, False)
            return player, token
        raise ProtocolError(ErrorCode.BAD_FIELD, "hello needs a name, or the token of a returning player")

    async def _log_in(self, connection: Connection, raw_name: str, password: str) -> tuple[PlayerRecord, str]:
        name = clean_name(raw_name, protocol.MAX_NAME_LENGTH)
        keys = self._limit_keys(connection, name)
        self._check_limits(keys, "log in")
        claimed = await self.store.claimed_player(name_key(name))
        matched = await self.passwords.check(None if claimed is None else claimed[1], password)
        if claimed is None or not matched:
            self.guard.failed(keys, self.now())
            raise ProtocolError(ErrorCode.BAD_LOGIN, "no claimed name with that password: check both")
        self.guard.succeeded(keys)
        player = claimed[0]
        token = new_token()
        await self.store.commit(writes.new_session(player.id, hash_token(token), datetime.now(UTC)))
        self._said_hello(connection, player, token, True)
        log.info("player %s logged in", player.id)
        return player, token

    def _said_hello(self, connection: Connection, player: PlayerRecord, token: str, is_session: bool) -> None:
        connection.player = player
        self.connections[player.id].add(connection)
        self.token_hashes[connection] = (hash_token(token), is_session)

    def closed(self, connection: Connection) -> None:
        """Forget a connection once closed."""
        self.token_hashes.pop(connection, None)
        player_id = connection.player_id
        if player_id is not None and player_id in self.connections:
            held = self.connections[player_id]
            held.discard(connection)
            if not held:
                del self.connections[player_id]

    # ----------------------------------------------------------------- requests

    async def register(self, connection: Connection, request: protocol.Register) -> None:
        """Claim this guest's name, or ``request.name``, with a password; the player keeps their id, token,
        seats and history."""
        player = connection.player
        assert player is not None
        if player.claimed:
            raise ProtocolError(ErrorCode.NOT_ALLOWED, f"you have claimed the name {player.name!r} already")
        name = player.name if request.name is None else clean_name(request.name, protocol.MAX_NAME_LENGTH)
        if len(request.password) < MIN_PASSWORD_LENGTH:
            raise ProtocolError(
                ErrorCode.BAD_FIELD, f"a password needs at least {MIN_PASSWORD_LENGTH} characters"
            )
        keys = self._limit_keys(connection, name)
        self._check_limits(keys, "claim a name")
        key = name_key(name)
        if await self.store.claimed_player(key) is not None:
            raise ProtocolError(ErrorCode.NAME_TAKEN, f"the name {name!r} is claimed by another player")
        password_hash = await self.passwords.hash(request.password)
        await self.store.commit(writes.name_claim(player.id, name, key, password_hash))
        claimed = PlayerRecord(player.id, name, player.is_bot, player.created_at, claimed=True)
        for held in self.connections.get(player.id, ()):
            held.player = claimed
        log.info("player %s claimed a name", player.id)
        connection.send(protocol.AccountClaimed(player=player_info(claimed), id=request.id))

    async def logout(self, connection: Connection, request: protocol.Logout) -> None:
        """End this connection's token (or every token of the player), say so, and close every connection
        here that said hello with an ended token."""
        player = connection.player
        assert player is not None
        if not player.claimed:
            raise ProtocolError(
                ErrorCode.NOT_ALLOWED,
                "claim your name with a password first (account.register): a guest's token is their one key",
            )
        token_hash, is_session = self.token_hashes[connection]
        if request.everywhere:
            await self.store.commit(writes.sessions_end(player.id, hash_token(new_token())))
        elif is_session:
            await self.store.commit(writes.session_end(token_hash))
        else:
            await self.store.commit(writes.token_replace(player.id, hash_token(new_token())))
        log.info("player %s logged out%s", player.id, " everywhere" if request.everywhere else "")
        connection.send(protocol.LoggedOut(everywhere=request.everywhere, id=request.id))
        connection.close(CloseCode.NORMAL_CLOSURE, LOGGED_OUT_REASON)
        for other in list(self.connections.get(player.id, ())):
            ended = request.everywhere or self.token_hashes.get(other, ("",))[0] == token_hash
            if other is not connection and ended:  # (another tab of this browser shares its token)
                _tell_logged_out(other, request.everywhere)
        if request.everywhere:
            self.bus.publish_nowait(logout_topic(self.config.instance_id, player.id), b"{}")

    async def follow_logouts(self) -> None:
        """Close, until cancelled, the connections here of each player another instance logged out
        everywhere (their tokens are gone from the database already: this only ends what is open)."""
        async with self.bus.subscribe(LOGOUTS_PATTERN) as messages:
            async for topic, _ in messages:
                *_, instance, player_id = topic.split("/")
                if instance == self.config.instance_id:
                    continue  # (closed as it logged them out)
                for connection in list(self.connections.get(player_id, ())):
                    _tell_logged_out(connection, everywhere=True)

    # ----------------------------------------------------------------- limits

    def _limit_keys(self, connection: Connection, name: str) -> list[str]:
        """What a login or registration counts against: its name, and its address unless uncapped."""
        address = self.quota.key_of(connection.address)
        return [f"name:{name_key(name)}", *([f"address:{address}"] if address is not None else [])]

    def _check_limits(self, keys: list[str], action: str) -> None:
        wait = self.guard.wait_s(keys, self.now())
        if wait > 0:
            raise ProtocolError(
                ErrorCode.RATE_LIMITED,
                f"too many tries to {action} with that name or from your address: try again in "
                f"{seconds_text(wait)}",
            )


def _tell_logged_out(connection: Connection, everywhere: bool) -> None:
    """Say to a connection whose token has ended that it is logged out, and close it."""
    connection.send(protocol.LoggedOut(everywhere=everywhere))
    connection.close(CloseCode.NORMAL_CLOSURE, LOGGED_OUT_REASON)
