"""Chat lines: each match's chat is stored, so a restarted server shows it again.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23

A line is numbered by the ``seq`` of its ``chat`` event within its match, which
is also the order a restarted server reads the last lines back in. Matches
played before this revision simply have no chat stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chat_lines",
        sa.Column("match_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("seat", sa.SmallInteger(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("text", sa.String(200), nullable=False),
        sa.Column("said_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("match_id", "seq", name="pk_chat_lines"),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_chat_lines_match_id_matches"),
        sa.CheckConstraint("seq > 0", name=op.f("ck_chat_lines_seq")),
        sa.CheckConstraint("seat IN (0, 1)", name=op.f("ck_chat_lines_seat")),
    )


def downgrade() -> None:
    op.drop_table("chat_lines")
