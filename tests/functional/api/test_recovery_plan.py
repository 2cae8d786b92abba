"""GET /v1/segments/{segment_id}/hosts/{host_id}/recovery_plan: microversion 1.5, gated by
[DEFAULT] api_max_microversion; at the default the API is the reference's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.placement import Flavor
from tests.support.deployment import MEMBER, Deployment, host_body, segment_body


def _host(d: Deployment) -> tuple[str, str]:
    r = d.request("POST", "/v1/segments", segment_body("plan-seg"), version="1.2")
    seg = r.json["segment"]["uuid"]
    ids = []
    for name in ("compute-1", "compute-2"):
        r = d.request("POST", f"/v1/segments/{seg}/hosts", host_body(name))
        assert r.status_int == 201, r.text
        ids.append(r.json["host"]["uuid"])
    return seg, ids[0]


@pytest.fixture(scope="module")
def enabled() -> Iterator[Deployment]:
    with Deployment({"DEFAULT": {"api_max_microversion": "1.5"}}) as d:
        yield d


@pytest.fixture(scope="module")
def default() -> Iterator[Deployment]:
    with Deployment() as d:
        yield d


def test_plan_at_1_5(enabled):
    seg, host = _host(enabled)
    vm = enabled.sim.add_server(
        host="compute-1", flavor=Flavor("m1.large", 4, 8192, 80), metadata={"HA_Enabled": "1"}
    )
    path = f"/v1/segments/{seg}/hosts/{host}/recovery_plan"
    r = enabled.request("GET", path, version="1.5")
    assert r.status_int == 200, r.text
    assert r.headers["OpenStack-API-Version"] == "instance-ha 1.5"
    plan = r.json["recovery_plan"]
    assert plan["host"] == "compute-1" and plan["verdict"] == "fits"
    assert [(i["instance_id"], i["target"], i["ha_enabled"]) for i in plan["instances"]] == [
        (vm, "scheduler", True)
    ]
    assert plan["instances"][0]["attempts"] == ["scheduler"]
    assert plan["groups"] == [] and plan["reserved_host_attempts"] == []
    assert plan["options"]["order_in_groups"] is False
    assert enabled.request("GET", path, version="latest").status_int == 200
    # below 1.5 the path does not exist, as in the reference
    r = enabled.request("GET", path, version="1.3")
    assert r.status_int == 404 and r.content_type != "application/json"
    assert enabled.request("GET", path, headers=MEMBER, version="1.5").status_int == 403
    missing = enabled.request("GET", f"/v1/segments/{seg}/hosts/{seg}/recovery_plan", version="1.5")
    assert missing.status_int == 404 and "itemNotFound" in missing.json
    assert enabled.request("GET", "/v1", version="1.5").json["version"]["version"] == "1.5"


def test_default_options_keep_1_3(default):
    seg, host = _host(default)
    path = f"/v1/segments/{seg}/hosts/{host}/recovery_plan"
    assert default.request("GET", path, version="1.3").status_int == 404
    assert default.request("GET", path, version="1.5").status_int == 404
    assert default.request("GET", "/v1/segments", version="1.5").status_int == 406
    assert default.request("GET", "/v1", version="1.3").json["version"]["version"] == "1.3"
    assert default.request("GET", "/").json["versions"][0]["version"] == "1.3"


def test_readiness_at_1_5(enabled):
    r = enabled.request(
        "POST",
        "/v1/segments",
        {"segment": {"name": "ready-seg", "recovery_method": "auto", "service_type": "compute"}},
        version="1.2",
    )
    seg = r.json["segment"]["uuid"]
    for name in ("compute-3", "compute-4"):
        enabled.request("POST", f"/v1/segments/{seg}/hosts", host_body(name))
    path = f"/v1/segments/{seg}/readiness"
    r = enabled.request("GET", path, version="1.5")
    assert r.status_int == 200, r.text
    body = r.json["readiness"]
    assert (body["status"], body["code"]) == ("ok", 0), body
    assert {f["check"] for f in body["findings"]} >= {"database", "hosts", "capacity", "policy"}
    enabled.sim.add_service("compute-5")
    enabled.request("POST", f"/v1/segments/{seg}/hosts", host_body("compute-5", reserved=True))
    body = enabled.request("GET", path, version="1.5").json["readiness"]
    assert body["status"] == "warning"
    assert any("'compute-5' is enabled in Nova" in f["detail"] for f in body["findings"])
    assert enabled.request("GET", path, version="1.4").status_int == 404
    assert enabled.request("GET", path, headers=MEMBER, version="1.5").status_int == 403
    assert (
        enabled.request(
            "GET", f"/v1/segments/{host_body()['host']['name']}/readiness", version="1.5"
        ).status_int
        == 404
    )


def test_readiness_warns_of_a_reserved_host_whose_nova_compute_is_down(enabled):
    segment = {"name": "spares-seg", "recovery_method": "rh_priority", "service_type": "compute"}
    r = enabled.request("POST", "/v1/segments", {"segment": segment}, version="1.2")
    seg = r.json["segment"]["uuid"]
    enabled.sim.add_service("compute-6")
    enabled.request("POST", f"/v1/segments/{seg}/hosts", host_body("compute-6"))
    enabled.sim.add_service("spare-6", status="disabled", state="down")
    enabled.request("POST", f"/v1/segments/{seg}/hosts", host_body("spare-6", reserved=True))
    readiness = enabled.request("GET", f"/v1/segments/{seg}/readiness", version="1.5").json[
        "readiness"
    ]
    assert readiness["status"] == "warning"
    assert [f for f in readiness["findings"] if f["check"] == "reserved hosts"] == [
        {
            "status": "warning",
            "check": "reserved hosts",
            "segment": "spares-seg",
            "detail": "Reserved host 'spare-6': its nova-compute is down in Nova: an "
            "evacuation to it would fail, and the next reserved host be tried.",
        }
    ]


def test_readiness_absent_at_default_options(default):
    r = default.request("POST", "/v1/segments", segment_body("ready-default"), version="1.2")
    path = f"/v1/segments/{r.json['segment']['uuid']}/readiness"
    assert default.request("GET", path, version="1.3").status_int == 404


def test_plan_without_placement_in_the_catalog_names_placement(monkeypatch):
    """Keystone's catalog lacks Placement: 503 naming it, as masakari-manage does, not a
    500 saying Nova is not reachable."""
    with Deployment({"DEFAULT": {"api_max_microversion": "1.5"}}) as d:
        token_body = d.sim.token_body

        def without_placement(info):
            body = token_body(info)
            catalog = body["token"]["catalog"]
            body["token"]["catalog"] = [s for s in catalog if s["type"] != "placement"]
            return body

        monkeypatch.setattr(d.sim, "token_body", without_placement)
        seg, host = _host(d)
        d.sim.add_server(host="compute-1", metadata={"HA_Enabled": "1"})
        r = d.request("GET", f"/v1/segments/{seg}/hosts/{host}/recovery_plan", version="1.5")
        assert r.status_int == 503, r.text
        message = r.json["serviceUnavailable"]["message"]
        assert message.startswith("Cannot read Placement: ") and "Nova" not in message
