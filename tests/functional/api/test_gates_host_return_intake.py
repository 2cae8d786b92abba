"""Intake on a host on maintenance with a [host_return] option on: only "I am back" passes.

docs/configuration.md ([host_return]): with any step on, a COMPUTE_HOST report with event
STARTED and host_status NORMAL is accepted although the host is on maintenance, so that it
reaches the engine. Every other report of that host is still refused as masakari 22.0.0
refuses it: 409 conflictingRequest, "... is ignored as the host is already under
maintenance.", and nothing is recorded.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.deployment import Deployment, host_body, segment_body

STEPS = (
    "unset_forced_down",
    "enable_compute_service",
    "return_reserved_hosts",
    "clear_on_maintenance",
)

REFUSED: dict[str, tuple[str, dict[str, Any]]] = {
    # A second failure report while the host is still recovered from the first.
    "stopped": ("COMPUTE_HOST", {"event": "STOPPED", "host_status": "NORMAL"}),
    "stopped-unknown": ("COMPUTE_HOST", {"event": "STOPPED", "host_status": "UNKNOWN"}),
    # Back, but the monitor cannot tell the host's state.
    "started-unknown": ("COMPUTE_HOST", {"event": "STARTED", "host_status": "UNKNOWN"}),
    "started-no-status": ("COMPUTE_HOST", {"event": "STARTED"}),
    "process-stopped": ("PROCESS", {"event": "STOPPED", "process_name": "nova-compute"}),
    "process-started": ("PROCESS", {"event": "STARTED", "process_name": "nova-compute"}),
    "vm": (
        "VM",
        {
            "event": "LIFECYCLE",
            "instance_uuid": "a2d4e6f8-0000-4000-8000-000000000001",
            "vir_domain_event": "STOPPED_FAILED",
        },
    ),
}
BACK = ("COMPUTE_HOST", {"event": "STARTED", "host_status": "NORMAL", "cluster_status": "ONLINE"})


def _report(host: str, kind: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    type_, payload = kind
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat()
    return {
        "notification": {
            "type": type_,
            "hostname": host,
            "generated_time": now,
            "payload": payload,
        }
    }


@pytest.fixture(scope="module", params=STEPS)
def deployment(request: Any) -> Iterator[Deployment]:
    """The API with one [host_return] step on (each in turn: any one opens the gate)."""
    with Deployment(
        {"DEFAULT": {"api_max_microversion": "1.4"}, "host_return": {request.param: "true"}}
    ) as d:
        yield d


def _host_on_maintenance(d: Deployment) -> str:
    name = f"compute-{uuid.uuid4().hex[:8]}"
    d.sim.add_service(name)
    r = d.request("POST", "/v1/segments", segment_body(f"seg-{name}"))
    seg = r.json["segment"]["uuid"]
    r = d.request("POST", f"/v1/segments/{seg}/hosts", host_body(name))
    assert r.status_int == 201, r.text
    host = r.json["host"]["uuid"]
    body = {"host": {"on_maintenance": True}}
    assert d.request("PUT", f"/v1/segments/{seg}/hosts/{host}", body).status_int == 200
    return name


def _recorded(d: Deployment, host: str) -> list[dict[str, Any]]:
    hosts = [
        h
        for seg in d.request("GET", "/v1/segments").json["segments"]
        for h in d.request("GET", f"/v1/segments/{seg['uuid']}/hosts").json["hosts"]
        if h["name"] == host
    ]
    found = d.request("GET", f"/v1/notifications?source_host_uuid={hosts[0]['uuid']}")
    return found.json["notifications"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("version", ["1.0", "1.4"])
def test_other_reports_of_a_host_on_maintenance_are_refused(
    deployment: Deployment, case: str, version: str
) -> None:
    host = _host_on_maintenance(deployment)
    type_ = REFUSED[case][0]
    r = deployment.request(
        "POST", "/v1/notifications", _report(host, REFUSED[case]), version=version
    )
    assert r.status_int == 409, r.text
    assert r.json == {
        "conflictingRequest": {
            "code": 409,
            "message": (
                f"Notification received from host {host} of type '{type_}' is ignored as the "
                "host is already under maintenance."
            ),
        }
    }
    assert _recorded(deployment, host) == []
    # The gate is open all the same: the host may say it is back.
    r = deployment.request("POST", "/v1/notifications", _report(host, BACK), version=version)
    assert r.status_int == 202, r.text
    assert [n["status"] for n in _recorded(deployment, host)] == ["new"]
