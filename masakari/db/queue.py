"""The engine's work queue: which notifications wait, which claims expired, what one holds.

Reads only; every transition is in :mod:`masakari.db.claims`.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db import holds, models
from masakari.db.models import Notification, NotificationClaim, VMove
from masakari.db.statuses import ERROR, HELD, NEW, RUNNING


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


def _candidates(stmt: sa.Select[*tuple[Any, ...]], session: orm.Session) -> list[Candidate]:
    return [
        Candidate(
            row.id, row.notification_uuid, row.source_host_uuid, row.status, bool(row.host_busy)
        )
        for row in session.execute(stmt)
    ]


def _host_busy() -> sa.Exists:
    """Whether another notification of the row's host runs: a hint that saves a claim
    attempt (the claim checks again under the host's guard)."""
    other = orm.aliased(Notification)
    return sa.exists().where(
        other.source_host_uuid == Notification.source_host_uuid,
        other.status == RUNNING,
        other.deleted == 0,
    )


def _candidate_columns() -> sa.Select[*tuple[Any, ...]]:
    host_busy = _host_busy().label("host_busy")
    # A held notification reads as status held: nothing that looks for new ones takes it.
    # Plain text, not the column's enum type: PostgreSQL refuses a value outside the enum.
    status = sa.case(
        (holds.is_held(), sa.literal(HELD, sa.String(16))),
        else_=sa.cast(Notification.status, sa.String(16)),
    ).label("status")
    return sa.select(
        Notification.id,
        Notification.notification_uuid,
        Notification.source_host_uuid,
        status,
        host_busy,
    )


def after(
    session: orm.Session, after_id: int, limit: int, status: str | None = None
) -> list[Candidate]:
    """Notifications above an id (of one status), oldest first: a primary-key range scan.

    Held notifications have status held here, and are not ``new`` ones.
    """
    stmt = _candidate_columns().where(Notification.id > after_id, Notification.deleted == 0)
    if status is not None:
        stmt = stmt.where(Notification.status == status)
        if status == NEW:
            stmt = stmt.where(holds.not_held())
    return _candidates(stmt.order_by(Notification.id).limit(limit), session)


def new_after(
    session: orm.Session,
    after_id: int,
    limit: int,
    idle_hosts_only: bool = False,
    released: bool = True,
) -> list[Candidate]:
    """``new`` notifications above an id, and released ones below it, oldest first.

    A released notification is older than the marks the engine's scans move up, so it is
    looked for by itself (unless ``released`` is false: a later page of one scan); it stays
    ``new`` only until an engine claims it. With ``idle_hosts_only``, rows of hosts with a
    running notification are left out: they cannot be claimed now, and a page of them would
    hide the claimable rows behind it.
    """
    above = sa.and_(Notification.id > after_id, holds.not_held())
    stmt = _candidate_columns().where(
        Notification.deleted == 0,
        Notification.status == NEW,
        sa.or_(above, holds.was_released()) if released else above,
    )
    if idle_hosts_only:
        stmt = stmt.where(~_host_busy())
    return _candidates(stmt.order_by(Notification.id).limit(limit), session)


def lowest_new_after(session: orm.Session, after_id: int) -> int | None:
    """The lowest id above ``after_id`` of a ``new`` notification not held: how far a
    scan's low-water mark may move up."""
    return session.scalar(
        sa.select(sa.func.min(Notification.id)).where(
            Notification.deleted == 0,
            Notification.status == NEW,
            Notification.id > after_id,
            holds.not_held(),
        )
    )


def max_id(session: orm.Session) -> int:
    return session.scalar(sa.select(sa.func.max(Notification.id))) or 0


def retry_candidates(
    session: orm.Session, new_before: datetime.datetime, limit: int
) -> list[Candidate]:
    """What the retry loop takes: every ``error``, and ``new`` ones generated before a time.

    A released notification is one of these once its hold is gone, however old.
    """
    stmt = (
        _candidate_columns()
        .where(
            Notification.deleted == 0,
            # Implied by the OR below; lets the database read the two statuses off an index.
            Notification.status.in_((ERROR, NEW)),
            sa.or_(
                Notification.status == ERROR,
                sa.and_(
                    Notification.status == NEW,
                    Notification.generated_time < new_before,
                    holds.not_held(),
                ),
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


# How long a running notification nobody claims must have been left unchanged before an engine
# takes it over. An engine of the reference (during a rolling upgrade) claims nothing but
# writes the notification when it starts a recovery and each vmove as an evacuation moves on;
# between those writes it only waits on Nova, at most the sum of its waits at their defaults
# (wait_period_after_service_update 180 s, _after_power_off 180 s, _after_power_on 60 s,
# _after_evacuation 90 s: 510 s). Ten minutes outlasts that with a margin for Nova's own
# slowness; a live reference engine's recovery is never taken (docs/upgrade.md).
ORPHAN_QUIET_PERIOD = datetime.timedelta(minutes=10)


def _last_change(table: Any) -> Any:
    return sa.func.coalesce(table.updated_at, table.created_at)


def orphan_candidates(
    session: orm.Session, limit: int, quiet_before: datetime.datetime | None = None
) -> list[str]:
    """Running notifications nobody claims, unchanged since ``quiet_before`` (default:
    ORPHAN_QUIET_PERIOD ago), and none of whose vmoves changed since: left by an engine of
    the reference that stopped, or by hand."""
    if quiet_before is None:
        quiet_before = models.utcnow() - ORPHAN_QUIET_PERIOD
    vmove_moved = sa.exists().where(
        VMove.notification_uuid == Notification.notification_uuid,
        _last_change(VMove) >= quiet_before,
    )
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
            _last_change(Notification) < quiet_before,
            ~vmove_moved,
        )
        .order_by(Notification.id)
        .limit(limit)
    ).all()
    return [r.notification_uuid for r in rows]
