"""Versioned notifications sent to the RabbitMQ on loopback and read back by a listener,
compared key by key with the structure of the reference's notification samples."""

from __future__ import annotations

import os
import queue
import socket
import time
import uuid
import warnings
from typing import Any

import pytest

from tests.support.deployment import (
    Deployment,
    host_body,
    host_down,
    report,
    segment_body,
    settle,
)

RABBIT_URL = os.environ.get("MASAKARI_TEST_RABBIT_URL", "rabbit://guest:guest@127.0.0.1:5672/")
FAST = {
    "wait_period_after_service_update": "0",
    "wait_period_after_evacuation": "3",
    "verify_interval": "1",
    "engine_poll_interval": "0.1",
    "notification_delay_max": "0",
}

# The data keys of each event's payload as masakari 22.0.0 sends them (segments with
# ``enabled``, hosts without ``failover_segment_id``; a create's end without the new id and
# uuid, as its start).
SEGMENT = {"description", "fault", "name", "recovery_method", "service_type", "enabled"}
HOST = {
    "control_attributes",
    "failover_segment",
    "fault",
    "name",
    "on_maintenance",
    "reserved",
    "type",
}
NOTIFICATION = {"fault", "generated_time", "payload", "source_host_uuid", "status", "type"}
IDS = {"id", "uuid"}
NIDS = {"id", "notification_uuid"}
EXPECTED: dict[str, tuple[str, str, set[str]]] = {
    "segment.create.start": ("INFO", "SegmentApiPayload", SEGMENT),
    "segment.create.end": ("INFO", "SegmentApiPayload", SEGMENT),
    "segment.update.start": ("INFO", "SegmentApiPayload", SEGMENT | IDS),
    "segment.update.end": ("INFO", "SegmentApiPayload", SEGMENT | IDS),
    "host.create.start": ("INFO", "HostApiPayload", HOST),
    "host.create.end": ("INFO", "HostApiPayload", HOST),
    "host.update.start": ("INFO", "HostApiPayload", HOST | IDS),
    "host.update.end": ("INFO", "HostApiPayload", HOST | IDS),
    "host.delete.start": ("INFO", "HostApiPayload", HOST | IDS),
    "host.delete.end": ("INFO", "HostApiPayload", HOST | IDS),
    "notification.create.start": ("INFO", "NotificationApiPayload", NOTIFICATION),
    "notification.create.end": ("INFO", "NotificationApiPayload", NOTIFICATION),
    "notification.process.start": ("INFO", "NotificationApiPayload", NOTIFICATION | NIDS),
    "notification.process.end": ("INFO", "NotificationApiPayload", NOTIFICATION | NIDS),
    "segment.delete.start": ("INFO", "SegmentApiPayload", SEGMENT | IDS),
    "segment.delete.end": ("INFO", "SegmentApiPayload", SEGMENT | IDS),
}
FAILOVER_SEGMENT = {
    "uuid",
    "deleted",
    "created_at",
    "recovery_method",
    "updated_at",
    "name",
    "service_type",
    "deleted_at",
    "id",
    "description",
    "enabled",
}
ENVELOPE = {"masakari_object.name", "masakari_object.data", "masakari_object.version"}


def _rabbit_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5672), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def rabbit(request: pytest.FixtureRequest) -> str:
    if not _rabbit_up():
        if request.config.getoption("--require-servers"):
            pytest.fail("RabbitMQ is not reachable on 127.0.0.1:5672")
        pytest.skip("RabbitMQ is not reachable on 127.0.0.1:5672")
    return RABBIT_URL


class Endpoint:
    def __init__(self) -> None:
        self.received: queue.Queue[tuple[str, str, str, dict[str, Any]]] = queue.Queue()

    def info(self, ctxt: Any, publisher_id: str, event_type: str, payload: Any, metadata: Any):
        self.received.put(("INFO", publisher_id, event_type, payload))

    def error(self, ctxt: Any, publisher_id: str, event_type: str, payload: Any, metadata: Any):
        self.received.put(("ERROR", publisher_id, event_type, payload))


