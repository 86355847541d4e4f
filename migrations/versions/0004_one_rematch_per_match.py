"""One rematch per match: ``matches.rematch_of`` is unique.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24

A finished match's rematch was known only to the server that started it, so
after a restart (or once the finished match had left memory) the same
players could agree a second rematch of it. The index makes the database
refuse that, and lets a server find a match's rematch when it loads the match.
Where a database already holds several rematches of one match, the first one
created keeps the link; the later ones stay as games of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        """
        UPDATE matches SET rematch_of = NULL
        WHERE rematch_of IS NOT NULL AND EXISTS (
            SELECT 1 FROM matches AS earlier
            WHERE earlier.rematch_of = matches.rematch_of
              AND (earlier.created_at < matches.created_at
                   OR (earlier.created_at = matches.created_at AND earlier.id < matches.id))
        )
        """
    )
    op.create_index("ix_matches_rematch_of", "matches", ["rematch_of"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_matches_rematch_of", table_name="matches")
