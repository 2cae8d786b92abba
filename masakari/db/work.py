"""The engine's work queue: notification claims, status transitions, vmoves and host flips.

Every transition is a conditional UPDATE inside one writer transaction, so that any number of
engines can share one database: the row says who owns a notification, never a process lock.

Claims (``masakari_notification_claims``): one row per notification being worked on, with
its owner (an engine id), a fencing token (``attempt``, unique per owner) and an expiry the
owner renews. A ``running`` notification whose claim expired, or that has no claim row at
all, belongs to nobody and may be taken over.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import time
import uuid as uuidlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from oslo_db import exception as db_exc
from sqlalchemy import orm

from masakari.db.database import Database, affected_rows
from masakari.db.models import (
    Host,
    InstanceLock,
    Notification,
    NotificationClaim,
    Segment,
    VMove,
)

T = TypeVar("T")

# How long a transaction that keeps losing lock races is replayed, and the pauses between.
WRITE_RETRY_SECONDS = 15.0
WRITE_BACKOFF = 0.01
WRITE_BACKOFF_MAX = 0.25

# Notification statuses, as the reference stores them.
NEW = "new"
RUNNING = "running"
ERROR = "error"
FAILED = "failed"
IGNORED = "ignored"
FINISHED = "finished"

# VMove statuses and type, as the reference stores them.
VMOVE_PENDING = "pending"
VMOVE_ONGOING = "ongoing"
VMOVE_SUCCEEDED = "succeeded"
VMOVE_FAILED = "failed"
VMOVE_EVACUATION = "evacuation"


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A notification an engine may try to claim."""

    id: int
    notification_uuid: str
    source_host_uuid: str
    status: str
    host_busy: bool = False


@dataclasses.dataclass(frozen=True)
class NotificationData:
    """What the engine reads of a notification, detached from any session."""

    id: int
    notification_uuid: str
    type: str
    source_host_uuid: str
    status: str
    payload: str | None
    generated_time: datetime.datetime
    failover_segment_uuid: str | None


@dataclasses.dataclass(frozen=True)
class HostData:
    uuid: str
    name: str
    reserved: bool
    on_maintenance: bool
    failover_segment_id: str
    segment_enabled: bool
    recovery_method: str


@dataclasses.dataclass(frozen=True)
class VMoveData:
    id: int
    uuid: str
    instance_uuid: str
    instance_name: str
    source_host: str | None
    dest_host: str | None
    status: str | None
    message: str | None


class ClaimResult:
    CLAIMED = "claimed"
    GONE = "gone"  # no longer in a claimable status (another engine won, or it moved on)
    BUSY = "busy"  # another notification of the same source host is running


def _lost_lock_race(exc: BaseException) -> bool:
    """A deadlock (MySQL, PostgreSQL) or SQLite's busy answer to a reader turning writer."""
    if isinstance(exc, db_exc.DBDeadlock):
        return True
    text = str(exc)
    return "database is locked" in text or "database table is locked" in text


def transaction(db: Database, fn: Callable[[orm.Session], T]) -> T:
    """Run ``fn`` in one writer transaction; run it again when it lost a lock race.

    Engine transactions read, then write under conditions: a deadlock victim (or, on SQLite,
    a transaction whose snapshot went stale before its first write) is safe to replay.
    """
    deadline = time.monotonic() + WRITE_RETRY_SECONDS
    pause = WRITE_BACKOFF
    while True:
        try:
            with db.writer() as session:
                return fn(session)
        except (sa.exc.OperationalError, db_exc.DBError) as exc:
            if not _lost_lock_race(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause * (1 + random.random()))
        pause = min(pause * 2, WRITE_BACKOFF_MAX)


# --- reading the queue ---------------------------------------------------------------------


def _candidates(stmt: sa.Select[*tuple[Any, ...]], session: orm.Session) -> list[Candidate]:
    return [
        Candidate(
            row.id, row.notification_uuid, row.source_host_uuid, row.status, bool(row.host_busy)
        )
        for row in session.execute(stmt)
    ]


