"""Host fencing's rows: the evidence of each fence attempt, kdump messages, driver checks.

Fence attempts are written by a recovery under its claim (the caller fences the
transaction): a row before each call to a BMC or agent (``result`` :data:`SENT`) and the
answer after it. An engine that takes the recovery over reads them before it acts
(:func:`attempts`): a confirmed power off is not sent again, and an off that was sent but
not confirmed is read back first.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import (
    FenceAttempt,
    FenceCheck,
    Host,
    KdumpMessage,
    Notification,
    Segment,
)

# Actions of a fence attempt.
OFF = "off"
STATUS = "status"
ON = "on"
KDUMP = "kdump"
# A watch of the host's shared-disk lease (masakari.fencing.lease).
LEASE = "lease"
# An operator released the held notification: their word that the host is dead.
RELEASE = "release"
# Storage fencing (a ceph entry): the host's addresses added to the OSD map's blocklist, and
# lifted from it on the host's return.
BLOCKLIST = "blocklist"
UNBLOCKLIST = "unblocklist"
ACTIONS = (OFF, STATUS, ON, KDUMP, LEASE, RELEASE, BLOCKLIST, UNBLOCKLIST)

# Results. SENT: the call went out and no answer is recorded yet (the engine died, or is
# still waiting). The others are the answer.
SENT = "sent"
DONE = "done"  # a power off or on the BMC accepted
POWER_OFF = "off"  # the state read Off: the host is proven dead
POWER_ON = "on"
UNKNOWN = "unknown"  # the state read neither on nor off
CRASHED = "crashed"  # a kdump message proves the crash
HINT = "hint"  # kdump messages came, but [fencing] kdump_trust makes them no proof
NO_MESSAGE = "no message"  # no kdump message within the wait
UNREACHABLE = "unreachable"
REFUSED = "refused"
FAILED = "failed"
TIMEOUT = "timeout"  # the state did not read Off within confirm_timeout
DEAD = "dead"  # the operator's release
RENEWING = "renewing"  # the lease's counter changed: the host runs (a veto)
STALLED = "stalled"  # unchanged for interval x misses: the power drivers may go on
EXPIRED = "expired"  # unchanged past the watchdog's timeout: the host is proven dead
BLOCKLISTED = "blocklisted"  # every address read back in the OSD map's blocklist
NOT_LISTED = "not listed"  # added, and not in the blocklist read back
LIFTED = "lifted"  # removed from the blocklist
# Checks only: a host the fencing file gives no driver.
UNFENCED = "unfenced"
OK = "ok"

# An attempt that proves the host dead.
PROOFS = {
    (STATUS, POWER_OFF),
    (KDUMP, CRASHED),
    (LEASE, EXPIRED),
    (RELEASE, DEAD),
    (BLOCKLIST, BLOCKLISTED),
}

MAX_MESSAGE = 2048


@dataclasses.dataclass(frozen=True)
class Attempt:
    id: int
    notification_uuid: str
    owner: str
    attempt: int
    host_name: str
    position: int
    driver: str
    action: str
    result: str
    message: str | None
    started_at: datetime.datetime
    duration: float | None

    @property
    def proves_dead(self) -> bool:
        return (self.action, self.result) in PROOFS


def _attempt(row: FenceAttempt) -> Attempt:
    return Attempt(
        id=row.id,
        notification_uuid=row.notification_uuid,
        owner=row.owner,
        attempt=row.attempt,
        host_name=row.host_name,
        position=row.position,
        driver=row.driver,
        action=row.action,
        result=row.result,
        message=row.message,
        started_at=row.started_at,
        duration=row.duration,
    )


def _message(text: str | None) -> str | None:
    return None if text is None else text[:MAX_MESSAGE]


def start(
    session: orm.Session,
    notification_uuid: str,
    owner: str,
    attempt: int,
    host_name: str,
    position: int,
    driver: str,
    action: str,
    started_at: datetime.datetime,
    result: str = SENT,
    message: str | None = None,
    duration: float | None = None,
) -> int:
    """Record an attempt (by default as sent, before the call); its id."""
    row = FenceAttempt(
        notification_uuid=notification_uuid,
        owner=owner,
        attempt=attempt,
        host_name=host_name,
        position=position,
        driver=driver[:255],
        action=action,
        result=result,
        message=_message(message),
        started_at=started_at,
        duration=duration,
    )
    session.add(row)
    session.flush()
    return row.id


def answer(
    session: orm.Session, attempt_id: int, result: str, message: str | None, duration: float
) -> bool:
    """Complete an attempt with what answered."""
    done = session.execute(
        sa.update(FenceAttempt)
        .where(FenceAttempt.id == attempt_id)
        .values(result=result, message=_message(message), duration=duration)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(done) == 1


def attempts(session: orm.Session, notification_uuid: str) -> list[Attempt]:
    """A notification's attempts, oldest first."""
    rows = session.scalars(
        sa.select(FenceAttempt)
        .where(FenceAttempt.notification_uuid == notification_uuid)
        .order_by(FenceAttempt.id)
    )
    return [_attempt(r) for r in rows]


