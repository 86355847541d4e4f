"""Names and chat lines stored before the limit on stacked marks follow it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24

Since this revision's code, ``server.text`` refuses a name or a chat line that
stacks more than 4 combining marks on one character ("Zalgo" text, which draws
over the lines around it on every page that shows it). Names and lines stored
earlier could still stack dozens; this migration mends them as
``server.text.unstacked`` does: the marks past the fourth on a character are
dropped, the rest kept (in NFC). Only the text changes: players, seats and
lines keep their ids. Text within the limit is left exactly as stored.

There is no way back: the downgrade leaves the mended text as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from server.text import unstacked

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

players = sa.table("players", sa.column("id", sa.String), sa.column("name", sa.String))
chat_lines = sa.table(
    "chat_lines",
    sa.column("match_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("name", sa.String),
    sa.column("text", sa.String),
)


def upgrade() -> None:
    connection = op.get_bind()
    mended_names = [
        {"player_id": player_id, "mended": unstacked(name)}
        for player_id, name in connection.execute(sa.select(players.c.id, players.c.name))
        if unstacked(name) != name
    ]
    if mended_names:
        connection.execute(
            players.update().where(players.c.id == sa.bindparam("player_id")).values(name=sa.bindparam("mended")),
            mended_names,
        )
    # A line keeps the name its speaker had when it was said: that is mended too.
    lines = sa.select(chat_lines.c.match_id, chat_lines.c.seq, chat_lines.c.name, chat_lines.c.text)
    mended_lines = [
        {"line_match": match_id, "line_seq": seq, "mended_name": unstacked(name), "mended_text": unstacked(text)}
        for match_id, seq, name, text in connection.execute(lines)
        if unstacked(name) != name or unstacked(text) != text
    ]
    if mended_lines:
        connection.execute(
            chat_lines.update()
            .where(chat_lines.c.match_id == sa.bindparam("line_match"), chat_lines.c.seq == sa.bindparam("line_seq"))
            .values(name=sa.bindparam("mended_name"), text=sa.bindparam("mended_text")),
            mended_lines,
        )


def downgrade() -> None:
    """The text before was not kept: nothing to undo."""
