"""Notifications: intake with the maintenance and duplicate rules, list and show."""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oslo_db import exception as db_exc
from oslo_utils import timeutils, uuidutils
from sqlalchemy import orm

from masakari import exception, metrics
from masakari.db import evidence as evidence_db
from masakari.db import failures, fencing, guards, holds, mass_failure, progress
from masakari.db import hosts as hosts_db
from masakari.db import notifications as notifications_db
from masakari.db import quarantines as quarantines_db
from masakari.db.database import Database, RetryPolicy, transaction
from masakari.db.models import Notification
from masakari.db.paging import Row
from masakari.ha import failed_task, intake
from masakari.ha.intake import Report, Rules

LOG = logging.getLogger(__name__)
MAINTENANCE_MESSAGE = (
    "Notification received from host %(host)s of type '%(type)s' is ignored as the host is "
    "already under maintenance."
)
DUPLICATE_MESSAGE = "Notification received from host %(host)s of type %(type)s is duplicate."

# A lost race is replayed from the start, with a jittered, doubling pause: the replay sees
# the winner's row and ends in a 409 (or wins, when the winner was not a duplicate). Ten
# replays cover a few seconds of contention; past that the report is refused, not failed.
RACE_RETRIES = 10
RACE_RETRY_INTERVAL = 0.02
RACE_RETRY_MAX_INTERVAL = 1.0


class NotificationNotHeld(exception.Conflict):
    msg_fmt = "Notification %(id)s is not held."


class DuplicateJudgedAgain(exception.DuplicateNotification):
    """A duplicate whose evidence ended the verdict hold of the notification it duplicates:
    an engine judges that one again (``notification_uuid``)."""

    def __init__(self, notification_uuid: str, message: str) -> None:
        super().__init__(message=message)
        self.notification_uuid = notification_uuid


class NotificationRaceLost(exception.Conflict):
    msg_fmt = (
        "Notification received from host %(host)s of type %(type)s conflicted with concurrent "
        "notifications of the host; send it again."
    )


def _race_lost(exc: BaseException) -> bool:
    """A deadlock (a Galera certification failure among them), or two first uses of a host's
    guard, in parallel, inserting the same key.

    Only servers race here: SQLite writers take turns, and one that waited out SQLite's busy
    timeout is an outage to report, not a lost race to answer 409. Servers' unique
    violations come translated by oslo.db: a plain IntegrityError is another fault.
    """
    return isinstance(exc, (db_exc.DBDeadlock, db_exc.DBDuplicateEntry))


INTAKE_RACES = RetryPolicy(
    attempts=RACE_RETRIES + 1,
    first_pause=RACE_RETRY_INTERVAL,
    max_pause=RACE_RETRY_MAX_INTERVAL,
    lost=_race_lost,
)


def to_utc(value: str) -> datetime.datetime:
    """An ISO 8601 time as naive UTC; a time without zone is taken as UTC (microseconds kept).

    ValueError when it is not one, or falls outside what datetime holds once in UTC.
    """
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    except OverflowError as exc:
        raise ValueError(str(exc)) from exc


def create(db: Database, data: Mapping[str, Any], rules: Rules = Rules()) -> Notification:
    """Record a notification in status new, or refuse it: :func:`record` without the hold."""
    return record(db, data, rules)[0]


# Called first in the transaction that records a report; raises to refuse it (the detector's
# lease, masakari.detection: a detector that lost it records nothing).
Fence = Callable[[orm.Session], None]


@dataclasses.dataclass(frozen=True)
class _Duplicate:
    """A duplicate whose evidence was kept with the notification it duplicates; ``judged_again``:
    it ended that one's verdict hold."""

    notification_uuid: str
    judged_again: bool = False


