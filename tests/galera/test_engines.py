"""Engines writing through different Galera nodes: every notification is recovered exactly
once, also while a node restarts under them.

Written against the engine's public surface only (EngineService, the Nova simulator's
record of calls, and plain SQL on notifications, vmoves and masakari_notification_claims),
so that the tests hold whatever the claims look like inside.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import threading
import time

import pytest
import sqlalchemy as sa

from masakari.compute.nova import NovaClient
from masakari.db.database import Database
from masakari.engine.service import EngineService
from tests.fakes.nova import NovaSimulator
from tests.galera.apiproc import api_process, call
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    make_conf,
    notify,
)

LIFECYCLE = {"event": "LIFECYCLE", "vir_domain_event": "STOPPED_FAILED"}
FINAL = {"finished", "error", "failed", "ignored"}


@pytest.fixture
def sim():
    with NovaSimulator() as simulator:
        yield simulator


@pytest.fixture
def dbs(galera_urls):
    databases = [Database.from_url(url) for url in galera_urls]
    yield databases
    for db in databases:
        db.dispose()


@pytest.fixture
def engines(sim):
    started = []

    def start(conf, db, owner):
        # A Keystone user per engine: the simulator's record then says who called Nova.
        nova = NovaClient(sim.session(username=owner), timeout=5)
        service = EngineService(conf, db, nova, owner=owner, sweep_interval=0.2)
        service.start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop(grace=2)


def statuses(db, nids=None):
    with db.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT notification_uuid, status FROM notifications")).all()
    return {n: s for n, s in rows if nids is None or n in nids}


def wait_final(db, nids, timeout):
    deadline = time.monotonic() + timeout
    while True:
        now = statuses(db, set(nids))
        if len(now) == len(nids) and set(now.values()) <= FINAL:
            return now
        if time.monotonic() > deadline:
            waiting = {n: s for n, s in now.items() if s not in FINAL}
            raise AssertionError(f"not final after {timeout} s: {waiting}")
        time.sleep(0.2)


def claim_rows(db):
    with db.engine.connect() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM masakari_notification_claims")).scalar()


def vmove_rows(db):
    with db.engine.connect() as conn:
        return conn.execute(
            sa.text("SELECT notification_uuid, instance_uuid, status FROM vmoves")
        ).all()


def actions(sim, action):
    """Server id -> the answers Nova gave to each POST /servers/{id}/action of ``action``."""
    seen = collections.defaultdict(list)
    for c in sim.nova_calls():
        if c["method"] == "POST" and isinstance(c["body"], dict) and action in c["body"]:
            seen[c["path"].split("/")[2]].append(c["status"])
    return dict(seen)


def history(sim, servers, owners):
    """Each server's actions as (time, engine, action, answer), for a failure message."""
    calls = sorted(
        (c.time, c.caller, next(iter(c.body)), c.status, c.path.split("/")[2])
        for owner in owners
        for c in sim.calls_by(owner)
        if c.method == "POST" and isinstance(c.body, dict) and "/servers/" in c.path
    )
    return {vm: [c[:4] for c in calls if c[4] == vm] for vm in servers}


def failed_host_with_servers(sim, db, segment, name, count):
    sim.add_service(name, state="down")
    host = add_host(db, segment, name)
    servers = [sim.add_server(host=name, metadata={"HA_Enabled": "True"}) for _ in range(count)]
    return host, servers


