"""Rack-scale recovery against the Nova simulator: the evacuation cap across engines, batched
polling, and the slots of a killed engine. Asserted on what Nova received and saw in flight,
and on what the database holds."""

from __future__ import annotations

import datetime
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from masakari.compute.nova import NovaClient
from masakari.db import migration, slots
from masakari.db.database import Database
from masakari.engine.service import EngineService
from tests.db import backends
from tests.fakes.nova import NovaSimulator
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    make_conf,
    notify,
    spawn_engine,
    vmoves,
    wait_for,
    wait_status,
    write_engine_conf,
)

CAP = 4


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Database]:
    with backends.migrated(request, request.param, str(tmp_path)) as database:
        yield database


def _rack(db: Database, sim: NovaSimulator, hosts: int, per_host: int) -> tuple[list[str], set]:
    """``hosts`` failed hosts of ``per_host`` HA instances each, one notification per host."""
    sim.add_service("spare-1")
    seg = add_segment(db, "auto")
    nids, servers = [], set()
    for h in range(hosts):
        name = f"rack-{h}"
        sim.add_service(name, state="down")
        for _ in range(per_host):
            servers.add(sim.add_server(host=name, metadata={"HA_Enabled": "True"}))
        nids.append(notify(db, add_host(db, seg, name), "COMPUTE_HOST", HOST_DOWN))
    return nids, servers


def _engine(db: Database, sim: NovaSimulator, user: str, **options: Any) -> EngineService:
    conf = make_conf(sim, os_privileged_user_name=user, host=user, **options)
    service = EngineService(conf, db, NovaClient(sim.session(username=user), timeout=5), workers=2)
    service.start()
    return service


def _moved(sim: NovaSimulator, servers: set) -> bool:
    return all(sim.server(s)["OS-EXT-SRV-ATTR:host"] == "spare-1" for s in servers)


def test_cap_holds_across_two_engines(any_db: Database) -> None:
    """Two engines of two notifications each could run 2 x 2 x 3 evacuations at once; the
    cap lets Nova see at most CAP, and every instance still ends up evacuated."""
    # Evacuations long enough that a loaded machine still fills every slot at once.
    with NovaSimulator(evacuate_delay=(2.0, 3.0), seed=3) as sim:
        nids, servers = _rack(any_db, sim, hosts=4, per_host=3)
        options = {
            "max_evacuations_in_flight": CAP,
            "wait_period_after_evacuation": 30,
            "host_failure_recovery_threads": 3,
        }
        engines = [_engine(any_db, sim, "masakari", **options) for _ in range(2)]
        try:
            for nid in nids:
                assert wait_status(any_db, nid, timeout=60) == "finished"
        finally:
            for engine in engines:
                engine.stop(grace=2)
        assert _moved(sim, servers)
        assert sim.max_evacuations_in_flight <= CAP
        # The cap was reached, so it was the cap that held it.
        assert sim.max_evacuations_in_flight == CAP
        with any_db.reader() as session:
            assert slots.held(session, CAP, datetime.datetime(2100, 1, 1)) == 0


def test_batched_polling_lists_the_failed_host_not_each_instance(db, sim) -> None:
    sim.set_evacuate_delay(2.5)
    nids, servers = _rack(db, sim, hosts=1, per_host=6)
    sim.clear_calls()
    engine = _engine(
        db,
        sim,
        "masakari",
        evacuation_batched_polling=True,
        host_failure_recovery_threads=6,
        wait_period_after_evacuation=30,
    )
    try:
        assert wait_status(db, nids[0], timeout=30) == "finished"
    finally:
        engine.stop(grace=2)
    assert _moved(sim, servers)
    assert {v.status for v in vmoves(db, nids[0])} == {"succeeded"}
    calls = sim.nova_calls()
    lists = [c for c in calls if c["path"] == "/servers/detail"]
    assert all(dict(c["query"])["host"] == "rack-0" for c in lists)
    # The prepare task's list, then about one per second while the 2.5 s evacuations run:
    # whatever the number of instances.
    assert 2 <= len(lists) <= 6
    for server in servers:
        gets = [c for c in calls if c["method"] == "GET" and c["path"] == f"/servers/{server}"]
        # Read before the evacuation, once after it left the host, and for its destination.
        # Polled one by one it would be read at 0, 1, 2 and 3 s as well.
        assert len(gets) == 3, gets


