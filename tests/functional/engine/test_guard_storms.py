"""The storms the guards are for, through the API, against the Nova simulator.

Each test drives reports through masakari-api (microversion 1.4 on), an engine recovering
from the same database, and asserts on what Nova received and what the database holds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from masakari.db import holds
from tests.fakes import nova as fake_nova
from tests.support.storms import host_report


def test_ten_of_twenty_hosts_failing_within_a_minute(make_cloud: Any) -> None:
    cloud = make_cloud(
        20, guards={"segment_max_failed_hosts_percent": "25", "failed_hosts_window": "60"}
    )
    failing = cloud.hosts[:10]
    for name in failing:
        cloud.dep.sim.power_off(name)
    accepted = [cloud.report(name) for name in failing]
    # 5 of 20 is 25 %: the sixth failed host is past the threshold.
    assert [n["status"] for n in accepted] == ["new"] * 5 + ["held"] * 5
    assert [n["hold_reason"] for n in accepted] == [None] * 5 + [holds.REASON_SEGMENT] * 5
    first = [n["notification_uuid"] for n in accepted[:5]]
    held = [n["notification_uuid"] for n in accepted[5:]]

    cloud.start_engine()
    assert cloud.wait_final(first) == ["finished"] * 5
    time.sleep(1.0)  # a few more engine polls and sweeps
    assert [cloud.show(nid)["status"] for nid in held] == ["held"] * 5
    # Clients at 1.3 see a held notification as new, in the 1.3 body.
    old = cloud.show(held[0], version="1.3")
    assert old["status"] == "new" and "hold_reason" not in old
    assert sorted(cloud.evacuated()) == sorted(cloud.servers[h] for h in failing[:5])

    for nid in held:
        resp = cloud.action(nid, "release")
        assert resp.status_int == 200
        assert resp.json["notification"]["status"] == "new"
    assert cloud.wait_final(held) == ["finished"] * 5
    assert sorted(cloud.evacuated()) == sorted(cloud.servers[h] for h in failing)
    for name in failing:
        server = cloud.dep.sim.server(cloud.servers[name])
        assert server["OS-EXT-SRV-ATTR:host"] not in failing


def test_a_flapping_host_is_not_recovered_twice(make_cloud: Any) -> None:
    cloud = make_cloud(4, guards={"segment_max_failed_hosts": "2"})
    cloud.dep.sim.power_off("compute-1")
    down = cloud.report("compute-1")
    up = cloud.dep.request(
        "POST", "/v1/notifications", host_report("compute-1", event="STARTED"), version="1.4"
    )
    again = cloud.dep.request("POST", "/v1/notifications", host_report("compute-1"), version="1.4")
    # The second failure report repeats the first: refused as a duplicate, never run.
    assert (up.status_int, again.status_int) == (202, 409)
    cloud.start_engine()
    assert cloud.wait_final([down["notification_uuid"]]) == ["finished"]
    assert cloud.wait_final([up.json["notification"]["notification_uuid"]]) == ["finished"]
    assert cloud.evacuated() == [cloud.servers["compute-1"]]


def test_unknown_is_held_then_confirmed(make_cloud: Any) -> None:
    cloud = make_cloud(4, guards={"hold_unknown_host_reports": "true"})
    cloud.dep.sim.power_off("compute-1")
    cloud.start_engine()
    unknown = cloud.report("compute-1", status="UNKNOWN")
    assert (unknown["status"], unknown["hold_reason"]) == ("held", holds.REASON_UNKNOWN)
    time.sleep(1.0)
    assert cloud.show(unknown["notification_uuid"])["status"] == "held"
    assert cloud.evacuated() == []

    confirmed = cloud.report("compute-1")
    assert confirmed["status"] == "new"
    assert cloud.wait_final([confirmed["notification_uuid"]]) == ["finished"]
    closed = cloud.show(unknown["notification_uuid"])
    assert closed["status"] == "ignored"
    assert closed["message"] == holds.SUPERSEDED_MESSAGE % confirmed["notification_uuid"]
    assert cloud.evacuated() == [cloud.servers["compute-1"]]


def test_unknown_released_by_an_operator_is_recovered(make_cloud: Any) -> None:
    cloud = make_cloud(4, guards={"hold_unknown_host_reports": "true"})
    cloud.dep.sim.power_off("compute-2")
    unknown = cloud.report("compute-2", status="UNKNOWN")
    cloud.start_engine()
    assert cloud.action(unknown["notification_uuid"], "release").status_int == 200
    assert cloud.wait_final([unknown["notification_uuid"]]) == ["finished"]
    assert cloud.evacuated() == [cloud.servers["compute-2"]]


def test_cancel_ends_a_held_report_untouched(make_cloud: Any) -> None:
    cloud = make_cloud(4, guards={"hold_unknown_host_reports": "true"})
    unknown = cloud.report("compute-3", status="UNKNOWN")
    nid = unknown["notification_uuid"]
    # Not at 1.3: the route is the reference's unimplemented action there.
    assert cloud.action(nid, "cancel", version="1.3").status_int == 405
    assert cloud.action(nid, "bogus").status_int == 400
    assert cloud.action(nid, "cancel").json["notification"]["status"] == "ignored"
    assert cloud.action(nid, "cancel").status_int == 409
    assert cloud.action("00000000-0000-4000-8000-000000000000", "release").status_int == 404
    cloud.start_engine()
    time.sleep(0.5)
    assert cloud.show(nid)["status"] == "ignored"
    assert cloud.evacuated() == []


def test_failure_reason_from_1_4(make_cloud: Any) -> None:
    cloud = make_cloud(4)
    cloud.dep.sim.power_off("compute-4")
    # The segment wants reserved hosts and has none: the attempt fails.
    seg = cloud.dep.request("GET", "/v1/segments").json["segments"][0]["uuid"]
    body = {"segment": {"recovery_method": "reserved_host"}}
    assert cloud.dep.request("PUT", f"/v1/segments/{seg}", body).status_int == 200
    nid = cloud.report("compute-4")["notification_uuid"]
    assert nid and cloud.show(nid)["failure_reason"] is None
    cloud.start_engine()
    assert cloud.wait_final([nid]) == ["error"]
    assert cloud.show(nid)["failure_reason"] == "No reserved_hosts available for evacuation."
    assert "failure_reason" not in cloud.show(nid, version="1.3")
    assert cloud.evacuated() == []


RETURN_STEPS = ("unset_forced_down", "enable_compute_service", "clear_on_maintenance")


@pytest.mark.parametrize(
    "steps",
    [(), ("enable_compute_service",), RETURN_STEPS],
    ids=["off", "enable-only", "all"],
)
def test_host_returning_after_recovery(make_cloud: Any, steps: tuple[str, ...]) -> None:
    cloud = make_cloud(
        4,
        host_failure={"force_down_fenced_host": "true"},
        host_return={step: "true" for step in steps},
    )
    cloud.dep.sim.power_off("compute-1")
    cloud.start_engine()
    down = cloud.report("compute-1")["notification_uuid"]
    assert cloud.wait_final([down]) == ["finished"]
    service = cloud.dep.sim.service("compute-1")
    assert (service["status"], service["forced_down"]) == ("disabled", True)

    cloud.dep.sim.power_on("compute-1")
    back = cloud.dep.request(
        "POST", "/v1/notifications", host_report("compute-1", event="STARTED"), version="1.4"
    )
    host = cloud.dep.request("GET", "/v1/segments").json["segments"][0]["uuid"]
    hosts = cloud.dep.request("GET", f"/v1/segments/{host}/hosts").json["hosts"]
    if not steps:
        # The reference: the host is on maintenance, its report is refused, nothing changes.
        assert back.status_int == 409
        assert {h["name"]: h["on_maintenance"] for h in hosts}["compute-1"] is True
        return
    assert back.status_int == 202
    nid = back.json["notification"]["notification_uuid"]
    assert cloud.wait_final([nid]) == ["finished"]
    service = cloud.dep.sim.service("compute-1")
    assert service["status"] == "enabled"
    assert service["forced_down"] is ("unset_forced_down" not in steps)
    hosts = cloud.dep.request("GET", f"/v1/segments/{host}/hosts").json["hosts"]
    on_maintenance = {h["name"]: h["on_maintenance"] for h in hosts}["compute-1"]
    assert on_maintenance is ("clear_on_maintenance" not in steps)
    details = cloud.dep.request("GET", f"/v1/notifications/{nid}", version="1.1").json
    tasks = details["notification"]["recovery_workflow_details"]
    assert [(t["name"], t["state"]) for t in tasks] == [("ReturnHostTask", "SUCCESS")]
    messages = [d["message"] for d in tasks[0]["progress_details"]]
    assert "Enabled compute service on host 'compute-1'" in messages
    assert ("Host 'compute-1' is no longer on maintenance" in messages) is (
        "clear_on_maintenance" in steps
    )


def test_scope_rules_leave_service_instances_and_other_projects(make_cloud: Any) -> None:
    cloud = make_cloud(
        4,
        host_failure={
            "scope_exclude_metadata": "role=amphora",
            "scope_include_projects": fake_nova.MEMBER_PROJECT_ID,
        },
    )
    sim = cloud.dep.sim
    amphora = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True", "role": "amphora"})
    foreign = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"}, tenant_id="other")
    sim.power_off("compute-1")
    cloud.start_engine()
    nid = cloud.report("compute-1")["notification_uuid"]
    assert cloud.wait_final([nid]) == ["finished"]
    assert cloud.evacuated() == [cloud.servers["compute-1"]]
    assert sim.server(amphora)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    assert sim.server(foreign)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    shown = cloud.dep.request("GET", f"/v1/notifications/{nid}", version="1.1").json
    messages = [
        d["message"]
        for task in shown["notification"]["recovery_workflow_details"]
        for d in task["progress_details"]
    ]
    assert (
        f"Instance '{amphora}' is out of scope ([host_failure] scope_exclude_metadata): "
        "not evacuated" in messages
    )
    assert (
        f"Instance '{foreign}' is out of scope ([host_failure] scope_include_projects): "
        "not evacuated" in messages
    )


def test_host_return_leaves_a_service_someone_else_disabled(make_cloud: Any) -> None:
    cloud = make_cloud(4, host_return={step: "true" for step in RETURN_STEPS})
    sim = cloud.dep.sim
    service_id = sim.service("compute-2")["id"]
    with sim.lock:
        for service in sim.services:
            if service.id == service_id:
                service.status, service.disabled_reason = "disabled", "hardware swap"
    seg = cloud.dep.request("GET", "/v1/segments").json["segments"][0]["uuid"]
    hosts = cloud.dep.request("GET", f"/v1/segments/{seg}/hosts").json["hosts"]
    host = {h["name"]: h["uuid"] for h in hosts}["compute-2"]
    body = {"host": {"on_maintenance": True}}
    assert cloud.dep.request("PUT", f"/v1/segments/{seg}/hosts/{host}", body).status_int == 200
    cloud.start_engine()
    nid = cloud.report("compute-2", event="STARTED")["notification_uuid"]
    assert cloud.wait_final([nid]) == ["finished"]
    assert sim.service("compute-2")["status"] == "disabled"
    shown = cloud.dep.request("GET", f"/v1/notifications/{nid}", version="1.1").json
    messages = [
        d["message"]
        for task in shown["notification"]["recovery_workflow_details"]
        for d in task["progress_details"]
    ]
    assert (
        "Compute service on host 'compute-2' was disabled by someone else ('hardware swap'): "
        "left disabled" in messages
    )
    # Maintenance is masakari's own flag: cleared.
    hosts = cloud.dep.request("GET", f"/v1/segments/{seg}/hosts").json["hosts"]
    assert {h["name"]: h["on_maintenance"] for h in hosts}["compute-2"] is False