def _candidate_columns() -> sa.Select[*tuple[Any, ...]]:
    # Whether another notification of the same host runs: a hint that saves a claim attempt
    # (the claim checks again under lock).
    other = orm.aliased(Notification)
    host_busy = (
        sa.exists()
        .where(
            other.source_host_uuid == Notification.source_host_uuid,
            other.status == RUNNING,
            other.deleted == 0,
        )
        .label("host_busy")
    )
    return sa.select(
        Notification.id,
        Notification.notification_uuid,
        Notification.source_host_uuid,
        Notification.status,
        host_busy,
    )


def after(
    session: orm.Session, after_id: int, limit: int, status: str | None = None
) -> list[Candidate]:
    """Notifications above an id (of one status), oldest first: a primary-key range scan."""
    stmt = _candidate_columns().where(Notification.id > after_id, Notification.deleted == 0)
    if status is not None:
        stmt = stmt.where(Notification.status == status)
    return _candidates(stmt.order_by(Notification.id).limit(limit), session)


def new_after(session: orm.Session, after_id: int, limit: int) -> list[Candidate]:
    """``new`` notifications above an id, oldest first."""
    return after(session, after_id, limit, status=NEW)


def max_id(session: orm.Session) -> int:
    return session.scalar(sa.select(sa.func.max(Notification.id))) or 0


def retry_candidates(
    session: orm.Session, new_before: datetime.datetime, limit: int
) -> list[Candidate]:
    """What the retry loop takes: every ``error``, and ``new`` ones generated before a time."""
    stmt = (
        _candidate_columns()
        .where(
            Notification.deleted == 0,
            sa.or_(
                Notification.status == ERROR,
                sa.and_(Notification.status == NEW, Notification.generated_time < new_before),
            ),
        )
        .order_by(Notification.id)
        .limit(limit)
    )
    return _candidates(stmt, session)


def get_notification(session: orm.Session, notification_uuid: str) -> NotificationData | None:
    row = session.scalar(
        sa.select(Notification).where(
            Notification.notification_uuid == notification_uuid, Notification.deleted == 0
        )
    )
    if row is None:
        return None
    return NotificationData(
        id=row.id,
        notification_uuid=row.notification_uuid,
        type=row.type,
        source_host_uuid=row.source_host_uuid,
        status=row.status,
        payload=row.payload,
        generated_time=row.generated_time,
        failover_segment_uuid=row.failover_segment_uuid,
    )


# --- claims --------------------------------------------------------------------------------


def claim(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    token: int,
    from_statuses: Sequence[str],
    expires_at: datetime.datetime,
    generated_before: datetime.datetime | None = None,
) -> str:
    """Move a notification to ``running`` for ``owner``; one engine wins, the others see GONE.

    Recoveries of one source host are serialised across engines: while another notification
    of the same host is running, the answer is BUSY and nothing changes.
    """
    row = session.execute(
        sa.select(Notification.source_host_uuid).where(
            Notification.notification_uuid == notification_uuid, Notification.deleted == 0
        )
    ).first()
    if row is None:
        return ClaimResult.GONE
    host_uuid = row.source_host_uuid
    # The host row is the per-host mutex on databases with row locks (SQLite serialises all
    # writers already); the locking read below then sees the other engines' committed claims.
    session.execute(sa.select(Host.id).where(Host.uuid == host_uuid).with_for_update())
    busy = session.execute(
        sa.select(Notification.id)
        .where(
            Notification.source_host_uuid == host_uuid,
            Notification.status == RUNNING,
            Notification.deleted == 0,
            Notification.notification_uuid != notification_uuid,
        )
        .limit(1)
        .with_for_update()
    ).first()
    if busy is not None:
        return ClaimResult.BUSY
    stmt = sa.update(Notification).where(
        Notification.notification_uuid == notification_uuid,
        Notification.status.in_(list(from_statuses)),
        Notification.deleted == 0,
    )
    if generated_before is not None:
        stmt = stmt.where(Notification.generated_time < generated_before)
    result = session.execute(
        stmt.values(status=RUNNING).execution_options(synchronize_session=False)
    )
    if affected_rows(result) != 1:
        return ClaimResult.GONE
    _put_claim(session, notification_uuid, owner, token, expires_at)
    return ClaimResult.CLAIMED