def test_engines_on_three_nodes_recover_each_notification_once(galera, dbs, sim, engines):
    conf = make_conf(sim)
    segment = add_segment(dbs[0], "auto")
    for spare in ("spare-1", "spare-2"):
        sim.add_service(spare)
        add_host(dbs[0], segment, spare)
    evacuated, vm_servers, nids = [], [], []
    for i in range(4):
        host, servers = failed_host_with_servers(sim, dbs[0], segment, f"failed-{i}", 3)
        evacuated += servers
        # Written through every node in turn: each engine's reads see rows from all.
        nids.append(notify(dbs[i % 3], host, "COMPUTE_HOST", HOST_DOWN))
    # Two VM reports per host: the second waits for the first, whichever engine has it.
    vm_hosts = []
    for i in range(10):
        name = f"compute-{i}"
        sim.add_service(name)
        vm_hosts.append(add_host(dbs[0], segment, name))
    for i, host in enumerate(vm_hosts * 2):
        vm = sim.add_server(host=f"compute-{i % 10}", metadata={"HA_Enabled": "True"})
        vm_servers.append(vm)
        if i == len(vm_hosts):
            # Half the reports arrive while the engines already run.
            for n in range(3):
                engines(conf, dbs[n], f"engine-{n}")
        nids.append(notify(dbs[(i + 1) % 3], host, "VM", {**LIFECYCLE, "instance_uuid": vm}))

    final = wait_final(dbs[1], nids, timeout=90)

    assert set(final.values()) == {"finished"}, final
    assert actions(sim, "evacuate") == {vm: [200] for vm in evacuated}
    assert actions(sim, "os-stop") == {vm: [202] for vm in vm_servers}
    assert actions(sim, "os-start") == {vm: [202] for vm in vm_servers}
    moves = vmove_rows(dbs[2])
    assert sorted(i for _, i, _ in moves) == sorted(evacuated)
    assert {s for _, _, s in moves} == {"succeeded"}
    assert claim_rows(dbs[0]) == 0
    assert all(galera.status(n)["wsrep_cluster_size"] == "3" for n in range(3))


def test_a_node_restart_under_apis_and_engines_loses_nothing(
    galera, galera_urls, dbs, sim, engines, tmp_path
):
    """Node 1 (an API process's and an engine's) stops for a few seconds and comes back."""
    # A node joining holds every commit in the cluster for about 2 s (more on a loaded
    # machine): the engines on the other nodes must keep their leases through that, as they
    # do with the default 15 s; the 3.5 s of the fast test timings would not.
    conf = make_conf(sim, engine_claim_timeout=10, engine_claim_margin=2)
    segment = add_segment(dbs[0], "auto")
    hosts = [f"compute-{i}" for i in range(24)]
    for name in hosts:
        sim.add_service(name)
        add_host(dbs[0], segment, name)
    accepted: list[tuple[str, str]] = []  # (notification uuid, server id)
    refused: list[tuple[int, object]] = []
    stop = threading.Event()

    def report(port: int, host: str) -> None:
        vm = sim.add_server(host=host, metadata={"HA_Enabled": "True"})
        body = {
            "notification": {
                "type": "VM",
                "hostname": host,
                "generated_time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
                "payload": {**LIFECYCLE, "instance_uuid": vm},
            }
        }
        try:
            status, answer = call(port, "POST", "/v1/notifications", body)
        except OSError as exc:
            refused.append((0, str(exc)))
            return
        if status == 202:
            accepted.append((answer["notification"]["notification_uuid"], vm))
        else:
            refused.append((status, answer))

    def writer(port: int, offset: int) -> None:
        i = offset
        while not stop.is_set():
            report(port, hosts[i % len(hosts)])
            i += 3
            time.sleep(0.2)

    with contextlib.ExitStack() as stack:
        ports = [
            stack.enter_context(api_process(url, tmp_path / f"api{i}"))
            for i, url in enumerate(galera_urls)
        ]
        for n in range(3):
            engines(conf, dbs[n], f"engine-{n}")
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            running = [pool.submit(writer, ports[n], n) for n in range(3)]
            time.sleep(3)
            galera.stop_node(1)
            time.sleep(6)
            galera.start_node(1)
            time.sleep(3)
            stop.set()
            for f in running:
                f.result()
        nids = [nid for nid, _ in accepted]
        final = wait_final(dbs[0], nids, timeout=120)

    assert len(accepted) > 30, (accepted, refused)
    # Refusals are the API on the stopped (then joining) node answering that its database
    # is unreachable: a 503 to retry, never a 500.
    assert {status for status, _ in refused} <= {503}, refused
    assert set(final.values()) == {"finished"}, final
    servers = [vm for _, vm in accepted]
    owners = [f"engine-{n}" for n in range(3)]
    for vm, calls in history(sim, servers, owners).items():
        effects = [c for c in calls if c[2] in ("os-stop", "os-start")]
        callers = [engine for _, engine, _, _ in effects]
        blocks = [engine for i, engine in enumerate(callers) if i == 0 or callers[i - 1] != engine]
        # Fencing: engines act one after the other, never interleaved; a second one only
        # after the engine cut off with node 1 fell silent.
        assert len(blocks) == len(set(blocks)), (vm, effects)
        if len(blocks) > 1:
            assert blocks[0] == "engine-1", (vm, effects)
            continue
        # No takeover: exactly one stop and one start.
        assert [(a, r) for _, _, a, r in effects] == [("os-stop", 202), ("os-start", 202)], (
            vm,
            effects,
        )
    # Nothing was written twice nor lost: one row per accepted report, on every node.
    for db in dbs:
        rows = statuses(db)
        assert set(nids) <= set(rows)
    assert claim_rows(dbs[1]) == 0
    galera.wait_size(3, timeout=5)


