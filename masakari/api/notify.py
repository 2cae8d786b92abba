"""The API's versioned notifications around each change (masakari.notifier): the handlers
pass the change as a callable, these wrap it in ``<object>.<action>.start/end/error``.

With notifications off (the default) the change runs alone, without any extra read.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from oslo_utils import strutils

from masakari import notifier
from masakari.api.request import ApiRequest
from masakari.db.models import Host, Notification, Segment
from masakari.ha import hosts as hosts_api
from masakari.ha import notifications as notifications_api
from masakari.ha import segments as segments_api

T = TypeVar("T")
Fields = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class _Kind:
    """An object the API changes: its event prefix, its fields and its payload."""

    name: str
    fields: Callable[..., dict[str, Any]]
    payload: Callable[[Fields, notifier.Payload | None], notifier.Payload]


_SEGMENT = _Kind("segment", notifier.segment_fields, notifier.segment_payload)
_HOST = _Kind("host", notifier.host_fields, notifier.host_payload)
_NOTIFICATION = _Kind("notification", notifier.notification_fields, notifier.notification_payload)


def segment_create(
    req: ApiRequest, data: Mapping[str, Any], create: Callable[[], Segment]
) -> Segment:
    return _emit(
        req,
        _SEGMENT,
        "create",
        lambda: _planned(_SEGMENT, data, description=None, enabled=True),
        create,
        _created(_SEGMENT),
    )


def segment_change(
    req: ApiRequest,
    action: str,
    segment_uuid: str,
    change: Callable[[], T],
    body: Mapping[str, Any] | None = None,
) -> T:
    """``body``: an update's, shown in its start payload as the reference shows it."""

    def before() -> Fields:
        fields = notifier.segment_fields(segments_api.get(req.state.db, segment_uuid))
        values = dict(body or {})
        if "enabled" in values:
            values["enabled"] = bool(values["enabled"])  # as the update writes it
        return _with(fields, values)

    in_use = lambda: segments_api.in_use(req.state.db, segment_uuid)  # noqa: E731
    return _change(req, _SEGMENT, action, before, change, in_use)


def host_create(
    req: ApiRequest, segment_uuid: str, data: Mapping[str, Any], create: Callable[[], Host]
) -> Host:
    def planned() -> Fields:
        segment = segments_api.get(req.state.db, segment_uuid)
        return _planned(
            _HOST,
            _host_values(data),
            reserved=False,
            on_maintenance=False,
            failover_segment=segment,
        )

    return _emit(req, _HOST, "create", planned, create, _created(_HOST))


def host_change(
    req: ApiRequest,
    action: str,
    segment_uuid: str,
    host_uuid: str,
    change: Callable[[], T],
    body: Mapping[str, Any] | None = None,
) -> T:
    """``body``: an update's, shown in its start payload as the reference shows it."""

    def before() -> Fields:
        fields = notifier.host_fields(*hosts_api.get(req.state.db, segment_uuid, host_uuid))
        return _with(fields, _host_values(body or {}))

    # A host's segment in use refuses the change, before any notification.
    in_use = lambda: segments_api.in_use(req.state.db, segment_uuid)  # noqa: E731
    return _change(req, _HOST, action, before, change, in_use)


def _host_values(data: Mapping[str, Any]) -> dict[str, Any]:
    # The flags as the API writes them ("false" is false), not as Python reads a string.
    values = dict(data)
    for flag in hosts_api.FLAGS:
        if flag in values:
            values[flag] = strutils.bool_from_string(values[flag])
    return values


def _with(fields: Fields, values: Mapping[str, Any]) -> Fields:
    """The object read, with the fields the request changes."""
    return {**fields, **{k: v for k, v in values.items() if k in fields}}


def notification_create(
    req: ApiRequest,
    data: Mapping[str, Any],
    record: Callable[[], tuple[Notification, str | None]],
) -> tuple[Notification, str | None]:
    """``record`` gives the notification and why it is held (None when it is not)."""

    def planned() -> Fields:
        return {
            "generated_time": notifier.iso_time(notifications_api.to_utc(data["generated_time"])),
            "type": data.get("type"),
            "payload": data.get("payload"),
            "status": "new",
            # The reporting host's (None when there is none: the report is refused).
            "source_host_uuid": notifications_api.source_host_uuid(req.state.db, data),
        }

    return _emit(
        req,
        _NOTIFICATION,
        "create",
        planned,
        record,
        lambda recorded, before: _as_planned(notifier.notification_fields(recorded[0]), before),
        lambda: notifications_api.refused_unseen(req.state.db, data, req.state.intake_rules),
    )


def _planned(kind: _Kind, data: Mapping[str, Any], **defaults: Any) -> Fields:
    # The object as the reference builds it before it is created: no id, no uuid yet.
    fields = kind.fields(types.SimpleNamespace(**{**defaults, **data}))
    return {k: v for k, v in fields.items() if k not in ("id", "uuid")}


def _created(kind: _Kind) -> Callable[[Any, Fields], Fields]:
    """The end payload of a create: the object as written, with the fields of its start
    payload only (the reference sends it before it reads back the id and the uuid)."""
    return lambda row, before: _as_planned(kind.fields(row), before)


def _as_planned(fields: Fields, planned: Fields) -> Fields:
    return {k: v for k, v in fields.items() if k in planned}


def _changed(kind: _Kind) -> Callable[[Any, Fields], Fields]:
    """The end payload of an update: the object as written."""
    return lambda row, _before: kind.fields(row)


def _deleted(_result: object, before: Fields) -> Fields:
    # The end payload of a delete: the object as it was, id included (the reference sends
    # it before it forgets the id).
    return dict(before)


def _change(
    req: ApiRequest,
    kind: _Kind,
    action: str,
    before: Callable[[], Fields],
    change: Callable[[], T],
    refused: Callable[[], bool],
) -> T:
    """An update or a delete: the start payload is the object as read before the change."""
    end = _deleted if action == "delete" else _changed(kind)
    return _emit(req, kind, action, before, change, end, refused)


def _emit(
    req: ApiRequest,
    kind: _Kind,
    action: str,
    start: Callable[[], Fields],
    change: Callable[[], T],
    end: Callable[[T, Fields], Fields],
    refused: Callable[[], bool] | None = None,
) -> T:
    """``change`` between ``<kind>.<action>.start`` and ``.end`` (``.error`` if it raises);
    nothing is read for the payloads while notifications are off.

    ``refused``: whether the change will be refused by a check the reference makes before
    it notifies (a segment in use, a report on a host on maintenance): the change then runs
    alone, to raise the refusal, and nothing is sent."""
    n = req.state.notifier
    if not n.enabled or (refused is not None and refused()):
        return change()
    started = start()
    with n.around(f"{kind.name}.{action}", lambda f: kind.payload(started, f)) as done:
        result = change()
        done(kind.payload(end(result, started), None))
    return result
