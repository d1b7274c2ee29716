"""The run index: one row per run directory (`runs`) and one per admitted episode of it (`episodes`).

Revision ID: 0001
Revises:
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(length=255), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.Column("planned", sa.Integer(), nullable=False),
        sa.Column("admitted", sa.Integer(), nullable=False),
        sa.Column("verified", sa.Integer(), nullable=False),
        sa.Column("self_reported", sa.Integer(), nullable=False),
        sa.Column("false_completions", sa.Integer(), nullable=False),
        sa.Column("infrastructure_failures", sa.Integer(), nullable=False),
        sa.Column("scripted", sa.Boolean(), nullable=False),
        sa.Column("endpoint", sa.Text(), nullable=False),
        sa.Column("subset_lock", sa.String(length=64), nullable=True),
        sa.Column("verified_by_verify", sa.Boolean(), nullable=False),
        sa.Column("updated", sa.Float(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index(op.f("ix_runs_updated"), "runs", ["updated"], unique=False)
    op.create_table(
        "episodes",
        sa.Column("run_id", sa.String(length=255), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("site", sa.String(length=255), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("claimed_success", sa.Boolean(), nullable=False),
        sa.Column("false_completion_kind", sa.String(length=32), nullable=True),
        sa.Column("faults_fired", sa.JSON(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("wall_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "position"),
    )


def downgrade() -> None:
    op.drop_table("episodes")
    op.drop_index(op.f("ix_runs_updated"), table_name="runs")
    op.drop_table("runs")
