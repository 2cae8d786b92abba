"""What a recovery keeps about each instance it touches: its plan, and its lock in Nova.

Plans (``masakari_instance_plans``): how the recovery first found the instance, whether to
stop it once evacuated, and the last change it asked Nova for; the engine that finishes a
recovery (after a takeover, say) reads them instead of the state an earlier attempt left.
Locks (``masakari_instance_locks``): instances it locked and has not unlocked yet (the
engine's locks, not users'). A run unlocks its own; the rows of recoveries that ended (an
unlock that failed, a crash, a takeover that never came) are unlocked by any engine's lock
reconciler (masakari.engine.locks), which first takes the row with a conditional update of
``updated_at`` so that one engine does the work.
"""

from __future__ import annotations

import dataclasses
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db import statuses as st
from masakari.db.database import affected_rows
from masakari.db.models import InstanceLock, InstancePlan, Notification, NotificationClaim

# A recovery that reached one of these has nothing in flight (an error one is retried from
# scratch, unlocking first what it finds recorded).
ENDED = (st.ERROR, st.FAILED, st.IGNORED, st.FINISHED)


@dataclasses.dataclass(frozen=True)
class Plan:
    """An instance as a recovery first found it, and what it has asked Nova for since.

    ``stop_after``: an evacuation stops it again once it runs elsewhere. ``last_action``:
    ``stop`` or ``start``, recorded before the request is sent.
    """

    vm_state: str | None
    stop_after: bool
    last_action: str | None = None


def get_plan(session: orm.Session, notification_uuid: str, instance_uuid: str) -> Plan | None:
    row = session.get(InstancePlan, (notification_uuid, instance_uuid))
    if row is None:
        return None
    return Plan(row.vm_state, bool(row.stop_after), row.last_action)


def put_plan(session: orm.Session, notification_uuid: str, instance_uuid: str, plan: Plan) -> None:
    """Record the plan once: the first reading of the instance is the one to restore."""
    if session.get(InstancePlan, (notification_uuid, instance_uuid)) is None:
        session.add(
            InstancePlan(
                notification_uuid=notification_uuid,
                instance_uuid=instance_uuid,
                vm_state=plan.vm_state,
                stop_after=plan.stop_after,
                last_action=plan.last_action,
            )
        )
        session.flush()


def note_action(
    session: orm.Session, notification_uuid: str, instance_uuid: str, action: str
) -> None:
    """Record the change about to be asked of Nova (a plan without a first reading if none)."""
    row = session.get(InstancePlan, (notification_uuid, instance_uuid))
    if row is None:
        put_plan(session, notification_uuid, instance_uuid, Plan(None, False, action))
    else:
        row.last_action = action
        session.flush()


def record_lock(session: orm.Session, notification_uuid: str, instance_uuid: str) -> None:
    """Note, before locking it in Nova, that this notification's recovery locks the instance."""
    session.merge(InstanceLock(instance_uuid=instance_uuid, notification_uuid=notification_uuid))


def forget_lock(session: orm.Session, instance_uuid: str) -> None:
    session.execute(sa.delete(InstanceLock).where(InstanceLock.instance_uuid == instance_uuid))


def locked(session: orm.Session, notification_uuid: str) -> list[str]:
    """Instances an earlier attempt of this notification locked and never unlocked."""
    return list(
        session.scalars(
            sa.select(InstanceLock.instance_uuid).where(
                InstanceLock.notification_uuid == notification_uuid
            )
        )
    )


def forget_actions(session: orm.Session, notification_uuid: str) -> None:
    """An attempt ended with an outcome: what it asked Nova for is no longer in flight.

    A retry then recovers from scratch, as the reference does; only a takeover (an attempt
    that never ended) skips what the lost one already asked.
    """
    session.execute(
        sa.update(InstancePlan)
        .where(InstancePlan.notification_uuid == notification_uuid)
        .values(last_action=None)
        .execution_options(synchronize_session=False)
    )


@dataclasses.dataclass(frozen=True)
class LeftLock:
    """A lock row of a recovery that ended, as the reconciler found it."""

    instance_uuid: str
    notification_uuid: str


def _ended(now: datetime.datetime) -> sa.ColumnElement[bool]:
    """The lock's notification ended (or is gone) and no live claim holds it."""
    unfinished = sa.exists().where(
        Notification.notification_uuid == InstanceLock.notification_uuid,
        Notification.status.not_in(ENDED),
    )
    claimed = sa.exists().where(
        NotificationClaim.notification_uuid == InstanceLock.notification_uuid,
        NotificationClaim.expires_at > now,
    )
    return sa.and_(~unfinished, ~claimed)


def _free(now: datetime.datetime, hold: float) -> sa.ColumnElement[bool]:
    """Nobody took the row, or whoever did gave up ``hold`` seconds ago."""
    return sa.or_(
        InstanceLock.updated_at.is_(None),
        InstanceLock.updated_at < now - datetime.timedelta(seconds=hold),
    )


def left_locks(
    session: orm.Session, now: datetime.datetime, hold: float, limit: int
) -> list[LeftLock]:
    """Lock rows of ended recoveries that no reconciler holds, oldest first."""
    rows = session.execute(
        sa.select(InstanceLock.instance_uuid, InstanceLock.notification_uuid)
        .where(_ended(now), _free(now, hold))
        .order_by(InstanceLock.created_at)
        .limit(limit)
    )
    return [LeftLock(i, n) for i, n in rows]


def stamp(now: datetime.datetime) -> datetime.datetime:
    """A time every backend stores as given (MariaDB's DATETIME drops the fraction)."""
    return now.replace(microsecond=0)


def take_left_lock(
    session: orm.Session, lock: LeftLock, now: datetime.datetime, hold: float
) -> bool:
    """Take the row for unlocking (one engine wins); False when another has it, or its
    notification runs again."""
    result = session.execute(
        sa.update(InstanceLock)
        .where(
            InstanceLock.instance_uuid == lock.instance_uuid,
            InstanceLock.notification_uuid == lock.notification_uuid,
            _ended(now),
            _free(now, hold),
        )
        .values(updated_at=stamp(now))
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) > 0


def drop_left_lock(
    session: orm.Session, lock: LeftLock, taken_at: datetime.datetime, now: datetime.datetime
) -> bool:
    """Forget the row once unlocked in Nova, if it is still the one we took and its
    notification did not start again meanwhile."""
    result = session.execute(
        sa.delete(InstanceLock)
        .where(
            InstanceLock.instance_uuid == lock.instance_uuid,
            InstanceLock.notification_uuid == lock.notification_uuid,
            InstanceLock.updated_at == stamp(taken_at),
            _ended(now),
        )
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) > 0
