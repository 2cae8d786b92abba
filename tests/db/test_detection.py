"""The detector's lease and reports in the database, on every backend: one engine detects at a
time, a takeover fences the former holder's reports, and one failure is one notification
whoever reports it (the intake's rules for the detector's reports)."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari import exception
from masakari.db import detector_lease, evidence, holds, migration, queue, watch
from masakari.db import notifications as notifications_db
from masakari.db.database import Database
from masakari.db.models import DetectorLease as DetectorLeaseRow
from masakari.db.models import FailureEvidence, Notification
from masakari.detection.lease import DetectorLease
from masakari.engine.lease import LeaseLost
from masakari.ha import hosts, notifications, segments
from masakari.ha.intake import Rules
from tests.support.clock import FakeClock

NOW = datetime.datetime(2026, 6, 1, 10, 0, 0)
SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database.from_url(db_url)
    migration.upgrade(database.engine)
    segment = segments.create(
        database, {"name": "s", "recovery_method": "auto", "service_type": "compute"}
    ).uuid
    for name in ("compute-1", "compute-2"):
        hosts.create(
            database,
            lambda _: None,
            segment,
            {"name": name, "type": "COMPUTE", "control_attributes": "ssh"},
        )
    yield database
    database.dispose()


class Leader:
    def __init__(self, leads: bool = True) -> None:
        self.leads = leads

    def runs_periodic_tasks(self) -> bool:
        return self.leads


def conf() -> cfg.ConfigOpts:
    return masakari_conf.for_tests(
        engine_claim_timeout=20, engine_claim_renew_interval=5, engine_claim_margin=5
    )


def detector_report(host: str, engine: str = "a") -> dict[str, Any]:
    return {
        "type": "COMPUTE_HOST",
        "hostname": host,
        "generated_time": NOW.isoformat(),
        "payload": {
            "event": "STOPPED",
            "host_status": "UNKNOWN",
            "cluster_status": "OFFLINE",
            "detector": "nova-services",
            "detector_engine": engine,
        },
    }


def monitor_report(host: str, status: str = "NORMAL") -> dict[str, Any]:
    return {
        "type": "COMPUTE_HOST",
        "hostname": host,
        "generated_time": NOW.isoformat(),
        "payload": {"event": "STOPPED", "host_status": status, "cluster_status": "OFFLINE"},
    }


def count(db: Database) -> int:
    with db.reader() as s:
        return s.query(Notification).count()


def test_one_engine_holds_the_lease_and_another_takes_it_once_it_expired(db) -> None:
    clock = FakeClock(start=NOW)
    a = DetectorLease(conf(), db, clock, "engine-a", Leader())
    b = DetectorLease(conf(), db, clock, "engine-b", Leader())
    a.tick()
    b.tick()
    assert a.current() is not None and b.current() is None
    clock.offset = 10
    a.tick()  # renewed at 10: expires at 30 in the database, 25 for engine a
    clock.offset = 26
    assert a.current() is None, "a's own deadline ends a margin before the expiry"
    b.tick()
    assert b.current() is None, "not taken before the database expiry"
    clock.offset = 31
    b.tick()
    lease = b.current()
    assert lease is not None and lease.token == 2
    with db.reader() as s:
        assert detector_lease.holder(s, "nova-services").owner == "engine-b"


def test_a_report_under_a_lease_taken_over_creates_nothing(db) -> None:
    clock = FakeClock(start=NOW)
    a = DetectorLease(conf(), db, clock, "engine-a", Leader())
    a.tick()
    assert a.current() is not None
    # The database gives the lease to engine b (a froze past its expiry)...
    with db.writer() as s:
        assert (
            detector_lease.take(
                s,
                "nova-services",
                "engine-b",
                NOW + datetime.timedelta(seconds=60),
                NOW + datetime.timedelta(seconds=80),
            )
            == 2
        )
    # ...while a's local deadline still runs (its clock did not move): the database refuses.
    with pytest.raises(LeaseLost):
        notifications.record(db, detector_report("compute-1"), Rules(), fence=a.fence)
    assert count(db) == 0
    assert a.current() is None


def test_an_engine_that_stops_leading_gives_the_lease_up_at_once(db) -> None:
    clock = FakeClock(start=NOW)
    leader = Leader()
    a = DetectorLease(conf(), db, clock, "engine-a", leader)
    b = DetectorLease(conf(), db, clock, "engine-b", Leader())
    a.tick()
    leader.leads = False
    a.tick()
    assert a.current() is None
    b.tick()
    assert b.current() is not None


@SQLITE_ONLY
def test_the_storm_cooldown_stays_with_the_lease(db) -> None:
    clock = FakeClock(start=NOW)
    a = DetectorLease(conf(), db, clock, "engine-a", Leader())
    a.tick()
    a.keep_storm(NOW + datetime.timedelta(seconds=600))
    a.release()
    b = DetectorLease(conf(), db, clock, "engine-b", Leader())
    b.tick()
    assert b.storm_until == NOW + datetime.timedelta(seconds=600)


def test_concurrent_first_takes_give_one_holder(db, backend) -> None:
    clock = FakeClock(start=NOW)
    leases = [DetectorLease(conf(), db, clock, f"engine-{i}", Leader()) for i in range(6)]
    barrier = threading.Barrier(len(leases))

    def take(lease: DetectorLease) -> None:
        barrier.wait()
        lease.tick()

    threads = [threading.Thread(target=take, args=(lease,)) for lease in leases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for lease in leases if lease.current() is not None) == 1


@SQLITE_ONLY
def test_a_detector_report_and_a_monitor_report_of_one_host_are_one_failure(db) -> None:
    rules = Rules(evidence=True)
    row, reason = notifications.record(db, detector_report("compute-1"), rules)
    assert reason is None
    with pytest.raises(exception.DuplicateNotification):
        notifications.record(db, monitor_report("compute-1"), rules)
    # Another detector's report too (another engine), whatever its payload says.
    with pytest.raises(exception.DuplicateNotification):
        notifications.record(db, detector_report("compute-1", engine="b"), rules)
    assert count(db) == 1
    with db.reader() as s:
        kept = [(e.kind, e.source, e.value) for e in evidence.of(s, row.notification_uuid)]
    assert kept == [
        ("report", "detector nova-services", "UNKNOWN"),
        ("report", "monitor", "NORMAL"),
    ]
    # And the other way round: the monitor first, the detector's report refused.
    first, _ = notifications.record(db, monitor_report("compute-2"), rules)
    with pytest.raises(exception.DuplicateNotification):
        notifications.record(db, detector_report("compute-2"), rules)
    with db.reader() as s:
        assert [e.source for e in evidence.of(s, first.notification_uuid)] == [
            "monitor",
            "detector nova-services",
        ]


@SQLITE_ONLY
def test_without_a_detector_the_reference_duplicate_rule_is_unchanged(db) -> None:
    rules = Rules()
    notifications.record(db, monitor_report("compute-1", "NORMAL"), rules)
    # A different payload of the same host and window is not a duplicate (the reference's).
    notifications.record(db, monitor_report("compute-1", "UNKNOWN"), rules)
    assert count(db) == 2
    with db.reader() as s:
        assert s.query(FailureEvidence).count() == 0


@SQLITE_ONLY
def test_a_detector_report_is_judged_not_held_as_unknown_and_carries_the_breakers_hold(
    db,
) -> None:
    rules = Rules(hold_unknown=True)
    _, reason = notifications.record(db, detector_report("compute-1"), rules)
    assert reason is None
    _, reason = notifications.record(
        db, detector_report("compute-2"), rules, hold=holds.REASON_BREAKER
    )
    assert reason == holds.REASON_BREAKER


@SQLITE_ONLY
def test_a_refused_fence_leaves_nothing_behind(db) -> None:
    def refuse(session: Any) -> None:
        raise LeaseLost()

    with pytest.raises(LeaseLost):
        notifications.record(db, detector_report("compute-1"), Rules(evidence=True), fence=refuse)
    assert count(db) == 0


def test_the_lease_row_is_changed_by_every_fenced_report(db) -> None:
    clock = FakeClock(start=NOW)
    a = DetectorLease(conf(), db, clock, "engine-a", Leader())
    a.tick()
    notifications.record(db, detector_report("compute-1"), Rules(), fence=a.fence)
    notifications.record(db, detector_report("compute-2"), Rules(), fence=a.fence)
    with db.reader() as s:
        row = s.get(DetectorLeaseRow, "nova-services")
        assert row.fence == 2
    assert count(db) == 2


def test_a_report_after_a_verdict_hold_ends_it_for_the_engine_to_judge_again(db) -> None:
    rules = Rules(evidence=True)
    verdict_hold = holds.VERDICT_PREFIX + "monitor: no monitor's report of the failure"
    held, _ = notifications.record(db, detector_report("compute-1"), rules, hold=verdict_hold)
    fenced, _ = notifications.record(
        db, detector_report("compute-2"), rules, hold=holds.REASON_UNFENCED
    )
    with db.reader() as s:
        mark = queue.max_id(s)
    with pytest.raises(notifications.DuplicateJudgedAgain) as ended:
        notifications.record(db, monitor_report("compute-1"), rules)
    assert ended.value.notification_uuid == held.notification_uuid
    with pytest.raises(exception.DuplicateNotification) as refused:
        notifications.record(db, monitor_report("compute-2"), rules)
    assert not isinstance(refused.value, notifications.DuplicateJudgedAgain)
    ids = [held.notification_uuid, fenced.notification_uuid]
    with db.reader() as s:
        assert holds.reasons(s, ids) == {fenced.notification_uuid: holds.REASON_UNFENCED}
        # Found by the engine's sweep below its marks, and not an operator's release.
        waiting = queue.new_after(s, mark, 10)
        assert [c.notification_uuid for c in waiting] == [held.notification_uuid]
        assert holds.released_hold(s, held.notification_uuid) is None


def test_the_watched_hosts_say_when_their_last_failure_report_was_generated(db) -> None:
    rules = Rules(evidence=True)
    row, _ = notifications.record(db, detector_report("compute-1"), rules, hold="verdict: x")
    notifications.cancel(db, row.notification_uuid)
    with db.reader() as s:
        watched = watch.hosts_in_service(s, NOW + datetime.timedelta(hours=1))
    assert [(w.name, w.known, w.last_reported) for w in watched] == [
        ("compute-1", False, NOW),
        ("compute-2", False, None),
    ]


# --- a report kept and a verdict's hold written at the same time ------------------------------

VERDICT_HOLD = holds.VERDICT_PREFIX + "monitor: no monitor's report of the failure within 0 s"


def _running_detected_failure(db: Database) -> str:
    row, _ = notifications.record(db, detector_report("compute-1"), Rules(evidence=True))
    with db.writer() as s:
        s.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == row.notification_uuid)
            .values(status="running")
        )
    return row.notification_uuid


def _in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except Exception as exc:  # noqa: BLE001 - the test reads what it raised
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_a_report_kept_while_the_verdict_holds_waits_for_the_hold_and_ends_it(db) -> None:
    nid = _running_detected_failure(db)
    with db.writer() as s:
        # The engine's hold, up to its commit (as Effects.hold_unconfirmed writes it).
        notifications_db.lock(s, nid)
        holds.hold_again(s, nid, VERDICT_HOLD)
        s.flush()
        report, outcome = _in_thread(
            lambda: notifications.record(db, monitor_report("compute-1"), Rules(evidence=True))
        )
        report.join(1.0)
        assert report.is_alive(), "the report waits for the verdict's transaction"
    report.join(30)
    assert isinstance(outcome[0], notifications.DuplicateJudgedAgain), outcome
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {}
        assert holds.released_hold(s, nid) is None, "judged again, no operator's release"


def test_a_verdict_hold_written_while_a_report_is_kept_sees_it_and_ends_itself(db) -> None:
    from masakari.engine.effects import Effects
    from masakari.engine.lease import Lease
    from tests.support import rows

    nid = _running_detected_failure(db)
    rows.claim(db, nid, owner="engine-a")
    clock = FakeClock(start=NOW)
    effects = Effects(db, None, clock, Lease("engine-a", 1, clock, 1e9, clock.monotonic()), nid)  # type: ignore[arg-type]
    with db.writer() as s:
        # The intake's duplicate, up to its commit (as notifications.record writes it).
        notifications_db.lock(s, nid)
        evidence.add(s, nid, [evidence.Evidence("report", "monitor", True, "", NOW, "NORMAL")])
        assert holds.judge_again(s, nid) is False, "no hold yet"
        s.flush()
        # The verdict judged on the detector's report alone (1), and holds.
        hold, outcome = _in_thread(lambda: effects.evidence.hold_unconfirmed(VERDICT_HOLD, [], 1))
        hold.join(1.0)
        assert hold.is_alive(), "the hold waits for the report's transaction"
    hold.join(30)
    assert outcome == [None]
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {}, "the hold saw the report and ended"
        assert (
            s.scalar(sa.select(Notification.status).where(Notification.notification_uuid == nid))
            == "new"
        )
