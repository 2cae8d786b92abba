"""Quarantines and their instances (``masakari_quarantines``, ``masakari_quarantine_moves``).

A request is recorded under its segment's guard row (masakari.db.guards): two requests for
hosts of one segment take turns, and the second counts the first, so the gate that holds a
request past the segment's limit holds exactly. An engine runs a quarantine under a claim in
its row (``owner``, ``lease_until``), taken and renewed by conditional updates: one engine
at a time, and another takes it over once the claim runs out.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db import guards
from masakari.db.database import affected_rows
from masakari.db.models import Host, Notification, Quarantine, QuarantineMove, utcnow

# What asked for a quarantine (its ``source``).
OPERATOR = "operator"
ALERTMANAGER = "alertmanager"
REDFISH = "redfish"
STORAGE = "storage"
SOURCES = (OPERATOR, ALERTMANAGER, REDFISH, STORAGE)

REQUESTED = "requested"
HELD = "held"
RUNNING = "running"
DONE = "done"
PARTIAL = "partial"
FAILED = "failed"
CANCELLED = "cancelled"
SUPERSEDED = "superseded"
RELEASED = "released"
WITHDRAWN = "withdrawn"
# Not started yet: nothing in Nova or masakari was changed.
WAITING = (REQUESTED, HELD)
# Ended with the host disabled and on maintenance until an operator releases it.
ENDED = (DONE, PARTIAL, FAILED, CANCELLED, SUPERSEDED)
# The host is out of service, or about to be: what the segment's limit counts.
OPEN = (*WAITING, RUNNING, *ENDED)

# A host failure of these statuses is being recovered (a held one is ``new``).
RECOVERING = ("new", "running", "error")

# Instances.
PENDING = "pending"
MIGRATING = "migrating"
MOVED = "moved"
MOVE_FAILED = "failed"
LEFT = "left"


def recovering(session: orm.Session, host_uuid: str) -> str | None:
    """A host failure of the host being recovered (its notification), or None: its recovery
    moves the instances, so no quarantine starts or goes on."""
    return session.scalar(
        sa.select(Notification.notification_uuid).where(
            Notification.source_host_uuid == host_uuid,
            Notification.type == "COMPUTE_HOST",
            Notification.status.in_(RECOVERING),
            Notification.deleted == 0,
        )
    )


def failed_since(
    session: orm.Session, host_uuid: str, since: datetime.datetime | None
) -> str | None:
    """A host failure of the host reported since then (its notification), whatever became
    of it: one that was recovered between two looks is seen too."""
    query = sa.select(Notification.notification_uuid).where(
        Notification.source_host_uuid == host_uuid,
        Notification.type == "COMPUTE_HOST",
        Notification.status != "ignored",
        Notification.deleted == 0,
    )
    if since is not None:
        query = query.where(Notification.created_at >= since)
    return session.scalar(query.order_by(Notification.id).limit(1))


def started_of_host(session: orm.Session, host_uuid: str) -> bool:
    """The host has a quarantine that took it out of service and is not released."""
    found = session.scalar(
        sa.select(Quarantine.id)
        .where(Quarantine.host_uuid == host_uuid, Quarantine.status.in_((RUNNING, *ENDED)))
        .limit(1)
    )
    return found is not None


def open_of_host(session: orm.Session, host_uuid: str) -> Quarantine | None:
    return session.scalar(
        sa.select(Quarantine).where(Quarantine.host_uuid == host_uuid, Quarantine.status.in_(OPEN))
    )


def open_in_segment(session: orm.Session, segment_uuid: str) -> int:
    return (
        session.scalar(
            sa.select(sa.func.count())
            .select_from(Quarantine)
            .where(Quarantine.segment_uuid == segment_uuid, Quarantine.status.in_(OPEN))
        )
        or 0
    )


def hosts_in_segment(session: orm.Session, segment_uuid: str) -> int:
    return (
        session.scalar(
            sa.select(sa.func.count())
            .select_from(Host)
            .where(Host.failover_segment_id == segment_uuid, Host.deleted == 0)
        )
        or 0
    )


def guard(session: orm.Session, segment_uuid: str) -> None:
    """Serialise the segment's requests: held first in the recording transaction."""
    guards.hold(session, segment_uuid)


def add(session: orm.Session, row: Quarantine) -> Quarantine:
    now = utcnow()
    row.created_at = row.updated_at = now
    session.add(row)
    session.flush()
    return row


