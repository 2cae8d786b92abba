"""Failover room held in the real Placement ([capacity] hold_room): Nova's scheduler refuses
a boot into it, nova-compute's own inventory write at its start is undone by the next pass,
and a host failure's recovery gives it back and evacuates into it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.openstack import records
from tests.support.openstack.cloud import Cloud, wait_for
from tests.support.openstack.config import MEMORY_MB, VCPUS
from tests.support.openstack.masakari import Masakari

HOSTS = ["compute-1", "compute-2", "compute-3"]
V19 = {"OpenStack-API-Version": "instance-ha 1.9"}
# What nova-compute reserves of the fake driver's 1000 VCPU and 800000 MB (config.py).
NOVA_VCPU = 1000 - VCPUS
NOVA_MEMORY = 800000 - MEMORY_MB
INTERVAL = 5


def _inventory(cloud: Cloud, host: str) -> dict[str, Any]:
    (provider,) = [p for p in cloud.resource_providers() if p["name"] == host]
    return dict(cloud.placement.get(f"/resource_providers/{provider['uuid']}/inventories").json())


def _reserved(cloud: Cloud, host: str, rc: str = "VCPU") -> int:
    return int(_inventory(cloud, host)["inventories"][rc]["reserved"])


@pytest.fixture
def nova_amounts(cloud: Cloud) -> Iterator[None]:
    """Whatever a drill leaves, the next finds nova-compute's own reserved amounts."""
    yield
    for host in HOSTS:
        found = _inventory(cloud, host)
        (provider,) = [p for p in cloud.resource_providers() if p["name"] == host]
        for rc, amount in (("VCPU", NOVA_VCPU), ("MEMORY_MB", NOVA_MEMORY)):
            if found["inventories"][rc]["reserved"] != amount:
                body = {
                    **found["inventories"][rc],
                    "reserved": amount,
                    "resource_provider_generation": found["resource_provider_generation"],
                }
                cloud.placement.put(
                    f"/resource_providers/{provider['uuid']}/inventories/{rc}", json=body
                )
                found = _inventory(cloud, host)


def test_room_held_refuses_boots_and_is_used_by_the_recovery(
    cloud: Cloud, masakari: Callable[..., Masakari], nova_amounts: None
) -> None:
    servers = cloud.wait_active(
        [cloud.boot(f"vm-{h}", h, flavor="m1.large", wait=False) for h in HOSTS]
    )
    deployment = masakari(
        {
            "DEFAULT": {"api_max_microversion": "1.9", "wait_period_after_service_update": 0},
            "capacity": {
                "hold_room": True,
                "failures_to_tolerate": 1,
                "hold_interval": INTERVAL,
            },
        }
    )
    segment = deployment.segment("held", HOSTS)

    def held() -> dict[str, Any]:
        answer = deployment.api.get(f"/segments/{segment}/readiness", headers=V19)
        assert answer.status_code == 200, answer.text
        return dict(answer.json()["readiness"]["failures_tolerated"])

    # Any one host's large server (4 VCPU, 4096 MB) must fit on the others: compute-1's
    # goes to compute-2, the others' to compute-1.
    wanted = {"VCPU": 4, "MEMORY_MB": 4096}
    wait_for(
        "room held",
        lambda: held()["held"]["hosts"] == {"compute-1": wanted, "compute-2": wanted},
        60,
    )
    assert [_reserved(cloud, h) for h in HOSTS] == [NOVA_VCPU + 4, NOVA_VCPU + 4, NOVA_VCPU]
    assert _reserved(cloud, "compute-1", "MEMORY_MB") == NOVA_MEMORY + 4096
    tolerated = held()
    assert (tolerated["k"], tolerated["target"], tolerated["below_target"]) == (1, 1, False)

    # Nova's scheduler refuses a boot into the held room, and takes one that leaves it whole.
    refused = cloud.boot("into-the-room", "compute-1", flavor="m1.large", wait=False)
    found = cloud.wait_server(refused, lambda s: s["status"] in ("ERROR", "ACTIVE"), 120)
    assert found["status"] == "ERROR"
    assert "No valid host" in found["fault"]["message"]
    cloud.nova.delete(f"/servers/{refused}")
    late = cloud.boot("beside-the-room", "compute-3", flavor="m1.large")
    assert records.host_of(cloud.server(late)) == "compute-3"

    # nova-compute writes its own reserved amount at its start: the next pass adds the room
    # to it again.
    cloud.kill_compute("compute-2")
    cloud.start_compute("compute-2")
    wait_for("nova-compute's write", lambda: _reserved(cloud, "compute-2") == NOVA_VCPU, 90)
    wait_for("held again", lambda: _reserved(cloud, "compute-2") == NOVA_VCPU + 4, 60)

    # compute-1 fails. compute-3 is full, compute-2's only free room is the held one: the
    # recovery gives it back first, and the server is evacuated into it.
    cloud.kill_compute("compute-1")
    cloud.wait_computes(["compute-1"], "down", timeout=60)
    nid = deployment.report_host_down("compute-1")
    deployment.wait_notification(nid, ("finished",), timeout=240)
    records.assert_recovered(cloud, servers[0], "compute-1", "active")
    assert records.host_of(cloud.server(servers[0])) == "compute-2"
    # Held again for what is left: compute-2 and compute-3 are full, so neither's failure
    # fits anywhere; nothing is held and Placement has nova-compute's amounts.
    wait_for(
        "the release ended",
        lambda: held()["held"] == {"hosts": {}, "released_for": None},
        60,
    )
    assert [_reserved(cloud, h) for h in HOSTS] == [NOVA_VCPU] * 3
    assert held()["k"] == 0
