"""Recoveries whose outcome depends on the database server: a report released long after it
was generated, and a Nova server whose name is longer than any column. Asserted on what Nova
received and on what the database holds."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest

from masakari.db import holds
from masakari.db.database import Database, transaction
from masakari.engine.service import EngineService
from tests.fakes.nova import NovaSimulator
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    make_conf,
    notify,
    status_of,
    vmoves,
    wait_status,
)


def _start(db: Database, sim: NovaSimulator, **options: Any) -> EngineService:
    engine = EngineService(make_conf(sim, **options), db, sim.client(timeout=5), sweep_interval=2)
    engine.start()
    return engine


def _evacuations(sim: NovaSimulator) -> list[str]:
    return [
        c["path"]
        for c in sim.nova_calls()
        if c["method"] == "POST" and isinstance(c["body"], dict) and "evacuate" in c["body"]
    ]


@pytest.mark.parametrize("server_db", ["sqlite", "postgresql"], indirect=True)
def test_a_late_release_is_recovered_not_expired(server_db: Database, sim: NovaSimulator) -> None:
    db = server_db
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    servers = [sim.add_server(host="compute-1") for _ in range(2)]
    host = add_host(db, add_segment(db), "compute-1")
    # Generated two hours ago, held since: older than notifications_expired_interval.
    generated = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(
        hours=2
    )
    nid = notify(db, host, "COMPUTE_HOST", HOST_DOWN, generated_time=generated)
    transaction(db, lambda s: holds.hold(s, nid, holds.REASON_SEGMENT))
    # The expiry runs every second, the sweep that takes released reports every 2 s.
    engine = _start(
        db, sim, notifications_expired_interval=3600, check_expired_notifications_interval=1
    )
    try:
        time.sleep(1.5)
        assert status_of(db, nid) == "new"  # held: never expired
        assert transaction(db, lambda s: holds.release(s, nid))
        assert wait_status(db, nid) == "finished"
        time.sleep(2.5)  # expiry rounds after the end change nothing
        assert status_of(db, nid) == "finished"
    finally:
        engine.stop(grace=2)
    assert {sim.server(s)["OS-EXT-SRV-ATTR:host"] for s in servers} == {"compute-2"}
    assert sorted(_evacuations(sim)) == sorted(f"/servers/{s}/action" for s in servers)
    assert {v.status for v in vmoves(db, nid)} == {"succeeded"}


@pytest.mark.parametrize("server_db", ["postgresql", "mysql"], indirect=True)
def test_a_server_name_longer_than_its_column_fails_nothing(
    server_db: Database, sim: NovaSimulator
) -> None:
    db = server_db
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    long_name = "vm-" + "x" * 400
    long = sim.add_server(host="compute-1", name=long_name)
    short = sim.add_server(host="compute-1", name="vm-short")
    nid = notify(db, add_host(db, add_segment(db), "compute-1"), "COMPUTE_HOST", HOST_DOWN)
    engine = _start(db, sim)
    try:
        assert wait_status(db, nid) == "finished"
    finally:
        engine.stop(grace=2)
    assert sim.server(long)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert sim.server(short)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    moves = {v.instance_uuid: v for v in vmoves(db, nid)}
    assert {v.status for v in moves.values()} == {"succeeded"}
    assert moves[short].instance_name == "vm-short"
    # Cut to the column's 255 characters, the rest of the name kept as it was.
    assert long_name.startswith(moves[long].instance_name)
    assert len(moves[long].instance_name) == 255