def get(session: orm.Session, uuid: str) -> Quarantine | None:
    return session.scalar(sa.select(Quarantine).where(Quarantine.uuid == uuid))


def list_(session: orm.Session, statuses: Sequence[str] | None = None) -> list[Quarantine]:
    query = sa.select(Quarantine).order_by(Quarantine.id.desc())
    if statuses:
        query = query.where(Quarantine.status.in_(statuses))
    return list(session.scalars(query))


def moves(session: orm.Session, uuid: str) -> list[QuarantineMove]:
    return list(
        session.scalars(
            sa.select(QuarantineMove)
            .where(QuarantineMove.quarantine_uuid == uuid)
            .order_by(QuarantineMove.id)
        )
    )


def set_status(
    session: orm.Session, uuid: str, status: str, expected: Sequence[str], **values: object
) -> bool:
    """Move the quarantine to ``status`` if it is in one of ``expected``."""
    now = utcnow()
    changed = session.execute(
        sa.update(Quarantine)
        .where(Quarantine.uuid == uuid, Quarantine.status.in_(expected))
        .values(status=status, updated_at=now, **values)
        .execution_options(synchronize_session=False)
    )
    return bool(affected_rows(changed))


def claim(
    session: orm.Session, owner: str, now: datetime.datetime, until: datetime.datetime
) -> Quarantine | None:
    """Take the oldest quarantine to run: a requested one, or a running one whose engine's
    claim ran out. None when there is none (or another engine took it first)."""
    candidate = session.scalar(
        sa.select(Quarantine)
        .where(
            sa.or_(
                Quarantine.status == REQUESTED,
                sa.and_(Quarantine.status == RUNNING, Quarantine.lease_until < now),
            )
        )
        .order_by(Quarantine.id)
        .limit(1)
    )
    if candidate is None:
        return None
    taken = session.execute(
        sa.update(Quarantine)
        .where(
            Quarantine.uuid == candidate.uuid,
            Quarantine.status == candidate.status,
            sa.or_(Quarantine.owner.is_(None), Quarantine.owner == candidate.owner),
            sa.or_(Quarantine.lease_until.is_(None), Quarantine.lease_until < now)
            if candidate.status == RUNNING
            else sa.true(),
        )
        .values(
            status=RUNNING,
            owner=owner,
            lease_until=until,
            started_at=sa.func.coalesce(Quarantine.started_at, now),
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    if not affected_rows(taken):
        return None
    session.expire(candidate)
    return get(session, candidate.uuid)


def renew(session: orm.Session, uuid: str, owner: str, until: datetime.datetime) -> bool:
    """Extend the claim; False once it is no longer this engine's (taken over, cancelled)."""
    renewed = session.execute(
        sa.update(Quarantine)
        .where(Quarantine.uuid == uuid, Quarantine.owner == owner, Quarantine.status == RUNNING)
        .values(lease_until=until)
        .execution_options(synchronize_session=False)
    )
    return bool(affected_rows(renewed))


def note(session: orm.Session, uuid: str, detail: str) -> None:
    session.execute(
        sa.update(Quarantine)
        .where(Quarantine.uuid == uuid)
        .values(detail=detail, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def move(
    session: orm.Session, uuid: str, server_id: str, server_name: str, **values: object
) -> QuarantineMove:
    """The instance's row, created at first sight, with ``values`` set."""
    row = session.scalar(
        sa.select(QuarantineMove).where(
            QuarantineMove.quarantine_uuid == uuid, QuarantineMove.server_id == server_id
        )
    )
    if row is None:
        row = QuarantineMove(
            quarantine_uuid=uuid, server_id=server_id, server_name=server_name, status=PENDING
        )
        session.add(row)
    for key, value in values.items():
        setattr(row, key, value)
    session.flush()
    return row


def delete_closed_before(session: orm.Session, cutoff: datetime.datetime) -> None:
    """Quarantines closed (released or withdrawn) before the cut-off, with their instances
    (``db purge``): an open one, whose host is still out of service, stays."""
    old = sa.select(Quarantine.uuid).where(
        Quarantine.status.in_((RELEASED, WITHDRAWN)), Quarantine.updated_at < cutoff
    )
    uuids = list(session.scalars(old))
    if uuids:
        session.execute(sa.delete(QuarantineMove).where(QuarantineMove.quarantine_uuid.in_(uuids)))
        session.execute(sa.delete(Quarantine).where(Quarantine.uuid.in_(uuids)))
