"""Failover room held in Placement (``masakari_room_holds``, ``masakari_room_hold_segments``).

The engine that holds a segment's room (masakari.engine.room) and a recovery that releases
it both change the segment's row first, in the transaction that records what they are about
to write to Placement: the two serialise there on every backend (a row lock on PostgreSQL
and InnoDB, a certification conflict on Galera, the one writer on SQLite). A holder writes
only while the segment's room is not released (:func:`intend` returns False otherwise); a
release marks it released first, so every write a holder recorded before is visible to the
release, and every write after is refused.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import Host, Notification, RoomHold, RoomHoldSegment, utcnow
from masakari.db.statuses import ERROR, RUNNING

# A recovery of these statuses may use the room: it stays released while one is.
RECOVERING = (RUNNING, ERROR)
HOST_FAILURE = "COMPUTE_HOST"


def rows(session: orm.Session, segment_uuid: str | None = None) -> list[RoomHold]:
    query = sa.select(RoomHold).order_by(RoomHold.host_name, RoomHold.resource_class)
    if segment_uuid is not None:
        query = query.where(RoomHold.segment_uuid == segment_uuid)
    return list(session.scalars(query))


def row(session: orm.Session, host_name: str, resource_class: str) -> RoomHold | None:
    return session.scalar(
        sa.select(RoomHold).where(
            RoomHold.host_name == host_name, RoomHold.resource_class == resource_class
        )
    )


def segment_state(session: orm.Session, segment_uuid: str) -> RoomHoldSegment | None:
    return session.get(RoomHoldSegment, segment_uuid)


def held_segments(session: orm.Session) -> list[str]:
    """Segments with room held, or released and not held again yet."""
    held = set(session.scalars(sa.select(RoomHold.segment_uuid).distinct()))
    held |= set(session.scalars(sa.select(RoomHoldSegment.segment_uuid)))
    return sorted(held)


def recovering(session: orm.Session, segment_uuid: str) -> str | None:
    """A host failure of the segment being recovered (its notification's uuid), or None."""
    return session.scalar(
        sa.select(Notification.notification_uuid)
        .join(Host, Host.uuid == Notification.source_host_uuid)
        .where(
            Host.failover_segment_id == segment_uuid,
            Notification.type == HOST_FAILURE,
            Notification.status.in_(RECOVERING),
            Notification.deleted == 0,
        )
        .order_by(Notification.id)
        .limit(1)
    )


def _bump(session: orm.Session, segment_uuid: str, *where: sa.ColumnElement[bool]) -> bool:
    """Change the segment's row (inserted at first use) if ``where`` holds of it."""
    bumped = session.execute(
        sa.update(RoomHoldSegment)
        .where(RoomHoldSegment.segment_uuid == segment_uuid, *where)
        .values(version=RoomHoldSegment.version + 1)
        .execution_options(synchronize_session=False)
    )
    if affected_rows(bumped):
        return True
    if session.get(RoomHoldSegment, segment_uuid) is not None:
        return False
    session.add(RoomHoldSegment(segment_uuid=segment_uuid, version=1))
    session.flush()
    return True


def intend(
    session: orm.Session,
    segment_uuid: str,
    host_name: str,
    provider_uuid: str,
    resource_class: str,
    base_reserved: int,
    reserved: int,
) -> bool:
    """Record that ``reserved`` is about to be written to the inventory, base_reserved being
    what it reserves without masakari; False (nothing recorded) while the segment's room is
    released for a recovery or a host failure of it is being recovered (read after the
    segment's row changed: a recovery that found nothing held to release was claimed
    before, and is seen), or the inventory is held for another segment."""
    if not _bump(session, segment_uuid, RoomHoldSegment.released_for.is_(None)):
        return False
    if recovering(session, segment_uuid) is not None:
        return False
    row = session.scalar(
        sa.select(RoomHold).where(
            RoomHold.provider_uuid == provider_uuid, RoomHold.resource_class == resource_class
        )
    )
    if row is None:
        row = RoomHold(
            segment_uuid=segment_uuid,
            host_name=host_name,
            provider_uuid=provider_uuid,
            resource_class=resource_class,
            held=0,
        )
        session.add(row)
    elif row.segment_uuid != segment_uuid:
        return False
    row.base_reserved = base_reserved
    row.pending = reserved
    row.updated_at = utcnow()
    session.flush()
    return True


def wrote(session: orm.Session, provider_uuid: str, resource_class: str, reserved: int) -> None:
    """``reserved`` is in Placement now: the row records it, or goes once nothing is held."""
    row = session.scalar(
        sa.select(RoomHold).where(
            RoomHold.provider_uuid == provider_uuid, RoomHold.resource_class == resource_class
        )
    )
    if row is None:
        return
    if reserved <= row.base_reserved:
        session.delete(row)
        return
    row.written, row.pending = reserved, None
    row.held = reserved - row.base_reserved
    row.updated_at = utcnow()


def forget(session: orm.Session, provider_uuid: str, resource_class: str) -> None:
    """The inventory is no longer masakari's to restore (gone, or rewritten by another)."""
    session.execute(
        sa.delete(RoomHold).where(
            RoomHold.provider_uuid == provider_uuid, RoomHold.resource_class == resource_class
        )
    )


def release_for(session: orm.Session, segment_uuid: str, notification_uuid: str) -> None:
    """Mark the segment's room released for the recovery: no holder writes from now on."""
    _bump(session, segment_uuid)
    state = session.get(RoomHoldSegment, segment_uuid)
    assert state is not None
    state.released_for, state.released_at = notification_uuid, utcnow()


def end_release(session: orm.Session, segment_uuid: str, notification_uuid: str) -> bool:
    """Let the room be held again once the recovery it was released for is over."""
    ended = session.execute(
        sa.update(RoomHoldSegment)
        .where(
            RoomHoldSegment.segment_uuid == segment_uuid,
            RoomHoldSegment.released_for == notification_uuid,
        )
        .values(version=RoomHoldSegment.version + 1, released_for=None, released_at=None)
        .execution_options(synchronize_session=False)
    )
    return bool(affected_rows(ended))


def drop_segment(session: orm.Session, segment_uuid: str) -> None:
    """Nothing held, nothing released: the segment's row goes (holding turned off)."""
    session.execute(sa.delete(RoomHoldSegment).where(RoomHoldSegment.segment_uuid == segment_uuid))
