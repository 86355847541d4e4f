"""Names stored before the name rules follow them: NFC, visible characters only, at most 32 characters.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

Names have been checked by ``server.text.clean_name`` since it refused the
characters that do not show (zero-width, bidi controls, Hangul fillers, ...); a
name stored earlier could still hold them, and would show in lobbies, replays
and exports as it was. This migration mends those names with the same rules
(``server.text.repaired_name``): the characters that do not show are dropped
and the name is cut to the protocol's length. A name left with nothing to show
becomes ``player`` and the first six characters of the player's id, which
players can tell apart. Only the name changes: tokens, seats and records keep
pointing to the same player.

There is no way back: the downgrade leaves the mended names as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from server.protocol import MAX_NAME_LENGTH
from server.text import repaired_name

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

players = sa.table("players", sa.column("id", sa.String), sa.column("name", sa.String))


def upgrade() -> None:
    connection = op.get_bind()
    renamed = []
    for player_id, name in connection.execute(sa.select(players.c.id, players.c.name)):
        mended = repaired_name(name, MAX_NAME_LENGTH) or f"player {player_id[:6]}"
        if mended != name:
            renamed.append({"player_id": player_id, "mended": mended})
    if renamed:
        connection.execute(
            players.update().where(players.c.id == sa.bindparam("player_id")).values(name=sa.bindparam("mended")),
            renamed,
        )


def downgrade() -> None:
    """The names before were not kept: nothing to undo."""
