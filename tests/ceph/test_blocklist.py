"""The ceph entry's blocklist and the readiness doctor's checks of it, against a real Ceph
cluster, as the least-privileged cephx user docs/configuration.md gives (its caps:
tests/fakes/ceph_cluster.py FENCE_CAPS). Asserted on the OSD map and the hosts' writes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from masakari.cmd import manage
from masakari.db.database import Database
from masakari.engine.fence_checks import FenceChecker
from masakari.engine.fencing import HostFencing
from masakari.fencing import base
from masakari.fencing.ceph import CephBlocklist
from masakari.fencing.config import FencingFile
from tests.fakes.ceph_cluster import FENCE_USER, CephCluster, RBDHost
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.clock import FakeClock
from tests.support.engine import make_conf
from tests.support.fencing_drills import fencing_file

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


def test_the_readiness_doctor_reads_the_blocklist_and_changes_nothing(
    ceph: CephCluster,
    rbd_hosts: tuple[RBDHost, RBDHost],
    db: Database,
    sim: NovaSimulator,
    tmp_path: Path,
) -> None:
    a, b = rbd_hosts
    hosts = {
        "compute-a": [ceph.entry(a.address)],
        "compute-b": [ceph.entry(b.address, conf=ceph.unreachable_conf(), timeout=2)],
        # The fence user's name with another user's keyring: cephx refuses it.
        "compute-c": [ceph.entry(a.address, keyring=ceph.admin_keyring)],
        "compute-d": [ceph.entry("no-such-host.invalid")],
        "compute-e": [ceph.entry(a.address, keyring=str(tmp_path / "missing.keyring"))],
    }
    conf = make_conf(sim, **{"fencing.config_file": fencing_file(tmp_path, hosts)})
    checker = FenceChecker(db, HostFencing.from_conf(conf), FakeClock(), "engine-a")

    found = checker.check_hosts([(name, "seg", "seg") for name in hosts])

    results = {name: [(c.result, c.message) for c in rows] for name, rows in found.items()}
    assert results["compute-a"] == [("ok", "the OSD map's blocklist reads")]
    [(result, message)] = results["compute-b"]
    assert result == "unreachable" and (message or "").startswith("osd blocklist ls")
    assert results["compute-c"] == [
        (
            "refused",
            "osd blocklist ls failed (exit 13): [errno 13] RADOS permission denied (error "
            "connecting to the cluster)",
        )
    ]
    [(result, message)] = results["compute-d"]
    assert result == "failed"
    assert (message or "").startswith("address no-such-host.invalid does not resolve")
    assert results["compute-e"] == [
        ("failed", f"keyring {tmp_path / 'missing.keyring'} cannot be read")
    ]
    # Read-only: nothing blocklisted, both hosts write on.
    assert ceph.blocklist() == []
    a.wait_writes(3)
    b.wait_writes(3)


def test_an_operator_lifts_a_blocklist_by_hand(
    ceph: CephCluster,
    rbd_hosts: tuple[RBDHost, RBDHost],
    db: Database,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = rbd_hosts
    segment = rows.segment(db)
    rows.host(db, segment, "compute-a")
    hosts = {"compute-a": [ceph.entry(a.address)], "compute-b": [ceph.entry(b.address)]}
    conf = tmp_path / "masakari.conf"
    conf.write_text(
        f"[database]\nconnection = {db.engine.url}\n"
        f"[fencing]\nconfig_file = {fencing_file(tmp_path, hosts)}\n"
    )
    fence = CephBlocklist(spec_of(ceph.entry(a.address)))
    fence.add(fence.ips())
    other = CephBlocklist(spec_of(ceph.entry(b.address)))
    other.add(other.ips())

    def manage_(*argv: str) -> tuple[int, str, str]:
        code = manage.main(["--config-file", str(conf), "host", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    assert manage_("unblocklist", "compute-a") == (
        0,
        f"ceph {a.address}: removed {a.address}:0/0\n",
        "",
    )
    assert ceph.blocklist() == [f"{b.address}:0/0"]  # only the host named
    assert manage_("unblocklist", "compute-a")[:2] == (0, f"ceph {a.address}: not blocklisted\n")
    code, _, err = manage_("unblocklist", "compute-9")
    assert code == 1 and "compute-9" in err
