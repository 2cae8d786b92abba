"""Fixtures: a throwaway SQLite schema, a fake Nova, a run context with a clock that never waits."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from masakari import conf as masakari_conf
from masakari.db.database import Database
from masakari.db.models import Base, Host, Notification, RecoveryTask, Segment
from masakari.engine.context import RunContext
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


def make_run(db: Database, nova: FakeNova, clock: FakeClock, **overrides: Any) -> RunContext:
    return RunContext(
        conf=make_conf(**overrides),
        nova=nova,
        db=db,
        clock=clock,
        notification_uuid=str(uuid.uuid4()),
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
    import datetime

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
