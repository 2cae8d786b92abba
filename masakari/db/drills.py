"""Fire drills' rows: the queue of drills, their claims, and their phases.

A drill is claimed as a notification is (:mod:`masakari.db.claims`): one conditional UPDATE
moves it from ``new`` (or from ``running`` with an expired lease: a takeover) to ``running``
with the engine as owner and a new token; every later write of the run is fenced by owner,
token and a live lease, and changes the drill row so that a racing takeover conflicts.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception
from masakari.db.database import DUPLICATE_ERRORS, affected_rows
from masakari.db.models import Drill, DrillPhase, Notification
from masakari.db.segments import BUSY_STATUSES

NEW = "new"
RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
ACTIVE = (NEW, RUNNING)

# Phase results.
PHASE_RUNNING = "running"
PHASE_OK = "ok"
PHASE_LATE = "late"  # done, but past the plan's prediction: a finding, not a failure
PHASE_FAILED = "failed"


@dataclasses.dataclass(frozen=True)
class Claimed:
    uuid: str
    token: int
    # It was running under another engine whose lease ran out: only its restore is left.
    takeover: bool


def create(session: orm.Session, values: dict[str, Any]) -> Drill:
    """A new drill; DrillHostBusy when another one of the host is new or running (the
    unique ``active_host`` key, so that two concurrent creations cannot both pass)."""
    row = Drill(**values, status=NEW, active_host=values["host_uuid"], token=0, fence=0)
    session.add(row)
    try:
        session.flush()
    except DUPLICATE_ERRORS as exc:
        raise exception.DrillHostBusy(
            host=values["host_name"], why="a drill of the host is under way"
        ) from exc
    return row


def get(session: orm.Session, drill_uuid: str) -> Drill | None:
    return session.scalar(sa.select(Drill).where(Drill.uuid == drill_uuid))


def list_(session: orm.Session, segment_uuid: str | None = None, limit: int = 100) -> list[Drill]:
    """Newest first."""
    query = sa.select(Drill).order_by(Drill.id.desc()).limit(limit)
    if segment_uuid is not None:
        query = query.where(Drill.segment_uuid == segment_uuid)
    return list(session.scalars(query))


def phases(session: orm.Session, drill_uuid: str) -> list[DrillPhase]:
    return list(
        session.scalars(
            sa.select(DrillPhase).where(DrillPhase.drill_uuid == drill_uuid).order_by(DrillPhase.id)
        )
    )


def notification_active(session: orm.Session, host_uuid: str) -> bool:
    """A notification of the host is being recovered (new, running or error; held too)."""
    return bool(
        session.scalar(
            sa.select(sa.func.count(Notification.id)).where(
                Notification.source_host_uuid == host_uuid,
                Notification.deleted == 0,
                Notification.status.in_(BUSY_STATUSES),
            )
        )
    )


def active_in_segment(session: orm.Session, segment_uuid: str) -> bool:
    return bool(
        session.scalar(
            sa.select(sa.func.count(Drill.id)).where(
                Drill.segment_uuid == segment_uuid, Drill.status.in_(ACTIVE)
            )
        )
    )


def last_drilled(session: orm.Session, host_uuids: Sequence[str]) -> dict[str, datetime.datetime]:
    """When each host's newest drill was created (hosts never drilled are absent)."""
    rows = session.execute(
        sa.select(Drill.host_uuid, sa.func.max(Drill.created_at))
        .where(Drill.host_uuid.in_(list(host_uuids)))
        .group_by(Drill.host_uuid)
    )
    return {host: when for host, when in rows}


def claimable(session: orm.Session, now: datetime.datetime, limit: int = 5) -> list[str]:
    """Drills nobody runs: new ones, and running ones whose lease expired; oldest first."""
    return list(
        session.scalars(
            sa.select(Drill.uuid)
            .where(
                sa.or_(
                    Drill.status == NEW,
                    sa.and_(Drill.status == RUNNING, Drill.lease_expires_at < now),
                )
            )
            .order_by(Drill.id)
            .limit(limit)
        )
    )


def claim(
    session: orm.Session,
    drill_uuid: str,
    owner: str,
    now: datetime.datetime,
    expires_at: datetime.datetime,
) -> Claimed | None:
    """Take the drill for ``owner``; None when another engine was first (or it ended)."""
    row = get(session, drill_uuid)
    if row is None:
        return None
    takeover = row.status == RUNNING
    token = row.token + 1
    result = session.execute(
        sa.update(Drill)
        .where(
            Drill.uuid == drill_uuid,
            Drill.token == row.token,
            sa.or_(
                Drill.status == NEW,
                sa.and_(Drill.status == RUNNING, Drill.lease_expires_at < now),
            ),
        )
        .values(
            status=RUNNING,
            owner=owner,
            token=token,
            lease_expires_at=expires_at,
            started_at=sa.func.coalesce(Drill.started_at, now),
        )
        .execution_options(synchronize_session=False)
    )
    if affected_rows(result) != 1:
        return None
    return Claimed(drill_uuid, token, takeover)


