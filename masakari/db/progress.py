"""Recovery progress: the rows behind ``recovery_workflow_details`` (microversion 1.1)."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import RecoveryTask


def workflow_details(session: orm.Session, notification_uuid: str) -> list[dict[str, Any]]:
    """Every task of every attempt, in attempt order then flow order, as the API shows them."""
    rows = session.scalars(
        sa.select(RecoveryTask)
        .where(RecoveryTask.notification_uuid == notification_uuid)
        .order_by(RecoveryTask.attempt, RecoveryTask.position)
    )
    return [
        {
            "name": row.name,
            "state": row.state,
            "progress": row.progress,
            "progress_details": json.loads(row.details),
        }
        for row in rows
    ]
