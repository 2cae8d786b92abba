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

# The data keys of each event's payload in the reference's doc/notification_samples;
# masakari 22.0.0 adds ``enabled`` to segments (SegmentApiPayload and FailoverSegment 1.1).
SEGMENT = {"description", "fault", "name", "recovery_method", "service_type", "enabled"}
HOST = {
    "control_attributes",
    "failover_segment",
    "failover_segment_id",
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
    "segment.create.end": ("INFO", "SegmentApiPayload", SEGMENT | IDS),
    "segment.update.start": ("INFO", "SegmentApiPayload", SEGMENT | IDS),
    "segment.update.end": ("INFO", "SegmentApiPayload", SEGMENT | IDS),
    "host.create.start": ("INFO", "HostApiPayload", HOST),
    "host.create.end": ("INFO", "HostApiPayload", HOST | IDS),
    "host.update.start": ("INFO", "HostApiPayload", HOST | IDS),
    "host.update.end": ("INFO", "HostApiPayload", HOST | IDS),
    "host.delete.start": ("INFO", "HostApiPayload", HOST | IDS),
    "host.delete.end": ("INFO", "HostApiPayload", HOST | IDS),
    "notification.create.start": ("INFO", "NotificationApiPayload", NOTIFICATION),
    "notification.create.end": ("INFO", "NotificationApiPayload", NOTIFICATION | NIDS),
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
            events = _collect(endpoint, set(EXPECTED))
        finally:
            listener.stop()
            listener.wait()
            transport.cleanup()

    for event_type, (priority, name, keys) in EXPECTED.items():
        got_priority, publisher, payload = events[event_type]
        assert got_priority == priority, event_type
        binary = "masakari-engine" if ".process." in event_type else "masakari-api"
        assert publisher == f"{binary}:{socket.gethostname()}"
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
    assert events["notification.process.end"][2]["masakari_object.data"]["status"] == "finished"
    assert events["segment.update.end"][2]["masakari_object.data"]["description"] == "changed"


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


def _collect(endpoint: Endpoint, wanted: set[str]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    found: dict[str, tuple[str, str, dict[str, Any]]] = {}
    deadline = time.monotonic() + 20
    while set(found) < wanted:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"never received: {sorted(wanted - set(found))}"
        try:
            priority, publisher, event_type, payload = endpoint.received.get(timeout=remaining)
        except queue.Empty:
            continue
        found.setdefault(event_type, (priority, publisher, payload))
    return found
