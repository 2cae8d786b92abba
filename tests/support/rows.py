"""The rows tests start from: segments, hosts, notifications and claims, one builder per table.

Each builder takes a Database (and writes in a transaction of its own) or a session (and adds
to it, flushed), and answers the row's uuid::

    seg = rows.segment(db, "reserved_host")
    h1 = rows.host(db, seg, "compute-1")
    spare = rows.host(db, seg, "reserved-1", reserved=True)
    nid = rows.notification(db, h1, "COMPUTE_HOST", rows.HOST_DOWN)
    seg, hosts = rows.segment_with_hosts(db, "h1", "h2", reserved=("h2",))  # hosts: name → uuid
    rows.status_of(db, nid), rows.host_row(db, h1).on_maintenance          # reading them back

Other columns go through as keyword arguments (``created_at=``, ``description=`` …); a
segment or host given ``deleted_at=`` is soft-deleted, as oslo.db does (``deleted`` = its id).
"""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import Database
from masakari.db.models import (
    Base,
    FenceAttempt,
    Host,
    Notification,
    NotificationClaim,
    RecoveryTask,
    Segment,
)

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)
LATER = T0 + datetime.timedelta(minutes=1)
# A claim that outlives any test.
FAR = datetime.datetime(2100, 1, 1)

HOST_DOWN = {"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"}

Target = Database | orm.Session
R = TypeVar("R", bound=Base)


def _add(target: Target, row: R) -> R:
    if isinstance(target, Database):
        with target.writer() as s:
            return _add(s, row)
    target.add(row)
    target.flush()
    if getattr(row, "deleted_at", None) is not None:
        row.deleted = row.id  # type: ignore[attr-defined]  # soft-deleted as oslo.db does
        target.flush()
    return row


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def segment(
    target: Target, recovery_method: str = "auto", enabled: bool = True, **columns: Any
) -> str:
    """A compute segment (named after its uuid unless ``name=`` is given)."""
    seg = str(uuid.uuid4())
    columns.setdefault("name", "seg-" + seg[:8])
    columns.setdefault("service_type", "compute")
    _add(target, Segment(uuid=seg, recovery_method=recovery_method, enabled=enabled, **columns))
    return seg


def host(
    target: Target,
    segment: str,
    name: str,
    reserved: bool = False,
    on_maintenance: bool = False,
    **columns: Any,
) -> str:
    """A COMPUTE host of ``segment``. Hosts created one after the other rank newest first
    where spares are ranked (created_at, then id)."""
    uid = str(uuid.uuid4())
    columns.setdefault("type", "COMPUTE")
    columns.setdefault("control_attributes", "ssh")
    row = Host(
        uuid=uid,
        name=name,
        failover_segment_id=segment,
        reserved=reserved,
        on_maintenance=on_maintenance,
        **columns,
    )
    _add(target, row)
    return uid


def segment_with_hosts(
    target: Target,
    *names: str,
    reserved: tuple[str, ...] = (),
    enabled: bool = True,
    recovery_method: str = "auto",
    created: datetime.datetime = T0,
) -> tuple[str, dict[str, str]]:
    """A segment and its hosts, created one second apart from ``created`` in the order given:
    (segment uuid, host name → uuid)."""
    seg = segment(target, recovery_method, enabled)
    return seg, {
        name: host(
            target,
            seg,
            name,
            reserved=name in reserved,
            created_at=created + datetime.timedelta(seconds=i),
        )
        for i, name in enumerate(names)
    }


def notification(
    target: Target,
    host_uuid: str,
    type: str = "COMPUTE_HOST",
    payload: dict[str, Any] | str | None = None,
    status: str = "new",
    generated_time: datetime.datetime | None = None,
    **columns: Any,
) -> str:
    """A notification about ``host_uuid``: of its segment where the host row exists (as the API
    records it), generated now unless ``generated_time`` says otherwise."""
    nid = str(uuid.uuid4())

    def add(s: orm.Session) -> None:
        found = s.query(Host).filter_by(uuid=host_uuid).first()
        columns.setdefault("failover_segment_uuid", found.failover_segment_id if found else None)
        row = Notification(
            notification_uuid=nid,
            generated_time=generated_time or _utcnow(),
            source_host_uuid=host_uuid,
            type=type,
            payload=payload if isinstance(payload, str) else json.dumps(payload or {}),
            status=status,
            **columns,
        )
        _add(s, row)

    if isinstance(target, Database):
        with target.writer() as s:
            add(s)
    else:
        add(target)
    return nid


def claim(
    target: Target,
    notification_uuid: str,
    owner: str = "engine-test",
    attempt: int = 1,
    expires_at: datetime.datetime = FAR,
) -> None:
    """An engine's claim on a notification (merged over the one it may have)."""
    if isinstance(target, Database):
        with target.writer() as s:
            return claim(s, notification_uuid, owner, attempt, expires_at)
    target.merge(
        NotificationClaim(
            notification_uuid=notification_uuid,
            owner=owner,
            attempt=attempt,
            expires_at=expires_at,
        )
    )
    target.flush()
    return None


# --- reading them back ------------------------------------------------------------------------


def host_row(db: Database, host_uuid: str) -> Host:
    with db.reader() as s:
        return s.query(Host).filter_by(uuid=host_uuid).one()


def status_of(db: Database, notification_uuid: str) -> str:
    with db.reader() as s:
        return s.query(Notification).filter_by(notification_uuid=notification_uuid).one().status


def fence_attempts(db: Database, nid: str) -> list[tuple[int, str, str]]:
    """A notification's host fencing attempts, in order: (position, action, result)."""
    with db.reader() as s:
        rows = s.scalars(
            sa.select(FenceAttempt)
            .where(FenceAttempt.notification_uuid == nid)
            .order_by(FenceAttempt.id)
        )
        return [(r.position, r.action, r.result) for r in rows]


def task_rows(db: Database, nid: str) -> list[tuple[int, str, str, float, list[tuple[str, str]]]]:
    """A notification's progress rows, in order: (attempt, task, state, progress,
    [(progress, message)])."""
    with db.reader() as s:
        found = (
            s.query(RecoveryTask)
            .filter_by(notification_uuid=nid)
            .order_by(RecoveryTask.attempt, RecoveryTask.position)
            .all()
        )
        return [
            (
                r.attempt,
                r.name,
                r.state,
                r.progress,
                [(d["progress"], d["message"]) for d in json.loads(r.details)],
            )
            for r in found
        ]
