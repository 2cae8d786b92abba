"""The held room's records on every backend: a holding pass and a releasing recovery
serialise on the segment's row, so a holder either recorded its write before the release
(which then sees it) or is refused after it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from masakari.db import migration, room_holds
from masakari.db.database import Database
from masakari.db.models import Notification
from masakari.ha import hosts, segments

SERVERS = pytest.mark.parametrize("backend", ["postgresql", "mysql"], indirect=True)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database.from_url(db_url)
    migration.upgrade(database.engine)
    yield database
    database.dispose()


def _segment(db: Database) -> tuple[str, str]:
    seg = segments.create(
        db, {"name": "s", "recovery_method": "auto", "service_type": "compute"}
    ).uuid
    host = hosts.create(
        db, lambda _: None, seg, {"name": "h-1", "type": "COMPUTE", "control_attributes": "ssh"}
    ).uuid
    return seg, host


def _intend(db: Database, seg: str, reserved: int = 4) -> bool:
    with db.writer() as session:
        return room_holds.intend(session, seg, "h-1", "rp-1", "VCPU", 0, reserved)


@SERVERS
def test_a_holder_waits_for_a_release_in_flight_and_is_then_refused(db):
    seg, _ = _segment(db)
    assert _intend(db, seg)  # the segment's row exists from the first hold
    released = threading.Event()
    outcome: list[bool] = []

    def holder() -> None:
        released.wait(5)
        outcome.append(_intend(db, seg, 8))

    thread = threading.Thread(target=holder)
    thread.start()
    with db.writer() as session:
        room_holds.release_for(session, seg, "n-1")
        released.set()
        time.sleep(0.5)  # the holder's record waits on the segment's row meanwhile
        assert not outcome
    thread.join(10)
    assert outcome == [False]
    with db.reader() as session:
        (row,) = room_holds.rows(session, seg)
        assert row.pending == 4  # the refused holder recorded nothing


@SERVERS
def test_a_holder_that_recorded_first_is_seen_by_the_release(db):
    seg, _ = _segment(db)
    assert _intend(db, seg)
    with db.writer() as session:
        room_holds.release_for(session, seg, "n-1")
        records = room_holds.rows(session, seg)
    assert [(r.host_name, r.pending) for r in records] == [("h-1", 4)]
    assert not _intend(db, seg, 8)
    with db.writer() as session:
        assert room_holds.end_release(session, seg, "n-1")
    assert _intend(db, seg, 8)


@SERVERS
def test_a_recovery_claimed_before_the_record_refuses_it(db):
    """A recovery that found nothing held released nothing; its claim (running) is seen by
    the next holder's record."""
    seg, host = _segment(db)
    with db.writer() as session:
        session.add(
            Notification(
                notification_uuid="n-2",
                type="COMPUTE_HOST",
                source_host_uuid=host,
                status="running",
                payload="{}",
                generated_time=sa.func.now(),
                deleted=0,
            )
        )
    assert not _intend(db, seg)
    with db.reader() as session:
        assert room_holds.recovering(session, seg) == "n-2"
        assert room_holds.rows(session, seg) == []
