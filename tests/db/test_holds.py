"""Held notifications in the database: the intake guards, the queue, release and cancel.

Concurrency: reports of many hosts of one segment arrive at once through many connections
(as through many API processes); the database decides, so the threshold holds exactly.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from masakari.db import claims, holds, migration, queue
from masakari.db.database import Database
from masakari.ha import hosts, notifications, segments
from masakari.ha.intake import Thresholds

NOW = datetime.datetime(2026, 6, 1, 10, 0, 0)
# The rules are plain Python over simple queries: SQLite shows them. The queue's SQL and the
# races need every backend, whose migrations are what the time of these tests goes to.
SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
SERVERS = pytest.mark.parametrize("backend", ["postgresql", "mysql"], indirect=True)
HOSTS = [f"compute-{i}" for i in range(1, 11)]


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database.from_url(db_url)
    migration.upgrade(database.engine)
    segment = segments.create(
        database, {"name": "s", "recovery_method": "auto", "service_type": "compute"}
    ).uuid
    for name in HOSTS:
        hosts.create(
            database,
            lambda _: None,
            segment,
            {"name": name, "type": "COMPUTE", "control_attributes": "ssh"},
        )
    yield database
    database.dispose()


def report(host: str, seconds: int = 0, status: str = "NORMAL", event: str = "STOPPED") -> Any:
    return {
        "type": "COMPUTE_HOST",
        "hostname": host,
        "generated_time": (NOW + datetime.timedelta(seconds=seconds)).isoformat(),
        "payload": {"event": event, "host_status": status, "cluster_status": "OFFLINE"},
    }


def record(db: Database, data: Any, rules: notifications.Rules) -> tuple[str, str | None]:
    row, reason = notifications.record(db, data, rules)
    return row.notification_uuid, reason


@SQLITE_ONLY
def test_defaults_hold_nothing(db: Database) -> None:
    results = [record(db, report(h), notifications.Rules()) for h in HOSTS]
    assert [reason for _, reason in results] == [None] * 10
    with db.reader() as s:
        assert len(queue.new_after(s, 0, 100)) == 10


@SQLITE_ONLY
def test_segment_count_threshold_holds_past_it_within_the_window(db: Database) -> None:
    rules = notifications.Rules(Thresholds(segment_max=3, window=60))
    reasons = [record(db, report(h, seconds=i), rules)[1] for i, h in enumerate(HOSTS[:5])]
    assert reasons == [None, None, None, holds.REASON_SEGMENT, holds.REASON_SEGMENT]
    # Outside the window the earlier failures no longer count.
    assert record(db, report(HOSTS[5], seconds=200), rules)[1] is None


@SQLITE_ONLY
def test_percent_and_global_thresholds(db: Database) -> None:
    by_percent = notifications.Rules(Thresholds(segment_max_percent=20))  # 2 of 10 hosts
    assert [record(db, report(h), by_percent)[1] for h in HOSTS[:3]] == [
        None,
        None,
        holds.REASON_SEGMENT,
    ]
    overall = notifications.Rules(Thresholds(global_max=3))
    assert record(db, report(HOSTS[3]), overall)[1] == holds.REASON_GLOBAL


@SQLITE_ONLY
def test_one_host_reporting_twice_counts_once(db: Database) -> None:
    rules = notifications.Rules(Thresholds(segment_max=1))
    assert record(db, report(HOSTS[0]), rules)[1] is None
    # Down, up, down: still one failed host, not held.
    assert record(db, report(HOSTS[0], 1, event="STARTED"), rules)[1] is None
    assert record(db, report(HOSTS[0], 2, status="UNKNOWN"), rules)[1] is None


def test_held_notifications_are_never_claimed_until_released(db: Database) -> None:
    rules = notifications.Rules(Thresholds(segment_max=1))
    first, _ = record(db, report(HOSTS[0]), rules)
    held, reason = record(db, report(HOSTS[1]), rules)
    assert reason == holds.REASON_SEGMENT
    far = NOW + datetime.timedelta(days=30)
    with db.reader() as s:
        assert [r.notification_uuid for r in queue.new_after(s, 0, 10)] == [first]
        assert [(r.notification_uuid, r.status) for r in queue.after(s, 0, 10)] == [
            (first, "new"),
            (held, "held"),
        ]
        assert [r.notification_uuid for r in queue.retry_candidates(s, far, 10)] == [first]
    with db.writer() as s:
        assert claims.claim(s, held, "e1", 1, ["new"], far) == claims.ClaimResult.GONE
        # Never expired while held, however old.
        assert claims.expire(s, far, 10) == [first]
    notifications.release(db, held)
    with db.reader() as s:
        # Released: found by the sweep below any mark.
        assert [r.notification_uuid for r in queue.new_after(s, 10_000, 10)] == [held]
    with db.writer() as s:
        assert claims.claim(s, held, "e1", 1, ["new"], far) == claims.ClaimResult.CLAIMED


def test_a_released_notification_is_as_old_as_its_release(db: Database) -> None:
    """A report released after notifications_expired_interval is recovered, not expired."""
    rules = notifications.Rules(Thresholds(segment_max=1))
    first, _ = record(db, report(HOSTS[0]), rules)
    held, _ = record(db, report(HOSTS[1]), rules)
    notifications.release(db, held)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    cutoff = now - datetime.timedelta(hours=1)
    assert NOW < cutoff  # both were generated long before the cutoff
    with db.writer() as s:
        assert claims.expire(s, cutoff, 10) == [first]
    with db.reader() as s:
        assert [r.notification_uuid for r in queue.new_after(s, 10_000, 10)] == [held]
    # Once the release is older than the cutoff, the notification expires like any other.
    with db.writer() as s:
        assert claims.expire(s, now + datetime.timedelta(hours=1), 10) == [held]


@SQLITE_ONLY
def test_release_and_cancel_answer_404_and_409(db: Database) -> None:
    rules = notifications.Rules(Thresholds(segment_max=1))
    free, _ = record(db, report(HOSTS[0]), rules)
    held, _ = record(db, report(HOSTS[1]), rules)
    other, _ = record(db, report(HOSTS[2]), rules)
    with pytest.raises(notifications.NotificationNotHeld):
        notifications.release(db, free)
    with pytest.raises(notifications.exception.NotificationNotFound):
        notifications.cancel(db, "00000000-0000-4000-8000-000000000000")
    assert notifications.cancel(db, held).status == "ignored"
    with pytest.raises(notifications.NotificationNotHeld):
        notifications.release(db, held)
    assert notifications.release(db, other).status == "new"
    with pytest.raises(notifications.NotificationNotHeld):
        notifications.cancel(db, other)


@SQLITE_ONLY
def test_unknown_is_held_then_superseded_by_a_confirmed_report(db: Database) -> None:
    rules = notifications.Rules(hold_unknown=True)
    unknown, reason = record(db, report(HOSTS[0], status="UNKNOWN"), rules)
    assert reason == holds.REASON_UNKNOWN
    confirmed, reason = record(db, report(HOSTS[0], 5), rules)
    assert reason is None
    row = notifications.get(db, unknown)
    assert (row.status, row.message) == ("ignored", holds.SUPERSEDED_MESSAGE % confirmed)
    assert notifications.get(db, confirmed).status == "new"


@SERVERS
def test_concurrent_reports_of_a_segment_respect_the_threshold(db: Database) -> None:
    """Ten hosts report at once through ten connections: exactly three go ahead."""
    rules = notifications.Rules(Thresholds(segment_max=3))
    start = threading.Barrier(len(HOSTS))
    results: list[str | None] = []
    errors: list[BaseException] = []

    def send(host: str) -> None:
        start.wait()
        try:
            results.append(record(db, report(host), rules)[1])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(h,)) for h in HOSTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(results, key=str) == [None] * 3 + [holds.REASON_SEGMENT] * 7


def _sample(name: str, **labels: str) -> float:
    from masakari import metrics

    value = metrics.OWN.get_sample_value(name, labels or None)
    return value or 0.0


@SQLITE_ONLY
def test_holds_are_counted_by_reason_and_gauged_while_held(db: Database) -> None:
    from masakari.metrics.collect import DatabaseCollector

    segment = "mass_failure_segment"
    unknown = "unknown_host_state"
    before = {r: _sample("masakari_notifications_held_total", reason=r) for r in (segment, unknown)}
    rules = notifications.Rules(Thresholds(segment_max=1), hold_unknown=True)
    record(db, report(HOSTS[0]), rules)
    first, _ = record(db, report(HOSTS[1]), rules)
    record(db, report(HOSTS[2]), rules)
    record(db, report(HOSTS[3], status="UNKNOWN", event="STARTED"), rules)
    counted = {
        r: _sample("masakari_notifications_held_total", reason=r) - before[r] for r in before
    }
    assert counted == {segment: 2, unknown: 1}

    def gauges() -> dict[str, float]:
        return {
            s.name: s.value
            for family in DatabaseCollector(lambda: db, now=lambda: NOW).collect()
            for s in family.samples
        }

    assert (gauges()["masakari_held_notifications"], gauges()["masakari_queue_depth"]) == (3, 1)
    notifications.release(db, first)
    assert (gauges()["masakari_held_notifications"], gauges()["masakari_queue_depth"]) == (2, 2)
