"""Where a bot's move came from, and the time its search took: ``moves.source`` and ``moves.time_ms``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07

A bot says whether its move came from an opening book, an exact solver or a
depth-limited search, and how long that took; replays show a book move without
the depth and node count it never had. Both columns are nullable: moves stored
before, and moves of clients that do not say, have neither.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("moves", sa.Column("source", sa.String(16), nullable=True))
    op.add_column("moves", sa.Column("time_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("moves") as moves:
        moves.drop_column("time_ms")
        moves.drop_column("source")
