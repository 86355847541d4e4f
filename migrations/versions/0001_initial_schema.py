"""Initial schema: players, matches, seats and moves.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Timestamps are timezone-aware (``timestamptz`` on PostgreSQL; naive UTC text on
SQLite, which server.storage.models.UTCDateTime reads back as UTC). Constraint and
index names follow the naming convention of server.storage.models (``op.f`` marks
a name as final, so the convention is not applied to it twice).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def timestamp(name: str, *, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "players",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("token_hash", sa.String(128), nullable=False),
        sa.Column("is_bot", sa.Boolean(), nullable=False),
        timestamp("created_at"),
        timestamp("last_seen_at"),
        sa.PrimaryKeyConstraint("id", name="pk_players"),
    )
    op.create_index("ix_players_token_hash", "players", ["token_hash"], unique=True)

    op.create_table(
        "matches",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("winner", sa.SmallInteger(), nullable=True),
        sa.Column("reason", sa.String(200), nullable=True),
        sa.Column("host", sa.String(200), nullable=False),
        timestamp("created_at"),
        timestamp("started_at", nullable=True),
        timestamp("finished_at", nullable=True),
        sa.Column("rematch_of", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_matches"),
        sa.ForeignKeyConstraint(["rematch_of"], ["matches.id"], name="fk_matches_rematch_of_matches"),
        sa.CheckConstraint(
            "status IN ('open', 'live', 'finished', 'aborted')", name=op.f("ck_matches_status")
        ),
        sa.CheckConstraint("winner IS NULL OR winner IN (0, 1)", name=op.f("ck_matches_winner")),
    )
    # /api/matches pages newest first, over all matches, one game or one status.
    op.create_index("ix_matches_created_at_id", "matches", ["created_at", "id"])
    op.create_index("ix_matches_game_created_at_id", "matches", ["game", "created_at", "id"])
    op.create_index("ix_matches_status_created_at_id", "matches", ["status", "created_at", "id"])

    op.create_table(
        "seats",
        sa.Column("match_id", sa.String(64), nullable=False),
        sa.Column("seat", sa.SmallInteger(), nullable=False),
        sa.Column("player_id", sa.String(64), nullable=False),
        timestamp("joined_at"),
        sa.PrimaryKeyConstraint("match_id", "seat", name="pk_seats"),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_seats_match_id_matches"),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name="fk_seats_player_id_players"),
        sa.CheckConstraint("seat IN (0, 1)", name=op.f("ck_seats_seat")),
    )
    # /api/matches?player= finds a player's matches through their seats.
    op.create_index("ix_seats_player_id_match_id", "seats", ["player_id", "match_id"])

    op.create_table(
        "moves",
        sa.Column("match_id", sa.String(64), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("seat", sa.SmallInteger(), nullable=False),
        sa.Column("notation", sa.String(64), nullable=False),
        sa.Column("think_ms", sa.Integer(), nullable=False),
        timestamp("played_at"),
        sa.Column("clock0_ms", sa.Integer(), nullable=True),
        sa.Column("clock1_ms", sa.Integer(), nullable=True),
        sa.Column("score", sa.Integer(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=True),
        sa.Column("nodes", sa.BigInteger(), nullable=True),
        sa.Column("pv", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("match_id", "ply", name="pk_moves"),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_moves_match_id_matches"),
        sa.CheckConstraint("ply >= 0", name=op.f("ck_moves_ply")),
        sa.CheckConstraint("seat IN (0, 1)", name=op.f("ck_moves_seat")),
        sa.CheckConstraint("think_ms >= 0", name=op.f("ck_moves_think_ms")),
    )


def downgrade() -> None:
    op.drop_table("moves")
    op.drop_index("ix_seats_player_id_match_id", table_name="seats")
    op.drop_table("seats")
    op.drop_index("ix_matches_status_created_at_id", table_name="matches")
    op.drop_index("ix_matches_game_created_at_id", table_name="matches")
    op.drop_index("ix_matches_created_at_id", table_name="matches")
    op.drop_table("matches")
    op.drop_index("ix_players_token_hash", table_name="players")
    op.drop_table("players")