def _ours(drill_uuid: str, owner: str, token: int, now: datetime.datetime) -> tuple[Any, ...]:
    return (
        Drill.uuid == drill_uuid,
        Drill.owner == owner,
        Drill.token == token,
        Drill.status == RUNNING,
        Drill.lease_expires_at > now,
    )


def renew(
    session: orm.Session,
    drill_uuid: str,
    owner: str,
    token: int,
    now: datetime.datetime,
    expires_at: datetime.datetime,
) -> bool:
    result = session.execute(
        sa.update(Drill)
        .where(*_ours(drill_uuid, owner, token, now))
        .values(lease_expires_at=expires_at)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def fence(
    session: orm.Session, drill_uuid: str, owner: str, token: int, now: datetime.datetime
) -> bool:
    """Hold our live claim for the rest of the transaction; False when it is not ours."""
    result = session.execute(
        sa.update(Drill)
        .where(*_ours(drill_uuid, owner, token, now))
        .values(fence=Drill.fence + 1)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def begin_phase(
    session: orm.Session,
    drill_uuid: str,
    token: int,
    name: str,
    now: datetime.datetime,
    predicted: float | None,
) -> int:
    row = DrillPhase(
        drill_uuid=drill_uuid,
        name=name,
        result=PHASE_RUNNING,
        token=token,
        started_at=now,
        predicted_seconds=predicted,
    )
    session.add(row)
    session.flush()
    return row.id


def end_phase(
    session: orm.Session, phase_id: int, result: str, now: datetime.datetime, detail: str
) -> None:
    session.execute(
        sa.update(DrillPhase)
        .where(DrillPhase.id == phase_id)
        .values(result=result, ended_at=now, detail=detail)
        .execution_options(synchronize_session=False)
    )


def save_report(session: orm.Session, drill_uuid: str, report: dict[str, Any]) -> None:
    session.execute(
        sa.update(Drill)
        .where(Drill.uuid == drill_uuid)
        .values(report=json.dumps(report, sort_keys=True))
        .execution_options(synchronize_session=False)
    )


def finish(
    session: orm.Session,
    drill_uuid: str,
    status: str,
    reason: str | None,
    now: datetime.datetime,
) -> None:
    """The outcome; the host is free for another drill."""
    session.execute(
        sa.update(Drill)
        .where(Drill.uuid == drill_uuid)
        .values(status=status, failure_reason=reason, ended_at=now, active_host=None)
        .execution_options(synchronize_session=False)
    )


def report_of(row: Drill) -> dict[str, Any]:
    return json.loads(row.report) if row.report else {}


def _time(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def view(row: Drill, phases: list[DrillPhase] | None) -> dict[str, Any]:
    """A drill as the API, masakari-manage and the notification show it; with its phases
    and report when ``phases`` is given (the show, not the list)."""
    body: dict[str, Any] = {
        "id": row.uuid,
        "segment_id": row.segment_uuid,
        "host_id": row.host_uuid,
        "host_name": row.host_name,
        "status": row.status,
        "no_fence": bool(row.no_fence),
        "allow_untagged": bool(row.allow_untagged),
        "move_back": bool(row.move_back),
        "requested_by": row.requested_by,
        "engine": row.owner,
        "failure_reason": row.failure_reason,
        "created_at": _time(row.created_at),
        "started_at": _time(row.started_at),
        "ended_at": _time(row.ended_at),
    }
    if phases is not None:
        body["phases"] = [
            {
                "name": p.name,
                "result": p.result,
                "started_at": _time(p.started_at),
                "ended_at": _time(p.ended_at),
                "seconds": (
                    None
                    if p.ended_at is None
                    else round((p.ended_at - p.started_at).total_seconds(), 3)
                ),
                "predicted_seconds": p.predicted_seconds,
                "detail": p.detail,
            }
            for p in phases
        ]
        body["report"] = report_of(row)
    return body


def delete_ended_before(session: orm.Session, cutoff: datetime.datetime) -> None:
    """Drills that ended before the cut-off, with their phases (``db purge``)."""
    old = sa.select(Drill.uuid).where(
        Drill.status.in_((SUCCEEDED, FAILED)), Drill.ended_at < cutoff
    )
    uuids = list(session.scalars(old))
    if uuids:
        session.execute(sa.delete(DrillPhase).where(DrillPhase.drill_uuid.in_(uuids)))
        session.execute(sa.delete(Drill).where(Drill.uuid.in_(uuids)))
