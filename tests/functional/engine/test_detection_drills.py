"""The failure detector's lease drill on PostgreSQL and MariaDB: two masakari-engine processes,
one detects at a time; the detector frozen (SIGSTOP) with a poll's answer on its way is
replaced, and once it resumes (SIGCONT) with that stale answer it reports nothing.

Engines A and B call Nova as users ``engine-a`` and ``engine-b``; the simulator records who
asked what. Asserted on what Nova received and on what the database holds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.db import detector_lease
from masakari.db.database import Database
from masakari.db.models import Notification
from tests.fakes.nova import NovaSimulator
from tests.support.engine import (
    add_host,
    add_segment,
    spawn_engine,
    wait_for,
    write_engine_conf,
)

POLL = 0.3
DETECTION = [
    "[detection]",
    "enabled = true",
    f"poll_interval = {POLL}",
    "grace_period = 1",
    "[verdict]",
    "wait = 1",
]


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    with NovaSimulator(service_down_time=1.0) as simulator:
        yield simulator


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        try:
            os.killpg(proc.pid, signal.SIGCONT)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def _engine(
    name: str, db: Database, sim: NovaSimulator, tmp_path: Any, started: list[Any]
) -> subprocess.Popen[bytes]:
    conf_file = tmp_path / f"{name}.conf"
    url = db.engine.url.render_as_string(hide_password=False)
    write_engine_conf(conf_file, sim, url, user=name)
    with open(conf_file, "a", encoding="utf-8") as fh:
        fh.write("\n".join(DETECTION) + "\n")
    proc = spawn_engine(conf_file, tmp_path / f"{name}.log")
    started.append(proc)
    return proc


def _holder(db: Database) -> str | None:
    with db.reader() as s:
        held = detector_lease.holder(s, "nova-services")
    return None if held is None else held.owner.split(":")[0]


def _polls(sim: NovaSimulator, user: str) -> list[Any]:
    return [
        c
        for c in sim.calls_by(user)
        if c.method == "GET"
        and c.path == "/os-services"
        and c.query == [["binary", "nova-compute"]]
    ]


def _reports(db: Database) -> list[tuple[str, str]]:
    with db.reader() as s:
        rows = s.scalars(sa.select(Notification).order_by(Notification.id)).all()
        return [
            (json.loads(r.payload)["detector_engine"].split(":")[0], r.source_host_uuid)
            for r in rows
        ]


def test_one_detector_at_a_time_a_frozen_one_is_replaced_and_wakes_to_report_nothing(
    server_db, sim, tmp_path, processes
) -> None:
    db = server_db
    segment = add_segment(db)
    hosts = {}
    for i in range(1, 6):
        sim.add_service(f"compute-{i}")
        hosts[f"compute-{i}"] = add_host(db, segment, f"compute-{i}")
    engine_a = _engine("engine-a", db, sim, tmp_path, processes)
    wait_for(lambda: _holder(db) == "engine-a", 30, "engine A takes the detector's lease")
    _engine("engine-b", db, sim, tmp_path, processes)
    wait_for(lambda: len(_polls(sim, "engine-a")) >= 3, 10, "engine A polls Nova")
    time.sleep(10 * POLL)  # B runs (its heartbeat row, its own lease tries) but does not poll
    assert _polls(sim, "engine-b") == []
    assert _holder(db) == "engine-a"

    # A's next poll is answered late; A freezes while it waits, and the answer it will get
    # says compute-2 is down. Then compute-2 is back before anyone else looks.
    sim.slow(1.5, method="GET", path="/os-services", times=1)
    seen = len(_polls(sim, "engine-a"))
    wait_for(lambda: len(_polls(sim, "engine-a")) > seen, 10, "A's slow poll reaches Nova")
    os.killpg(engine_a.pid, signal.SIGSTOP)
    sim.stale("compute-2", 100)
    wait_for(lambda: _polls(sim, "engine-a")[seen].status == 200, 10, "the stale answer goes out")
    time.sleep(0.3)
    sim.power_on("compute-2")

    # A's lease expires; B takes it, and B is the detector now.
    wait_for(lambda: _holder(db) == "engine-b", 30, "engine B takes the lease over")
    wait_for(lambda: len(_polls(sim, "engine-b")) >= 2, 10, "engine B polls Nova")
    sim.stale("compute-3", 100)
    wait_for(lambda: _reports(db), 10, "engine B reports compute-3")
    assert _reports(db) == [("engine-b", hosts["compute-3"])]

    # A wakes with its stale answer (compute-2 down) and an expired lease.
    os.killpg(engine_a.pid, signal.SIGCONT)
    after = len(_polls(sim, "engine-a"))
    time.sleep(15 * POLL)
    assert _reports(db) == [("engine-b", hosts["compute-3"])]
    assert _holder(db) == "engine-b"
    assert len(_polls(sim, "engine-a")) == after, "A polls no more: it is not the detector"
