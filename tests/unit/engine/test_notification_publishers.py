"""Who the engine's versioned notifications name as their publisher, and the status its
notification.process.start shows, as masakari 22.0.0's engine sends them (compared on
RabbitMQ with the reference's in tests/functional/observability/test_notification_shapes.py).
"""

from __future__ import annotations

import socket
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from masakari import notifier
from masakari.engine import host_notices, runner
from masakari.engine.workers import Work
from tests.support.runs import make_conf

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from oslo_messaging.notify import _impl_test as captured


@pytest.fixture
def sent() -> Iterator[list[Any]]:
    captured.reset()
    yield captured.NOTIFICATIONS
    captured.reset()


def _engine_notifier() -> notifier.Notifier:
    # oslo.messaging's in-process transport and its test driver, which keeps what is sent.
    conf = make_conf(transport_url="fake://", **{"oslo_messaging_notifications.driver": ["test"]})
    return notifier.Notifier(conf, "masakari-engine")


def test_the_engines_host_updates_name_the_api_as_publisher(sent: list[Any]) -> None:
    engine = _engine_notifier()
    notices = host_notices.HostNotices(engine)
    assert notices.enabled
    # What HostNotices sends through (its update needs a database: the functional tests).
    sender = notices._notifier
    assert sender is not None
    engine.emit("notification.process.start", {"x": 1})
    sender.emit("host.update.start", {"x": 2})
    # oslo.messaging's test driver keeps (ctxt, message, priority, retry).
    published = [(m["event_type"], m["publisher_id"]) for _, m, _, _ in sent]
    host = socket.gethostname()
    assert published == [
        ("notification.process.start", f"masakari-engine:{host}"),
        ("host.update.start", f"masakari-api:{host}"),
    ]
    assert engine.publisher_id == f"masakari-engine:{host}"  # the engine's own is unchanged


def test_host_notices_stay_off_with_notifications_off() -> None:
    assert not host_notices.HostNotices(notifier.Notifier(None, "masakari-engine")).enabled
    assert not host_notices.HostNotices(None).enabled


@pytest.mark.parametrize(
    ("host_uuid", "after_error", "found"),
    [
        ("h", False, "new"),  # a report, or a new one the retry task takes late
        ("h", True, "error"),  # the retry of a failed attempt
        (None, False, "running"),  # a takeover of an expired claim
    ],
)
def test_process_start_shows_the_status_the_engine_found(
    host_uuid: str | None, after_error: bool, found: str
) -> None:
    item = Work("n", 1, retry=after_error, cancel=threading.Event(), host_uuid=host_uuid)
    item.after_error = after_error
    assert runner._found_as(item) == found
