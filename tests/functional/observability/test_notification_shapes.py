"""The project's versioned notifications, read from RabbitMQ, against the reference's for the
same actions (data/versioned-notifications.yaml through the conformance runner): every
event type the reference sends, as often, with every payload key the reference's has.
Extra keys, and event types the reference does not send, may stay."""

from __future__ import annotations

import json
import socket

import pytest

from tests.functional.observability import notification_shapes


def _rabbit_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5672), timeout=1):
            return True
    except OSError:
        return False


def test_the_project_sends_what_the_reference_sends(request: pytest.FixtureRequest) -> None:
    if not _rabbit_up():
        if request.config.getoption("--require-servers"):
            pytest.fail("RabbitMQ is not reachable on 127.0.0.1:5672")
        pytest.skip("RabbitMQ is not reachable on 127.0.0.1:5672")
    if not notification_shapes.runner().exists():
        where = notification_shapes.runner()
        pytest.skip(f"no conformance runner at {where} (MASAKARI_SHARED_DIR)")
    reference = json.loads(notification_shapes.FIXTURE.read_text())["events"]
    project = notification_shapes.record("project")
    for event_type, want in sorted(reference.items()):
        got = project.get(event_type)
        assert got is not None, f"{event_type} never sent"
        assert got["count"] == want["count"], event_type
        assert (got["priority"], got["object"]) == (want["priority"], want["object"]), event_type
        assert set(want["keys"]) <= set(got["keys"]), event_type
        if want["failover_segment_keys"] is not None:
            assert set(want["failover_segment_keys"]) <= set(got["failover_segment_keys"])
    assert not [t for t in project if t.endswith("(other shape)")]
