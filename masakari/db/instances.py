"""What a recovery keeps about each instance it touches: its plan, and its lock in Nova.

Plans (``masakari_instance_plans``): how the recovery first found the instance, whether to
stop it once evacuated, and the last change it asked Nova for; the engine that finishes a
recovery (after a takeover, say) reads them instead of the state an earlier attempt left.
Locks (``masakari_instance_locks``): instances it locked and has not unlocked yet (the
engine's locks, not users').
"""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import InstanceLock, InstancePlan


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
