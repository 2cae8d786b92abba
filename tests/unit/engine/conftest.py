"""Fixtures: a throwaway SQLite schema, a fake Nova, a run context with a clock that never waits."""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from masakari import conf as masakari_conf
from masakari.db.database import Database
from masakari.db.models import Base, Host, Notification, NotificationClaim, RecoveryTask, Segment
from masakari.engine.context import RunContext
from masakari.engine.effects import Effects
from masakari.engine.lease import Lease
from tests.unit.engine.fakes import FakeClock, FakeNova


def make_conf(**overrides: Any) -> Any:
    return masakari_conf.for_tests(**{"wait_period_after_service_update": 0, **overrides})


@pytest.fixture
def db(tmp_path: Any) -> Iterator[Database]:
    database = Database.from_url(f"sqlite:///{tmp_path}/unit.db")
    Base.metadata.create_all(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def nova() -> FakeNova:
    return FakeNova()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# A lease no unit test outlives, even on a clock that jumps a few hours through polls.
LONG_LEASE = 1e9


def claim(db: Database, notification_uuid: str, owner: str = "engine-test", token: int = 1) -> None:
    """The claim row a run's fenced writes need (the notification row is the test's own)."""
    with db.writer() as s:
        s.merge(
            NotificationClaim(
                notification_uuid=notification_uuid,
                owner=owner,
                attempt=token,
                expires_at=datetime.datetime(2100, 1, 1),
            )
        )


def make_run(
    db: Database,
    nova: FakeNova,
    clock: FakeClock,
    notification_uuid: str | None = None,
    lease_term: float = LONG_LEASE,
    owner: str = "engine-test",
    **overrides: Any,
) -> RunContext:
    """A run of engine ``owner`` holding a claim on a running notification (created unless
    given)."""
    if notification_uuid is None:
        notification_uuid = str(uuid.uuid4())
        with db.writer() as s:
            s.add(
                Notification(
                    notification_uuid=notification_uuid,
                    type="COMPUTE_HOST",
                    source_host_uuid=str(uuid.uuid4()),
                    payload="{}",
                    status="running",
                    generated_time=datetime.datetime(2026, 1, 1),
                )
            )
    claim(db, notification_uuid, owner=owner)
    lease = Lease(owner, 1, clock, lease_term, clock.monotonic())
    return RunContext(
        conf=make_conf(**overrides),
        effects=Effects(db, nova, clock, lease, notification_uuid),
        clock=clock,
    )


def add_rows(
    db: Database, recovery_method: str = "auto", hosts: tuple[tuple[str, bool], ...] = ()
) -> dict[str, str]:
    """A segment with hosts (name, reserved); returns name -> host uuid."""
    seg = str(uuid.uuid4())
    out = {}
    with db.writer() as s:
        s.add(
            Segment(uuid=seg, name="seg", service_type="compute", recovery_method=recovery_method)
        )
        for name, reserved in hosts:
            out[name] = str(uuid.uuid4())
            s.add(
                Host(
                    uuid=out[name],
                    name=name,
                    type="COMPUTE",
                    control_attributes="x",
                    failover_segment_id=seg,
                    reserved=reserved,
                )
            )
    return out


def add_notification(db: Database, host_uuid: str, type: str, payload: dict[str, Any]) -> str:
    nid = str(uuid.uuid4())
    with db.writer() as s:
        s.add(
            Notification(
                notification_uuid=nid,
                type=type,
                source_host_uuid=host_uuid,
                payload=json.dumps(payload),
                status="running",
                generated_time=datetime.datetime(2026, 1, 1),
            )
        )
    return nid


def task_rows(db: Database, nid: str) -> list[tuple[int, str, str, float, list[tuple[str, str]]]]:
    with db.reader() as s:
        rows = (
            s.query(RecoveryTask)
            .filter_by(notification_uuid=nid)
            .order_by(RecoveryTask.attempt, RecoveryTask.position)
            .all()
        )
        return [
            (
                r.attempt,
                r.name,
                r.state,
                r.progress,
                [(d["progress"], d["message"]) for d in json.loads(r.details)],
            )
            for r in rows
        ]
