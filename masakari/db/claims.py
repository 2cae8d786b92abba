"""Claims: which engine owns a running notification, until when, and the fence on its writes.

A claim (``masakari_notification_claims``) is a lease with a fencing token: its owner (an
engine id), ``attempt`` (a token unique per owner) and an expiry the owner renews. Every
transition here is a conditional write of one row, never a check made by a locking read:
on Galera a ``SELECT … FOR UPDATE`` holds on one node only, while two writes of one row
conflict everywhere, so the loser sees a zero row count or a deadlock error and retries.

A ``running`` notification whose claim expired, or that has no claim row at all, belongs to
nobody and may be taken over.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import mysql, postgresql, sqlite

from masakari.db import guards, holds
from masakari.db.database import affected_rows
from masakari.db.models import Notification, NotificationClaim, utcnow
from masakari.db.statuses import ERROR, FAILED, NEW, RUNNING


class ClaimResult:
    CLAIMED = "claimed"
    GONE = "gone"  # no longer in a claimable status (another engine won, or it moved on)
    BUSY = "busy"  # another notification of the same source host is running


def _running(notification_uuid: str) -> sa.Exists:
    return sa.exists().where(
        Notification.notification_uuid == notification_uuid,
        Notification.status == RUNNING,
        Notification.deleted == 0,
    )


def _ours(notification_uuid: str, owner: str, token: int) -> tuple[Any, ...]:
    return (
        NotificationClaim.notification_uuid == notification_uuid,
        NotificationClaim.owner == owner,
        NotificationClaim.attempt == token,
    )


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
    of the same host is running, the answer is BUSY and nothing changes. The host's guard is
    held first, so that two engines claiming two notifications of one host conflict.
    """
    # Not a plain read: on InnoDB (REPEATABLE READ) the first plain read of a transaction
    # fixes the snapshot every later plain read sees. Taken here, before the guard, the busy
    # check below would not see a notification of this host that the guard's holder moved
    # to running while this claim waited for the guard. A locking read of this one row
    # takes no snapshot (and orders two claims of one notification); the guard still does
    # the serialising, on Galera too.
    host_uuid = session.scalar(
        sa.select(Notification.source_host_uuid)
        .where(Notification.notification_uuid == notification_uuid, Notification.deleted == 0)
        .with_for_update()
    )
    if host_uuid is None:
        return ClaimResult.GONE
    guards.hold(session, host_uuid)
    busy = session.execute(
        sa.select(Notification.id)
        .where(
            Notification.source_host_uuid == host_uuid,
            Notification.status == RUNNING,
            Notification.deleted == 0,
            Notification.notification_uuid != notification_uuid,
        )
        .limit(1)
    ).first()
    if busy is not None:
        return ClaimResult.BUSY
    stmt = sa.update(Notification).where(
        Notification.notification_uuid == notification_uuid,
        Notification.status.in_(list(from_statuses)),
        Notification.deleted == 0,
        # Checked by the write itself: a release committed later cannot have been missed,
        # and a notification held after the candidate was read is not taken.
        holds.not_held(sa.literal(notification_uuid)),
    )
    if generated_before is not None:
        stmt = stmt.where(Notification.generated_time < generated_before)
    result = session.execute(
        stmt.values(status=RUNNING).execution_options(synchronize_session=False)
    )
    if affected_rows(result) != 1:
        return ClaimResult.GONE
    _replace_claim(session, notification_uuid, owner, token, expires_at)
    return ClaimResult.CLAIMED


def _replace_claim(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    token: int,
    expires_at: datetime.datetime,
) -> None:
    """Insert the claim row of a notification just moved to running, or replace the one left.

    A row left by an earlier attempt (given up, or of an error now retried) is not live:
    the notification was not running. One statement, not an update, a read and an insert:
    on SQLite each statement of a claim is time the write lock is held.
    """
    now = utcnow()
    row = {"owner": owner, "attempt": token, "expires_at": expires_at, "fence": 0}
    new = {"notification_uuid": notification_uuid, "created_at": now, **row}
    backend = session.get_bind().dialect.name
    stmt: sa.Executable
    if backend == "mysql":
        stmt = (
            mysql.insert(NotificationClaim)
            .values(new)
            .on_duplicate_key_update(**row, updated_at=now)
        )
    else:
        insert = postgresql.insert if backend == "postgresql" else sqlite.insert
        stmt = (
            insert(NotificationClaim)
            .values(new)
            .on_conflict_do_update(
                index_elements=[NotificationClaim.notification_uuid],
                set_={**row, "updated_at": now},
            )
        )
    session.execute(stmt)


