"""The detector's gauges never show an earlier poll's numbers as now's: after a database cut
(a blind poll) or once the engine is no longer the detector, they read nothing counted,
nothing gated, and the self-check's failure. Polls driven one by one (SQLite, the
simulator on the detector's clock)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from masakari import conf as masakari_conf
from masakari import metrics
from masakari.db.database import Database
from masakari.detection.detector import Detector
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.clock import FakeClock
from tests.support.detector import GivenLease

HOSTS = [f"compute-{i}" for i in range(10)]


class Cuttable:
    """The test's database, until the test cuts it: then every session fails as a cut
    connection does."""

    def __init__(self, db: Database) -> None:
        self.db, self.cut, self.cut_writes = db, False, False

    @contextlib.contextmanager
    def reader(self) -> Iterator[Any]:
        if self.cut:
            raise sa.exc.OperationalError("SELECT 1", {}, Exception("connection refused"))
        with self.db.reader() as session:
            yield session

    @contextlib.contextmanager
    def writer(self) -> Iterator[Any]:
        if self.cut or self.cut_writes:
            raise sa.exc.OperationalError("INSERT", {}, Exception("connection refused"))
        with self.db.writer() as session:
            yield session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def sample(name: str, **labels: str) -> float | None:
    return metrics.OWN.get_sample_value(name, labels)


def shown() -> dict[str, float | None]:
    return {
        "leader": sample("masakari_detection_leader"),
        "blind_database": sample("masakari_detection_blind", reason="database"),
        "up": sample("masakari_detection_hosts", state="up"),
        "down": sample("masakari_detection_hosts", state="down"),
        "cliff": sample("masakari_detection_gate_active", gate="cliff"),
        "deferred": sample("masakari_detection_deferred_hosts"),
    }


NOTHING = {"up": 0.0, "down": 0.0, "cliff": 0.0, "deferred": 0.0}


def test_a_database_cut_then_a_lost_lease_leave_no_earlier_numbers(db: Database) -> None:
    rows.segment_with_hosts(db, *HOSTS)
    clock = FakeClock()
    sim = NovaSimulator(clock=clock, service_down_time=1.0)  # not started: answers in process
    for host in HOSTS:
        sim.add_service(host)
    conf = masakari_conf.for_tests(
        **{
            "detection.enabled": True,
            "detection.grace_period": 1.0,
            "detection.breaker_percent": 100,
            "detection.cliff_percent": 20,
        }
    )
    lease = GivenLease(clock)
    database = Cuttable(db)
    detector = Detector(conf, database, sim.client(), lease, lambda: None, clock)  # type: ignore[arg-type]
    detector.poll()
    for host in HOSTS[:3]:
        sim.stale(host, 100)
    detector.poll()  # 3 of 10 heartbeats gone at once: the cliff waits, nothing reported
    assert shown() == {
        "leader": 1.0,
        "blind_database": 0.0,
        **{"up": 7.0, "down": 3.0, "cliff": 1.0, "deferred": 3.0},
    }

    database.cut = True
    detector.poll()
    assert shown() == {"leader": 1.0, "blind_database": 1.0, **NOTHING}

    # The lease then runs out, its renewal refused by the same cut.
    lease.held, lease.database_failed = None, True
    database.cut = False
    detector.poll()
    assert shown() == {"leader": 0.0, "blind_database": 1.0, **NOTHING}


def polls(result: str) -> float:
    return sample("masakari_detection_polls_total", result=result) or 0.0


def test_a_poll_whose_report_the_database_refuses_is_counted_once_as_blind(db: Database) -> None:
    rows.segment_with_hosts(db, *HOSTS)
    clock = FakeClock()
    sim = NovaSimulator(clock=clock, service_down_time=1.0)
    for host in HOSTS:
        sim.add_service(host)
    conf = masakari_conf.for_tests(
        **{"detection.enabled": True, "detection.grace_period": 1.0, "detection.cliff_percent": 100}
    )
    database = Cuttable(db)
    detector = Detector(conf, database, sim.client(), GivenLease(clock), lambda: None, clock)  # type: ignore[arg-type]
    detector.poll()
    sim.stale(HOSTS[0], 100)
    database.cut_writes = True  # the hosts are read; the report of compute-0 is refused
    ok, blind = polls("ok"), polls("blind")
    detector.poll()
    assert (polls("ok") - ok, polls("blind") - blind) == (0.0, 1.0)
    assert shown()["blind_database"] == 1.0
