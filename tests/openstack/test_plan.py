"""The recovery plan and the readiness doctor against the real Placement: what the plan said
before the failure is what Nova then received."""

from __future__ import annotations

from collections.abc import Callable

from tests.openstack import records
from tests.support.openstack.cloud import Cloud
from tests.support.openstack.masakari import Masakari

FAILED = "compute-1"
HOSTS = ["compute-1", "compute-2", "compute-3"]
V15 = {"OpenStack-API-Version": "instance-ha 1.5"}


def test_the_plan_is_what_nova_receives(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    """compute-2 keeps 1 VCPU free, compute-3 2; compute-1 holds a large server (4 VCPU) and
    two small ones (1 each). The plan, read from Placement before the failure, sends the small
    ones and leaves the large one behind; the doctor's capacity check fails. Then compute-1
    fails: Nova receives an evacuation for exactly the planned ones, and they run elsewhere."""
    fillers = [
        ("compute-2", "m1.large"),
        ("compute-2", "m1.medium"),
        ("compute-2", "m1.small"),
        ("compute-3", "m1.large"),
        ("compute-3", "m1.medium"),
    ]
    booted = [
        cloud.boot(f"filler-{n}", h, flavor=f, wait=False) for n, (h, f) in enumerate(fillers)
    ]
    large = cloud.boot("vm-large", FAILED, flavor="m1.large", wait=False)
    small = [cloud.boot(f"vm-small-{n}", FAILED, wait=False) for n in range(2)]
    cloud.wait_active([*booted, large, *small])
    deployment = masakari(
        {
            "DEFAULT": {"api_max_microversion": "1.5", "wait_period_after_service_update": 0},
            "host_failure": {"capacity_aware_targets": True},
        }
    )
    segment = deployment.segment("seg", HOSTS)
    host = records.masakari_host(deployment, segment, FAILED)["uuid"]

    plan = deployment.api.get(f"/segments/{segment}/hosts/{host}/recovery_plan", headers=V15)
    assert plan.status_code == 200, plan.text
    planned = plan.json()["recovery_plan"]
    assert planned["verdict"] == "partial"
    targets = {i["instance_id"]: i["target"] for i in planned["instances"]}
    assert targets == {large: None, small[0]: "scheduler", small[1]: "scheduler"}
    readiness = deployment.api.get(f"/segments/{segment}/readiness", headers=V15).json()
    capacity = [f for f in readiness["readiness"]["findings"] if f["check"] == "capacity"]
    assert [f["status"] for f in capacity] == ["failure"], capacity

    cloud.kill_compute(FAILED)
    cloud.wait_computes([FAILED], "down", timeout=60)
    nid = deployment.report_host_down(FAILED)
    deployment.wait_notification(nid, ("error", "finished"), timeout=240)

    received = {s for s in targets if records.evacuations(cloud, s)}
    assert received == {s for s, target in targets.items() if target is not None}
    for server in small:
        records.assert_recovered(cloud, server, FAILED, "active")
    assert records.host_of(cloud.server(large)) == FAILED
    assert records.vmoves(deployment, nid)[large]["status"] == "failed"
