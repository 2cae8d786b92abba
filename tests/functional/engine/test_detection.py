"""The failure detector in an engine, against the Nova simulator's heartbeats (SQLite)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari import coordination, detection
from masakari.db.database import Database
from masakari.db.models import FailureEvidence, Notification
from masakari.engine.service import EngineService
from tests.fakes.nova import NovaSimulator
from tests.functional.engine.conftest import add_host, add_segment, make_conf, wait_for

POLL = 0.3
GRACE = 1.0
DETECTION = {
    "detection.enabled": True,
    "detection.poll_interval": POLL,
    "detection.grace_period": GRACE,
}


def notifications(db: Database) -> list[Notification]:
    with db.reader() as s:
        return list(s.scalars(sa.select(Notification).order_by(Notification.id)))


def evidence(db: Database, nid: str) -> list[FailureEvidence]:
    with db.reader() as s:
        return list(
            s.scalars(
                sa.select(FailureEvidence)
                .where(FailureEvidence.notification_uuid == nid)
                .order_by(FailureEvidence.id)
            )
        )


@pytest.fixture
def detecting(db: Database, sim: NovaSimulator) -> Iterator[Any]:
    """Engines with the detector, started in this process; stopped at the end."""
    started: list[EngineService] = []

    def start(name: str = "ctl-1", **overrides: Any) -> EngineService:
        conf = make_conf(sim, host=name, **{**DETECTION, **overrides})
        client = sim.client(timeout=2)
        probe = detection.keystone_probe(client.session, sim.auth_url, 2)
        owner = f"{name}:detector"
        leadership = coordination.Everyone()
        found = detection.build(conf, db, client, probe, owner, leadership)
        assert found is not None
        service = EngineService(
            conf, db, sim.client(timeout=5), owner=owner, leadership=leadership, addons=[found]
        )
        service.start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop(grace=2)


def _cloud(db: Database, sim: NovaSimulator, hosts: int = 4) -> str:
    segment = add_segment(db)
    for i in range(1, hosts + 1):
        sim.add_service(f"compute-{i}")
        add_host(db, segment, f"compute-{i}")
    return segment


def test_a_host_that_stops_heartbeating_is_reported_once(db, sim, detecting) -> None:
    _cloud(db, sim)
    detecting()
    time.sleep(3 * POLL)
    assert notifications(db) == []
    stopped = time.time()
    sim.power_off("compute-2")
    found = wait_for(lambda: notifications(db), 10, "the detector reports compute-2")
    time.sleep(5 * POLL)  # more polls: still one notification
    assert len(notifications(db)) == 1
    (row,) = notifications(db)
    payload = json.loads(row.payload)
    assert payload["detector"] == "nova-services"
    assert (payload["event"], payload["host_status"]) == ("STOPPED", "UNKNOWN")
    late = row.generated_time.timestamp() - stopped
    assert GRACE <= late, "reported before the grace period ran out"
    kinds = [(e.kind, e.source.split()[0]) for e in evidence(db, found[0].notification_uuid)]
    assert kinds[:2] == [("report", "detector"), ("nova", "engine")]