# --- kdump messages ---------------------------------------------------------------------------


def record_kdump(
    session: orm.Session, source_address: str, received_at: datetime.datetime, engine: str
) -> None:
    session.add(KdumpMessage(source_address=source_address, received_at=received_at, engine=engine))
    session.flush()


def kdump_after(
    session: orm.Session,
    source_addresses: Iterable[str],
    after: datetime.datetime,
    limit: int = 1000,
) -> list[datetime.datetime]:
    """When the kdump messages from ``source_addresses`` (a host's IP addresses) received
    after ``after`` arrived, oldest first (at most ``limit``: the listener stores at most
    two a second per source)."""
    addresses = list(source_addresses)
    if not addresses:
        return []
    return list(
        session.scalars(
            sa.select(KdumpMessage.received_at)
            .where(KdumpMessage.source_address.in_(addresses), KdumpMessage.received_at > after)
            .order_by(KdumpMessage.received_at)
            .limit(limit)
        )
    )


def created_at(session: orm.Session, notification_uuid: str) -> datetime.datetime | None:
    """When a notification reached masakari (the row's creation, masakari's clock)."""
    return session.scalar(
        sa.select(Notification.created_at).where(
            Notification.notification_uuid == notification_uuid
        )
    )


def delete_kdump_before(session: orm.Session, cutoff: datetime.datetime) -> int:
    return affected_rows(
        session.execute(sa.delete(KdumpMessage).where(KdumpMessage.received_at < cutoff))
    )


# --- driver checks (the readiness doctor) --------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Check:
    host_name: str
    position: int
    driver: str
    result: str
    message: str | None
    checked_at: datetime.datetime
    engine: str
    duration: float | None = None


def hosts_to_check(session: orm.Session) -> list[tuple[str, str, str]]:
    """Every live host: (name, segment uuid, segment name), by name."""
    rows = session.execute(
        sa.select(Host.name, Segment.uuid, Segment.name)
        .join(Segment, Segment.uuid == Host.failover_segment_id)
        .where(Host.deleted == 0, Segment.deleted == 0)
        .order_by(Host.name)
    )
    return [(r[0], r[1], r[2]) for r in rows]


def replace_checks(session: orm.Session, host_name: str, found: Iterable[Check]) -> None:
    """A host's check results, replacing its earlier ones (its list may have shrunk)."""
    session.execute(sa.delete(FenceCheck).where(FenceCheck.host_name == host_name))
    for check in found:
        session.add(
            FenceCheck(
                host_name=check.host_name,
                position=check.position,
                driver=check.driver[:255],
                result=check.result,
                message=_message(check.message),
                checked_at=check.checked_at,
                duration=check.duration,
                engine=check.engine,
            )
        )
    session.flush()


def forget_checks_except(session: orm.Session, host_names: Iterable[str]) -> int:
    """Drop the checks of hosts no longer in the database."""
    keep = list(host_names)
    stmt = sa.delete(FenceCheck)
    if keep:
        stmt = stmt.where(FenceCheck.host_name.not_in(keep))
    return affected_rows(session.execute(stmt))


def checks(session: orm.Session, host_names: Sequence[str] | None = None) -> list[Check]:
    """The recorded checks (of some hosts), by host then position."""
    stmt = sa.select(FenceCheck).order_by(FenceCheck.host_name, FenceCheck.position)
    if host_names is not None:
        if not host_names:
            return []
        stmt = stmt.where(FenceCheck.host_name.in_(list(host_names)))
    return [
        Check(
            host_name=r.host_name,
            position=r.position,
            driver=r.driver,
            result=r.result,
            message=r.message,
            checked_at=r.checked_at,
            engine=r.engine,
            duration=r.duration,
        )
        for r in session.scalars(stmt)
    ]
