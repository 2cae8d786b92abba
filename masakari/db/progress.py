"""Recovery progress: the rows behind ``recovery_workflow_details`` (microversion 1.1)."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import RecoveryTask


@dataclasses.dataclass(frozen=True)
class TaskNote:
    """One write of a task's progress row (:func:`record`)."""

    attempt: int
    position: int
    name: str
    state: str
    progress: float
    detail: dict[str, str] | None


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


def last_written(session: orm.Session, notification_uuid: str) -> datetime.datetime | None:
    """When a progress row of the notification was last written (None: it has none)."""
    return session.scalar(
        sa.select(
            sa.func.max(sa.func.coalesce(RecoveryTask.updated_at, RecoveryTask.created_at))
        ).where(RecoveryTask.notification_uuid == notification_uuid)
    )


# --- writers (the engine's) -------------------------------------------------------------------


def next_attempt(session: orm.Session, notification_uuid: str) -> int:
    """The number of the next flow of a notification: attempts only ever grow."""
    current = session.scalar(
        sa.select(sa.func.max(RecoveryTask.attempt)).where(
            RecoveryTask.notification_uuid == notification_uuid
        )
    )
    return (current or 0) + 1


def record(
    session: orm.Session,
    notification_uuid: str,
    attempt: int,
    position: int,
    name: str,
    state: str,
    progress: float,
    detail: dict[str, str] | None = None,
) -> None:
    """Create or update one task's row; ``detail`` is appended to its progress_details."""
    row = session.scalar(
        sa.select(RecoveryTask).where(
            RecoveryTask.notification_uuid == notification_uuid,
            RecoveryTask.attempt == attempt,
            RecoveryTask.position == position,
        )
    )
    if row is None:
        row = RecoveryTask(
            notification_uuid=notification_uuid,
            attempt=attempt,
            position=position,
            name=name,
            details="[]",
        )
        session.add(row)
    details = json.loads(row.details or "[]")
    if detail is not None:
        details.append(detail)
    row.details = json.dumps(details)
    row.state = state
    row.progress = progress
    session.flush()
