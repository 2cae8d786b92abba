"""Host fencing and agentless detection against the real Nova.

Fencing: the failed host's BMC (tests/fakes/ipmi_bmc.py, real IPMI on loopback) is tied to
its nova-compute process: power off kills it (-9), power on starts it again, as a host's
power would. Detection: the engine polls the real services' heartbeats.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

from masakari.db import holds
from tests.fakes.ipmi_bmc import FakeBMC
from tests.openstack import records
from tests.support import rows
from tests.support.openstack.cloud import Cloud, wait_for
from tests.support.openstack.masakari import Masakari

FAILED = "compute-1"
HOSTS = ["compute-1", "compute-2", "compute-3"]


def test_fenced_hand_off(
    cloud: Cloud, masakari: Callable[..., Masakari], bmc: FakeBMC, tmp_path: Path
) -> None:
    """The monitor reports compute-1 failed while its nova-compute still runs (Nova counts it
    up): masakari disables it, powers it off through its BMC (which stops nova-compute),
    forces it down and evacuates at once, without the default flow's wait."""
    servers = cloud.wait_active([cloud.boot(f"vm-{n}", FAILED, wait=False) for n in range(3)])
    deployment = masakari(
        {
            # Without the hand-off the evacuations would wait these 180 s: they do not.
            "DEFAULT": {"wait_period_after_service_update": 180},
            "fencing": {
                "config_file": records.fencing_file(tmp_path, bmc, FAILED),
                "confirm_interval": 0.2,
                "confirm_timeout": 10,
            },
        }
    )
    deployment.segment("seg", HOSTS)
    nid = deployment.report_host_down(FAILED)
    deployment.wait_notification(nid, timeout=150)

    assert "off" in bmc.commands and bmc.power == "off"
    assert not cloud.compute_running(FAILED)
    service = cloud.services()[FAILED]
    assert (service["status"], service["forced_down"]) == ("disabled", True)
    for server in servers:
        records.assert_recovered(cloud, server, FAILED, "active")
    # The power off sent, then read back off: the proof recorded before any evacuation.
    fenced = [(action, result) for _, action, result in rows.fence_attempts(deployment.db, nid)]
    assert fenced[:2] == [("off", "done"), ("status", "off")], fenced


def _detecting(**more: Any) -> dict[str, dict[str, Any]]:
    """The detector on the drills' Nova timings (a heartbeat every 2 s, down after 10 s)."""
    return {
        "DEFAULT": {"wait_period_after_service_update": 0, "api_max_microversion": "1.7"},
        "detection": {"enabled": True, "poll_interval": 2, "grace_period": 6, **more},
    }


def _compute_host_reports(deployment: Masakari, host_uuid: str) -> list[dict[str, Any]]:
    listed = deployment.api.get("/notifications").json()["notifications"]
    return [n for n in listed if n["source_host_uuid"] == host_uuid and n["type"] == "COMPUTE_HOST"]


def test_detector_reports_a_killed_compute_once(
    cloud: Cloud, masakari: Callable[..., Masakari]
) -> None:
    """nova-compute killed: one notification from the detector within grace and a poll or
    two; the monitor's report then confirms it (a duplicate, 409, kept as evidence), and the
    host is recovered."""
    server = cloud.boot("vm", FAILED)
    deployment = masakari(_detecting())
    segment = deployment.segment("seg", HOSTS)
    host = records.masakari_host(deployment, segment, FAILED)["uuid"]
    killed = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    cloud.kill_compute(FAILED)
    found = wait_for(
        "the detector's report", lambda: _compute_host_reports(deployment, host), 60, 1
    )
    assert len(found) == 1
    # Reported within the grace period and a poll of the last heartbeat (<= the kill), with
    # room for a loaded machine: not the monitor's minutes.
    generated = datetime.datetime.fromisoformat(found[0]["generated_time"])
    assert (generated - killed).total_seconds() < 6 + 2 + 10
    assert found[0]["payload"].get("detector") == "nova-services"
    monitor = deployment.api.post(
        "/notifications",
        json={
            "notification": {
                "type": "COMPUTE_HOST",
                "hostname": FAILED,
                "generated_time": found[0]["generated_time"],
                "payload": {
                    "event": "STOPPED",
                    "cluster_status": "OFFLINE",
                    "host_status": "NORMAL",
                },
            }
        },
    )
    assert monitor.status_code == 409, monitor.text
    deployment.wait_notification(found[0]["notification_uuid"], timeout=180)
    assert len(_compute_host_reports(deployment, host)) == 1
    records.assert_recovered(cloud, server, FAILED, "active")


def test_a_partition_of_the_monitor_only_is_held(
    cloud: Cloud, masakari: Callable[..., Masakari]
) -> None:
    """The monitor reports compute-1 down, but its nova-compute keeps heartbeating (only the
    monitor's network to it broke): with any_two, one signal is not enough; the failure is
    held and nothing changes in Nova."""
    server = cloud.boot("vm", FAILED)
    deployment = masakari(_detecting() | {"verdict": {"rule": "any_two", "wait": 10}})
    deployment.segment("seg", HOSTS)
    nid = deployment.report_host_down(FAILED)
    wait_for("the hold", lambda: _held(deployment, nid), 90, 1)

    assert cloud.services()[FAILED]["status"] == "enabled"
    assert cloud.services()[FAILED]["state"] == "up"
    assert records.host_of(cloud.server(server)) == FAILED
    assert records.evacuations(cloud, server) == []
    assert cloud.server(server)["locked"] is False


def _held(deployment: Masakari, nid: str) -> str | None:
    with deployment.db.reader() as session:
        return holds.reasons(session, [nid]).get(nid)