def record(
    db: Database,
    data: Mapping[str, Any],
    rules: Rules = Rules(),
    *,
    fence: Fence | None = None,
    hold: str | None = None,
    evidence: Sequence[evidence_db.Evidence] = (),
) -> tuple[Notification, str | None]:
    """Record a notification in status new, or refuse it; with why it is held, if it is.

    400 when the host is unknown, 409 when it is on maintenance, 409 when a notification of
    the same type and host with an equal payload (any status) was generated no earlier than
    ``rules.duplicate_window`` seconds before this one; a failure report of the failure
    detector and any other failure report of the host are equal (``Rules.same_report``).
    A duplicate kept as evidence (below) ends the verdict hold of the notification it
    duplicates, which is judged again: :class:`DuplicateJudgedAgain`, a 409 too.
    N identical concurrent requests, through any number of API processes and database
    nodes, give exactly one 202.

    ``hold``: a reason to hold the report for when no guard holds it (the detector's
    breaker). ``evidence``: more signals to keep with the report (the detector's view of
    Nova). With ``rules.evidence`` the report itself is kept as evidence, also when it is a
    duplicate of another source's report of the same failure: then with the notification
    it duplicates, before the 409.
    """
    generated_time = to_utc(data["generated_time"])

    def attempt(session: orm.Session) -> tuple[Notification, str | None] | _Duplicate:
        if fence is not None:
            fence(session)
        return _record(session, data, generated_time, rules, hold, evidence)

    try:
        outcome = transaction(db, attempt, policy=INTAKE_RACES)
    except (db_exc.DBDeadlock, db_exc.DBDuplicateEntry) as exc:
        raise NotificationRaceLost(host=data["hostname"], type=data["type"]) from exc
    if isinstance(outcome, _Duplicate):
        LOG.info(
            "Notification from host %s of type %s is the failure of notification %s: kept as "
            "its evidence.",
            data["hostname"],
            data["type"],
            outcome.notification_uuid,
        )
        message = DUPLICATE_MESSAGE % {"host": data["hostname"], "type": data["type"]}
        if outcome.judged_again:
            LOG.warning(
                "Notification %s: its verdict hold ended by the report of host %s, judged again.",
                outcome.notification_uuid,
                data["hostname"],
            )
            raise DuplicateJudgedAgain(outcome.notification_uuid, message)
        raise exception.DuplicateNotification(message=message)
    row, reason = outcome
    if reason is not None:
        # The one place an intake hold is decided: counted here, after the commit.
        metrics.notification_held(holds.metric_reason(reason))
        LOG.warning(
            "Notification %s from host %s is held (%s): release or cancel it.",
            row.notification_uuid,
            data["hostname"],
            reason,
        )
    return row, reason


def _record(
    session: orm.Session,
    data: Mapping[str, Any],
    generated_time: datetime.datetime,
    rules: Rules,
    hold: str | None = None,
    evidence: Sequence[evidence_db.Evidence] = (),
) -> tuple[Notification, str | None] | _Duplicate:
    """One attempt: the checks and the insert in one transaction that holds the host's guard.

    The row lock on the host serialises requests on one server only (a Galera node does
    not share it); the guard is a write, so two attempts on one host conflict on every
    backend: the second waits for the first (PostgreSQL, InnoDB) or fails with a deadlock
    at commit (Galera) and is replayed. The guards are written before the duplicate lookup:
    that read then sees every notification committed before the guard was ours (InnoDB
    takes its snapshot at the first plain read, PostgreSQL at each statement).
    """
    report = Report.of(data["type"], data["payload"])
    host = hosts_db.get_by_name_for_update(session, data["hostname"])
    for key in rules.guard_keys(report, host.uuid, host.failover_segment_id):
        guards.hold(session, key)
    if rules.refused_on_maintenance(report, _maintained(session, report, host)):
        raise exception.HostOnMaintenance(
            message=MAINTENANCE_MESSAGE % {"host": data["hostname"], "type": data["type"]}
        )
    since = rules.duplicates_since(generated_time)
    same = rules.same_report(report, data["payload"])
    duplicate = notifications_db.find_duplicate(session, data["type"], host.uuid, since, same)
    if duplicate is not None:
        notification_uuid, stored = duplicate
        other = Report.of(data["type"], stored)
        if rules.evidence and report.is_failure and other.source != report.source:
            kept = [_report_evidence(report, generated_time), *evidence]
            notifications_db.lock(session, notification_uuid)
            evidence_db.add(session, notification_uuid, kept)
            # With the evidence it was waiting for, in the same transaction: a verdict that
            # held the failure judges it again (an engine may hold it again).
            return _Duplicate(notification_uuid, holds.judge_again(session, notification_uuid))
        raise exception.DuplicateNotification(
            message=DUPLICATE_MESSAGE % {"host": data["hostname"], "type": data["type"]}
        )
    row = notifications_db.create(
        session,
        type_=data["type"],
        generated_time=generated_time,
        source_host_uuid=host.uuid,
        failover_segment_uuid=host.failover_segment_id,
        payload=data["payload"],
    )
    if rules.evidence and report.is_failure:
        evidence_db.add(
            session, row.notification_uuid, [_report_evidence(report, generated_time), *evidence]
        )
    if rules.supersedes_unknown(report):
        _supersede_unknown(session, host.uuid, row.notification_uuid)

    def count_failures(since: datetime.datetime, segment: str | None) -> tuple[set[str], int]:
        reports = mass_failure.compute_host_reports(session, since, segment)
        return intake.failed_hosts(reports), mass_failure.host_count(session, segment)

    reason = rules.hold_reason(
        report, host.uuid, host.failover_segment_id, generated_time, count_failures
    )
    if reason is None and hold is not None and report.is_failure:
        reason = hold
    if reason is not None:
        holds.hold(session, row.notification_uuid, reason)
    return row, reason


def _report_evidence(report: Report, generated_time: datetime.datetime) -> evidence_db.Evidence:
    return evidence_db.Evidence(
        kind=evidence_db.REPORT,
        source=report.source,
        failed=True,
        detail=f"{report.type} {report.event}, host_status {report.host_status or '(none)'}",
        observed_at=generated_time,
        value=report.host_status or None,
    )