def test_killed_engines_slots_are_reclaimed(tmp_path, sim) -> None:
    """An engine killed while it holds every slot: its evacuations in Nova end, its claims
    expire, and with them its slots; another engine finishes the rack within the cap."""
    db_url = f"sqlite:///{tmp_path}/masakari.db"
    db = Database.from_url(db_url)
    migration.upgrade(db.engine)
    sim.set_evacuate_delay(1.0)
    nids, servers = _rack(db, sim, hosts=2, per_host=4)
    conf_file = tmp_path / "engine-a.conf"
    write_engine_conf(conf_file, sim, db_url, user="engine-a", max_evacuations_in_flight=CAP)
    proc = spawn_engine(conf_file, tmp_path / "engine-a.log")
    engine = None
    try:

        def all_slots_held() -> bool:
            with db.reader() as session:
                return slots.held(session, CAP, _now()) == CAP

        wait_for(all_slots_held, 30, "engine A holding every slot")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        killed_at = time.monotonic()
        # Nothing gives the slots back; they die with the claims (engine_claim_timeout 5 s).
        with db.reader() as session:
            assert slots.held(session, CAP, _now()) > 0

        def all_slots_free() -> bool:
            with db.reader() as session:
                return slots.held(session, CAP, _now()) == 0

        wait_for(all_slots_free, 15, "engine A's slots freed by its claims' expiry")
        assert time.monotonic() - killed_at > 2  # not before its claims could expire
        engine = _engine(
            db, sim, "engine-b", max_evacuations_in_flight=CAP, wait_period_after_evacuation=30
        )
        for nid in nids:
            assert wait_status(db, nid, timeout=60) == "finished"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if engine is not None:
            engine.stop(grace=2)
        db.dispose()
    assert _moved(sim, servers)
    assert sim.max_evacuations_in_flight <= CAP
    # Engine B did the rest (engine A's token never reached Nova again).
    assert any(c.caller == "engine-b" for c in sim.calls if c.method == "POST")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def test_the_next_evacuation_is_ready_before_its_slot_frees(db, sim) -> None:
    """Cap 1: each instance is read and locked while the one before it still evacuates,
    and its evacuate request is the first call once the slot is free."""
    sim.set_evacuate_delay(1.5)
    nids, servers = _rack(db, sim, hosts=1, per_host=4)
    sim.clear_calls()
    engine = _engine(
        db,
        sim,
        "masakari",
        max_evacuations_in_flight=1,
        evacuation_batched_polling=True,
        wait_period_after_evacuation=30,
    )
    try:
        assert wait_status(db, nids[0], timeout=60) == "finished"
    finally:
        engine.stop(grace=2)
    assert _moved(sim, servers)
    assert sim.max_evacuations_in_flight == 1
    calls = sim.nova_calls()

    def action(i: int) -> str | None:
        body = calls[i]["body"]
        return next(iter(body)) if calls[i]["method"] == "POST" and body else None

    def server(i: int) -> str:
        return calls[i]["path"].split("/")[2]

    evacuations = [i for i in range(len(calls)) if action(i) == "evacuate"]
    locks = {server(i): i for i in range(len(calls)) if action(i) == "lock"}
    assert len(evacuations) == 4
    for before, after in zip(evacuations, evacuations[1:], strict=False):
        previous, following = server(before), server(after)
        # The read that saw the previous instance gone from the host freed the slot.
        seen_gone = next(
            i
            for i in range(before + 1, len(calls))
            if calls[i]["method"] == "GET" and calls[i]["path"] == f"/servers/{previous}"
        )
        assert locks[following] < seen_gone < after
    with db.reader() as session:
        assert slots.held(session, 1, datetime.datetime(2100, 1, 1)) == 0
