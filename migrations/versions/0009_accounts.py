"""Accounts: a claimed name with a password hash on ``players``, and the ``sessions`` of logged-in devices.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

A guest (a player known by a token alone) may claim a name with a password; ``players.name_key`` is the
claimed name folded for comparison (unique: no two players claim one name however it is cased),
``players.password_hash`` its argon2id hash. Both stay null for guests, whose names may repeat as before.
Logging in makes a new token for the same player, kept (as its SHA-256) in ``sessions``. Existing tokens
stay in ``players.token_hash`` and keep working: nothing stored before is changed.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("players") as players:
        players.add_column(sa.Column("name_key", sa.String(200), nullable=True))
        players.add_column(sa.Column("password_hash", sa.String(200), nullable=True))
        players.create_index("ix_players_name_key", ["name_key"], unique=True)
    op.create_table(
        "sessions",
        sa.Column("token_hash", sa.String(128), nullable=False),
        sa.Column("player_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name=op.f("fk_sessions_player_id_players")),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_sessions")),
    )
    op.create_index("ix_sessions_player_id", "sessions", ["player_id"])


def downgrade() -> None:
    op.drop_index("ix_sessions_player_id", table_name="sessions")
    op.drop_table("sessions")
    with op.batch_alter_table("players") as players:
        players.drop_index("ix_players_name_key")
        players.drop_column("password_hash")
        players.drop_column("name_key")
