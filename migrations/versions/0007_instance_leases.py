"""Instance leases: who owns the open and live matches on a database several instances share.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07

Each instance holds a lease, renewed by every commit it makes, with an epoch that
its commits check. An instance whose lease lapsed (killed, frozen, cut off from
the database) has its open and live matches taken over by another, which moves
the epoch on: the old owner's late commits are then refused. Existing matches
keep their host; an instance takes its first lease when it next starts.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "instance_leases",
        sa.Column("instance", sa.String(200), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("instance", name="pk_instance_leases"),
    )


def downgrade() -> None:
    op.drop_table("instance_leases")
