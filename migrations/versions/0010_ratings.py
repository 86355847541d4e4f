"""Ratings: rated or casual matches, people's Glicko-2 ratings per game, and what each rated match did.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07

``matches.rated`` says whether a match's result changes its players' ratings; every match stored
before was casual. ``ratings`` holds a person's rating, deviation and volatility per game;
``rating_changes`` one row per rated match and person, which is both the history a profile plots and
the mark that keeps a match from rating anyone twice (its primary key).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("matches", sa.Column("rated", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_index("ix_matches_rated_finished_at", "matches", ["rated", "finished_at"])
    op.create_table(
        "ratings",
        sa.Column("player_id", sa.String(64), nullable=False),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("deviation", sa.Float(), nullable=False),
        sa.Column("volatility", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name="fk_ratings_player_id_players"),
        sa.PrimaryKeyConstraint("player_id", "game", name="pk_ratings"),
    )
    op.create_table(
        "rating_changes",
        sa.Column("match_id", sa.String(64), nullable=False),
        sa.Column("player_id", sa.String(64), nullable=False),
        sa.Column("game", sa.String(32), nullable=False),
        sa.Column("rating_before", sa.Float(), nullable=False),
        sa.Column("deviation_before", sa.Float(), nullable=False),
        sa.Column("rating_after", sa.Float(), nullable=False),
        sa.Column("deviation_after", sa.Float(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], name="fk_rating_changes_match_id_matches"),
        sa.ForeignKeyConstraint(["player_id"], ["players.id"], name="fk_rating_changes_player_id_players"),
        sa.PrimaryKeyConstraint("match_id", "player_id", name="pk_rating_changes"),
    )
    op.create_index("ix_rating_changes_player_id_game_at", "rating_changes", ["player_id", "game", "at"])


def downgrade() -> None:
    op.drop_index("ix_rating_changes_player_id_game_at", table_name="rating_changes")
    op.drop_table("rating_changes")
    op.drop_table("ratings")
    op.drop_index("ix_matches_rated_finished_at", table_name="matches")
    with op.batch_alter_table("matches") as matches:
        matches.drop_column("rated")
