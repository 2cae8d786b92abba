"""No room for a server of the failed host: the real Nova puts it in ERROR on its source host
(its evacuate action's rebuild in Error); masakari must see that at once, and a retry after
the host came back must leave the host alone."""

from __future__ import annotations

from collections.abc import Callable

from tests.openstack import records
from tests.support.openstack.cloud import Cloud
from tests.support.openstack.masakari import Masakari

FAILED = "compute-1"
OTHERS = ["compute-2", "compute-3"]
TIMEOUT_MESSAGE = "Failed reason: timeout."


def _full_cloud(cloud: Cloud) -> tuple[str, str]:
    """compute-2 and compute-3 with 1 VCPU free each (8 usable); compute-1 full with two
    large servers (4 VCPU each: they fit nowhere else), one of them in ERROR before the
    failure. (active, in error)."""
    fillers = [
        cloud.boot(f"filler-{host}-{flavor}", host, flavor=flavor, wait=False)
        for host in OTHERS
        for flavor in ("m1.large", "m1.medium", "m1.small")
    ]
    active, error = cloud.wait_active(
        [cloud.boot(f"vm-{n}", FAILED, flavor="m1.large", wait=False) for n in range(2)]
    )
    cloud.wait_active(fillers)
    cloud.nova.post(f"/servers/{error}/action", json={"os-resetState": {"state": "error"}})
    return active, error


def _assert_no_valid_host(cloud: Cloud, deployment: Masakari, nid: str, server: str) -> None:
    """The server in ERROR where it was, its one evacuation's rebuild in Error, and
    masakari's vmove failed for that reason, not given up at its time-out."""
    found = cloud.server(server)
    assert (records.host_of(found), records.vm_state(found)) == (FAILED, "error")
    evacuated = records.evacuations(cloud, server)
    assert len(evacuated) == 1
    assert "Error" in records.event_results(evacuated[0]).values()
    move = records.vmoves(deployment, nid)[server]
    assert move["status"] == "failed"
    assert move["message"] != TIMEOUT_MESSAGE


def test_no_room_then_the_host_comes_back_before_the_retry(
    cloud: Cloud, masakari: Callable[..., Masakari]
) -> None:
    """No room for either server of the failed host: the real Nova puts each in ERROR on its
    source host. masakari sees it at once (for the server already in ERROR too: only its
    instance action tells), far before wait_period_after_evacuation. Then the host's
    nova-compute comes back before the periodic retry: with retry_only_while_host_down the
    retry changes nothing in Nova (no disable, no evacuation) and ends the notification
    with the reason."""
    servers = _full_cloud(cloud)
    deployment = masakari(
        {
            "DEFAULT": {
                "wait_period_after_service_update": 0,
                # Far longer than the drill may take: a failure seen only then would show.
                "wait_period_after_evacuation": 900,
                # No retry by this engine: the drill brings the host back first.
                "process_unfinished_notifications_interval": 3600,
            },
            "host_failure": {"retry_only_while_host_down": True},
        }
    )
    deployment.segment("seg", [FAILED, *OTHERS])
    cloud.kill_compute(FAILED)
    cloud.wait_computes([FAILED], "down", timeout=60)
    nid = deployment.report_host_down(FAILED)
    deployment.wait_notification(nid, ("error",), timeout=240)
    for server in servers:
        _assert_no_valid_host(cloud, deployment, nid, server)

    # The host comes back; then an engine that retries soon.
    deployment.kill_engine(0)
    deployment.reconfigure({"DEFAULT": {"process_unfinished_notifications_interval": 5}})
    cloud.start_compute(FAILED)
    cloud.wait_computes([FAILED], "up", timeout=60)
    before = cloud.services()[FAILED]
    actions = {server: records.action_names(cloud, server) for server in servers}
    deployment.start_engine()
    ended = deployment.wait_notification(
        nid, ("failed",), timeout=120, ends=("finished", "failed", "ignored")
    )

    after = cloud.services()[FAILED]
    keys = ("status", "disabled_reason", "forced_down", "state")
    assert [after[k] for k in keys] == [before[k] for k in keys]
    assert {server: records.action_names(cloud, server) for server in servers} == actions
    details = deployment.api.get(
        f"/notifications/{nid}", headers={"OpenStack-API-Version": "instance-ha 1.1"}
    ).json()["notification"]["recovery_workflow_details"]
    assert any("back" in str(task) for task in details), details
    assert ended["status"] == "failed"
