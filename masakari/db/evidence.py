"""The evidence of host failures (``masakari_failure_evidence``): what each was judged on.

Rows are written by the intake (the report itself, and a report of the same failure from
another source that arrived as a duplicate), by the detector (Nova's view of the host when
it reported it), and by the engine's verdict (Nova's view when it judged, host fencing, the
verdict, and what a shadow rule would have decided). They are only ever added, and go with
their notification when it is purged.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import FailureEvidence

# The kinds of evidence.
REPORT = "report"
NOVA = "nova"
# What of host fencing's word a verdict used (a proof, a BMC reading on); host fencing's
# own attempts are in masakari_fence_attempts.
FENCE = "fence"
VERDICT = "verdict"
# What [verdict] shadow_rule would have decided (masakari.engine.verdict_shadow): no effect.
SHADOW = "shadow"
# The source of a monitor's report (a detector's names the detector).
MONITOR = "monitor"

# Texts are ours or Nova's; a page of HTML from a balancer is cut.
MAX_DETAIL = 2048


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One signal: ``failed`` says the host failed (True), is alive (False), or cannot tell
    (None); for a verdict, whether the rule confirmed the failure."""

    kind: str
    source: str
    failed: bool | None
    detail: str
    observed_at: datetime.datetime
    # Machine-readable: a report's host_status, nova-compute's state, a power state.
    value: str | None = None


def add(session: orm.Session, notification_uuid: str, items: Iterable[Evidence]) -> None:
    for item in items:
        session.add(
            FailureEvidence(
                notification_uuid=notification_uuid,
                kind=item.kind,
                source=item.source[:255],
                failed=item.failed,
                value=None if item.value is None else item.value[:64],
                detail=item.detail[:MAX_DETAIL],
                observed_at=item.observed_at,
            )
        )
    session.flush()


def reports(session: orm.Session, notification_uuid: str) -> int:
    """How many reports of the failure the notification has (its own and duplicates').

    A locking read: under MariaDB's repeatable read it sees what committed since the
    transaction's first read (a report kept while the notification's lock,
    :func:`masakari.db.notifications.lock`, made us wait).
    """
    ids = session.scalars(
        sa.select(FailureEvidence.id)
        .where(
            FailureEvidence.notification_uuid == notification_uuid,
            FailureEvidence.kind == REPORT,
        )
        .with_for_update(read=True)
    )
    return len(ids.all())


def of(session: orm.Session, notification_uuid: str) -> list[Evidence]:
    """The notification's evidence, in the order it was gathered."""
    rows = session.scalars(
        sa.select(FailureEvidence)
        .where(FailureEvidence.notification_uuid == notification_uuid)
        .order_by(FailureEvidence.id)
    )
    return [Evidence(r.kind, r.source, r.failed, r.detail, r.observed_at, r.value) for r in rows]
