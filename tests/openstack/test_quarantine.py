"""Quarantine against the real Nova 34 (its fake driver live-migrates): the degraded host
disabled with the reason and never forced down, its running servers live-migrated away
(Nova's migrations completed, one live-migration action each), a stopped one left, and the
host back in service at the release; a lost storage path's quarantine that falls back to
fencing and evacuating what could not move. Asserted on Nova's records, the BMC and
masakari's API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.ipmi_bmc import FakeBMC
from tests.openstack import records
from tests.support.openstack.cloud import Cloud, wait_for
from tests.support.openstack.masakari import Masakari

HOST = "compute-1"
HOSTS = ["compute-1", "compute-2", "compute-3"]
V110 = {"OpenStack-API-Version": "instance-ha 1.10"}


def _quarantine(deployment: Masakari, uuid: str) -> dict[str, Any]:
    answer = deployment.api.get(f"/quarantines/{uuid}", headers=V110)
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["quarantine"])


def _stopped_server(cloud: Cloud) -> str:
    stopped = cloud.boot("vm-stopped", HOST)
    cloud.nova.post(f"/servers/{stopped}/action", json={"os-stop": None})
    cloud.wait_server(stopped, lambda s: s["status"] == "SHUTOFF", 60)
    return stopped


def _ended(deployment: Masakari, uuid: str) -> dict[str, Any]:
    return dict(
        wait_for(
            "quarantine ended",
            lambda: (
                (q := _quarantine(deployment, uuid))["status"] not in ("requested", "running") and q
            ),
            180,
        )
    )


def test_a_quarantined_host_is_emptied_by_live_migration(
    cloud: Cloud, masakari: Callable[..., Masakari]
) -> None:
    running = cloud.wait_active([cloud.boot(f"vm-{n}", HOST, wait=False) for n in range(3)])
    stopped = _stopped_server(cloud)
    deployment = masakari(
        {
            "DEFAULT": {"api_max_microversion": "1.10"},
            "quarantine": {"enabled": True, "poll_interval": 1, "max_concurrent_migrations": 2},
        }
    )
    segment = deployment.segment("quarantined", HOSTS)
    host = records.masakari_host(deployment, segment, HOST)["uuid"]
    asked = deployment.api.post(
        f"/segments/{segment}/hosts/{host}/quarantine",
        json={"quarantine": {"reason": "EdacCorrectableErrorsHigh"}},
        headers=V110,
    )
    assert asked.status_code == 202, asked.text
    uuid = asked.json()["quarantine"]["id"]
    done = _ended(deployment, uuid)
    assert done["status"] == "partial", done
    instances = {i["instance_id"]: i for i in done["instances"]}
    assert instances[stopped]["status"] == "left"
    service = cloud.services()[HOST]
    assert service["status"] == "disabled" and service["forced_down"] is False
    assert service["disabled_reason"] == "masakari quarantine: EdacCorrectableErrorsHigh"
    for server in running:
        found = cloud.server(server)
        assert records.host_of(found) != HOST and found["status"] == "ACTIVE", server
        assert instances[server]["status"] == "moved"
        assert instances[server]["target"] == records.host_of(found)
        assert records.action_names(cloud, server).count("live-migration") == 1
        migrations = cloud.nova.get(
            f"/os-migrations?instance_uuid={server}&migration_type=live-migration"
        ).json()["migrations"]
        assert [m["status"] for m in migrations] == ["completed"], migrations
    assert records.host_of(cloud.server(stopped)) == HOST
    assert "live-migration" not in records.action_names(cloud, stopped)

    released = deployment.api.post(
        f"/quarantines/{uuid}/action", json={"release": None}, headers=V110
    )
    assert released.status_code == 200 and released.json()["quarantine"]["status"] == "released"
    assert cloud.services()[HOST]["status"] == "enabled"
    assert records.masakari_host(deployment, segment, HOST)["on_maintenance"] is False


def test_a_lost_storage_path_moves_what_it_can_and_evacuates_the_rest(
    cloud: Cloud, masakari: Callable[..., Masakari], bmc: FakeBMC, tmp_path: Path
) -> None:
    """An I/O error report judges compute-1's storage path lost (conservative): its running
    server is live-migrated; the stopped one cannot be, and the room for it is there, so a
    host failure is recorded: compute-1 is powered off through its BMC and the stopped
    server evacuated. Each server moved once, by one or the other."""
    running = cloud.boot("vm-running", HOST)
    stopped = _stopped_server(cloud)
    deployment = masakari(
        {
            "DEFAULT": {"api_max_microversion": "1.10"},
            "quarantine": {"enabled": True, "poll_interval": 1, "storage_error_instances": 1},
            "fencing": {
                "config_file": records.fencing_file(tmp_path, bmc, HOST),
                "confirm_interval": 0.2,
                "confirm_timeout": 10,
            },
        }
    )
    deployment.segment("storage", HOSTS)
    report = deployment.notify(
        "VM",
        HOST,
        {"event": "IO_ERROR", "vir_domain_event": "IO_ERROR_REPORT", "instance_uuid": running},
    )
    assert deployment.wait_notification(report, ("ignored",), timeout=60)["status"] == "ignored"
    (asked,) = deployment.api.get("/quarantines", headers=V110).json()["quarantines"]
    assert asked["source"] == "storage"
    ended = wait_for(
        "quarantine ended",
        lambda: (
            (q := _quarantine(deployment, asked["id"]))["status"] not in ("requested", "running")
            and q
        ),
        180,
    )
    assert ended["status"] == "superseded", ended
    failure = next(
        n
        for n in deployment.api.get("/notifications").json()["notifications"]
        if n["type"] == "COMPUTE_HOST"
    )
    assert failure["notification_uuid"] in ended["detail"]
    deployment.wait_notification(failure["notification_uuid"], timeout=180)

    assert "off" in bmc.commands and bmc.power == "off"
    moved = cloud.server(running)
    assert records.host_of(moved) != HOST and moved["status"] == "ACTIVE"
    assert records.action_names(cloud, running).count("live-migration") == 1
    assert records.evacuations(cloud, running) == []
    records.assert_recovered(cloud, stopped, HOST, "stopped")
    assert "live-migration" not in records.action_names(cloud, stopped)
