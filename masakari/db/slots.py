"""Evacuation slots (``masakari_evacuation_slots``): the cap on evacuations in flight.

A slot is a number below the cap. Its row names the claim it was taken under (notification,
owner, attempt); it is held while that claim lives, so it dies with the claim: when the
notification finishes (the claim row is deleted), is released, taken over, or when its
engine died and the claim expired. Nothing renews a slot and nothing needs to clean up after
a dead engine.

Taking a slot is a conditional write of one row, like a claim: a dead row is updated only if
it still names the holder that was read, a missing row is inserted (a concurrent insert of
the same number fails on the primary key). Callers run :func:`take` in a transaction that
fences their own claim first, so that a slot is only ever taken under a live claim.

Handing a slot over (:func:`hand_over`) moves a held slot from one evacuation of an engine
to the next one waiting there, in one conditional update of the row: the slot is never
free in between, so the number held never changes and nobody else can take it meanwhile.
The caller fences the receiver's claim in the same transaction.
"""

from __future__ import annotations

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import EvacuationSlot, NotificationClaim


def _live() -> sa.Exists:
    return sa.exists().where(
        NotificationClaim.notification_uuid == EvacuationSlot.notification_uuid,
        NotificationClaim.owner == EvacuationSlot.owner,
        NotificationClaim.attempt == EvacuationSlot.attempt,
    )


def held(session: orm.Session, cap: int, now: datetime.datetime) -> int:
    """Slots below ``cap`` held under a claim that has not expired."""
    alive = _live().where(NotificationClaim.expires_at > now)
    return int(
        session.scalar(
            sa.select(sa.func.count())
            .select_from(EvacuationSlot)
            .where(EvacuationSlot.slot < cap, alive)
        )
        or 0
    )


def take(
    session: orm.Session,
    cap: int,
    notification_uuid: str,
    owner: str,
    token: int,
    instance_uuid: str,
    now: datetime.datetime,
) -> int | None:
    """Take a free slot below ``cap`` for one evacuation; its number, or None when all are held.

    Raises a duplicate-key error when another engine inserted the same number first: the
    caller's transaction is lost and the caller tries again.
    """
    rows = session.execute(
        sa.select(
            EvacuationSlot.slot,
            EvacuationSlot.notification_uuid,
            EvacuationSlot.owner,
            EvacuationSlot.attempt,
            _live().where(NotificationClaim.expires_at > now).label("alive"),
        ).where(EvacuationSlot.slot < cap)
    ).all()
    known = {row.slot: row for row in rows}
    values = {
        "notification_uuid": notification_uuid,
        "owner": owner,
        "attempt": token,
        "instance_uuid": instance_uuid,
        "taken_at": now,
    }
    for number in range(cap):
        row = known.get(number)
        if row is None:
            session.add(EvacuationSlot(slot=number, **values))
            session.flush()
            return number
        if row.alive:
            continue
        # Only if nobody took it since it was read: the read holder is part of the condition.
        taken = session.execute(
            sa.update(EvacuationSlot)
            .where(
                EvacuationSlot.slot == number,
                EvacuationSlot.notification_uuid == row.notification_uuid,
                EvacuationSlot.owner == row.owner,
                EvacuationSlot.attempt == row.attempt,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        if affected_rows(taken) == 1:
            return number
    return None


def give_back(session: orm.Session, number: int, owner: str, token: int) -> None:
    """Free a slot we hold (a slot of ours that someone else took since is left alone)."""
    session.execute(
        sa.delete(EvacuationSlot)
        .where(
            EvacuationSlot.slot == number,
            EvacuationSlot.owner == owner,
            EvacuationSlot.attempt == token,
        )
        .execution_options(synchronize_session=False)
    )


def hand_over(
    session: orm.Session,
    number: int,
    giver: tuple[str, str, int],
    notification_uuid: str,
    owner: str,
    token: int,
    instance_uuid: str,
    now: datetime.datetime,
) -> bool:
    """Move slot ``number`` from ``giver`` (notification, owner, token) to another claim;
    False (nothing written) when the row no longer names the giver."""
    giver_notification, giver_owner, giver_token = giver
    moved = session.execute(
        sa.update(EvacuationSlot)
        .where(
            EvacuationSlot.slot == number,
            EvacuationSlot.notification_uuid == giver_notification,
            EvacuationSlot.owner == giver_owner,
            EvacuationSlot.attempt == giver_token,
        )
        .values(
            notification_uuid=notification_uuid,
            owner=owner,
            attempt=token,
            instance_uuid=instance_uuid,
            taken_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    return affected_rows(moved) == 1
