"""Notification intake when its transaction loses a race: replayed from the start, then refused
with a 409 once the replays run out, never left as a database error (a 500)."""

from __future__ import annotations

import types
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from masakari import exception
from masakari.db import database, guards, migration
from masakari.db.database import Database
from masakari.ha import hosts, notifications, segments

REPORT = {
    "type": "PROCESS",
    "hostname": "compute-1",
    "generated_time": "2026-06-01T10:00:00",
    "payload": {"event": "STOPPED", "process_name": "nova-compute"},
}


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database.from_url(db_url)
    migration.upgrade(database.engine)
    segment = segments.create(
        database, {"name": "s", "recovery_method": "auto", "service_type": "compute"}
    ).uuid
    hosts.create(
        database,
        lambda _: None,
        segment,
        {"name": "compute-1", "type": "COMPUTE", "control_attributes": "ssh"},
    )
    yield database
    database.dispose()


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the retry takes, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(database, "time", types.SimpleNamespace(sleep=slept.append))
    return slept


def losing_hold(monkeypatch: pytest.MonkeyPatch, losses: int, error: Exception) -> list[int]:
    """Make the first ``losses`` guard holds fail as a lost race would, after the real write."""
    calls: list[int] = []
    real = guards.hold

    def hold(session, host_uuid):
        real(session, host_uuid)
        calls.append(1)
        if len(calls) <= losses:
            raise error

    monkeypatch.setattr(guards, "hold", hold)
    return calls


def count(db: Database) -> int:
    return len(notifications.list_(db, {}, ["created_at"], ["desc"], 1000, None))


@pytest.mark.parametrize(
    "error",
    [db_exc.DBDeadlock(), db_exc.DBDuplicateEntry(columns=["host_uuid"])],
    ids=["deadlock", "guard-insert-collision"],
)
def test_a_lost_race_is_replayed_and_recorded_once(db, monkeypatch, pauses, error):
    calls = losing_hold(monkeypatch, 2, error)
    row = notifications.create(db, REPORT)
    assert row.status == "new"
    assert len(calls) == 3
    assert count(db) == 1
    # The loser's writes were rolled back: a replay of the same report is now a duplicate.
    with pytest.raises(exception.DuplicateNotification):
        notifications.create(db, REPORT)


def test_replays_back_off_and_end_in_a_409(db, monkeypatch, pauses):
    calls = losing_hold(monkeypatch, 1000, db_exc.DBDeadlock())
    with pytest.raises(notifications.NotificationRaceLost) as caught:
        notifications.create(db, REPORT)
    assert isinstance(caught.value, exception.Conflict)
    assert len(calls) == notifications.RACE_RETRIES + 1
    assert len(pauses) == notifications.RACE_RETRIES
    # Drawn below a ceiling that doubles from the first interval up to the largest.
    assert pauses[0] <= notifications.RACE_RETRY_INTERVAL
    assert max(pauses) <= notifications.RACE_RETRY_MAX_INTERVAL
    assert max(pauses) > notifications.RACE_RETRY_INTERVAL
    assert count(db) == 0


@pytest.mark.parametrize(
    "error",
    [
        db_exc.DBError("disk full"),
        # SQLite still busy after its timeout: an outage to report, not a race to answer 409.
        sa.exc.OperationalError("INSERT", {}, Exception("database is locked")),
    ],
    ids=["disk-full", "sqlite-busy"],
)
def test_other_database_errors_are_not_replayed(db, monkeypatch, pauses, error):
    calls = losing_hold(monkeypatch, 1000, error)
    with pytest.raises(type(error)):
        notifications.create(db, REPORT)
    assert len(calls) == 1
    assert pauses == []
