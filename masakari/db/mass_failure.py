"""The mass-failure guard: is a new host failure report one host too many?

Counted in the database, inside the transaction that records the report, under guard rows
of the segment (and of the whole cloud for the global thresholds): two API processes that
accept reports of two hosts of one segment at once take turns, so the second one counts the
first one's report and the threshold cannot be passed twice unnoticed.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db import guards, holds
from masakari.db.models import Host, Notification

# The guard row of "every segment": a key no host or segment uuid takes.
GLOBAL_GUARD = "masakari-mass-failure-global"


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """[guards] options; a zero disables its check."""

    segment_max: int = 0
    segment_max_percent: int = 0
    global_max: int = 0
    global_max_percent: int = 0
    window: int = 300

    @classmethod
    def from_conf(cls, conf: Any) -> Thresholds:
        group = conf.guards
        return cls(
            segment_max=group.segment_max_failed_hosts,
            segment_max_percent=group.segment_max_failed_hosts_percent,
            global_max=group.global_max_failed_hosts,
            global_max_percent=group.global_max_failed_hosts_percent,
            window=group.failed_hosts_window,
        )

    @property
    def per_segment(self) -> bool:
        return bool(self.segment_max or self.segment_max_percent)

    @property
    def global_(self) -> bool:
        return bool(self.global_max or self.global_max_percent)


def is_failure_report(type_: str, payload: Any) -> bool:
    """A COMPUTE_HOST report that asks for a host recovery (event STOPPED)."""
    if type_ != "COMPUTE_HOST" or not isinstance(payload, dict):
        return False
    return str(payload.get("event", "")).upper() == "STOPPED"


def take_guards(session: orm.Session, thresholds: Thresholds, segment_uuid: str) -> None:
    """Hold the segment's (and the global) guard rows for the rest of the transaction.

    Taken right after the host's guard and before any plain read: on InnoDB the first plain
    read fixes the snapshot, which must include every report committed by the guard's
    previous holder. Always host, then segment, then global: no two intakes wait in a circle.
    """
    if thresholds.per_segment:
        guards.hold(session, segment_uuid)
    if thresholds.global_:
        guards.hold(session, GLOBAL_GUARD)


def _failed_hosts(session: orm.Session, since: datetime.datetime, segment: str | None) -> set[str]:
    stmt = sa.select(Notification.source_host_uuid, Notification.payload).where(
        Notification.deleted == 0,
        Notification.type == "COMPUTE_HOST",
        Notification.generated_time >= since,
    )
    if segment is not None:
        stmt = stmt.where(Notification.failover_segment_uuid == segment)
    found = set()
    for row in session.execute(stmt):
        try:
            payload = json.loads(row.payload) if row.payload else None
        except ValueError:
            continue
        if is_failure_report("COMPUTE_HOST", payload):
            found.add(row.source_host_uuid)
    return found


def _host_count(session: orm.Session, segment: str | None) -> int:
    stmt = sa.select(sa.func.count()).select_from(Host).where(Host.deleted == 0)
    if segment is not None:
        stmt = stmt.where(Host.failover_segment_id == segment)
    return session.scalar(stmt) or 0


def _past(failed: int, total: int, maximum: int, percent: int) -> bool:
    if maximum and failed > maximum:
        return True
    return bool(percent) and failed * 100 > percent * total


def hold_reason(
    session: orm.Session,
    thresholds: Thresholds,
    host_uuid: str,
    segment_uuid: str,
    generated_time: datetime.datetime,
) -> str | None:
    """Why a failure report of this host must be held, or None. Call take_guards first.

    The hosts counted are those with a failure report generated within the window before
    this one (any status: a recovered host still failed), this host included.
    """
    since = generated_time - datetime.timedelta(seconds=thresholds.window)
    if thresholds.per_segment:
        failed = _failed_hosts(session, since, segment_uuid) | {host_uuid}
        total = _host_count(session, segment_uuid)
        if _past(len(failed), total, thresholds.segment_max, thresholds.segment_max_percent):
            return holds.REASON_SEGMENT
    if thresholds.global_:
        failed = _failed_hosts(session, since, None) | {host_uuid}
        total = _host_count(session, None)
        if _past(len(failed), total, thresholds.global_max, thresholds.global_max_percent):
            return holds.REASON_GLOBAL
    return None