def _put(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    token: int,
    expires_at: datetime.datetime,
    only_if_expired_before: datetime.datetime | None,
) -> bool:
    """Make the claim row ours: update it (if it expired, when asked), or insert it.

    A concurrent insert of the same missing row fails on the primary key at flush or commit:
    the caller treats that as a lost race.
    """
    stmt = sa.update(NotificationClaim).where(
        NotificationClaim.notification_uuid == notification_uuid, _running(notification_uuid)
    )
    if only_if_expired_before is not None:
        stmt = stmt.where(NotificationClaim.expires_at < only_if_expired_before)
    updated = session.execute(
        stmt.values(owner=owner, attempt=token, expires_at=expires_at, fence=0).execution_options(
            synchronize_session=False
        )
    )
    if affected_rows(updated) == 1:
        return True
    exists = session.scalar(
        sa.select(NotificationClaim.notification_uuid).where(
            NotificationClaim.notification_uuid == notification_uuid
        )
    )
    if exists is not None:
        return False  # a live claim of someone else
    session.add(
        NotificationClaim(
            notification_uuid=notification_uuid,
            owner=owner,
            attempt=token,
            expires_at=expires_at,
            fence=0,
        )
    )
    session.flush()
    return True


def fence(
    session: orm.Session, notification_uuid: str, owner: str, token: int, now: datetime.datetime
) -> bool:
    """Hold our live claim for the rest of the caller's transaction; False when it is not.

    The claim row is changed, not just read: a takeover committed first leaves nothing to
    change (zero rows), and one racing with this transaction conflicts with it on the row
    (it waits on PostgreSQL and InnoDB; one of the two fails certification on Galera).
    """
    result = session.execute(
        sa.update(NotificationClaim)
        .where(
            *_ours(notification_uuid, owner, token),
            NotificationClaim.expires_at > now,
            _running(notification_uuid),
        )
        .values(fence=NotificationClaim.fence + 1)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def renew(
    session: orm.Session,
    owner: str,
    tokens: dict[str, int],
    now: datetime.datetime,
    expires_at: datetime.datetime,
) -> set[str]:
    """Push back the expiry of our live claims; return the uuids that are still ours.

    One conditional UPDATE per claim and no read before it: whatever committed before the
    UPDATE (a takeover, an expiry) is what its conditions see. A claim that expired is not
    renewed even if nobody took it yet: its owner has stopped acting on it.
    """
    mine = set()
    for notification_uuid, token in tokens.items():
        renewed = session.execute(
            sa.update(NotificationClaim)
            .where(
                *_ours(notification_uuid, owner, token),
                NotificationClaim.expires_at > now,
                _running(notification_uuid),
            )
            .values(expires_at=expires_at)
            .execution_options(synchronize_session=False)
        )
        if affected_rows(renewed) == 1:
            mine.add(notification_uuid)
    return mine


def release(
    session: orm.Session, owner: str, tokens: dict[str, int], now: datetime.datetime
) -> None:
    """Give claims up without finishing: another engine may take them over at once."""
    for notification_uuid, token in tokens.items():
        session.execute(
            sa.update(NotificationClaim)
            .where(*_ours(notification_uuid, owner, token))
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
    """Write the outcome of our run and drop the claim, only if the claim is still ours."""
    dropped = session.execute(
        sa.delete(NotificationClaim)
        .where(*_ours(notification_uuid, owner, token))
        .execution_options(synchronize_session=False)
    )
    if affected_rows(dropped) != 1:
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
    return affected_rows(result) == 1


def give_up(session: orm.Session, notification_uuid: str, owner: str, token: int) -> bool:
    """Drop our claim and put the notification back to ``new``, for a hold written in the
    same transaction (host fencing could not prove the host dead): the engines' queue skips
    it until an operator releases it."""
    dropped = session.execute(
        sa.delete(NotificationClaim)
        .where(*_ours(notification_uuid, owner, token))
        .execution_options(synchronize_session=False)
    )
    if affected_rows(dropped) != 1:
        return False
    result = session.execute(
        sa.update(Notification)
        .where(
            Notification.notification_uuid == notification_uuid,
            Notification.status == RUNNING,
            Notification.deleted == 0,
        )
        .values(status=NEW)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def take_over(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    token: int,
    now: datetime.datetime,
    expires_at: datetime.datetime,
) -> bool:
    """Become the owner of a running notification whose claim expired or is missing."""
    running = session.scalar(
        sa.select(Notification.id).where(
            Notification.notification_uuid == notification_uuid,
            Notification.status == RUNNING,
            Notification.deleted == 0,
        )
    )
    if running is None:
        return False
    return _put(session, notification_uuid, owner, token, expires_at, only_if_expired_before=now)


def expire(session: orm.Session, generated_before: datetime.datetime, limit: int) -> list[str]:
    """Mark ``failed`` up to ``limit`` unfinished notifications generated before a time.

    Held ones wait for an operator however long it takes: they never expire. A released one
    is as old as its release (released after the cutoff: not expired, whenever generated),
    so that the engine recovers it rather than the expiry failing it at once.
    """
    statuses = [RUNNING, ERROR, NEW]
    rows = session.execute(
        sa.select(Notification.id, Notification.notification_uuid)
        .where(
            Notification.status.in_(statuses),
            Notification.generated_time < generated_before,
            Notification.deleted == 0,
            holds.not_held(),
            ~holds.released_since(generated_before),
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
    # Deleting the claims is a write the owners' fenced writes conflict with: they stop.
    session.execute(
        sa.delete(NotificationClaim)
        .where(NotificationClaim.notification_uuid.in_(uuids))
        .execution_options(synchronize_session=False)
    )
    return uuids
