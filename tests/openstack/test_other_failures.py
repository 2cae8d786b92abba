"""Instance failure, process failure and a reserved-host recovery with real aggregates,
against the real Nova."""

from __future__ import annotations

from collections.abc import Callable

from tests.openstack import records
from tests.support.openstack.cloud import Cloud
from tests.support.openstack.masakari import Masakari

HOSTS = ["compute-1", "compute-2", "compute-3"]


def test_instance_failure_restarts_the_server(
    cloud: Cloud, masakari: Callable[..., Masakari]
) -> None:
    """A VM crashed (stopped in Nova through the fake driver) and the instance monitor's
    STOPPED_FAILED report: masakari starts it again where it is."""
    server = cloud.boot("vm-crashed", "compute-2", metadata={"HA_Enabled": "True"})
    cloud.nova.post(f"/servers/{server}/action", json={"os-stop": None})
    cloud.wait_server(server, lambda s: records.vm_state(s) == "stopped", 60)
    deployment = masakari()
    deployment.segment("seg", HOSTS)
    nid = deployment.notify(
        "VM",
        "compute-2",
        {"event": "LIFECYCLE", "instance_uuid": server, "vir_domain_event": "STOPPED_FAILED"},
    )
    deployment.wait_notification(nid, timeout=180)
    found = cloud.server(server)
    assert (records.vm_state(found), records.host_of(found)) == ("active", "compute-2")
    assert found["locked"] is False
    assert records.action_names(cloud, server)[-1] == "start"


def test_process_failure_disables_the_compute_service(
    cloud: Cloud, masakari: Callable[..., Masakari]
) -> None:
    deployment = masakari()
    segment = deployment.segment("seg", HOSTS)
    nid = deployment.notify(
        "PROCESS", "compute-2", {"event": "STOPPED", "process_name": "nova-compute"}
    )
    deployment.wait_notification(nid, timeout=180)
    service = cloud.services()["compute-2"]
    assert (service["status"], service["disabled_reason"]) == (
        "disabled",
        "Masakari detected process failed.",
    )
    assert records.masakari_host(deployment, segment, "compute-2")["on_maintenance"] is True


def test_reserved_host_with_aggregates(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    """compute-3 is the segment's spare (disabled in Nova, reserved in masakari); compute-1
    fails: the spare joins compute-1's aggregate, is enabled, and receives its servers."""
    aggregate = cloud.nova.post("/os-aggregates", json={"aggregate": {"name": "rack-a"}}).json()[
        "aggregate"
    ]
    cloud.nova.post(
        f"/os-aggregates/{aggregate['id']}/action", json={"add_host": {"host": "compute-1"}}
    )
    servers = cloud.wait_active([cloud.boot(f"vm-{n}", "compute-1", wait=False) for n in range(2)])
    spare = cloud.services()["compute-3"]
    cloud.nova.put(
        f"/os-services/{spare['id']}", json={"status": "disabled", "disabled_reason": "spare"}
    )
    deployment = masakari(
        {
            "DEFAULT": {"wait_period_after_service_update": 0},
            "host_failure": {"add_reserved_host_to_aggregate": True},
        }
    )
    segment = deployment.segment("seg", HOSTS, "reserved_host", reserved=("compute-3",))
    cloud.kill_compute("compute-1")
    cloud.wait_computes(["compute-1"], "down", timeout=60)
    nid = deployment.report_host_down("compute-1")
    deployment.wait_notification(nid, timeout=240)

    for server in servers:
        records.assert_recovered(cloud, server, "compute-1", "active")
        assert records.host_of(cloud.server(server)) == "compute-3"
    hosts = cloud.nova.get(f"/os-aggregates/{aggregate['id']}").json()["aggregate"]["hosts"]
    assert sorted(hosts) == ["compute-1", "compute-3"]
    assert cloud.services()["compute-3"]["status"] == "enabled"
    assert records.masakari_host(deployment, segment, "compute-3")["reserved"] is False


def test_rh_priority_falls_back_to_auto(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    """rh_priority: the reserved host first. compute-3, the spare, is down too (its
    nova-compute killed): Nova cannot rebuild there (each server in ERROR, its evacuation in
    Error), and the auto flow that follows evacuates each again, through the scheduler, to
    compute-2, where it runs again."""
    servers = cloud.wait_active([cloud.boot(f"vm-{n}", "compute-1", wait=False) for n in range(2)])
    spare = cloud.services()["compute-3"]
    cloud.nova.put(
        f"/os-services/{spare['id']}", json={"status": "disabled", "disabled_reason": "spare"}
    )
    deployment = masakari({"DEFAULT": {"wait_period_after_service_update": 0}})
    deployment.segment("seg", HOSTS, "rh_priority", reserved=("compute-3",))
    cloud.kill_compute("compute-3")
    cloud.kill_compute("compute-1")
    cloud.wait_computes(["compute-1", "compute-3"], "down", timeout=60)
    nid = deployment.report_host_down("compute-1")
    deployment.wait_notification(nid, timeout=300)

    for server in servers:
        found = cloud.server(server)
        assert (records.host_of(found), records.vm_state(found)) == ("compute-2", "active")
        assert found["locked"] is False
        evacuated = records.evacuations(cloud, server)
        assert [set(records.event_results(a).values()) for a in evacuated][-1] == {"Success"}
        assert len(evacuated) == 2, evacuated
