"""POST/GET /v1/segments/{segment_id}/drills (1.9): served only at 1.9 when
[DEFAULT] api_max_microversion allows it; at the defaults the API is unchanged."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.deployment import MEMBER, Deployment, engine, host_body, segment_body

TAG = "masakari-canary"
FAST = {"poll_interval": "0.1", "service_up_timeout": "10"}


@pytest.fixture(scope="module")
def enabled() -> Iterator[Deployment]:
    with Deployment(
        {
            "DEFAULT": {"api_max_microversion": "1.9", "wait_period_after_evacuation": "10"},
            "drill": {"enabled": "true", **FAST},
        }
    ) as d:
        yield d


def _segment(d: Deployment, name: str, *hosts: str) -> tuple[str, dict[str, str]]:
    r = d.request("POST", "/v1/segments", segment_body(name), version="1.2")
    seg = r.json["segment"]["uuid"]
    ids = {}
    for host in hosts:
        r = d.request("POST", f"/v1/segments/{seg}/hosts", host_body(host))
        assert r.status_int == 201, r.text
        ids[host] = r.json["host"]["uuid"]
    return seg, ids


def test_a_drill_through_the_api(enabled: Deployment) -> None:
    seg, hosts = _segment(enabled, "drill-seg", "compute-1", "compute-2")
    canary = enabled.sim.add_server(host="compute-1", tags=[TAG])
    path = f"/v1/segments/{seg}/drills"

    r = enabled.request(
        "POST", path, {"drill": {"host": "compute-1", "no_fence": True}}, version="1.9"
    )

    assert r.status_int == 202, r.text
    assert r.headers["OpenStack-API-Version"] == "instance-ha 1.9"
    drill = r.json["drill"]
    assert (drill["status"], drill["host_id"], drill["no_fence"]) == (
        "new",
        hosts["compute-1"],
        True,
    )
    assert drill["phases"] == [] and drill["requested_by"] == "api"
    # One drill of a host at a time.
    again = enabled.request("POST", path, {"drill": {"host": "compute-1"}}, version="1.9")
    assert again.status_int == 409 and "conflictingRequest" in again.json
    with engine(enabled):
        shown = _until_ended(enabled, f"{path}/{drill['id']}")
    assert shown["status"] == "succeeded", shown
    assert [p["name"] for p in shown["phases"]] == [
        "check",
        "maintenance",
        "fence",
        "disable",
        "evacuate",
        "restore",
        "return",
    ]
    assert all(p["seconds"] is not None for p in shown["phases"])
    assert enabled.sim.server(canary)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    listed = enabled.request("GET", path, version="1.9").json["drills"]
    assert [d["id"] for d in listed] == [drill["id"]] and "phases" not in listed[0]


def _until_ended(d: Deployment, path: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        found: dict[str, Any] = d.request("GET", path, version="1.9").json["drill"]
        if found["status"] in ("succeeded", "failed"):
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({}, 400),
        ({"drill": {}}, 400),
        ({"drill": {"host": "compute-3", "no_fence": "yes"}}, 400),
        ({"drill": {"host": "compute-3", "colour": "red"}}, 400),
        ({"drill": {"host": "compute-9"}}, 404),
    ],
)
def test_bad_bodies(enabled: Deployment, body: Any, status: int) -> None:
    r = enabled.request("GET", "/v1/segments?name=bad-seg", version="1.9")
    found = [s["uuid"] for s in r.json["segments"] if s["name"] == "bad-seg"]
    seg = found[0] if found else _segment(enabled, "bad-seg", "compute-3")[0]
    r = enabled.request("POST", f"/v1/segments/{seg}/drills", body, version="1.9")
    assert r.status_int == status, r.text
    assert r.json  # a masakari fault body


def test_rules_versions_and_unknowns(enabled: Deployment) -> None:
    seg, _ = _segment(enabled, "rules-seg", "compute-4")
    path = f"/v1/segments/{seg}/drills"
    assert enabled.request("GET", path, headers=MEMBER, version="1.9").status_int == 403
    body = {"drill": {"host": "compute-4"}}
    assert enabled.request("POST", path, body, headers=MEMBER, version="1.9").status_int == 403
    # Below 1.9 the paths do not exist.
    r = enabled.request("GET", path, version="1.8")
    assert r.status_int == 404 and r.content_type != "application/json"
    assert enabled.request("POST", path, body, version="1.8").status_int == 404
    missing = enabled.request("GET", f"{path}/{seg}", version="1.9")
    assert missing.status_int == 404 and "itemNotFound" in missing.json
    gone = enabled.request("GET", f"/v1/segments/{'0' * 32}/drills", version="1.9")
    assert gone.status_int == 404


def test_the_defaults_serve_no_drill() -> None:
    with Deployment() as d:
        seg, _ = _segment(d, "default-seg", "compute-1")
        path = f"/v1/segments/{seg}/drills"
        assert d.request("GET", path, version="1.3").status_int == 404
        # 1.9 is not served: the path is unknown, as recovery_plan's at the defaults
        assert d.request("GET", path, version="1.9").status_int == 404
        assert d.request("GET", "/v1/segments", version="1.9").status_int == 406
        assert d.request("POST", path, {"drill": {"host": "compute-1"}}).status_int == 404


def test_drills_off_is_a_clear_400() -> None:
    with Deployment({"DEFAULT": {"api_max_microversion": "1.9"}}) as d:
        seg, _ = _segment(d, "off-seg", "compute-1")
        r = d.request(
            "POST", f"/v1/segments/{seg}/drills", {"drill": {"host": "compute-1"}}, version="1.9"
        )
        assert r.status_int == 400
        assert "[drill] enabled" in r.json["badRequest"]["message"]
