"""The ceph entry's blocklist and the readiness doctor's check of it, against a real Ceph
cluster, as the least-privileged cephx user docs/configuration.md gives (its caps:
tests/fakes/ceph_cluster.py FENCE_CAPS). Asserted on the OSD map and the hosts' writes."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from masakari.fencing import base, drivers
from masakari.fencing.ceph import CephBlocklist
from masakari.fencing.config import FencingFile
from tests.fakes.ceph_cluster import FENCE_USER, CephCluster, RBDHost

ESHUTDOWN = 108


def spec_of(entry: dict[str, Any]) -> base.DriverSpec:
    """The entry as the engine gets it: through the fencing file."""
    text = json.dumps({"version": 1, "hosts": {"compute-a": [entry]}})
    (spec,) = FencingFile.parse(text).drivers_for("compute-a") or []
    return spec


def test_a_blocklist_cuts_one_host_off_until_lifted(
    ceph: CephCluster, rbd_hosts: tuple[RBDHost, RBDHost]
) -> None:
    a, b = rbd_hosts
    fence = CephBlocklist(spec_of(ceph.entry(a.address, expire=600)))

    fence.add(fence.ips())
    assert fence.missing(fence.ips()) == []
    assert ceph.blocklist() == [f"{a.address}:0/0"]
    assert (a.wait_failed(), a.errno) == ("ConnectionShutdown", ESHUTDOWN)
    b.wait_writes(5)
    # Again: idempotent (a recovery taken over blocklists anew).
    fence.add(fence.ips())
    assert ceph.blocklist() == [f"{a.address}:0/0"]

    assert fence.remove(fence.ips()) == [a.address]
    assert ceph.blocklist() == []
    assert fence.remove(fence.ips()) == []
    a.restart()  # a new client of the host: it writes again
    a.wait_writes(3)


def test_the_fence_user_can_do_nothing_else(ceph: CephCluster) -> None:
    as_fence_user = ["ceph", "-c", ceph.conf, "--name", FENCE_USER, "--keyring", ceph.fence_user()]
    for command in (["osd", "pool", "create", "x", "8"], ["auth", "ls"], ["osd", "dump"]):
        done = subprocess.run(
            as_fence_user + command, capture_output=True, text=True, timeout=30, check=False
        )
        assert done.returncode == 13, command  # EACCES


def test_the_doctor_reads_the_blocklist_and_changes_nothing(
    ceph: CephCluster, rbd_hosts: tuple[RBDHost, RBDHost]
) -> None:
    a, _ = rbd_hosts
    found = drivers.check(spec_of(ceph.entry(a.address)))
    assert (found.ok, found.reachable, found.credentials_valid, found.state) == (
        True,
        True,
        True,
        None,
    )
    assert ceph.blocklist() == []
    a.wait_writes(3)

    cut_off = drivers.check(spec_of(ceph.entry(a.address, conf=ceph.unreachable_conf(), timeout=2)))
    assert (cut_off.reachable, cut_off.credentials_valid) == (False, None)
    assert cut_off.error is not None and "osd blocklist ls" in cut_off.error

    # The fence user's name with another keyring: cephx refuses it.
    refused = drivers.check(spec_of(ceph.entry(a.address, keyring=ceph.admin_keyring)))
    assert (refused.reachable, refused.credentials_valid) == (True, False)
    assert refused.error is not None and "permission denied" in refused.error

    unnamed = drivers.check(spec_of(ceph.entry("no-such-host.invalid")))
    assert unnamed.error is not None
    assert unnamed.error.startswith("address no-such-host.invalid does not resolve")
    assert ceph.blocklist() == []
