"""No room for a server of the failed host: the real Nova puts it in ERROR on its source host
(its evacuate action's rebuild in Error); masakari must see that at once, and a retry after
the host came back must leave the host alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.openstack import records
from tests.support.openstack.cloud import Cloud
from tests.support.openstack.masakari import Masakari

FAILED = "compute-1"
OTHERS = ["compute-2", "compute-3"]
TIMEOUT_MESSAGE = "Failed reason: timeout."


def _full_cloud(cloud: Cloud) -> tuple[str, str]:
    """compute-2 and compute-3 with 1 VCPU free each (8 usable); compute-1 with a small server
    (fits there) and a large one (4 VCPU: fits nowhere). (small, large)."""
    for host in OTHERS:
        for flavor in ("m1.large", "m1.medium", "m1.small"):
            cloud.boot(f"filler-{host}-{flavor}", host, flavor=flavor)
    return cloud.boot("vm-small", FAILED), cloud.boot("vm-large", FAILED, flavor="m1.large")


def _fail_and_report(cloud: Cloud, deployment: Masakari) -> str:
    deployment.segment("seg", [FAILED, *OTHERS])
    cloud.kill_compute(FAILED)
    cloud.wait_computes([FAILED], "down", timeout=60)
    return deployment.report_host_down(FAILED)


def _assert_no_valid_host(cloud: Cloud, deployment: Masakari, nid: str, large: str) -> None:
    """The large server in ERROR where it was, its one evacuation's rebuild in Error, and
    masakari's vmove failed for that reason, not given up at its time-out."""
    server = cloud.server(large)
    assert (records.host_of(server), records.vm_state(server)) == (FAILED, "error")
    evacuated = records.evacuations(cloud, large)
    assert len(evacuated) == 1
    assert "Error" in records.event_results(evacuated[0]).values()
    move = records.vmoves(deployment, nid)[large]
    assert move["status"] == "failed"
    assert move["message"] != TIMEOUT_MESSAGE


@pytest.mark.parametrize("state", ["active", "error"])
def test_no_room_for_one_server(
    cloud: Cloud, masakari: Callable[..., Masakari], state: str
) -> None:
    """Also for a server in ERROR before the failure: its failed evacuation leaves it as it
    was (ERROR on the failed host), which only its instance action tells apart."""
    small, large = _full_cloud(cloud)
    if state == "error":
        cloud.nova.post(f"/servers/{large}/action", json={"os-resetState": {"state": "error"}})
    # Far longer than a recovery takes: a failure seen only at the time-out would show.
    deployment = masakari(
        {"DEFAULT": {"wait_period_after_service_update": 0, "wait_period_after_evacuation": 600}}
    )
    nid = _fail_and_report(cloud, deployment)
    deployment.wait_notification(nid, ("error",), timeout=240)

    records.assert_recovered(cloud, small, FAILED, "active")
    _assert_no_valid_host(cloud, deployment, nid, large)


def test_retry_after_the_host_came_back(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    """The recovery ends in error; the host's nova-compute comes back before the periodic
    retry; with retry_only_while_host_down the retry changes nothing in Nova (no disable, no
    evacuation) and ends the notification with the reason."""
    _, large = _full_cloud(cloud)
    deployment = masakari(
        {
            "DEFAULT": {
                "wait_period_after_service_update": 0,
                "process_unfinished_notifications_interval": 15,
            },
            "host_failure": {"retry_only_while_host_down": True},
        }
    )
    nid = _fail_and_report(cloud, deployment)
    deployment.wait_notification(nid, ("error",), timeout=240)
    cloud.start_compute(FAILED)
    cloud.wait_computes([FAILED], "up", timeout=60)
    before = cloud.services()[FAILED]
    actions = records.action_names(cloud, large)

    ended = deployment.wait_notification(nid, ("failed",), timeout=120)
    after = cloud.services()[FAILED]
    assert (after["status"], after["disabled_reason"], after["forced_down"]) == (
        before["status"],
        before["disabled_reason"],
        before["forced_down"],
    )
    assert after["state"] == "up"
    assert records.action_names(cloud, large) == actions
    details = deployment.api.get(
        f"/notifications/{nid}", headers={"OpenStack-API-Version": "instance-ha 1.1"}
    ).json()["notification"]["recovery_workflow_details"]
    assert any("back" in str(task) for task in details), details
    assert ended["status"] == "failed"
