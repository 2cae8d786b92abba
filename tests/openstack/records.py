"""What Nova and masakari hold after a drill, read from their own records: Nova's servers,
instance actions and services, masakari's API. The drills assert on these, never on logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.ipmi_bmc import FakeBMC
from tests.support.openstack.cloud import Cloud
from tests.support.openstack.masakari import Masakari


def host_of(server: dict[str, Any]) -> str:
    return str(server["OS-EXT-SRV-ATTR:host"])


def vm_state(server: dict[str, Any]) -> str:
    return str(server["OS-EXT-STS:vm_state"])


def action_names(cloud: Cloud, server_id: str) -> list[str]:
    return [a["action"] for a in cloud.actions(server_id)]


def evacuations(cloud: Cloud, server_id: str) -> list[dict[str, Any]]:
    return [a for a in cloud.actions(server_id) if a["action"] == "evacuate"]


def event_results(action: dict[str, Any]) -> dict[str, str]:
    return {e["event"]: e["result"] for e in action.get("events", [])}


def vmoves(masakari: Masakari, notification: str) -> dict[str, dict[str, Any]]:
    """The notification's vmoves by instance (API 1.3)."""
    answer = masakari.api.get(
        f"/notifications/{notification}/vmoves",
        headers={"OpenStack-API-Version": "instance-ha 1.3"},
    )
    assert answer.status_code == 200, answer.text
    return {v["instance_uuid"]: v for v in answer.json()["vmoves"]}


def masakari_host(masakari: Masakari, segment: str, name: str) -> dict[str, Any]:
    hosts = masakari.api.get(f"/segments/{segment}/hosts").json()["hosts"]
    return next(h for h in hosts if h["name"] == name)


def assert_recovered(cloud: Cloud, server_id: str, source: str, state: str) -> None:
    """Evacuated once from ``source`` and running elsewhere in ``state``, unlocked; its one
    evacuate action ended Success."""
    server = cloud.server(server_id)
    assert host_of(server) != source, server_id
    assert vm_state(server) == state, (server_id, vm_state(server))
    assert server["locked"] is False, server_id
    evacuated = evacuations(cloud, server_id)
    assert len(evacuated) == 1, (server_id, evacuated)
    results = event_results(evacuated[0])
    assert results and set(results.values()) == {"Success"}, (server_id, results)


def fencing_file(tmp_path: Path, bmc: FakeBMC, host: str = "compute-1") -> str:
    """A [fencing] config_file giving ``host`` its BMC (IPMI) with the BMC's credentials."""
    entry = {
        "driver": "ipmi",
        "address": bmc.address,
        "port": bmc.port,
        "username": bmc.username,
        "password": bmc.password,
        "timeout": 10,
    }
    path = tmp_path / "fencing.yaml"
    path.write_text(json.dumps({"version": 1, "hosts": {host: [entry]}}))  # JSON is YAML
    path.chmod(0o600)
    return str(path)
