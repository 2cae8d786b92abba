"""Fire drills against the real Nova: compute-1's BMC (tests/fakes/ipmi_bmc.py, real IPMI on
loopback) is tied to its nova-compute process, as in test_fencing_detection.py: power off
kills it, power on starts it again.

Asserted after the drill on Nova's own records (where each canary runs, its instance
actions and their events, compute-1's status, forced_down and state), the BMC's power and
what it received, and masakari's rows through its API; never on logs. Each drill's phase
timings are written to the test's directory (``timings.json``) for the record.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.ipmi_bmc import FakeBMC
from tests.openstack import records
from tests.support.openstack.cloud import Cloud, wait_for
from tests.support.openstack.masakari import Masakari

HOST = "compute-1"
HOSTS = ["compute-1", "compute-2", "compute-3"]
TAG = "masakari-canary"
V19 = {"OpenStack-API-Version": "instance-ha 1.9"}


def _sections(tmp_path: Path, bmc: FakeBMC) -> dict[str, dict[str, Any]]:
    path = records.fencing_file(tmp_path, bmc, HOST)
    return {
        "DEFAULT": {"api_max_microversion": "1.9", "wait_period_after_evacuation": 120},
        "drill": {
            "enabled": True,
            "poll_interval": 1,
            "service_up_timeout": 120,
            "migration_timeout": 120,
        },
        "fencing": {"config_file": path, "confirm_interval": 0.5, "confirm_timeout": 20},
    }


def _canaries(cloud: Cloud, count: int) -> list[str]:
    servers = cloud.wait_active([cloud.boot(f"canary-{n}", HOST, wait=False) for n in range(count)])
    for server in servers:
        cloud.nova.put(f"/servers/{server}/tags/{TAG}")
    return servers


def _record(tmp_path: Path, drill: dict[str, Any]) -> None:
    timings = {
        p["name"]: (p["result"], p["seconds"], p["predicted_seconds"]) for p in drill["phases"]
    }
    (tmp_path / "timings.json").write_text(json.dumps(timings, indent=2))
    print(json.dumps({"drill": drill["id"], "timings": timings, "cli": drill.get("cli_seconds")}))


def _restored(cloud: Cloud, deployment: Masakari, segment: str, bmc: FakeBMC) -> None:
    service = cloud.services()[HOST]
    assert (service["status"], service["forced_down"], service["state"]) == ("enabled", False, "up")
    assert bmc.power == "on" and cloud.compute_running(HOST)
    assert records.masakari_host(deployment, segment, HOST)["on_maintenance"] is False
    # Placement: Nova took the disabled trait off compute-1's provider when it was enabled.
    wait_for("compute-1's provider schedulable", lambda: not cloud.disabled_providers(), 30)


def _allocated_on(cloud: Cloud, server: str) -> list[str]:
    """The resource providers (by name) Placement holds the server's allocations on."""
    names = {p["uuid"]: p["name"] for p in cloud.resource_providers()}
    held = cloud.placement.get(f"/allocations/{server}").json()["allocations"]
    return sorted(names[uuid] for uuid in held)


def test_cli_drill_fences_evacuates_and_restores(
    cloud: Cloud, masakari: Callable[..., Masakari], bmc: FakeBMC, tmp_path: Path
) -> None:
    canaries = _canaries(cloud, 2)
    deployment = masakari(_sections(tmp_path, bmc))
    segment = deployment.segment("drill-seg", HOSTS)
    page = tmp_path / "drill.html"

    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "masakari.cmd.manage",
            "--config-file",
            str(deployment.conf),
            "drill",
            "run",
            "drill-seg",
            "--host",
            HOST,
            "--html",
            str(page),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    took = time.monotonic() - started

    assert done.returncode == 0, done.stdout + done.stderr
    assert page.read_text().startswith("<!DOCTYPE html>")
    drills = deployment.api.get(f"/segments/{segment}/drills", headers=V19).json()["drills"]
    assert [d["status"] for d in drills] == ["succeeded"]
    drill = deployment.api.get(f"/segments/{segment}/drills/{drills[0]['id']}", headers=V19).json()[
        "drill"
    ]
    _record(tmp_path, {**drill, "cli_seconds": took})
    assert [(p["name"], p["result"] != "failed") for p in drill["phases"]] == [
        (name, True)
        for name in ("check", "maintenance", "fence", "disable", "evacuate", "restore", "return")
    ]
    # Nova: each canary evacuated once, elsewhere, active; its evacuate action all Success.
    for server in canaries:
        records.assert_recovered(cloud, server, HOST, "active")
    landed = {c["id"]: c["landed"] for c in drill["report"]["canaries"]}
    assert landed == {s: records.host_of(cloud.server(s)) for s in canaries}
    # Placement: each canary's resources held where it runs, none left on compute-1.
    for server in canaries:
        assert _allocated_on(cloud, server) == [landed[server]]
    # The BMC: powered off, read off, powered on; compute-1 is back, enabled, not forced down.
    commands = [c for i, c in enumerate(bmc.commands) if i == 0 or bmc.commands[i - 1] != c]
    assert commands.index("off") < commands.index("on")
    _restored(cloud, deployment, segment, bmc)


