"""[DEFAULT] duplicate_notification_detection_interval is the window the API applies.

A report of the same type, host and payload as one generated no earlier than the interval
before it (any status, whichever arrived first) is a 409 "... is duplicate."; the window
includes its edge. The tests elsewhere use the default, 180 s: here it is 10 s and 0 s.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.deployment import Deployment, host_body, segment_body

T0 = datetime.datetime(2026, 5, 1, 8, 0, 0)


def _host(d: Deployment) -> str:
    name = f"compute-{uuid.uuid4().hex[:8]}"
    d.sim.add_service(name)
    seg = d.request("POST", "/v1/segments", segment_body(f"seg-{name}")).json["segment"]["uuid"]
    assert d.request("POST", f"/v1/segments/{seg}/hosts", host_body(name)).status_int == 201
    return name


def _send(d: Deployment, host: str, seconds: float, event: str = "STOPPED") -> Any:
    body = {
        "notification": {
            "type": "PROCESS",
            "hostname": host,
            "generated_time": (T0 + datetime.timedelta(seconds=seconds)).isoformat(),
            "payload": {"event": event, "process_name": "nova-compute"},
        }
    }
    return d.request("POST", "/v1/notifications", body)


def _duplicate(r: Any, host: str) -> bool:
    message = f"Notification received from host {host} of type PROCESS is duplicate."
    return r.status_int == 409 and r.json == {
        "conflictingRequest": {"code": 409, "message": message}
    }


@pytest.fixture(scope="module", params=[10, 0])
def windowed(request: Any) -> Iterator[tuple[Deployment, int]]:
    options = {"DEFAULT": {"duplicate_notification_detection_interval": str(request.param)}}
    with Deployment(options) as d:
        yield d, request.param


def test_the_configured_window(windowed: tuple[Deployment, int]) -> None:
    d, window = windowed
    host = _host(d)
    assert _send(d, host, 0).status_int == 202
    # The edge of the window is inside it; one second past, a new report.
    assert _duplicate(_send(d, host, window), host)
    assert _send(d, host, window + 1).status_int == 202
    # An older report arriving late is a duplicate of the newer one (the window is counted
    # back from the report being checked, as in masakari 22.0.0).
    assert _duplicate(_send(d, host, -window), host)
    # Another payload or another host is not a duplicate.
    assert _send(d, host, 0, event="STARTED").status_int == 202
    other = _host(d)
    assert _send(d, other, 0).status_int == 202
