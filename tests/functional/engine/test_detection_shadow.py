"""The detector in shadow mode ([detection] mode = shadow): every gate as in act mode, what it
would have reported recorded in masakari_detector_shadow_reports and counted, no
notification, nothing asked of Nova but its services. Polls driven one by one (SQLite, the
simulator on the detector's clock); an engine and the API: test_shadow_mode.py."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from masakari import conf as masakari_conf
from masakari import metrics
from masakari.db.database import Database
from masakari.db.models import DetectorShadowReport, Notification
from masakari.detection.detector import Detector
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.clock import FakeClock
from tests.support.detector import GivenLease

HOSTS = [f"compute-{i}" for i in range(1, 6)]
# The gates off unless a test turns one on; a poll every 10 s.
SHADOW = {
    "detection.enabled": True,
    "detection.mode": "shadow",
    "detection.grace_period": 1.0,
    "detection.breaker_percent": 100,
    "detection.cliff_percent": 0,
    "detection.max_reports_per_poll": 0,
}


class Polled:
    """A detector in shadow over one segment of HOSTS, polled by the test."""

    def __init__(self, db: Database, **overrides: Any) -> None:
        self.db = db
        self.segment, _ = rows.segment_with_hosts(db, *HOSTS)
        self.clock = FakeClock()
        self.sim = NovaSimulator(clock=self.clock, service_down_time=1.0)  # answers in process
        for host in HOSTS:
            self.sim.add_service(host)
        conf = masakari_conf.for_tests(**{**SHADOW, **overrides})
        self.lease = GivenLease(self.clock)
        self.detector = Detector(conf, db, self.sim.client(), self.lease, lambda: None, self.clock)  # type: ignore[arg-type]

    def poll(self, times: int = 1) -> None:
        for _ in range(times):
            self.detector.poll()
            self.clock.advance(10)

    def shadowed(self) -> list[tuple[str, str, str | None]]:
        with self.db.reader() as s:
            found = s.scalars(sa.select(DetectorShadowReport).order_by(DetectorShadowReport.id))
            return [(r.host_name, r.decision, r.gate) for r in found]

    def notifications(self) -> int:
        with self.db.reader() as s:
            return len(s.scalars(sa.select(Notification)).all())

    def asked_of_nova(self) -> set[tuple[str, str]]:
        return {(c["method"], c["path"].split("?")[0]) for c in self.sim.nova_calls()}

    def counted(self, decision: str, gate: str = "none") -> float:
        labels = {"segment": self.segment, "decision": decision, "gate": gate}
        found = metrics.OWN.get_sample_value("masakari_detection_shadow_reports_total", labels)
        return found or 0.0


def test_a_dead_host_is_recorded_once_per_failure_and_never_reported(db) -> None:
    cloud = Polled(db)
    cloud.poll()
    cloud.sim.stale("compute-2", 100)
    cloud.poll(3)
    assert cloud.shadowed() == [("compute-2", "report", None)]
    with db.reader() as s:
        row = s.scalars(sa.select(DetectorShadowReport)).one()
    assert (row.detector, row.engine, row.segment_uuid) == (
        "nova-services",
        "engine-a",
        cloud.segment,
    )
    assert row.detail.startswith("nova-compute down, heartbeat 1")
    assert cloud.counted("report") == 1
    # Back, then silent again: a failure of its own.
    cloud.sim.power_on("compute-2")
    cloud.poll()
    cloud.sim.power_off("compute-2")
    cloud.poll(3)
    assert cloud.shadowed() == [("compute-2", "report", None)] * 2
    assert cloud.counted("report") == 2
    assert cloud.notifications() == 0
    assert cloud.asked_of_nova() == {("GET", "/os-services")}


@pytest.mark.parametrize(("action", "decision"), [("hold", "hold"), ("skip", "defer")])
def test_the_breaker_still_applies_and_is_recorded_as_what_it_would_do(
    db, action, decision
) -> None:
    cloud = Polled(db, **{"detection.breaker_percent": 50, "detection.breaker_action": action})
    cloud.poll()
    for host in HOSTS[:3]:
        cloud.sim.stale(host, 100)
    cloud.poll(3)
    assert cloud.shadowed() == [(host, decision, "breaker") for host in HOSTS[:3]]
    assert cloud.counted(decision, "breaker") == 3
    assert cloud.counted("report") == 0
    assert cloud.notifications() == 0


def test_the_cap_moves_on_as_it_would_once_the_first_hosts_were_reported(db) -> None:
    cloud = Polled(db, **{"detection.max_reports_per_poll": 1})
    cloud.poll()
    for age, host in zip((300, 200, 100), HOSTS[:3], strict=True):
        cloud.sim.stale(host, age)  # the longest silent first
    cloud.poll()
    assert cloud.shadowed() == [
        ("compute-1", "report", None),
        ("compute-2", "defer", "cap"),
        ("compute-3", "defer", "cap"),
    ]
    cloud.poll(3)
    assert cloud.shadowed()[3:] == [("compute-2", "report", None), ("compute-3", "report", None)]
    assert cloud.notifications() == 0


def test_a_detector_whose_lease_was_taken_over_records_nothing(db) -> None:
    cloud = Polled(db)
    cloud.poll()
    cloud.sim.stale("compute-2", 100)
    cloud.lease.taken_over = True
    cloud.poll()
    assert cloud.shadowed() == []
    assert cloud.counted("report") == 0
