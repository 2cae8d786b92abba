"""The API's versioned notifications around each change (masakari.notifier): the handlers
pass the change as a callable, these wrap it in ``<object>.<action>.start/end/error``.

With notifications off (the default) the change runs alone, without any extra read.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from masakari import notifier
from masakari.api.request import ApiRequest
from masakari.db.models import Host, Notification, Segment
from masakari.ha import hosts as hosts_api
from masakari.ha import notifications as notifications_api
from masakari.ha import segments as segments_api

T = TypeVar("T")


def _planned(data: Mapping[str, Any], **defaults: Any) -> Any:
    # The object as the reference builds it before it is created: no id, no uuid yet.
    return types.SimpleNamespace(**{**defaults, **data})


def segment_create(
    req: ApiRequest, data: Mapping[str, Any], create: Callable[[], Segment]
) -> Segment:
    n = req.state.notifier
    if not n.enabled:
        return create()
    planned = _planned(data, description=None, enabled=True)
    fields = {k: v for k, v in notifier.segment_fields(planned).items() if k not in ("id", "uuid")}
    return _around(
        n,
        "segment.create",
        lambda f: notifier.segment_payload(fields, f),
        create,
        lambda row: notifier.segment_payload(notifier.segment_fields(row)),
    )


def segment_change(req: ApiRequest, action: str, segment_uuid: str, change: Callable[[], T]) -> T:
    n = req.state.notifier
    if not n.enabled:
        return change()
    before = notifier.segment_fields(segments_api.get(req.state.db, segment_uuid))
    if action == "delete":
        after = {k: v for k, v in before.items() if k != "id"}
        return _around(
            n,
            "segment.delete",
            lambda f: notifier.segment_payload(before, f),
            change,
            lambda _: notifier.segment_payload(after),
        )
    return _around(
        n,
        "segment.update",
        lambda f: notifier.segment_payload(before, f),
        change,
        lambda row: notifier.segment_payload(notifier.segment_fields(row)),
    )


def host_create(
    req: ApiRequest, segment_uuid: str, data: Mapping[str, Any], create: Callable[[], Host]
) -> Host:
    n = req.state.notifier
    if not n.enabled:
        return create()
    segment = segments_api.get(req.state.db, segment_uuid)
    planned = _planned(
        data,
        reserved=False,
        on_maintenance=False,
        failover_segment_id=segment_uuid,
        failover_segment=segment,
    )
    fields = {k: v for k, v in notifier.host_fields(planned).items() if k not in ("id", "uuid")}
    return _around(
        n,
        "host.create",
        lambda f: notifier.host_payload(fields, f),
        create,
        lambda row: notifier.host_payload(notifier.host_fields(row)),
    )


def host_change(
    req: ApiRequest, action: str, segment_uuid: str, host_uuid: str, change: Callable[[], T]
) -> T:
    n = req.state.notifier
    if not n.enabled:
        return change()
    before = notifier.host_fields(*hosts_api.get(req.state.db, segment_uuid, host_uuid))
    if action == "delete":
        after = {k: v for k, v in before.items() if k != "id"}
        return _around(
            n,
            "host.delete",
            lambda f: notifier.host_payload(before, f),
            change,
            lambda _: notifier.host_payload(after),
        )
    return _around(
        n,
        "host.update",
        lambda f: notifier.host_payload(before, f),
        change,
        lambda row: notifier.host_payload(notifier.host_fields(row)),
    )


def notification_create(
    req: ApiRequest, data: Mapping[str, Any], create: Callable[[], Notification]
) -> Notification:
    n = req.state.notifier
    if not n.enabled:
        return create()
    start = {
        "generated_time": notifier.iso_time(notifications_api.to_utc(data["generated_time"])),
        "type": data.get("type"),
        "payload": data.get("payload"),
        "status": "new",
        "source_host_uuid": None,
    }
    return _around(
        n,
        "notification.create",
        lambda f: notifier.notification_payload(start, f),
        create,
        lambda row: notifier.notification_payload(notifier.notification_fields(row)),
    )


def _around(
    n: notifier.Notifier,
    event: str,
    start: Callable[[notifier.Payload | None], notifier.Payload],
    change: Callable[[], T],
    end: Callable[[T], notifier.Payload],
) -> T:
    with n.around(event, start) as done:
        result = change()
        done(end(result))
    return result