def test_a_takeover_does_not_repeat_a_restart_the_cut_off_engine_made(galera, dbs, sim, engines):
    """Engine 1's node stops right after it asked Nova to start the VM, before it could
    record that: engine 0 takes the notification over and must not restart the VM again."""
    conf = make_conf(sim)
    segment = add_segment(dbs[0], "auto")
    sim.add_service("compute-1")
    host = add_host(dbs[0], segment, "compute-1")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    # The start is answered late (and takes effect then): node 1 is gone by the time the
    # engine would write that it succeeded.
    sim.slow(2.0, action="os-start", server=vm, times=1)
    nid = notify(dbs[1], host, "VM", {**LIFECYCLE, "instance_uuid": vm})
    engines(conf, dbs[1], "engine-1")
    deadline = time.monotonic() + 30
    while not actions(sim, "os-start"):
        assert time.monotonic() < deadline, sim.nova_calls()
        time.sleep(0.01)
    galera.stop_node(1)
    engines(conf, dbs[0], "engine-0")

    final = wait_final(dbs[0], [nid], timeout=60)
    effects = [c for c in history(sim, [vm], ["engine-0", "engine-1"])[vm]]
    galera.start_node(1)

    assert final == {nid: "finished"}
    assert [(engine, action) for _, engine, action, _ in effects] == [
        ("engine-1", "os-stop"),
        ("engine-1", "os-start"),
    ], effects


def test_a_host_recovery_cut_off_with_its_node_evacuates_each_instance_once(
    galera, dbs, sim, engines
):
    """Engine 1 is evacuating a failed host when node 1 stops: engine 0 takes over and
    finishes, and no instance is evacuated twice (or left behind)."""
    conf = make_conf(sim)
    sim.set_evacuate_delay(1.0)
    segment = add_segment(dbs[0], "auto")
    for spare in ("spare-1", "spare-2"):
        sim.add_service(spare)
        add_host(dbs[0], segment, spare)
    host, servers = failed_host_with_servers(sim, dbs[0], segment, "failed-1", 6)
    nid = notify(dbs[1], host, "COMPUTE_HOST", HOST_DOWN)
    engines(conf, dbs[1], "engine-1")
    deadline = time.monotonic() + 30
    while not actions(sim, "evacuate"):
        assert time.monotonic() < deadline, sim.nova_calls()
        time.sleep(0.01)
    galera.stop_node(1)
    engines(conf, dbs[0], "engine-0")

    final = wait_final(dbs[0], [nid], timeout=90)
    evacuations = {
        vm: [c[1:] for c in calls if c[2] == "evacuate"]
        for vm, calls in history(sim, servers, ["engine-0", "engine-1"]).items()
    }
    galera.start_node(1)

    assert final == {nid: "finished"}
    # Both engines evacuated: the takeover happened in the middle of the host's recovery.
    assert {c[0] for calls in evacuations.values() for c in calls} == {"engine-0", "engine-1"}, (
        evacuations
    )
    assert {vm: len(calls) for vm, calls in evacuations.items()} == dict.fromkeys(servers, 1), (
        evacuations
    )
    assert {sim.server(vm)["OS-EXT-SRV-ATTR:host"] for vm in servers} <= {"spare-1", "spare-2"}
    assert claim_rows(dbs[0]) == 0
