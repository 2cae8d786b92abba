"""The detector's shadow mode ([detection] mode = shadow): every poll and gate as in ``act``,
but what it would have reported is recorded, not reported.

Each host a poll found down and would have reported, held (breaker, storm) or deferred
(cliff, cap, or the breaker's ``skip``) is a row of ``masakari_detector_shadow_reports``
(:mod:`masakari.db.detector_shadow`), counted in
``masakari_detection_shadow_reports{segment,decision,gate}`` and logged once. Nothing
reaches the intake: no notification, so nothing is recovered or disabled in Nova.

A host the shadow would have reported (or held) counts as known until it heartbeats again,
as a notification would make it: the gates then see the same polls as a detector that
acts (the cap moves on to the next hosts, a reported host is not reported every poll). A
row is written when a failure's decision changes, not at every poll, in a transaction fenced
by the detector's lease as a report is.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable

from sqlalchemy import orm

from masakari.db import detector_shadow as shadow_db
from masakari.db import watch
from masakari.db.database import Database
from masakari.detection import gates as gates_mod
from masakari.detection.gates import Outcome, Seen
from masakari.metrics import detection as detection_metrics

LOG = logging.getLogger(__name__)


def decisions(outcome: Outcome) -> list[tuple[Seen, str, str | None]]:
    """What the poll would have done with each host it found down: the decision, and the gate
    that held or deferred it."""
    made: list[tuple[Seen, str, str | None]] = [(h, shadow_db.REPORT, None) for h in outcome.report]
    held = gates_mod.BREAKER if gates_mod.BREAKER in outcome.active else gates_mod.STORM
    made += [(h, shadow_db.HOLD, held) for h in outcome.hold]
    deferred = next(
        (g for g in (gates_mod.CLIFF, gates_mod.BREAKER, gates_mod.STORM) if g in outcome.active),
        gates_mod.CAP,
    )
    made += [(h, shadow_db.DEFER, deferred) for h in outcome.deferred]
    return made


class Shadow:
    """The shadow of one detector: what it recorded of each host's current failure."""

    def __init__(
        self, db: Database, detector: str, engine: str, describe: Callable[[Seen], str]
    ) -> None:
        self.db = db
        self.detector = detector
        self.engine = engine
        self.describe = describe
        self._latest: dict[str, shadow_db.ShadowReport] = {}
        # Host -> (decision, gate) already recorded of the failure it is in now.
        self._recorded: dict[str, tuple[str, str | None]] = {}

    def read(self, session: orm.Session) -> None:
        """The newest shadow report of each host, in the poll's read of the database."""
        self._latest = shadow_db.latest(session, self.detector)
        self._recorded = {}

    def known(self, host: str, heartbeat: datetime.datetime | None) -> bool:
        """Whether the shadow would have reported the failure the host is in already."""
        last = self._latest.get(host)
        if last is None or not watch.same_failure(last.observed_at, heartbeat):
            return False
        self._recorded[host] = (last.decision, last.gate)
        return last.decision in shadow_db.REPORTED

    def record(
        self, outcome: Outcome, now: datetime.datetime, fence: Callable[[orm.Session], None]
    ) -> None:
        """Record the poll's decisions that are new for their failure, in a transaction
        ``fence`` holds the detector's lease in (as a report's: a detector that lost it
        records nothing)."""
        new = [made for made in decisions(outcome) if self._recorded.get(made[0].name) != made[1:]]
        if not new:
            return
        with self.db.writer() as session:
            fence(session)
            for host, decision, gate in new:
                shadow_db.add(
                    session,
                    shadow_db.ShadowReport(
                        self.detector,
                        self.engine,
                        host.name,
                        host.segment_uuid,
                        decision,
                        gate,
                        self.describe(host),
                        now,
                    ),
                )
        for host, decision, gate in new:
            self._recorded[host.name] = (decision, gate)
            detection_metrics.shadow_reported(host.segment_uuid, decision, gate)
            LOG.warning(
                "Failure detector (shadow): host %s looks down (%s): would %s%s",
                host.name,
                self.describe(host),
                decision,
                "" if gate is None else f" ({gate})",
            )
