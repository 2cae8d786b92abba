"""Storage fencing drills: an engine fences a failed host by blocklisting its address on a
real Ceph cluster (tests/fakes/ceph_cluster.py) before the Nova simulator sees any
evacuation, and lifts the blocklist on the host's return.

The "hosts" are two network namespaces writing to their own RBD images. Asserted on the OSD
map, the hosts' writes, the database's rows and what Nova received; never on logs.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from masakari.db import fencing as fence_db
from masakari.db.database import Database
from masakari.db.models import FenceAttempt
from masakari.fencing.config import FencingFile
from tests.fakes.ceph_cluster import CephCluster, RBDHost
from tests.fakes.nova import NovaSimulator
from tests.support.engine import HOST_DOWN, add_segment, notify, wait_for, wait_status
from tests.support.fencing_drills import (
    assert_evacuated_once,
    attempts,
    evacuations,
    failed_host,
    fencing_file,
    held,
    ipmi,
    sent,
)

HOST_BACK = {"event": "STARTED", "host_status": "NORMAL", "cluster_status": "ONLINE"}
RETURN = {"host_return.unset_forced_down": True, "host_return.enable_compute_service": True}
ESHUTDOWN = 108


def confirmed_at(db: Database, nid: str, result: str) -> float:
    """When the notification's attempt with ``result`` ended (epoch seconds)."""
    with db.reader() as s:
        row = s.scalars(
            sa.select(FenceAttempt).where(
                FenceAttempt.notification_uuid == nid, FenceAttempt.result == result
            )
        ).one()
    ended = row.started_at + datetime.timedelta(seconds=row.duration or 0)
    return ended.replace(tzinfo=datetime.UTC).timestamp()


