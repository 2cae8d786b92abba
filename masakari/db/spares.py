"""The reserved hosts a host's recovery took, and giving them back ([host_return]).

Which spare a recovery took is read from its progress rows: the evacuation task writes
:data:`TAKEN_MESSAGE` in the transaction that takes the spare (reserved set to False), so
the message is there exactly when the spare was taken. No table of its own is needed.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db import hosts
from masakari.db.models import Host, Notification, RecoveryTask

TAKEN_MESSAGE = "Enabling reserved host: '%s'"
EVACUATE_TASK = "EvacuateInstancesTask"
RETURN_TASK = "ReturnHostTask"

_PREFIX, _SUFFIX = TAKEN_MESSAGE.split("%s")


def _names(details: str) -> list[str]:
    names = []
    for detail in json.loads(details or "[]"):
        message = str(detail.get("message") or "")
        if message.startswith(_PREFIX) and message.endswith(_SUFFIX):
            names.append(message[len(_PREFIX) : len(message) - len(_SUFFIX)])
    return names


def taken_for(session: orm.Session, host_uuid: str, segment_uuid: str, current: str) -> list[str]:
    """The spares the recoveries of a host took since it last returned, that are still
    out of the pool (not reserved, not on maintenance, in its segment), oldest first.

    ``current``: the notification returning the host, not counted as an earlier return.
    """
    returns = orm.aliased(Notification)
    last_return = (
        sa.select(sa.func.max(returns.id))
        .where(
            returns.source_host_uuid == host_uuid,
            returns.notification_uuid != current,
            returns.deleted == 0,
            sa.exists().where(
                RecoveryTask.notification_uuid == returns.notification_uuid,
                RecoveryTask.name == RETURN_TASK,
            ),
        )
        .scalar_subquery()
        .correlate(None)
    )
    recoveries = sa.select(Notification.notification_uuid).where(
        Notification.source_host_uuid == host_uuid,
        Notification.notification_uuid != current,
        Notification.deleted == 0,
        Notification.type == "COMPUTE_HOST",
        Notification.id > sa.func.coalesce(last_return, 0),
    )
    rows = session.scalars(
        sa.select(RecoveryTask.details)
        .where(
            RecoveryTask.notification_uuid.in_(recoveries),
            RecoveryTask.name == EVACUATE_TASK,
        )
        .order_by(RecoveryTask.id)
    ).all()
    named = list(dict.fromkeys(name for details in rows for name in _names(details)))
    if not named:
        return []
    out = set(
        session.scalars(
            sa.select(Host.name).where(
                Host.name.in_(named),
                Host.failover_segment_id == segment_uuid,
                Host.reserved.is_(False),
                Host.on_maintenance.is_(False),
                Host.deleted == 0,
            )
        ).all()
    )
    return [name for name in named if name in out]


def give_back(session: orm.Session, name: str) -> bool:
    """Reserved again, unless it changed meanwhile (on maintenance, reserved, deleted)."""
    return hosts.set_reserved(session, name, True)
