"""GET /v1/segments/{id}/readiness at 1.8: failures_tolerated, computed on what the Nova
simulator and its Placement hold; at 1.7 the body is the 1.5 one, byte for byte; at 1.9 it
adds the room held in Placement."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from masakari.compute.placement import PlacementClient
from masakari.engine import room, tolerance
from tests.fakes.placement import Flavor
from tests.support.deployment import Deployment, host_body, segment_body

LARGE = Flavor("m1.large", vcpus=4, ram=8192, disk=80)


@pytest.fixture(scope="module")
def dep() -> Iterator[Deployment]:
    options = {
        "DEFAULT": {"api_max_microversion": "1.9"},
        "capacity": {"segment_failures_to_tolerate": "three:1,kept:1"},
    }
    with Deployment(options) as d:
        yield d


def _segment(dep: Deployment, name: str, method: str, hosts: dict[str, dict[str, Any]]) -> str:
    r = dep.request("POST", "/v1/segments", segment_body(name, recovery_method=method))
    assert r.status_int == 201, r.text
    seg = r.json["segment"]["uuid"]
    for host, nova in hosts.items():
        reserved = nova.get("status") == "disabled"
        dep.sim.add_service(host, vcpus=8, **nova)
        r = dep.request("POST", f"/v1/segments/{seg}/hosts", host_body(host, reserved=reserved))
        assert r.status_int == 201, r.text
    return seg


def _tolerated(dep: Deployment, seg: str) -> dict[str, Any]:
    r = dep.request("GET", f"/v1/segments/{seg}/readiness", version="1.8")
    assert r.status_int == 200, r.text
    assert r.headers["OpenStack-API-Version"] == "instance-ha 1.8"
    return dict(r.json["readiness"]["failures_tolerated"])


def test_three_hosts_with_room_for_one_then_filled(dep):
    # 8 VCPU each, 4 used on each: any one host's 4 fit on the other two; two hosts' 8 on
    # the third's 4 free do not.
    seg = _segment(dep, "three", "auto", {"t-1": {}, "t-2": {}, "t-3": {}})
    for host in ("t-1", "t-2", "t-3"):
        dep.sim.add_server(host=host, flavor=LARGE)
    found = _tolerated(dep, seg)
    assert (found["k"], found["target"], found["below_target"]) == (1, 1, False)
    assert found["limiting_resource"] == "VCPU"
    assert (found["worst_case_hosts"], found["left_behind"]) == (["t-1", "t-2"], 1)
    assert found["exact"] and found["hosts_in_service"] == 3
    # Filled: t-2 and t-3 full, t-2's 8 VCPU do not fit in t-1's 4 free.
    dep.sim.add_server(host="t-2", flavor=LARGE)
    dep.sim.add_server(host="t-3", flavor=LARGE)
    found = _tolerated(dep, seg)
    assert (found["k"], found["target"], found["below_target"]) == (0, 1, True)
    assert (found["worst_case_hosts"], found["limiting_resource"]) == (["t-2"], "VCPU")


def test_reserved_host_segment_with_one_spare(dep):
    hosts: dict[str, dict[str, Any]] = {"r-1": {}, "r-2": {}, "r-spare": {"status": "disabled"}}
    seg = _segment(dep, "spared", "reserved_host", hosts)
    dep.sim.add_server(host="r-1", flavor=LARGE)
    dep.sim.add_server(host="r-2", flavor=LARGE)
    found = _tolerated(dep, seg)
    # The spare's 8 VCPU take one host's 4, or both hosts' at once; the spare failing with
    # one of them leaves that one's instance without a target.
    assert (found["k"], found["target"], found["below_target"]) == (1, 0, False)
    assert (found["worst_case_hosts"], found["limiting_resource"]) == (
        ["r-1", "r-spare"],
        "hosts",
    )
    dep.sim.add_server(host="r-1", flavor=LARGE)
    found = _tolerated(dep, seg)
    # r-1's 8 fill the spare: r-1 and r-2 at once now leave r-2's 4 behind, first.
    assert (found["k"], found["worst_case_hosts"], found["left_behind"]) == (1, ["r-1", "r-2"], 1)
    assert found["limiting_resource"] == "VCPU"


def test_at_1_7_the_readiness_is_unchanged(dep):
    seg = _segment(dep, "unchanged", "auto", {"u-1": {}, "u-2": {}})
    path = f"/v1/segments/{seg}/readiness"
    at_1_5 = dep.request("GET", path, version="1.5")
    at_1_7 = dep.request("GET", path, version="1.7")
    assert at_1_7.status_int == 200 and at_1_7.body == at_1_5.body
    assert sorted(at_1_7.json["readiness"]) == ["code", "findings", "status"]
    at_1_8 = dep.request("GET", path, version="1.8").json["readiness"]
    assert {k: v for k, v in at_1_8.items() if k != "failures_tolerated"} == at_1_7.json[
        "readiness"
    ]


def test_at_1_9_the_room_held_is_shown_and_counted_as_free(dep):
    seg = _segment(dep, "kept", "auto", {"k-1": {}, "k-2": {}, "k-3": {}})
    for host in ("k-1", "k-2", "k-3"):
        dep.sim.add_server(host=host, flavor=LARGE)
    path = f"/v1/segments/{seg}/readiness"
    empty = dep.request("GET", path, version="1.9").json["readiness"]["failures_tolerated"]
    assert empty["held"] == {"hosts": {}, "released_for": None}
    nova = dep.sim.client()
    segments = [s for s in tolerance.segments(dep.db) if s[0].uuid == seg]
    ((row, hosts),) = segments
    held = room.Room(dep.conf, dep.db, nova, PlacementClient(nova.session)).hold(row, hosts)
    assert set(held.held) == {"k-1", "k-2"}
    found = dep.request("GET", path, version="1.9").json["readiness"]["failures_tolerated"]
    assert found["held"]["hosts"]["k-1"]["VCPU"] == 4 and found["held"]["released_for"] is None
    # The held room is free for failover: one failure is still tolerated.
    assert (found["k"], found["below_target"]) == (1, False)
    at_1_8 = dep.request("GET", path, version="1.8").json["readiness"]["failures_tolerated"]
    assert "held" not in at_1_8 and at_1_8["k"] == 1