def _put_claim(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    token: int,
    expires_at: datetime.datetime,
) -> None:
    existing = session.get(NotificationClaim, notification_uuid, with_for_update=True)
    if existing is None:
        session.add(
            NotificationClaim(
                notification_uuid=notification_uuid,
                owner=owner,
                attempt=token,
                expires_at=expires_at,
            )
        )
    else:
        existing.owner = owner
        existing.attempt = token
        existing.expires_at = expires_at
    session.flush()


def owns(session: orm.Session, notification_uuid: str, owner: str, token: int) -> bool:
    """The claim is still ours and the notification still running (a fence for writes)."""
    row = session.execute(
        sa.select(NotificationClaim.owner)
        .join(Notification, Notification.notification_uuid == NotificationClaim.notification_uuid)
        .where(
            NotificationClaim.notification_uuid == notification_uuid,
            NotificationClaim.owner == owner,
            NotificationClaim.attempt == token,
            Notification.status == RUNNING,
            Notification.deleted == 0,
        )
    ).first()
    return row is not None


def renew(
    session: orm.Session,
    owner: str,
    tokens: dict[str, int],
    expires_at: datetime.datetime,
) -> set[str]:
    """Push back the expiry of our live claims; return the uuids that are still ours."""
    if not tokens:
        return set()
    rows = session.execute(
        sa.select(NotificationClaim.notification_uuid, NotificationClaim.attempt)
        .join(Notification, Notification.notification_uuid == NotificationClaim.notification_uuid)
        .where(
            NotificationClaim.owner == owner,
            NotificationClaim.notification_uuid.in_(list(tokens)),
            Notification.status == RUNNING,
            Notification.deleted == 0,
        )
    ).all()
    mine = set()
    for row in rows:
        if tokens.get(row.notification_uuid) != row.attempt:
            continue
        # Conditional on owner and token again: another engine may have taken the claim over
        # between the read above and this write, and then this engine must stop.
        renewed = session.execute(
            sa.update(NotificationClaim)
            .where(
                NotificationClaim.notification_uuid == row.notification_uuid,
                NotificationClaim.owner == owner,
                NotificationClaim.attempt == row.attempt,
            )
            .values(expires_at=expires_at)
            .execution_options(synchronize_session=False)
        )
        if affected_rows(renewed) == 1:
            mine.add(row.notification_uuid)
    return mine


def release(
    session: orm.Session, owner: str, tokens: dict[str, int], now: datetime.datetime
) -> None:
    """Give claims up without finishing: another engine may take them over at once."""
    for notification_uuid, token in tokens.items():
        session.execute(
            sa.update(NotificationClaim)
            .where(
                NotificationClaim.notification_uuid == notification_uuid,
                NotificationClaim.owner == owner,
                NotificationClaim.attempt == token,
            )
            .values(expires_at=now - datetime.timedelta(seconds=1))
            .execution_options(synchronize_session=False)
        )


