"""Failure drills on PostgreSQL and MariaDB: an engine frozen, killed, or cut off mid-recovery.

Engine A is a masakari-engine process calling Nova as user ``engine-a``; engine B runs in
this process as ``engine-b``. The simulator records who made each Nova request, so every
assertion is on what Nova received and what the database holds.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.compute.nova import NovaClient
from masakari.db.database import Database
from masakari.db.models import InstanceLock, NotificationClaim, RecoveryTask
from masakari.engine.service import EngineService
from tests.fakes.nova import NovaSimulator
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    make_conf,
    notify,
    spawn_engine,
    status_of,
    vmoves,
    wait_for,
    wait_status,
    write_engine_conf,
)
from tests.support.tcpproxy import TCPProxy

# How the instances of the failed host are found: (vm_state, power_state, task_state).
STATES = [("active", 1, None), ("error", 0, None), ("stopped", 4, None)] * 2
MUTATING = ("POST", "PUT", "DELETE")


@pytest.fixture
def engines(server_db: Database, sim: NovaSimulator) -> Iterator[Any]:
    """In-process engines on the server database; stopped at the end."""
    started: list[EngineService] = []
    # Its own connections, with the session limits masakari-engine sets.
    db = Database.from_url(server_db.engine.url.render_as_string(hide_password=False))

    def start(user: str) -> EngineService:
        conf = make_conf(
            sim,
            os_privileged_user_name=user,
            host=user,
            wait_period_after_evacuation=30,
        )
        db.limit_sessions(idle_in_transaction=conf.engine_claim_margin, lock_wait=5)
        nova = NovaClient(sim.session(username=user), timeout=5)
        service = EngineService(conf, db, nova, sweep_interval=0.3)
        service.start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()
    db.dispose()


def _failed_host(db: Database, sim: NovaSimulator) -> tuple[str, dict[str, str]]:
    """compute-1 down with instances in STATES (all HA-enabled), compute-2 up."""
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    sim.set_evacuate_delay(2.0)
    found = {}
    for vm_state, power_state, task_state in STATES:
        vm = sim.add_server(
            host="compute-1",
            metadata={"HA_Enabled": "True"},
            vm_state=vm_state,
            power_state=power_state,
            task_state=task_state,
        )
        found[vm] = vm_state
    return add_host(db, add_segment(db), "compute-1"), found


def _default_port(url: sa.engine.URL) -> int:
    return 5432 if url.get_backend_name() == "postgresql" else 3306


def _owner(db: Database, nid: str) -> str | None:
    with db.reader() as s:
        return s.scalar(
            sa.select(NotificationClaim.owner).where(NotificationClaim.notification_uuid == nid)
        )


def _expires_at(db: Database, nid: str) -> float:
    with db.reader() as s:
        value = s.scalar(
            sa.select(NotificationClaim.expires_at).where(
                NotificationClaim.notification_uuid == nid
            )
        )
    return value.replace(tzinfo=datetime.UTC).timestamp()


def _progress(db: Database, nid: str, attempt: int) -> list[tuple[Any, ...]]:
    with db.reader() as s:
        rows = s.scalars(
            sa.select(RecoveryTask)
            .where(RecoveryTask.notification_uuid == nid, RecoveryTask.attempt == attempt)
            .order_by(RecoveryTask.position)
        ).all()
        return [(r.name, r.state, r.progress, json.loads(r.details)) for r in rows]


def _assert_recovered_once(db: Database, sim: NovaSimulator, nid: str, found: dict[str, str]):
    """Every instance evacuated exactly once, in the state a fault-free run leaves it in."""
    evacuations = [
        c
        for c in sim.calls_by("engine-a") + sim.calls_by("engine-b")
        if c.method == "POST" and isinstance(c.body, dict) and "evacuate" in c.body
    ]
    assert sorted(c.path for c in evacuations) == sorted(f"/servers/{vm}/action" for vm in found)
    for vm, vm_state in found.items():
        server = sim.server(vm)
        assert server["OS-EXT-SRV-ATTR:host"] == "compute-2", vm
        assert (server["OS-EXT-STS:vm_state"], server["locked"]) == (vm_state, False), vm
    moved = {v.instance_uuid for v in vmoves(db, nid) if v.status == "succeeded"}
    assert moved == set(found)
    with db.reader() as s:
        assert s.scalars(sa.select(InstanceLock)).all() == []
        assert s.scalars(sa.select(NotificationClaim)).all() == []


@contextlib.contextmanager
def _proxied(db: Database) -> Iterator[tuple[TCPProxy, str]]:
    """A TCP proxy in front of the test's database server, and the database URL through it."""
    url = db.engine.url
    with TCPProxy(url.host or "127.0.0.1", url.port or _default_port(url)) as proxy:
        yield (
            proxy,
            url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False),
        )


