"""The lock reconciler: servers of ended recoveries are unlocked in Nova, once, by one engine;
those of a live claim are left to their run. Asserted on the simulator and the lock rows."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.compute.retry import Policy
from masakari.db import instances, migration
from masakari.db.database import Database
from masakari.db.models import InstanceLock
from masakari.engine.locks import LockReconciler
from tests.db import backends
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.clock import FakeClock
from tests.support.engine import HOST_DOWN, add_host, add_segment, notify

NO_RETRY = Policy(connect_retries=0, retries=0)


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def ldb(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Database]:
    if request.param == "sqlite":
        database = Database.from_url(f"sqlite:///{tmp_path}/masakari.db")
        migration.upgrade(database.engine)
        yield database
        database.dispose()
        return
    reason = backends.server_reachable(request.param)
    if reason:
        pytest.skip(reason)
    with backends.temporary_database(request.param, str(tmp_path)) as url:
        database = Database.from_url(url)
        migration.upgrade(database.engine)
        yield database
        database.dispose()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _locked(db: Database, sim: NovaSimulator, status: str, claimed: bool = False) -> str:
    """A server locked in Nova, recorded as locked by a notification in ``status``."""
    sim.add_service("compute-1", state="down")
    server = sim.add_server(host="compute-1", locked=True)
    nid = notify(db, add_host(db, add_segment(db), "compute-1"), "COMPUTE_HOST", HOST_DOWN, status)
    with db.writer() as s:
        instances.record_lock(s, nid, server)
        if claimed:
            rows.claim(s, nid, "other", 1, _now() + datetime.timedelta(minutes=5))
    return server


def _rows(db: Database) -> int:
    with db.reader() as s:
        return int(s.scalar(sa.select(sa.func.count()).select_from(InstanceLock)) or 0)


def _unlocks(sim: NovaSimulator) -> int:
    return sum(1 for c in sim.nova_calls() if c["body"] == {"unlock": None})


def _reconciler(db: Database, sim: NovaSimulator, clock: FakeClock | None = None) -> LockReconciler:
    monotonic = (clock or FakeClock()).monotonic
    return LockReconciler(db, lambda: sim.client(policy=NO_RETRY), _now, monotonic)


@pytest.mark.parametrize("status", ["finished", "failed", "error"])
def test_a_server_left_locked_by_an_ended_recovery_is_unlocked(
    ldb: Database, sim: NovaSimulator, status: str
) -> None:
    server = _locked(ldb, sim, status)
    assert _reconciler(ldb, sim).reconcile() == 1
    assert sim.server(server)["locked"] is False
    assert _rows(ldb) == 0


def test_a_live_claim_keeps_its_locks(ldb: Database, sim: NovaSimulator) -> None:
    server = _locked(ldb, sim, "running", claimed=True)
    assert _reconciler(ldb, sim).reconcile() == 0
    assert sim.server(server)["locked"] is True
    assert _unlocks(sim) == 0 and _rows(ldb) == 1


def test_two_engines_unlock_once(ldb: Database, sim: NovaSimulator) -> None:
    _locked(ldb, sim, "finished")
    first, second = _reconciler(ldb, sim), _reconciler(ldb, sim)
    assert first.reconcile() + second.reconcile() == 1
    assert _unlocks(sim) == 1


def test_a_failed_unlock_is_tried_again_after_the_hold(ldb: Database, sim: NovaSimulator) -> None:
    server = _locked(ldb, sim, "finished")
    sim.fail(503, action="unlock", times=1)
    reconciler = _reconciler(ldb, sim)
    reconciler.hold = 0.0  # the row's take is over at once: the next pass may redo it
    assert reconciler.reconcile() == 0
    assert _rows(ldb) == 1
    assert reconciler.reconcile() == 1
    assert sim.server(server)["locked"] is False
    assert _rows(ldb) == 0


def test_a_taken_row_is_left_to_its_taker_for_the_hold(ldb: Database, sim: NovaSimulator) -> None:
    """An engine that took the row and died: the others wait ``hold``, then redo it."""
    _locked(ldb, sim, "finished")
    with ldb.writer() as s:
        lock = instances.left_locks(s, _now(), 60, 10)[0]
        assert instances.take_left_lock(s, lock, _now(), 60)
    assert _reconciler(ldb, sim).reconcile() == 0
    with ldb.writer() as s:
        s.execute(sa.update(InstanceLock).values(updated_at=_now() - datetime.timedelta(hours=1)))
    assert _reconciler(ldb, sim).reconcile() == 1


def test_no_unlock_sent_once_the_take_is_over(ldb: Database, sim: NovaSimulator) -> None:
    server = _locked(ldb, sim, "finished")
    clock = FakeClock()
    reconciler = _reconciler(ldb, sim, clock)
    real = instances.take_left_lock

    def slow_take(*args: Any) -> bool:
        taken = real(*args)
        clock.advance(reconciler.hold)  # frozen past the hold right after the take
        return taken

    instances.take_left_lock = slow_take  # type: ignore[assignment]
    try:
        assert reconciler.reconcile() == 0
    finally:
        instances.take_left_lock = real  # type: ignore[assignment]
    assert _unlocks(sim) == 0
    assert sim.server(server)["locked"] is True
