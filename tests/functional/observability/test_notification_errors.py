"""The ``.error`` events: a recovery that fails sends notification.process.error (with why)
instead of .end, and an API change that fails sends <object>.<action>.error; a change
refused by a check the reference makes before it notifies (a segment in use) sends
nothing."""

from __future__ import annotations

import warnings

import pytest

from tests.support.deployment import (
    Deployment,
    host_body,
    host_down,
    report,
    segment_body,
    segment_with_host,
    settle,
)
from tests.support.recoveries import FAST

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from oslo_messaging.notify import _impl_test as captured


@pytest.fixture
def sent():
    captured.reset()
    yield captured.NOTIFICATIONS
    captured.reset()


def _events(sent) -> dict[str, tuple[str, dict]]:
    # oslo.messaging's test driver keeps (ctxt, message, priority, retry).
    return {m["event_type"]: (priority, m["payload"]) for _, m, priority, _ in sent}


def test_failed_recovery_and_refused_change_send_error_events(sent) -> None:
    extra = {
        "DEFAULT": {**FAST, "transport_url": "fake://"},
        "oslo_messaging_notifications": {"driver": "test"},
    }
    with Deployment(extra) as dep:
        host_down(dep)
        vm = dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        dep.sim.state_fault("evacuate_error", vm)
        seg = segment_with_host(dep)
        settle(dep, report(dep), timeout=60)
        # The segment still has a notification in error: a change is refused (409) before
        # anything is sent, as the reference checks it before it notifies.
        rename = {"host": {"name": "nowhere"}}
        host = dep.request("GET", f"/v1/segments/{seg}/hosts").json["hosts"][0]["uuid"]
        assert dep.request("PUT", f"/v1/segments/{seg}/hosts/{host}", rename).status_int == 409
        # In a segment not in use, a name already taken is refused by the write, after
        # host.update.start: host.update.error says so.
        other = dep.request("POST", "/v1/segments", segment_body("seg-2")).json["segment"]["uuid"]
        added = dep.request("POST", f"/v1/segments/{other}/hosts", host_body("compute-2"))
        taken = {"host": {"name": "compute-1"}}
        path = f"/v1/segments/{other}/hosts/{added.json['host']['uuid']}"
        assert dep.request("PUT", path, taken).status_int == 409

    events = _events(sent)
    assert "notification.process.end" not in events
    priority, payload = events["notification.process.error"]
    assert priority == "ERROR"
    data = payload["masakari_object.data"]
    assert data["status"] == "running"  # as the reference's: sent before the outcome is written
    fault = data["fault"]["masakari_object.data"]
    assert data["fault"]["masakari_object.name"] == "ExceptionPayload"
    assert "Failed to evacuate instances" in fault["exception_message"]
    assert fault["traceback"].startswith("Traceback")
    assert fault["module_name"].startswith("masakari.")
    updates = [
        (m["event_type"], m["payload"]["masakari_object.data"]["name"])
        for _, m, _, _ in sent
        if m["event_type"].startswith("host.update.")
    ]
    assert ("host.update.start", "nowhere") not in updates
    priority, payload = events["host.update.error"]
    assert priority == "ERROR"
    # The host with the change asked for, as the reference's payload shows its object.
    assert payload["masakari_object.data"]["name"] == "compute-1"
    assert payload["masakari_object.data"]["fault"] is not None
    assert updates[-2:] == [("host.update.start", "compute-1"), ("host.update.error", "compute-1")]