def _start_evacuating(
    db: Database, sim: NovaSimulator, tmp_path: Any, db_url: str, host: str
) -> tuple[subprocess.Popen[bytes], str]:
    """Engine A on ``db_url``, a host failure posted, and A's first evacuation under way."""
    conf_file = tmp_path / "engine-a.conf"
    write_engine_conf(conf_file, sim, db_url, user="engine-a", host_failure_recovery_threads=2)
    engine_a = spawn_engine(conf_file, tmp_path / "engine-a.log")
    try:
        nid = notify(db, host, "COMPUTE_HOST", HOST_DOWN)
        wait_for(
            lambda: any(v.status == "ongoing" for v in vmoves(db, nid)),
            30,
            "engine A starts evacuating",
        )
    except BaseException:
        _stop(engine_a)
        raise
    return engine_a, nid


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGCONT)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def test_frozen_engine_resumed_after_takeover_acts_no_more(server_db, sim, engines, tmp_path):
    host, found = _failed_host(server_db, sim)
    engine_a, nid = _start_evacuating(server_db, sim, tmp_path, str(server_db.engine.url), host)
    try:
        os.killpg(engine_a.pid, signal.SIGSTOP)
        engines("engine-b")
        wait_for(lambda: (_owner(server_db, nid) or "").startswith("engine-b"), 30, "takeover")
        # What engine A wrote before it froze: nothing of it may change from here on.
        attempt_1 = _progress(server_db, nid, 1)
        time.sleep(1.0)  # engine B is under way when A wakes up
        resumed_at = time.time()
        os.killpg(engine_a.pid, signal.SIGCONT)
        assert wait_status(server_db, nid, timeout=60) == "finished"
        time.sleep(2.0)  # room for anything A would still do
        assert engine_a.poll() is None, "the resumed engine keeps running"
    finally:
        _stop(engine_a)

    late = [(c.method, c.path, c.body) for c in sim.calls_by("engine-a") if c.time >= resumed_at]
    assert late == [], "engine A called Nova for work it no longer owned"
    assert _progress(server_db, nid, 1) == attempt_1
    _assert_recovered_once(server_db, sim, nid, found)


def test_engine_cut_from_the_database_stops_before_its_claim_expires(
    server_db, sim, engines, tmp_path
):
    host, found = _failed_host(server_db, sim)
    with _proxied(server_db) as (proxy, proxied):
        engine_a, nid = _start_evacuating(server_db, sim, tmp_path, proxied, host)
        try:
            proxy.stop()  # live connections closed, new ones refused: A cannot renew
            # A renewed at most until now; this expiry can only be earlier than A's next one.
            expires_at = _expires_at(server_db, nid)
            engines("engine-b")
            assert wait_status(server_db, nid, timeout=60) == "finished"
            proxy.start()
            time.sleep(2.0)  # A sees its database again: it must not pick the work back up
            assert engine_a.poll() is None
        finally:
            _stop(engine_a)

    changes = [c for c in sim.calls_by("engine-a") if c.method in MUTATING]
    assert changes, "engine A had started changing things before the cut"
    assert max(c.time for c in changes) < expires_at, "engine A acted past its claim"
    _assert_recovered_once(server_db, sim, nid, found)


def test_killed_engine_and_a_database_outage_lose_and_double_nothing(
    server_db, sim, engines, tmp_path
):
    host, found = _failed_host(server_db, sim)
    with _proxied(server_db) as (proxy, proxied):
        engine_a, nid = _start_evacuating(server_db, sim, tmp_path, proxied, host)
        _stop(engine_a)
        # The database goes away for everyone, as in a restart, then comes back.
        proxy.stop()
        assert status_of(server_db, nid) == "running"
        time.sleep(1.0)
        proxy.start()

        b_conf = tmp_path / "engine-b.conf"
        write_engine_conf(b_conf, sim, proxied, user="engine-b", host_failure_recovery_threads=2)
        engine_b = spawn_engine(b_conf, tmp_path / "engine-b.log")
        try:
            wait_for(lambda: (_owner(server_db, nid) or "").startswith("engine-b"), 30, "takeover")
            proxy.stop()  # and once more while engine B recovers
            time.sleep(1.0)
            proxy.start()
            assert wait_status(server_db, nid, timeout=90) in ("finished", "running")
            wait_for(lambda: status_of(server_db, nid) == "finished", 90, "recovery finishes")
        finally:
            _stop(engine_b)
    _assert_recovered_once(server_db, sim, nid, found)


def test_vm_recovery_taken_over_after_start_is_not_restarted(server_db, sim, engines, tmp_path):
    sim.add_service("compute-1")
    host = add_host(server_db, add_segment(server_db), "compute-1")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    # Nova takes 3 s to answer the start: engine A dies with the request sent.
    sim.slow(3.0, method="POST", action="os-start")
    conf_file = tmp_path / "engine-a.conf"
    write_engine_conf(conf_file, sim, str(server_db.engine.url), user="engine-a")
    engine_a = spawn_engine(conf_file, tmp_path / "engine-a.log")
    try:
        nid = notify(
            server_db,
            host,
            "VM",
            {"event": "LIFECYCLE", "vir_domain_event": "STOPPED_FAILED", "instance_uuid": vm},
        )
        wait_for(
            lambda: any(c.body == {"os-start": None} for c in sim.calls_by("engine-a")),
            30,
            "engine A asks Nova to start the instance",
        )
    finally:
        _stop(engine_a)
    engines("engine-b")
    assert wait_status(server_db, nid, timeout=60) == "finished"
    assert (_owner(server_db, nid) or "") == ""
    actions = [
        next(iter(c.body))
        for c in sim.calls_by("engine-a") + sim.calls_by("engine-b")
        if c.method == "POST"
    ]
    assert actions == ["os-stop", "os-start"], "the instance was restarted a second time"
    assert sim.server(vm)["OS-EXT-STS:vm_state"] == "active"
