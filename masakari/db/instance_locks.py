"""Instances a recovery locked in Nova and has not unlocked yet (the engine's, not users')."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import InstanceLock


def record(session: orm.Session, notification_uuid: str, instance_uuid: str) -> None:
    """Note, before locking it in Nova, that this notification's recovery locks the instance."""
    session.merge(InstanceLock(instance_uuid=instance_uuid, notification_uuid=notification_uuid))


def forget(session: orm.Session, instance_uuid: str) -> None:
    session.execute(sa.delete(InstanceLock).where(InstanceLock.instance_uuid == instance_uuid))


def of_notification(session: orm.Session, notification_uuid: str) -> list[str]:
    """Instances an earlier attempt of this notification locked and never unlocked."""
    return list(
        session.scalars(
            sa.select(InstanceLock.instance_uuid).where(
                InstanceLock.notification_uuid == notification_uuid
            )
        )
    )
