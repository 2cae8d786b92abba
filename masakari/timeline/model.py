"""What a recovery's timeline holds, read from one notification's rows: its recovery tasks,
host fencing calls, instance moves, and the evidence its host failure was judged on."""

from __future__ import annotations

import dataclasses
import datetime
import json

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db import evidence as evidence_db
from masakari.db import failures, holds, statuses
from masakari.db import fencing as fence_rows
from masakari.db import notifications as notifications_db
from masakari.db.models import RecoveryTask, VMove
from masakari.ha import failed_task


@dataclasses.dataclass(frozen=True)
class Bar:
    """One row of the timeline: a task of an attempt, or an instance's move."""

    kind: str  # "task", "fence", "instance" or "evidence"
    label: str
    result: str
    start: datetime.datetime | None
    end: datetime.datetime | None
    detail: str = ""
    source: str | None = None
    destination: str | None = None
    ident: str = ""

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max((self.end - self.start).total_seconds(), 0.0)


@dataclasses.dataclass(frozen=True)
class Timeline:
    notification_uuid: str
    type: str
    status: str
    generated_time: datetime.datetime
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None
    tasks: list[Bar]
    instances: list[Bar]
    failure_reason: str | None = None
    fencing: list[Bar] = dataclasses.field(default_factory=list)
    fence_attempts: list[fence_rows.Attempt] = dataclasses.field(default_factory=list)
    evidence: list[Bar] = dataclasses.field(default_factory=list)
    # Why it waits for an operator (a guard, or host fencing that did not prove the host dead).
    hold_reason: str | None = None
    # What the page's heading calls it (a fire drill's timeline is drawn by the same page).
    title: str = "Recovery of notification"

    @property
    def bars(self) -> list[Bar]:
        return [*self.evidence, *self.tasks, *self.fencing, *self.instances]


def _parse(timestamp: str | None) -> datetime.datetime | None:
    # Progress details carry str(datetime) timestamps, as the reference's taskflow did.
    if not timestamp:
        return None
    try:
        return datetime.datetime.fromisoformat(timestamp).replace(tzinfo=None)
    except ValueError:
        return None


def load(session: orm.Session, notification_uuid: str) -> Timeline:
    row = notifications_db.get(session, notification_uuid)
    rows = list(
        session.scalars(
            sa.select(RecoveryTask)
            .where(RecoveryTask.notification_uuid == notification_uuid)
            .order_by(RecoveryTask.attempt, RecoveryTask.position)
        )
    )
    shown = [
        {"progress": task.progress, "progress_details": json.loads(task.details or "[]")}
        for task in rows
    ]
    failure = failures.get(session, notification_uuid) if failed_task.failed(row.status) else None
    shown = failed_task.with_reason(shown, failure)
    tasks = []
    for task, entry in zip(rows, shown, strict=True):
        details = entry["progress_details"]
        times = [t for t in (_parse(d.get("timestamp")) for d in details) if t is not None]
        last = details[-1]["message"] if details else ""
        tasks.append(
            Bar(
                kind="task",
                label=f"#{task.attempt} {task.name}",
                result=task.state,
                start=min(times) if times else task.created_at,
                end=max(times) if times else task.updated_at,
                detail=last,
                ident=f"{task.attempt}:{task.position}",
            )
        )
    instances = [
        Bar(
            kind="instance",
            label=move.instance_name or move.instance_uuid,
            result=move.status or "",
            start=move.start_time,
            end=move.end_time,
            detail=move.message or "",
            source=move.source_host,
            destination=move.dest_host,
            ident=move.instance_uuid,
        )
        for move in session.scalars(
            sa.select(VMove)
            .where(VMove.notification_uuid == notification_uuid, VMove.deleted == 0)
            .order_by(VMove.start_time, VMove.id)
        )
    ]
    attempts = fence_rows.attempts(session, notification_uuid)
    fencing = [
        Bar(
            kind="fence",
            label=f"fence #{a.position} {a.driver} {a.action}",
            result=a.result,
            start=a.started_at,
            end=None
            if a.duration is None
            else a.started_at + datetime.timedelta(seconds=a.duration),
            detail=a.message or "",
            source=a.host_name,
            ident=str(a.id),
        )
        for a in attempts
    ]
    hold_reason = holds.reasons(session, [notification_uuid]).get(notification_uuid)
    return Timeline(
        evidence=[_evidence_bar(item) for item in evidence_db.of(session, notification_uuid)],
        notification_uuid=row.notification_uuid,
        type=row.type,
        # As the API shows it from 1.4: a held notification's row stays new, which would read
        # as "an engine will take it" when it waits for an operator.
        status=statuses.HELD if hold_reason is not None else row.status,
        generated_time=row.generated_time,
        created_at=row.created_at,
        updated_at=row.updated_at,
        tasks=tasks,
        instances=instances,
        failure_reason=None if failure is None else failure.reason,
        fencing=fencing,
        fence_attempts=attempts,
        hold_reason=hold_reason,
    )


def _evidence_bar(item: evidence_db.Evidence) -> Bar:
    if item.kind == evidence_db.VERDICT:
        result = "confirmed" if item.failed else "not confirmed"
    elif item.kind == evidence_db.SHADOW:  # a shadow rule's decision, which did nothing
        result = f"would {item.value}"
    else:
        result = {True: "says failed", False: "says up", None: "cannot tell"}[item.failed]
    return Bar(
        kind="evidence",
        label=f"{item.kind}: {item.source}",
        result=result,
        start=item.observed_at,
        end=item.observed_at,
        detail=item.detail,
        ident=item.kind,
    )
