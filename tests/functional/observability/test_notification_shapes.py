"""The project's versioned notifications, read from RabbitMQ, against the reference's for the
same actions (data/versioned-notifications.yaml through the conformance runner): every
event type the reference sends, as often, with the same priority and publisher (the
service's binary: ``masakari-api`` or ``masakari-engine``), the same payload object (name,
namespace, version, envelope) and the same data keys, the nested FailoverSegment's too.
Event types the reference never sends (the project's own, such as
``notification.process.held``) are not part of this scenario."""

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
    # Per event type, each field that differs: (the reference's, the project's).
    differences = {}
    for event_type, want in sorted(reference.items()):
        got = project.get(event_type, {})
        differ = {field: (value, got.get(field)) for field, value in want.items()}
        differ = {field: pair for field, pair in differ.items() if pair[0] != pair[1]}
        if differ:
            differences[event_type] = differ
    assert differences == {}
    # A type sent with two shapes (the API's and the engine's host.update, say) is a
    # difference too: the reference sends each type one way.
    assert not [t for t in project if t.endswith("(other shape)")]
