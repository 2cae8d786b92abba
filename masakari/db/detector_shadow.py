"""What the failure detector in shadow mode would have done (``masakari_detector_shadow_reports``).

Written by the detector ([detection] mode = shadow) instead of a notification; read by the
detector itself (a host it would have reported is not judged again until it heartbeats, as
a reported one is not) and by ``masakari-manage detection shadow``. Rows older than the
purge's cut-off go with ``masakari-manage db purge``.
"""

from __future__ import annotations

import dataclasses
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import DetectorShadowReport

# What the detector would have done with a host found down.
REPORT = "report"
HOLD = "hold"
DEFER = "defer"
# A notification would exist for these: the host's failure is then known.
REPORTED = (REPORT, HOLD)

MAX_DETAIL = 2048


@dataclasses.dataclass(frozen=True)
class ShadowReport:
    detector: str
    engine: str
    host_name: str
    segment_uuid: str
    decision: str
    # The gate that held or deferred it (breaker, storm, cliff, cap); None for a report.
    gate: str | None
    detail: str
    observed_at: datetime.datetime


def add(session: orm.Session, report: ShadowReport) -> None:
    session.add(
        DetectorShadowReport(
            detector=report.detector,
            engine=report.engine[:255],
            host_name=report.host_name,
            segment_uuid=report.segment_uuid,
            decision=report.decision,
            gate=report.gate,
            detail=report.detail[:MAX_DETAIL],
            observed_at=report.observed_at,
        )
    )
    session.flush()


def latest(session: orm.Session, detector: str) -> dict[str, ShadowReport]:
    """Each host's newest shadow report of ``detector``."""
    newest = (
        sa.select(sa.func.max(DetectorShadowReport.id))
        .where(DetectorShadowReport.detector == detector)
        .group_by(DetectorShadowReport.host_name)
    )
    rows = session.scalars(
        sa.select(DetectorShadowReport).where(DetectorShadowReport.id.in_(newest))
    )
    return {row.host_name: _report(row) for row in rows}


def listed(
    session: orm.Session, since: datetime.datetime | None = None, limit: int = 100
) -> list[ShadowReport]:
    """The newest shadow reports (observed at or after ``since``), oldest first."""
    query = sa.select(DetectorShadowReport).order_by(DetectorShadowReport.id.desc()).limit(limit)
    if since is not None:
        query = query.where(DetectorShadowReport.observed_at >= since)
    return [_report(row) for row in reversed(list(session.scalars(query)))]


def delete_before(session: orm.Session, cutoff: datetime.datetime) -> None:
    session.execute(
        sa.delete(DetectorShadowReport).where(DetectorShadowReport.observed_at < cutoff)
    )


def _report(row: DetectorShadowReport) -> ShadowReport:
    return ShadowReport(
        row.detector,
        row.engine,
        row.host_name,
        row.segment_uuid,
        row.decision,
        row.gate,
        row.detail,
        row.observed_at,
    )
