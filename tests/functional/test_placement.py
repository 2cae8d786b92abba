"""The simulator's Placement through masakari's Placement client: sizes, usages, and what
evacuations claim and free."""

from __future__ import annotations

import pytest
import requests

from masakari import exception
from masakari.compute.placement import PlacementClient, flavor_resources
from tests.fakes.nova import ADMIN_TOKEN, NovaSimulator
from tests.fakes.placement import Flavor

LARGE = Flavor("m1.large", vcpus=4, ram=8192, disk=40, swap=1500)


@pytest.fixture
def sim():
    with NovaSimulator() as simulator:
        yield simulator


def test_capacity_and_usage_follow_the_servers(sim):
    sim.add_service("c1", state="down", vcpus=8, memory_mb=16384, disk_gb=200)
    sim.add_service("c2", vcpus=4, memory_mb=8192, disk_gb=100)
    vm = sim.add_server(host="c1", flavor=LARGE)
    nova = sim.client()
    placement = PlacementClient(nova.session)
    need = flavor_resources({"flavor": nova.get_server(vm).flavor})
    assert need == {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 42}
    c1, c2 = placement.host_capacity("c1"), placement.host_capacity("c2")
    assert c1 is not None and c2 is not None
    assert c1.used == need and c2.fits(need)
    assert placement.host_capacity("nowhere") is None

    nova.evacuate(vm)
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "c2"
    assert placement.usages(c1.provider_uuid) == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
    assert placement.usages(c2.provider_uuid) == need
    # c2 is now full: the scheduler finds no host for a second large instance
    candidates = placement.allocation_candidates(need)
    assert list(candidates["provider_summaries"]) == [c1.provider_uuid]


def test_scheduler_skips_a_host_without_room(sim):
    sim.add_service("c1", state="down")
    sim.add_service("small", vcpus=2)
    sim.add_service("big", vcpus=16)
    vm = sim.add_server(host="c1", flavor=LARGE)
    sim.client().evacuate(vm)
    assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] == "big"


def test_real_api_shapes_and_errors(sim):
    sim.add_service("c1", vcpus=8)
    headers = {"X-Auth-Token": ADMIN_TOKEN, "OpenStack-API-Version": "placement 1.31"}
    resp = requests.get(sim.placement_url + "/resource_providers?name=c1", headers=headers)
    assert resp.headers["openstack-api-version"] == "placement 1.31"
    rp = resp.json()["resource_providers"][0]
    inv = requests.get(
        f"{sim.placement_url}/resource_providers/{rp['uuid']}/inventories", headers=headers
    ).json()
    assert inv["inventories"]["VCPU"]["total"] == 8
    too_new = {**headers, "OpenStack-API-Version": "placement 9.0"}
    assert requests.get(sim.placement_url + "/", headers=too_new).status_code == 406
    missing = requests.get(sim.placement_url + "/resource_providers/nope", headers=headers)
    assert missing.status_code == 404 and missing.json()["errors"][0]["status"] == 404
    assert requests.get(sim.placement_url + "/resource_providers").status_code == 401
    # the client reports Placement's refusal, it never reads it as "no capacity"
    with pytest.raises(exception.NovaError) as err:
        PlacementClient(sim.client().session).inventories("nope")
    assert err.value.status == 404
