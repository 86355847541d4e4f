"""Names, chat lines and principal variations stored before the rules on invisible characters follow them.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25

Since this revision's code, ``server.text`` treats Unicode's default-ignorable
code points (variation selectors, the combining grapheme joiner, Mongolian free
variation selectors, Khmer inherent vowels, ...) and blank characters (the
braille pattern blank, ...) as what they are, invisible: a name may not hold
them, and a chat line made only of them and spaces shows nothing. And a bot's
principal variation (``server.protocol.PV_MOVE_PATTERN``) is move notation, not
free text. What was stored earlier could break these rules (``alice\\u034f``
looked like ``alice``); this migration mends what they refuse, and only that:

- a name (a player's, or the one a chat line was said under) loses the
  characters that do not show, as ``server.text.repaired_name`` drops them (and
  ``server.text.unstacked`` the marks past the fourth, should a dropped blank
  have kept two stacks apart); a name left with nothing to show becomes
  ``player`` and the first six characters of the player's id, as in 0002.
  Names need not be unique: one mended into another player's name stays so, as
  ids tell players apart;
- a chat line in which nothing shows is deleted: nothing of it was seen. The
  other lines keep their ``seq``;
- a principal variation is cut before its first entry that is not a move
  (stored as null if none is left): the moves after it do not follow any more.

Text the rules accept is left exactly as stored, byte for byte. Players, seats,
moves and lines keep their ids.

There is no way back: the downgrade leaves the mended text as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from server.errors import ErrorCode, ProtocolError
from server.protocol import MAX_MOVE_LENGTH, MAX_NAME_LENGTH, PV_MOVE_PATTERN
from server.text import clean_name, repaired_name, shows_something, unstacked

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

players = sa.table("players", sa.column("id", sa.String), sa.column("name", sa.String))
seats = sa.table(
    "seats",
    sa.column("match_id", sa.String),
    sa.column("seat", sa.Integer),
    sa.column("player_id", sa.String),
)
chat_lines = sa.table(
    "chat_lines",
    sa.column("match_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("seat", sa.Integer),
    sa.column("name", sa.String),
    sa.column("text", sa.String),
)
moves = sa.table(
    "moves", sa.column("match_id", sa.String), sa.column("ply", sa.Integer), sa.column("pv", sa.JSON)
)
pv_move = re.compile(PV_MOVE_PATTERN)
STREAMED_ROWS = 10_000
"""Rows read at a time (a server-side cursor where the driver has one): every bot move has a pv, so a
database of millions of them is read through, not into memory; only what is mended is kept."""


def mended_name(name: str, player_id: str | None) -> str:
    """``name`` as stored if today's name rules accept it as it is, else what shows of it (they accept
    a presentation selector only to drop it)."""
    try:
        clean_name(name, MAX_NAME_LENGTH)
        if "\ufe0e" in name or "\ufe0f" in name:
            raise ProtocolError(ErrorCode.BAD_FIELD, "a presentation selector, which names drop")
    except ProtocolError:
        shown = repaired_name(name, MAX_NAME_LENGTH)
        if shown is not None:
            return unstacked(shown)
        return f"player {player_id[:6]}" if player_id else "player"
    return name


def mended_pv(pv: list[str]) -> list[str] | None:
    """``pv`` as stored if every entry is a move, else the moves before the first that is not."""
    for index, move in enumerate(pv):
        if not (isinstance(move, str) and len(move) <= MAX_MOVE_LENGTH and pv_move.fullmatch(move)):
            return pv[:index] or None
    return pv


def upgrade() -> None:
    connection = op.get_bind()
    names = sa.select(players.c.id, players.c.name).execution_options(yield_per=STREAMED_ROWS)
    mended_names = [
        {"player_id": player_id, "mended": mended}
        for player_id, name in connection.execute(names)
        if (mended := mended_name(name, player_id)) != name
    ]
    if mended_names:
        connection.execute(
            players.update()
            .where(players.c.id == sa.bindparam("player_id"))
            .values(name=sa.bindparam("mended")),
            mended_names,
        )
    # A line keeps the name its speaker had when it was said: that is mended too, with the speaker's id
    # for a name that nothing of shows.
    lines = (
        sa.select(chat_lines.c.match_id, chat_lines.c.seq, chat_lines.c.name, chat_lines.c.text, seats.c.player_id)
        .select_from(
            chat_lines.outerjoin(
                seats, sa.and_(seats.c.match_id == chat_lines.c.match_id, seats.c.seat == chat_lines.c.seat)
            )
        )
        .execution_options(yield_per=STREAMED_ROWS)
    )
    unseen_lines, mended_lines = [], []
    for match_id, seq, name, text, player_id in connection.execute(lines):
        line = {"line_match": match_id, "line_seq": seq}
        if not shows_something(text):
            unseen_lines.append(line)
        elif (mended := mended_name(name, player_id)) != name:
            mended_lines.append({**line, "mended_name": mended})
    line_key = (
        chat_lines.c.match_id == sa.bindparam("line_match"),
        chat_lines.c.seq == sa.bindparam("line_seq"),
    )
    if unseen_lines:
        connection.execute(chat_lines.delete().where(*line_key), unseen_lines)
    if mended_lines:
        connection.execute(
            chat_lines.update().where(*line_key).values(name=sa.bindparam("mended_name")), mended_lines
        )
    pvs = (
        sa.select(moves.c.match_id, moves.c.ply, moves.c.pv)
        .where(moves.c.pv.is_not(None))
        .execution_options(yield_per=STREAMED_ROWS)
    )
    mended_pvs = [
        {"move_match": match_id, "move_ply": ply, "mended_pv": mended}
        for match_id, ply, pv in connection.execute(pvs)
        if isinstance(pv, list) and (mended := mended_pv(pv)) != pv  # (a person's move stores JSON null)
    ]
    if mended_pvs:
        connection.execute(
            moves.update()
            .where(moves.c.match_id == sa.bindparam("move_match"), moves.c.ply == sa.bindparam("move_ply"))
            .values(pv=sa.bindparam("mended_pv")),
            mended_pvs,
        )
    if connection.dialect.name == "postgresql":
        # asyncpg keeps each streamed read's portal open until the transaction ends, and the revisions
        # run in one transaction: while they are open, a later revision could not alter these tables.
        connection.exec_driver_sql("CLOSE ALL")


def downgrade() -> None:
    """The text before was not kept: nothing to undo."""