def test_a_failed_host_is_cut_off_its_disks_before_any_evacuation_and_lifted_on_return(
    ceph: CephCluster,
    rbd_hosts: tuple[RBDHost, RBDHost],
    db: Database,
    sim: NovaSimulator,
    engine: Any,
    tmp_path: Path,
) -> None:
    a, b = rbd_hosts
    segment = add_segment(db)
    host, servers = failed_host(db, sim, segment, "compute-a")
    sim.stale("compute-a", 120)  # its nova-compute stopped heartbeating: down in Nova
    sim.add_service("compute-b")
    hosts = {"compute-a": [ceph.entry(a.address)], "compute-b": [ceph.entry(b.address)]}
    engine(fencing_file(tmp_path, hosts), **RETURN)

    nid = notify(db, host, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(db, nid) == "finished"

    # A is cut off: its next write failed with ESHUTDOWN; B's go on.
    assert (a.wait_failed(), a.errno) == ("ConnectionShutdown", ESHUTDOWN)
    b.wait_writes(5)
    assert ceph.blocklist() == [f"{a.address}:0/0"]
    assert attempts(db, nid) == [(0, "blocklist", "blocklisted")]
    # The blocklist was confirmed, and A's writes failed, before Nova's first evacuation.
    first_evacuation = min(c.time for c in evacuations(sim))
    confirmed = confirmed_at(db, nid, "blocklisted")
    assert a.failed_at is not None
    assert confirmed <= first_evacuation and a.failed_at <= first_evacuation
    assert_evacuated_once(sim, servers, "compute-a")

    # Reported back while its nova-compute is still down: what is left of the evacuated
    # instances there has not been destroyed yet, the blocklist stays.
    early = notify(db, host, "COMPUTE_HOST", HOST_BACK)
    assert wait_status(db, early) == "finished"
    assert ceph.blocklist() == [f"{a.address}:0/0"]
    assert attempts(db, early) == []

    sim.power_on("compute-a")  # nova-compute started again, and heartbeats
    back = notify(db, host, "COMPUTE_HOST", HOST_BACK)
    assert wait_status(db, back) == "finished"
    assert ceph.blocklist() == []
    assert attempts(db, back) == [(0, "unblocklist", "lifted")]
    # The host writes again (a new client: the fenced one stays dead).
    a.restart()
    a.wait_writes(3)


def test_storage_when_the_bmc_does_not_answer_and_a_hold_when_ceph_does_not_either(
    ceph: CephCluster,
    rbd_hosts: tuple[RBDHost, RBDHost],
    db: Database,
    sim: NovaSimulator,
    engine: Any,
    bmcs: Any,
    tmp_path: Path,
) -> None:
    a, b = rbd_hosts
    bmc = bmcs(dead=True)  # the BMC lost power with its host
    segment = add_segment(db)
    host_a, servers_a = failed_host(db, sim, segment, "compute-a")
    host_b, servers_b = failed_host(db, sim, segment, "compute-b")
    sim.add_service("compute-c")
    cut_off = ceph.entry(b.address, conf=ceph.unreachable_conf(), timeout=2)
    hosts = {"compute-a": [ipmi(bmc), ceph.entry(a.address)], "compute-b": [cut_off]}
    engine(fencing_file(tmp_path, hosts))

    nid_a = notify(db, host_a, "COMPUTE_HOST", HOST_DOWN)
    nid_b = notify(db, host_b, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(db, nid_a) == "finished"
    reason = wait_for(lambda: held(db, nid_b), 30, "compute-b is held")

    assert attempts(db, nid_a) == [(0, "off", "unreachable"), (1, "blocklist", "blocklisted")]
    assert (a.wait_failed(), a.errno) == ("ConnectionShutdown", ESHUTDOWN)
    assert confirmed_at(db, nid_a, "blocklisted") <= min(c.time for c in evacuations(sim))
    assert_evacuated_once(sim, servers_a, "compute-a")
    # B: its only entry cannot reach the monitors: held, nothing of it evacuated, it writes on.
    assert reason.startswith(f"power fencing failed: ceph {b.address}: blocklist: ")
    assert attempts(db, nid_b) == [(0, "blocklist", "unreachable")]
    assert not {f"/servers/{v}/action" for v in servers_b} & {c.path for c in evacuations(sim)}
    b.wait_writes(5)
    assert ceph.blocklist() == [f"{a.address}:0/0"]


def test_a_storage_entry_after_power_blocklists_a_host_already_proven_off(
    ceph: CephCluster,
    rbd_hosts: tuple[RBDHost, RBDHost],
    db: Database,
    sim: NovaSimulator,
    engine: Any,
    bmcs: Any,
    tmp_path: Path,
) -> None:
    a, b = rbd_hosts
    bmc = bmcs()
    segment = add_segment(db)
    host, servers = failed_host(db, sim, segment, "compute-a")
    sim.add_service("compute-b")
    hosts = {"compute-a": [ipmi(bmc), ceph.entry(a.address, after_power=True)]}
    engine(fencing_file(tmp_path, hosts))

    nid = notify(db, host, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(db, nid) == "finished"

    assert bmc.power == "off"
    assert attempts(db, nid) == [
        (0, "off", "done"),
        (0, "status", "off"),
        (1, "blocklist", "blocklisted"),
    ]
    assert (a.wait_failed(), a.errno) == ("ConnectionShutdown", ESHUTDOWN)
    assert confirmed_at(db, nid, "blocklisted") <= min(c.time for c in evacuations(sim))
    assert_evacuated_once(sim, servers, "compute-a")
    b.wait_writes(3)


def test_an_engine_taking_over_after_the_power_proof_still_blocklists(
    ceph: CephCluster,
    rbd_hosts: tuple[RBDHost, RBDHost],
    db: Database,
    sim: NovaSimulator,
    engine: Any,
    bmcs: Any,
    tmp_path: Path,
) -> None:
    """An engine proved the host off and died before its after_power blocklist: the engine
    that takes the failure over sends no power off again, and blocklists the host before
    the first evacuation."""
    a, b = rbd_hosts
    bmc = bmcs()
    bmc.power = "off"  # the dead engine's power off
    segment = add_segment(db)
    host, servers = failed_host(db, sim, segment, "compute-a")
    sim.add_service("compute-b")
    entries = [ipmi(bmc), ceph.entry(a.address, after_power=True)]
    config = fencing_file(tmp_path, {"compute-a": entries})
    nid = notify(db, host, "COMPUTE_HOST", HOST_DOWN)
    proven = FencingFile.load(config).drivers_for("compute-a")[0].describe()
    with db.writer() as s:
        for action, result in (("off", "done"), ("status", "off")):
            fence_db.start(
                s, nid, "engine-dead", 1, "compute-a", 0, proven, action,
                datetime.datetime.now(datetime.UTC).replace(tzinfo=None), result, duration=0.1,
            )  # fmt: skip
    engine(config)

    assert wait_status(db, nid) == "finished"
    assert attempts(db, nid) == [
        (0, "off", "done"),
        (0, "status", "off"),
        (1, "blocklist", "blocklisted"),
    ]
    assert sent(bmc) == []  # proven before: not fenced again
    assert (a.wait_failed(), a.errno) == ("ConnectionShutdown", ESHUTDOWN)
    assert confirmed_at(db, nid, "blocklisted") <= min(c.time for c in evacuations(sim))
    assert_evacuated_once(sim, servers, "compute-a")
    b.wait_writes(3)
