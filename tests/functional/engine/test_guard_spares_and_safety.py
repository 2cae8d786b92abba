"""Host return of a used spare, unsafe evacuations and aggregate scope, against the simulator.

Through the API (microversion 1.4 on) and an engine on the same database, as in
test_guard_storms.py; assertions are on what Nova received and what the database holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from masakari.engine.recovery import host_return
from tests.support import storms
from tests.support.engine import vmoves


@pytest.mark.parametrize("case", ["off", "busy", "empty"])
def test_a_used_spare_goes_back_to_the_pool_once_empty(make_cloud: Any, case: str) -> None:
    steps = {"enable_compute_service": "true"}
    if case != "off":
        steps["return_reserved_hosts"] = "true"
    cloud = make_cloud(4, host_return=steps)
    storms.with_spare(cloud)
    sim = cloud.dep.sim
    sim.power_off("compute-1")
    cloud.start_engine()
    down = cloud.report("compute-1")["notification_uuid"]
    assert cloud.wait_final([down]) == ["finished"]
    moved = cloud.servers["compute-1"]
    assert sim.server(moved)["OS-EXT-SRV-ATTR:host"] == "compute-4"
    assert storms.host_rows(cloud)["compute-4"].reserved is False
    assert sim.service("compute-4")["status"] == "enabled"

    if case == "empty":
        # The operator moved the instance home again before the host reported back.
        with sim.lock:
            next(s for s in sim.servers if s.id == moved).host = "compute-1"
    sim.power_on("compute-1")
    sim.clear_calls()
    back = cloud.report("compute-1", event="STARTED")["notification_uuid"]
    assert cloud.wait_final([back]) == ["finished"]
    spare = storms.host_rows(cloud)["compute-4"]
    service = sim.service("compute-4")
    messages = storms.messages(cloud, back)
    if case == "empty":
        assert (spare.reserved, spare.on_maintenance) == (True, False)
        assert (service["status"], service["disabled_reason"]) == (
            "disabled",
            host_return.SPARE_DISABLE_REASON,
        )
        assert "Returned reserved host 'compute-4' to the reserved pool" in messages
    else:
        assert spare.reserved is False
        assert service["status"] == "enabled"
    if case == "busy":
        assert (
            "Reserved host 'compute-4' still hosts 1 instances: not returned to the reserved pool"
            in messages
        )
    spare_service = f"/os-services/{service['id']}"
    asked_spare = ["host", "compute-4"] in [q for c in sim.nova_calls() for q in c["query"]]
    if case == "busy":
        # Asked before any change: nothing sent to the spare's service.
        assert spare_service not in storms.nova_paths(cloud, "PUT")
        assert asked_spare
    if case == "off":
        # The option off: not even the spare's instances are asked for.
        assert not asked_spare
        assert spare_service not in storms.nova_paths(cloud, "PUT")
    if case == "empty":
        # Disabled, then asked again (an instance Nova placed meanwhile would keep it).
        assert storms.nova_paths(cloud, "PUT").count(spare_service) == 1


@pytest.mark.parametrize("check", [False, True], ids=["off", "on"])
def test_anti_affinity_with_the_spare(make_cloud: Any, check: bool) -> None:
    options = {"check_server_groups": "true"} if check else {}
    cloud = make_cloud(4, host_failure=options)
    storms.with_spare(cloud)
    sim = cloud.dep.sim
    # A member of the group already runs on the spare (an operator put it there).
    member = sim.add_server(host="compute-4")
    grouped = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.add_server_group("anti-affinity", [grouped, member])
    sim.power_off("compute-1")
    cloud.start_engine()
    nid = cloud.report("compute-1")["notification_uuid"]
    if not check:
        assert cloud.wait_final([nid]) == ["finished"]
        assert sorted(cloud.evacuated()) == sorted([grouped, cloud.servers["compute-1"]])
        assert not any("os-server-groups" in p for p in storms.nova_paths(cloud))
        return
    assert cloud.wait_final([nid]) == ["error"]
    assert cloud.evacuated() == [cloud.servers["compute-1"]]
    assert sim.server(grouped)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    rows = {v.instance_uuid: v for v in vmoves(cloud.dep.db, nid)}
    reason = (
        f"server group '{sim.server_groups[0].id}' (anti-affinity): member(s) {member} "
        "already on 'compute-4'"
    )
    assert (rows[grouped].status, rows[grouped].message) == ("failed", "Failed reason: " + reason)
    assert rows[cloud.servers["compute-1"]].status == "succeeded"
    assert f"Instance '{grouped}' cannot be evacuated safely: {reason}" in storms.messages(
        cloud, nid
    )


@pytest.mark.parametrize("no_shared_storage", [False, True], ids=["off", "on"])
def test_local_root_disks_without_shared_storage(make_cloud: Any, no_shared_storage: bool) -> None:
    options = {"no_shared_storage": "true"} if no_shared_storage else {}
    cloud = make_cloud(4, host_failure=options)
    sim = cloud.dep.sim
    local = sim.add_server(host="compute-2", metadata={"HA_Enabled": "True"}, image="img-1")
    volume = cloud.servers["compute-2"]  # booted from a volume
    sim.power_off("compute-2")
    cloud.start_engine()
    nid = cloud.report("compute-2")["notification_uuid"]
    if not no_shared_storage:
        assert cloud.wait_final([nid]) == ["finished"]
        assert sorted(cloud.evacuated()) == sorted([local, volume])
        return
    assert cloud.wait_final([nid]) == ["error"]
    assert cloud.evacuated() == [volume]
    rows = {v.instance_uuid: v for v in vmoves(cloud.dep.db, nid)}
    assert rows[local].status == "failed"
    assert "root disk is local" in (rows[local].message or "")
    assert rows[volume].status == "succeeded"
    # Nothing was sent about it: no lock, no reset, no evacuation.
    assert not any(local in c["path"] and c["method"] == "POST" for c in sim.nova_calls())


def test_aggregate_scope(make_cloud: Any) -> None:
    cloud = make_cloud(4, host_failure={"scope_exclude_aggregates": "no-ha"})
    sim = cloud.dep.sim
    sim.add_aggregate(7, "no-ha", ["compute-3"])
    sim.add_aggregate(8, "rack-1", ["compute-1", "compute-3"])
    for name in ("compute-1", "compute-3"):
        sim.power_off(name)
    cloud.start_engine()
    left = cloud.report("compute-3")["notification_uuid"]
    moved = cloud.report("compute-1")["notification_uuid"]
    assert cloud.wait_final([left, moved]) == ["finished", "finished"]
    assert cloud.evacuated() == [cloud.servers["compute-1"]]
    assert vmoves(cloud.dep.db, left) == []
    assert (
        "Instances of host 'compute-3' are out of scope ([host_failure] "
        "scope_exclude_aggregates): not evacuated" in storms.messages(cloud, left)
    )


def test_aggregate_include_by_id_and_no_request_when_unset(make_cloud: Any) -> None:
    cloud = make_cloud(4, host_failure={"scope_include_aggregates": "8"})
    sim = cloud.dep.sim
    sim.add_aggregate(8, "rack-1", ["compute-2"])
    sim.power_off("compute-1")
    sim.power_off("compute-2")
    cloud.start_engine()
    out = cloud.report("compute-1")["notification_uuid"]
    kept = cloud.report("compute-2")["notification_uuid"]
    assert cloud.wait_final([out, kept]) == ["finished", "finished"]
    assert cloud.evacuated() == [cloud.servers["compute-2"]]

    plain = make_cloud(4)
    plain.dep.sim.power_off("compute-1")
    plain.start_engine()
    assert plain.wait_final([plain.report("compute-1")["notification_uuid"]]) == ["finished"]
    assert not any("os-aggregates" in p for p in storms.nova_paths(plain))
