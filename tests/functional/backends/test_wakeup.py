"""transport_url set: the API's cast wakes an idle engine; without the broker, the poll still
finds the notification and the API still answers 202."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from masakari.db import statuses
from masakari.engine import wakeup
from masakari.engine.service import EngineService
from masakari.ha import notifications as notifications_api
from tests.support.deployment import Deployment, host_body, notification_body, segment_body
from tests.support.tcpproxy import TCPProxy

# Long enough that a pickup within WOKEN_WITHIN can only come from the cast.
IDLE_POLL = 30.0
WOKEN_WITHIN = 5.0
# The broker-down case relies on the poll alone.
SHORT_POLL = 1.0


def _deployment(transport_url: str, poll: float) -> Deployment:
    return Deployment(
        {
            "DEFAULT": {
                "transport_url": transport_url,
                # A topic of this test alone: other tests and engines share the broker.
                "masakari_topic": f"ha_engine_test_{uuid.uuid4().hex[:8]}",
                "engine_poll_interval": poll,
                "wait_period_after_service_update": 0,
                "notification_delay_max": 0,
            }
        }
    )


def _engine(dep: Deployment) -> EngineService:
    # The sweep is a second way to find new rows: push it out of the test's window too.
    return EngineService(dep.conf, dep.db, dep.sim.client(timeout=5), sweep_interval=IDLE_POLL)


def _post_notification(dep: Deployment) -> str:
    seg = dep.request("POST", "/v1/segments", segment_body()).json["segment"]["uuid"]
    assert dep.request("POST", f"/v1/segments/{seg}/hosts", host_body()).status_int == 201
    resp = dep.request("POST", "/v1/notifications", notification_body())
    assert resp.status_int == 202, resp.text
    return str(resp.json["notification"]["notification_uuid"])


def _status(dep: Deployment, notification_uuid: str) -> str:
    return str(notifications_api.get(dep.db, notification_uuid).status)


def _wait_taken(dep: Deployment, notification_uuid: str, within: float) -> float:
    """Seconds until an engine took the notification (any status but new)."""
    started = time.monotonic()
    while _status(dep, notification_uuid) == statuses.NEW:
        elapsed = time.monotonic() - started
        assert elapsed < within, f"notification still new after {elapsed:.1f} s"
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.fixture
def idle_engine_with_broker(rabbit_url: str) -> Iterator[tuple[Deployment, EngineService]]:
    with _deployment(rabbit_url, IDLE_POLL) as dep:
        engine = _engine(dep)
        engine.start()
        try:
            # The first round (poll and sweep at start) is behind the engine, and its
            # listener is subscribed: from here only a cast ends its wait early.
            _wait_listening(engine)
            yield dep, engine
        finally:
            engine.stop(grace=2)


def _wait_listening(engine: EngineService) -> None:
    deadline = time.monotonic() + 20
    listener = engine._listener
    assert listener is not None
    while not listener.listening:
        assert time.monotonic() < deadline, "the wake-up listener never subscribed"
        time.sleep(0.05)
    time.sleep(0.5)


def test_cast_wakes_an_idle_engine(idle_engine_with_broker) -> None:
    dep, _engine_service = idle_engine_with_broker
    notification_uuid = _post_notification(dep)
    assert _wait_taken(dep, notification_uuid, WOKEN_WITHIN) < WOKEN_WITHIN
    # The recovery ran to its end (a process failure: the host goes on maintenance).
    deadline = time.monotonic() + 20
    while _status(dep, notification_uuid) == statuses.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert _status(dep, notification_uuid) == statuses.FINISHED
    disabled = [c for c in dep.sim.nova_calls() if c["method"] == "PUT"]
    assert len(disabled) == 1


def test_doubled_and_stray_casts_change_nothing(idle_engine_with_broker) -> None:
    dep, _engine_service = idle_engine_with_broker
    notification_uuid = _post_notification(dep)
    _wait_taken(dep, notification_uuid, WOKEN_WITHIN)
    send = wakeup.Sender(dep.conf)
    # The same notification again, and one that does not exist: the engine only looks.
    assert send.cast(notification_uuid)
    assert send.cast(str(uuid.uuid4()))
    deadline = time.monotonic() + 20
    while _status(dep, notification_uuid) == statuses.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1)
    assert _status(dep, notification_uuid) == statuses.FINISHED
    disabled = [c for c in dep.sim.nova_calls() if c["method"] == "PUT"]
    assert len(disabled) == 1


def test_broker_down_the_api_answers_and_the_poll_finds_the_notification() -> None:
    # A broker that accepts no connection: a proxy that no longer listens.
    proxy = TCPProxy("127.0.0.1", 9)
    proxy.start()
    proxy.stop()
    with _deployment(f"rabbit://guest:guest@127.0.0.1:{proxy.port}/", SHORT_POLL) as dep:
        engine = _engine(dep)
        engine.start()
        try:
            started = time.monotonic()
            notification_uuid = _post_notification(dep)
            # The cast happens beside the request, never in its way.
            assert time.monotonic() - started < 5
            _wait_taken(dep, notification_uuid, SHORT_POLL + 10)
        finally:
            engine.stop(grace=2)
    sender = wakeup.Sender(dep.conf)
    assert sender.cast(notification_uuid) is False