def test_events_reach_rabbitmq_shaped_as_the_reference(rabbit: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import oslo_messaging
    # An exchange and a listener pool of our own: tests running beside this one on the
    # same broker neither see these messages nor take them.
    exchange = f"masakari-test-{uuid.uuid4().hex[:8]}"
    extra = {
        "DEFAULT": {**FAST, "transport_url": rabbit, "control_exchange": exchange},
        "oslo_messaging_notifications": {"driver": "messagingv2"},
    }
    with Deployment(extra) as dep:
        transport = oslo_messaging.get_notification_transport(dep.conf)
        endpoint = Endpoint()
        listener = oslo_messaging.get_notification_listener(
            transport,
            [oslo_messaging.Target(topic="versioned_notifications", exchange=exchange)],
            [endpoint],
            executor="threading",
            pool=exchange,
        )
        listener.start()
        try:
            _exercise(dep)
            messages = _collect(endpoint, set(EXPECTED))
        finally:
            listener.stop()
            listener.wait()
            transport.cleanup()

    # Every message names its publisher as the reference does: the engine for
    # notification.process.*, the API for the rest, the engine's own host.update (the failed
    # host put on maintenance) included.
    publishers = {(t, p) for t, _, p, _ in messages}
    host = socket.gethostname()
    assert publishers == {
        (t, f"masakari-{'engine' if '.process.' in t else 'api'}:{host}") for t in EXPECTED
    }
    updates = [d for t, _, _, d in messages if t == "host.update.start"]
    assert [u["masakari_object.data"]["on_maintenance"] for u in updates] == [False, True]
    events = {t: (priority, payload) for t, priority, _, payload in reversed(messages)}
    for event_type, (priority, name, keys) in EXPECTED.items():
        got_priority, payload = events[event_type]
        assert got_priority == priority, event_type
        assert ENVELOPE <= set(payload), event_type
        assert payload["masakari_object.name"] == name
        assert payload["masakari_object.namespace"] == "masakari"
        data = payload["masakari_object.data"]
        assert set(data) == keys, event_type
        assert data["fault"] is None
        if "failover_segment" in data:
            nested = data["failover_segment"]
            assert nested["masakari_object.name"] == "FailoverSegment"
            assert set(nested["masakari_object.data"]) == FAILOVER_SEGMENT
    # As the reference's: process.start shows the notification as the engine found it, .end
    # as it was during the recovery (the outcome is written after); an update's start shows
    # the change already.
    assert events["notification.process.start"][1]["masakari_object.data"]["status"] == "new"
    assert events["notification.process.end"][1]["masakari_object.data"]["status"] == "running"
    assert events["segment.update.start"][1]["masakari_object.data"]["description"] == "changed"
    assert events["segment.update.end"][1]["masakari_object.data"]["description"] == "changed"


def _exercise(dep: Deployment) -> None:
    host_down(dep)
    dep.sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
    change = {"segment": {"description": "changed"}}
    assert dep.request("PUT", f"/v1/segments/{seg}", change).status_int == 200
    host = dep.request("POST", f"/v1/segments/{seg}/hosts", host_body()).json["host"]["uuid"]
    spare = host_body("compute-2")
    other = dep.request("POST", f"/v1/segments/{seg}/hosts", spare).json["host"]["uuid"]
    put = {"host": {"reserved": True}}
    assert dep.request("PUT", f"/v1/segments/{seg}/hosts/{other}", put).status_int == 200
    assert dep.request("DELETE", f"/v1/segments/{seg}/hosts/{other}").status_int == 204
    settle(dep, report(dep))
    # The segment goes last: a segment with hosts cannot be deleted.
    assert dep.request("DELETE", f"/v1/segments/{seg}/hosts/{host}").status_int == 204
    assert dep.request("DELETE", f"/v1/segments/{seg}").status_int == 204


def _collect(endpoint: Endpoint, wanted: set[str]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """Every message (event type, priority, publisher, payload) until each wanted type came."""
    messages: list[tuple[str, str, str, dict[str, Any]]] = []
    deadline = time.monotonic() + 20
    while not wanted <= {m[0] for m in messages}:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"never received: {sorted(wanted - {m[0] for m in messages})}"
        try:
            priority, publisher, event_type, payload = endpoint.received.get(timeout=remaining)
        except queue.Empty:
            continue
        messages.append((event_type, priority, publisher, payload))
    return messages
