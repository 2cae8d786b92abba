"""The quarantine API (1.10): requests and the segment's gate, the host's open quarantine
returned again, refusals (off, a host failure being recovered, wrong status), start past
the gate, cancel, and the routes' absence below 1.10. The engine's side is
tests/functional/engine/test_quarantine.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from masakari.db import quarantines as q
from tests.support.deployment import Deployment, host_body, segment_body
from tests.support.engine import HOST_DOWN, notify


@pytest.fixture(scope="module")
def dep() -> Iterator[Deployment]:
    options = {
        "DEFAULT": {"api_max_microversion": "1.10"},
        "quarantine": {"enabled": True, "max_hosts_per_segment": 2, "max_percent": 50},
    }
    with Deployment(options) as d:
        yield d


def _segment(dep: Deployment, name: str, hosts: list[str]) -> tuple[str, dict[str, str]]:
    r = dep.request("POST", "/v1/segments", segment_body(name))
    assert r.status_int == 201, r.text
    seg = r.json["segment"]["uuid"]
    found = {}
    for host in hosts:
        dep.sim.add_service(host)
        r = dep.request("POST", f"/v1/segments/{seg}/hosts", host_body(host))
        assert r.status_int == 201, r.text
        found[host] = r.json["host"]["uuid"]
    return seg, found


def _quarantine(dep: Deployment, seg: str, host: str, reason: str = "ECC storm") -> Any:
    return dep.request(
        "POST",
        f"/v1/segments/{seg}/hosts/{host}/quarantine",
        {"quarantine": {"reason": reason}},
        version="1.10",
    )


def test_requests_past_the_segments_limit_are_held(dep):
    # Five hosts: 50 % is 2, max_hosts_per_segment 2: the third waits for an operator.
    names = [f"g-{i}" for i in range(1, 6)]
    seg, hosts = _segment(dep, "gated", names)
    first = _quarantine(dep, seg, hosts["g-1"])
    assert first.status_int == 202, first.text
    body = first.json["quarantine"]
    assert (body["host"], body["status"], body["source"]) == ("g-1", "requested", "operator")
    assert body["reason"] == "ECC storm" and body["hold_reason"] is None
    assert _quarantine(dep, seg, hosts["g-2"]).json["quarantine"]["status"] == "requested"
    third = _quarantine(dep, seg, hosts["g-3"]).json["quarantine"]
    assert third["status"] == "held"
    assert third["hold_reason"].startswith("2 of the segment's 5 hosts already in quarantine")
    # The same host again: its open quarantine, 200, nothing new.
    again = _quarantine(dep, seg, hosts["g-1"], "another alert")
    assert again.status_int == 200 and again.json["quarantine"]["id"] == body["id"]
    listed = dep.request("GET", "/v1/quarantines", version="1.10").json["quarantines"]
    assert [x["host"] for x in listed if x["segment_uuid"] == seg] == ["g-3", "g-2", "g-1"]
    held = dep.request("GET", "/v1/quarantines?status=held", version="1.10").json
    assert [x["id"] for x in held["quarantines"]] == [third["id"]]
    # An operator starts the held one; cancelling one not started withdraws it.
    path = f"/v1/quarantines/{third['id']}/action"
    started = dep.request("POST", path, {"start": None}, version="1.10")
    assert started.status_int == 200 and started.json["quarantine"]["status"] == "requested"
    cancelled = dep.request("POST", path, {"cancel": None}, version="1.10").json["quarantine"]
    assert cancelled["status"] == "withdrawn" and cancelled["ended_at"]
    # Wrong status: 409 with the reason; an unknown one: 404.
    refused = dep.request("POST", path, {"release": None}, version="1.10")
    assert refused.status_int == 409
    assert refused.json["conflictingRequest"]["message"] == (
        f"Quarantine {third['id']} is withdrawn: it cannot be released."
    )
    unknown = dep.request("GET", "/v1/quarantines/nope", version="1.10")
    assert unknown.status_int == 404


def test_a_host_whose_failure_is_recovered_is_refused(dep):
    seg, hosts = _segment(dep, "failing", ["f-1", "f-2"])
    nid = notify(dep.db, hosts["f-1"], "COMPUTE_HOST", HOST_DOWN)
    r = _quarantine(dep, seg, hosts["f-1"])
    assert r.status_int == 409
    assert r.json["conflictingRequest"]["message"] == (
        f"Host f-1 has a host failure being recovered (notification {nid}): its recovery "
        "moves its instances."
    )
    with dep.db.reader() as session:
        assert q.open_of_host(session, hosts["f-1"]) is None


def test_bad_bodies_and_older_versions(dep):
    seg, hosts = _segment(dep, "bodies", ["b-1", "b-2"])
    path = f"/v1/segments/{seg}/hosts/{hosts['b-1']}/quarantine"
    for body in ({}, {"quarantine": {}}, {"quarantine": {"reason": ""}}, {"quarantine": 1}):
        r = dep.request("POST", path, body, version="1.10")
        assert r.status_int == 400, (body, r.text)
        assert "badRequest" in r.json
    # Below 1.10 the routes do not exist: the mapper's 404, as for any unknown path.
    assert (
        dep.request("POST", path, {"quarantine": {"reason": "x"}}, version="1.9").status_int == 404
    )
    assert dep.request("GET", "/v1/quarantines", version="1.9").status_int == 404
    missing = _quarantine(dep, seg, "0f0f0f0f-0000-4000-8000-000000000000")
    assert missing.status_int == 404


def test_off_by_default():
    with Deployment({"DEFAULT": {"api_max_microversion": "1.10"}}) as d:
        seg, hosts = _segment(d, "off", ["o-1"])
        r = _quarantine(d, seg, hosts["o-1"])
        assert r.status_int == 409
        assert r.json["conflictingRequest"]["message"] == (
            "Quarantine is off ([quarantine] enabled = false)."
        )


def _report(host: str, kind: str = "COMPUTE_HOST") -> dict[str, Any]:
    payload = (
        {"event": "STOPPED", "host_status": "NORMAL", "cluster_status": "OFFLINE"}
        if kind == "COMPUTE_HOST"
        else {"event": "STOPPED", "process_name": "nova-compute"}
    )
    return {
        "notification": {
            "type": kind,
            "hostname": host,
            "generated_time": "2026-12-06T10:00:00",
            "payload": payload,
        }
    }


def test_a_quarantined_host_on_maintenance_still_reports_its_failure(dep):
    """Its instances not moved yet must be evacuated: the maintenance rule, which ignores a
    host on maintenance, does not hide the failure of a host a quarantine took out."""
    seg, hosts = _segment(dep, "maintained", ["m-1", "m-2", "m-3"])
    for name in ("m-1", "m-2"):
        r = dep.request(
            "PUT", f"/v1/segments/{seg}/hosts/{hosts[name]}", {"host": {"on_maintenance": True}}
        )
        assert r.status_int == 200, r.text
    row = _quarantine(dep, seg, hosts["m-1"]).json["quarantine"]
    with dep.db.writer() as session:
        assert q.set_status(session, row["id"], q.RUNNING, (q.REQUESTED,))
    process = dep.request("POST", "/v1/notifications", _report("m-1", "PROCESS"))
    assert process.status_int == 409  # only a host failure is let through
    failure = dep.request("POST", "/v1/notifications", _report("m-1"))
    assert failure.status_int == 202, failure.text
    # An operator's maintenance (no quarantine) keeps the reference's rule.
    other = dep.request("POST", "/v1/notifications", _report("m-2"))
    assert other.status_int == 409
    assert "already under maintenance" in other.json["conflictingRequest"]["message"]