def finish(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    token: int,
    status: str,
    message: str | None = None,
) -> bool:
    """Write the outcome of our run, only if the claim is still ours; drop the claim."""
    existing = session.get(NotificationClaim, notification_uuid, with_for_update=True)
    if existing is None or existing.owner != owner or existing.attempt != token:
        return False
    values: dict[str, Any] = {"status": status}
    if message is not None:
        values["message"] = message
    result = session.execute(
        sa.update(Notification)
        .where(
            Notification.notification_uuid == notification_uuid,
            Notification.status == RUNNING,
            Notification.deleted == 0,
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    session.delete(existing)
    return affected_rows(result) == 1


def takeover_candidates(session: orm.Session, now: datetime.datetime, limit: int) -> list[str]:
    """Running notifications whose claim expired (the claims table is small)."""
    rows = session.execute(
        sa.select(NotificationClaim.notification_uuid)
        .join(Notification, Notification.notification_uuid == NotificationClaim.notification_uuid)
        .where(
            NotificationClaim.expires_at < now,
            Notification.status == RUNNING,
            Notification.deleted == 0,
        )
        .order_by(NotificationClaim.expires_at)
        .limit(limit)
    ).all()
    return [r.notification_uuid for r in rows]


def orphan_candidates(session: orm.Session, limit: int) -> list[str]:
    """Running notifications nobody claims: left by an engine of the reference, or by hand."""
    rows = session.execute(
        sa.select(Notification.notification_uuid)
        .outerjoin(
            NotificationClaim,
            NotificationClaim.notification_uuid == Notification.notification_uuid,
        )
        .where(
            Notification.status == RUNNING,
            Notification.deleted == 0,
            NotificationClaim.notification_uuid.is_(None),
        )
        .order_by(Notification.id)
        .limit(limit)
    ).all()
    return [r.notification_uuid for r in rows]


def take_over(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    token: int,
    now: datetime.datetime,
    expires_at: datetime.datetime,
) -> bool:
    """Become the owner of a running notification whose claim expired or is missing.

    A concurrent insert of the same missing claim fails on the primary key when the
    transaction commits: the caller treats that as a lost race.
    """
    running = session.execute(
        sa.select(Notification.id)
        .where(
            Notification.notification_uuid == notification_uuid,
            Notification.status == RUNNING,
            Notification.deleted == 0,
        )
        .with_for_update()
    ).first()
    if running is None:
        return False
    existing = session.get(NotificationClaim, notification_uuid, with_for_update=True)
    if existing is not None and existing.expires_at >= now:
        return False
    _put_claim(session, notification_uuid, owner, token, expires_at)
    return True


def expire(session: orm.Session, generated_before: datetime.datetime, limit: int) -> list[str]:
    """Mark ``failed`` up to ``limit`` unfinished notifications generated before a time."""
    statuses = [RUNNING, ERROR, NEW]
    rows = session.execute(
        sa.select(Notification.id, Notification.notification_uuid)
        .where(
            Notification.status.in_(statuses),
            Notification.generated_time < generated_before,
            Notification.deleted == 0,
        )
        .order_by(Notification.id)
        .limit(limit)
    ).all()
    if not rows:
        return []
    ids = [r.id for r in rows]
    session.execute(
        sa.update(Notification)
        .where(Notification.id.in_(ids), Notification.status.in_(statuses))
        .values(status=FAILED)
        .execution_options(synchronize_session=False)
    )
    uuids = [r.notification_uuid for r in rows]
    session.execute(
        sa.delete(NotificationClaim)
        .where(NotificationClaim.notification_uuid.in_(uuids))
        .execution_options(synchronize_session=False)
    )
    return uuids


# --- hosts and segments ----------------------------------------------------------------------


def get_host(session: orm.Session, host_uuid: str) -> HostData | None:
    host = session.scalar(sa.select(Host).where(Host.uuid == host_uuid, Host.deleted == 0))
    if host is None:
        return None
    segment = session.scalar(
        sa.select(Segment).where(Segment.uuid == host.failover_segment_id, Segment.deleted == 0)
    )
    return HostData(
        uuid=host.uuid,
        name=host.name,
        reserved=bool(host.reserved),
        on_maintenance=bool(host.on_maintenance),
        failover_segment_id=host.failover_segment_id,
        segment_enabled=bool(segment.enabled) if segment is not None else False,
        recovery_method=segment.recovery_method if segment is not None else "auto",
    )


def put_on_maintenance(session: orm.Session, host_uuid: str, unreserve: bool) -> None:
    """A failed host goes on maintenance; a failed reserved host is no longer a spare."""
    values: dict[str, Any] = {"on_maintenance": True}
    if unreserve:
        values["reserved"] = False
    session.execute(
        sa.update(Host)
        .where(Host.uuid == host_uuid, Host.deleted == 0)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def reserved_host_names(session: orm.Session, segment_uuid: str) -> list[str]:
    """Usable spares of a segment, newest first, as the reference's default host order."""
    rows = session.execute(
        sa.select(Host.name)
        .where(
            Host.failover_segment_id == segment_uuid,
            Host.reserved.is_(True),
            Host.on_maintenance.is_(False),
            Host.deleted == 0,
        )
        .order_by(Host.created_at.desc(), Host.id.desc())
    ).all()
    return [r.name for r in rows]


def take_reserved_host(session: orm.Session, name: str) -> bool:
    """Atomically take a spare: the cross-engine form of the reference's per-host lock."""
    result = session.execute(
        sa.update(Host)
        .where(
            Host.name == name,
            Host.reserved.is_(True),
            Host.on_maintenance.is_(False),
            Host.deleted == 0,
        )
        .values(reserved=False)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def give_back_reserved_host(session: orm.Session, name: str) -> None:
    session.execute(
        sa.update(Host)
        .where(Host.name == name, Host.deleted == 0)
        .values(reserved=True)
        .execution_options(synchronize_session=False)
    )


# --- vmoves ----------------------------------------------------------------------------------


def _vmove_data(row: VMove) -> VMoveData:
    return VMoveData(
        id=row.id,
        uuid=row.uuid,
        instance_uuid=row.instance_uuid,
        instance_name=row.instance_name,
        source_host=row.source_host,
        dest_host=row.dest_host,
        status=row.status,
        message=row.message,
    )


def create_vmove(
    session: orm.Session,
    notification_uuid: str,
    instance_uuid: str,
    instance_name: str,
    source_host: str,
) -> VMoveData:
    row = VMove(
        uuid=str(uuidlib.uuid4()),
        notification_uuid=notification_uuid,
        instance_uuid=instance_uuid,
        instance_name=instance_name,
        source_host=source_host,
        type=VMOVE_EVACUATION,
        status=VMOVE_PENDING,
    )
    session.add(row)
    session.flush()
    return _vmove_data(row)


def update_vmove(session: orm.Session, vmove_id: int, **values: Any) -> None:
    session.execute(
        sa.update(VMove)
        .where(VMove.id == vmove_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def vmoves(
    session: orm.Session,
    notification_uuid: str,
    statuses: Sequence[str] | None = None,
    ids: Sequence[int] | None = None,
) -> list[VMoveData]:
    """Vmoves of a notification, newest first (the reference's default order)."""
    stmt = sa.select(VMove).where(VMove.notification_uuid == notification_uuid, VMove.deleted == 0)
    if statuses is not None:
        stmt = stmt.where(VMove.status.in_(list(statuses)))
    if ids is not None:
        stmt = stmt.where(VMove.id.in_(list(ids)))
    stmt = stmt.order_by(VMove.created_at.desc(), VMove.id.desc())
    return [_vmove_data(row) for row in session.scalars(stmt)]


# --- instance locks ----------------------------------------------------------------------------


def record_lock(session: orm.Session, notification_uuid: str, instance_uuid: str) -> None:
    """Note, before locking it in Nova, that this notification's recovery locks the instance."""
    session.merge(InstanceLock(instance_uuid=instance_uuid, notification_uuid=notification_uuid))


def forget_lock(session: orm.Session, instance_uuid: str) -> None:
    session.execute(sa.delete(InstanceLock).where(InstanceLock.instance_uuid == instance_uuid))


def locked_instances(session: orm.Session, notification_uuid: str) -> list[str]:
    """Instances an earlier attempt of this notification locked and never unlocked."""
    return list(
        session.scalars(
            sa.select(InstanceLock.instance_uuid).where(
                InstanceLock.notification_uuid == notification_uuid
            )
        )
    )