def _supersede_unknown(session: Any, host_uuid: str, notification_uuid: str) -> None:
    """A report that the host's state is known (NORMAL) ends its held UNKNOWN reports.

    The new report does what they waited to do (recover the host, when STOPPED), or says
    there is nothing to do (STARTED): running them too would recover the host twice.
    """
    for held in holds.held_of_host(session, host_uuid, holds.REASON_UNKNOWN):
        holds.cancel(session, held, holds.SUPERSEDED_MESSAGE % notification_uuid)


def _maintained(session: orm.Session, report: Report, host: Any) -> bool:
    """On maintenance for this report. A host a quarantine took out of service is on
    maintenance, but its failure is still one to recover: the instances the quarantine has
    not moved yet are evacuated (docs/operations.md, Quarantine)."""
    if not host.on_maintenance:
        return False
    return not (report.is_failure and quarantines_db.started_of_host(session, host.uuid))


def refused_unseen(db: Database, data: Mapping[str, Any], rules: Rules) -> bool:
    """Whether the report will be refused before the reference would notify about it: its
    host unknown or on maintenance, or a duplicate (read without a lock or guard; ``record``
    decides)."""
    with db.reader() as session:
        try:
            host = hosts_db.get_by_name(session, data["hostname"])
        except exception.HostNotFoundByName:
            return True
        report = Report.of(data["type"], data["payload"])
        if rules.refused_on_maintenance(report, _maintained(session, report, host)):
            return True
        since = rules.duplicates_since(to_utc(data["generated_time"]))
        same = rules.same_report(report, data["payload"])
        duplicate = notifications_db.find_duplicate(session, data["type"], host.uuid, since, same)
        return duplicate is not None


def source_host_uuid(db: Database, data: Mapping[str, Any]) -> str | None:
    """The uuid of the host a report names (None: no such host), read without a lock."""
    with db.reader() as session:
        try:
            return hosts_db.get_by_name(session, data["hostname"]).uuid
        except exception.HostNotFoundByName:
            return None


def list_(
    db: Database,
    filters: Mapping[str, Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
    show_held: bool = False,
) -> list[Row]:
    with db.reader() as session:
        return notifications_db.list_(
            session, filters, sort_keys, sort_dirs, limit, marker, show_held
        )


@dataclasses.dataclass(frozen=True)
class Extras:
    """What microversion 1.4 adds to notifications: uuid -> why held, why it last failed."""

    hold_reasons: dict[str, str]
    failure_reasons: dict[str, str]


def extras(db: Database, notification_uuids: list[str]) -> Extras:
    with db.reader() as session:
        return Extras(
            holds.reasons(session, notification_uuids),
            failures.reasons(session, notification_uuids),
        )


def release(db: Database, notification_uuid: str) -> Notification:
    """Let the engine take a held notification: 404 unknown, 409 when it is not held."""
    return _end_hold(db, notification_uuid, holds.release)


def cancel(db: Database, notification_uuid: str) -> Notification:
    """End a held notification as ignored, nothing recovered: 404 unknown, 409 not held."""
    return _end_hold(db, notification_uuid, holds.cancel)


def _end_hold(db: Database, notification_uuid: str, action: Any) -> Notification:
    if not uuidutils.is_uuid_like(notification_uuid):
        raise exception.NotificationNotFound(id=notification_uuid)
    with db.writer() as session:
        notifications_db.get(session, notification_uuid)
        if not action(session, notification_uuid):
            raise NotificationNotHeld(id=notification_uuid)
        session.expire_all()
        row = notifications_db.get(session, notification_uuid)
    LOG.info("Notification %s: hold ended by %s.", notification_uuid, action.__name__)
    return row


def get(db: Database, notification_uuid: str) -> Row:
    if not uuidutils.is_uuid_like(notification_uuid):
        raise exception.NotificationNotFound(id=notification_uuid)
    with db.reader() as session:
        return notifications_db.read(session, notification_uuid)


def fence_attempts(db: Database, notification_uuid: str) -> list[fencing.Attempt]:
    """The host fencing attempts of a notification, oldest first (API 1.6)."""
    with db.reader() as session:
        return fencing.attempts(session, notification_uuid)


def get_with_details(
    db: Database, notification_uuid: str, failure_message: bool = False
) -> tuple[Row, list[dict[str, Any]]]:
    """The notification and its recovery_workflow_details, read from the progress table;
    ``failure_message`` (1.4) ends a failed recovery's last task with the failure reason.

    The reference asks the engine, which fails (500) once the source host is deleted; the
    details do not depend on the host here.
    """
    if not uuidutils.is_uuid_like(notification_uuid):
        raise exception.NotificationNotFound(id=notification_uuid)
    with db.reader() as session:
        row = notifications_db.read(session, notification_uuid)
        details = progress.workflow_details(session, notification_uuid)
        if failure_message and failed_task.failed(row.status):
            details = failed_task.with_reason(details, failures.get(session, notification_uuid))
        return row, details


def evidence(db: Database, notification_uuid: str) -> list[evidence_db.Evidence]:
    """What a host failure was judged on (API 1.7, notification show)."""
    with db.reader() as session:
        return evidence_db.of(session, notification_uuid)
