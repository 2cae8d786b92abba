"""The detector's lease (``masakari_detector_leases``): which engine detects, until when.

The same rules as a notification's claim (masakari/db/claims.py, docs/engine.md § Fencing):
a row per detector names its holder (``owner``), a fencing token (``token``, new at every
take) and an expiry the holder renews. Every transition is a conditional write of that one
row, never a check made by a locking read, so two engines conflict on every backend, Galera
included. A report of the detector is recorded in a transaction that first changes the row
(:func:`fence`): a takeover committed earlier leaves it nothing to change, and one racing
with it conflicts with it.
"""

from __future__ import annotations

import dataclasses
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import DetectorLease


@dataclasses.dataclass(frozen=True)
class Holder:
    owner: str
    token: int
    expires_at: datetime.datetime
    storm_until: datetime.datetime | None


def _ours(
    name: str, owner: str, token: int, now: datetime.datetime
) -> tuple[sa.ColumnElement[bool], ...]:
    return (
        DetectorLease.name == name,
        DetectorLease.owner == owner,
        DetectorLease.token == token,
        DetectorLease.expires_at > now,
    )


def take(
    session: orm.Session,
    name: str,
    owner: str,
    now: datetime.datetime,
    expires_at: datetime.datetime,
) -> int | None:
    """Become the holder if the lease expired (or never existed): the new token, else None.

    A holder's own expired lease is taken like anyone's, with a new token: whatever it was
    doing under the old one is over. Two engines inserting the first row collide on the
    primary key; the caller treats that as a lost race.
    """
    updated = session.execute(
        sa.update(DetectorLease)
        .where(DetectorLease.name == name, DetectorLease.expires_at <= now)
        .values(owner=owner, token=DetectorLease.token + 1, expires_at=expires_at, fence=0)
        .execution_options(synchronize_session=False)
    )
    if affected_rows(updated) == 1:
        return session.scalar(
            sa.select(DetectorLease.token).where(
                DetectorLease.name == name, DetectorLease.owner == owner
            )
        )
    if session.get(DetectorLease, name) is not None:
        return None  # someone else's live lease
    session.add(DetectorLease(name=name, owner=owner, token=1, expires_at=expires_at, fence=0))
    session.flush()
    return 1


def renew(
    session: orm.Session,
    name: str,
    owner: str,
    token: int,
    now: datetime.datetime,
    expires_at: datetime.datetime,
) -> bool:
    """Push our live lease's expiry back; False when it expired or was taken."""
    renewed = session.execute(
        sa.update(DetectorLease)
        .where(*_ours(name, owner, token, now))
        .values(expires_at=expires_at)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(renewed) == 1


def release(
    session: orm.Session, name: str, owner: str, token: int, now: datetime.datetime
) -> None:
    """Give the lease up: another engine may take it at once."""
    session.execute(
        sa.update(DetectorLease)
        .where(
            DetectorLease.name == name, DetectorLease.owner == owner, DetectorLease.token == token
        )
        .values(expires_at=now - datetime.timedelta(seconds=1))
        .execution_options(synchronize_session=False)
    )


def fence(session: orm.Session, name: str, owner: str, token: int, now: datetime.datetime) -> bool:
    """Hold our live lease for the rest of the caller's transaction; False when it is not."""
    result = session.execute(
        sa.update(DetectorLease)
        .where(*_ours(name, owner, token, now))
        .values(fence=DetectorLease.fence + 1)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def set_storm(
    session: orm.Session,
    name: str,
    owner: str,
    token: int,
    now: datetime.datetime,
    until: datetime.datetime,
) -> bool:
    """Record, under our live lease, until when the storm cooldown lasts."""
    result = session.execute(
        sa.update(DetectorLease)
        .where(*_ours(name, owner, token, now))
        .values(storm_until=until)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def holder(session: orm.Session, name: str) -> Holder | None:
    row = session.get(DetectorLease, name)
    if row is None:
        return None
    return Holder(row.owner, row.token, row.expires_at, row.storm_until)