@pytest.mark.extended
def test_api_drill_without_fencing_moves_the_canary_back(
    cloud: Cloud, masakari: Callable[..., Masakari], bmc: FakeBMC, tmp_path: Path
) -> None:
    (canary,) = _canaries(cloud, 1)
    deployment = masakari(_sections(tmp_path, bmc))
    segment = deployment.segment("drill-seg", HOSTS)

    answer = deployment.api.post(
        f"/segments/{segment}/drills",
        json={"drill": {"host": HOST, "no_fence": True, "move_back": True}},
        headers=V19,
    )
    assert answer.status_code == 202, answer.text
    path = f"/segments/{segment}/drills/{answer.json()['drill']['id']}"

    def ended() -> dict[str, Any] | None:
        found = deployment.api.get(path, headers=V19).json()["drill"]
        return found if found["status"] in ("succeeded", "failed") else None

    def restoring() -> bool:
        found = deployment.api.get(path, headers=V19).json()["drill"]
        assert found["status"] != "failed", found
        return any(p["name"] == "restore" for p in found["phases"])

    # Nothing restarted nova-compute (no power off): Nova keeps compute-1 forced down while
    # the canary's evacuation is `done`, until the operator restarts it (init_host completes
    # it and deletes the canary's old copy there).
    wait_for("the restore under way", restoring, 300, 1)
    assert cloud.services()[HOST]["forced_down"] is True
    cloud.kill_compute(HOST)
    cloud.start_compute(HOST)
    drill = wait_for("the drill's end", ended, 600, 2)
    _record(tmp_path, drill)
    restore = next(p for p in drill["phases"] if p["name"] == "restore")
    assert "forced_down kept by Nova until nova-compute restarts" in restore["detail"]

    assert drill["status"] == "succeeded", drill
    assert [p["name"] for p in drill["phases"]][-3:] == ["restore", "move_back", "return"]
    assert bmc.commands == []  # never asked: not fenced
    # Nova: evacuated away, then live-migrated back to compute-1, both recorded by Nova.
    assert records.host_of(cloud.server(canary)) == HOST
    assert records.vm_state(cloud.server(canary)) == "active"
    actions = records.action_names(cloud, canary)
    assert actions[-2:] == ["evacuate", "live-migration"], actions
    assert _allocated_on(cloud, canary) == [HOST]
    _restored(cloud, deployment, segment, bmc)


@pytest.mark.extended
def test_an_untagged_server_refuses_the_drill_and_nothing_changes(
    cloud: Cloud, masakari: Callable[..., Masakari], bmc: FakeBMC, tmp_path: Path
) -> None:
    _canaries(cloud, 1)
    tenant = cloud.boot("tenant", HOST)
    deployment = masakari(_sections(tmp_path, bmc))
    segment = deployment.segment("drill-seg", HOSTS)

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "masakari.cmd.manage",
            "--config-file",
            str(deployment.conf),
            "drill",
            "run",
            segment,
            "--host",
            HOST,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 1
    assert f"without the tag '{TAG}': {tenant}" in done.stderr
    assert records.action_names(cloud, tenant) == ["create"]
    assert bmc.commands.count("off") == 0
    _restored(cloud, deployment, segment, bmc)


def test_an_engine_killed_mid_drill_is_taken_over_and_the_host_restored(
    cloud: Cloud, masakari: Callable[..., Masakari], bmc: FakeBMC, tmp_path: Path
) -> None:
    canaries = _canaries(cloud, 2)
    deployment = masakari(_sections(tmp_path, bmc), engines=2)
    segment = deployment.segment("drill-seg", HOSTS)
    answer = deployment.api.post(
        f"/segments/{segment}/drills", json={"drill": {"host": HOST}}, headers=V19
    )
    assert answer.status_code == 202, answer.text
    path = f"/segments/{segment}/drills/{answer.json()['drill']['id']}"

    def fenced() -> dict[str, Any] | None:
        found = deployment.api.get(path, headers=V19).json()["drill"]
        done = [p["name"] for p in found["phases"] if p["result"] == "ok"]
        return found if "fence" in done else None

    running = wait_for("compute-1 fenced", fenced, 120, 0.2)
    owner = running["engine"]
    index = next(i for i, p in enumerate(deployment.engines) if f":{p.pid}:" in owner)
    deployment.kill_engine(index)
    # What the dead engine left: compute-1 off and forced down in Nova, on maintenance.
    assert bmc.power == "off" and cloud.services()[HOST]["forced_down"] is True
    assert records.masakari_host(deployment, segment, HOST)["on_maintenance"] is True

    def ended() -> dict[str, Any] | None:
        found = deployment.api.get(path, headers=V19).json()["drill"]
        return found if found["status"] in ("succeeded", "failed") else None

    drill = wait_for("the drill taken over and ended", ended, 300, 1)
    _record(tmp_path, drill)

    assert drill["status"] == "failed"
    assert drill["failure_reason"].startswith("the engine that ran it stopped during its ")
    assert drill["engine"] != owner
    assert [p["name"] for p in drill["phases"]][-2:] == ["restore", "return"]
    _restored(cloud, deployment, segment, bmc)
    for server in canaries:  # wherever the dead engine left them: running, not in error
        assert records.vm_state(cloud.server(server)) == "active"
        assert _allocated_on(cloud, server) == [records.host_of(cloud.server(server))]
