"""Versioned notifications, as the reference emits them on the ``versioned_notifications``
topic: ``segment.*``, ``host.*`` and ``notification.*`` events around each API change and
around each recovery (``notification.process.start/end/error``).

Off unless [oslo_messaging_notifications] driver names a driver, as in the reference; the
transport is [oslo_messaging_notifications] transport_url, else [DEFAULT] transport_url.
Payloads are oslo.versionedobjects primitives with the reference's object names and
versions, built here from rows without the reference's object machinery. A notification
that cannot be sent is logged by oslo.messaging and never fails the API call or recovery.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import socket
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from oslo_config import cfg

LOG = logging.getLogger(__name__)

TOPIC = "versioned_notifications"
NAMESPACE = "masakari"
# Object versions of masakari 22.0.0's notification payloads.
VERSIONS = {
    "SegmentApiPayload": "1.1",
    "HostApiPayload": "1.0",
    "NotificationApiPayload": "1.0",
    "ExceptionPayload": "1.0",
    "FailoverSegment": "1.1",
    # The project's own (quarantine.start/end): no reference object has this name.
    "QuarantinePayload": "1.0",
    # The project's own: a fire drill's outcome (masakari.db.drills.view), ``drill.end``.
    "DrillPayload": "1.0",
}

Payload = dict[str, Any]


def versioned(name: str, data: Mapping[str, Any]) -> Payload:
    """An oslo.versionedobjects primitive of the reference's object ``name``."""
    return {
        "masakari_object.name": name,
        "masakari_object.namespace": NAMESPACE,
        "masakari_object.version": VERSIONS[name],
        "masakari_object.data": dict(data),
    }


def iso_time(value: datetime.datetime | None) -> str | None:
    # oslo.versionedobjects' DateTimeField: ISO 8601 in UTC, "Z", no microseconds.
    if value is None:
        return None
    return value.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def _present(values: Mapping[str, Any]) -> dict[str, Any]:
    # A field the object never had set is left out of its primitive, as the reference does
    # (a segment about to be created has no id nor uuid yet).
    return {k: v for k, v in values.items() if v is not _UNSET}


_UNSET = object()


def segment_fields(row: Any) -> dict[str, Any]:
    return {
        "id": getattr(row, "id", _UNSET),
        "uuid": getattr(row, "uuid", _UNSET),
        "name": row.name,
        "service_type": row.service_type,
        "description": row.description,
        "recovery_method": row.recovery_method,
        "enabled": bool(row.enabled) if row.enabled is not None else True,
    }


def quarantine_payload(row: Any) -> Payload:
    """A quarantine (masakari_quarantines row) at its start or end."""
    return versioned(
        "QuarantinePayload",
        {
            "id": row.uuid,
            "host_name": row.host_name,
            "host_uuid": row.host_uuid,
            "segment_uuid": row.segment_uuid,
            "source": row.source,
            "reason": row.reason,
            "status": row.status,
            "detail": row.detail,
            "started_at": iso_time(row.started_at),
            "ended_at": iso_time(row.ended_at),
        },
    )


def segment_payload(values: Mapping[str, Any], fault: Payload | None = None) -> Payload:
    return versioned("SegmentApiPayload", {**_present(values), "fault": fault})


def _segment_object(row: Any) -> Payload:
    data = {
        **segment_fields(row),
        "created_at": iso_time(row.created_at),
        "updated_at": iso_time(row.updated_at),
        "deleted_at": iso_time(row.deleted_at),
        "deleted": bool(row.deleted),
    }
    return versioned("FailoverSegment", data)


def host_fields(row: Any, segment: Any = None) -> dict[str, Any]:
    """``segment``: the host's segment when ``row`` is a plain row (the API's reads)."""
    if segment is None:
        segment = row.failover_segment
    # No failover_segment_id: the reference's payload has the segment object instead.
    return {
        "id": getattr(row, "id", _UNSET),
        "uuid": getattr(row, "uuid", _UNSET),
        "name": row.name,
        "failover_segment": _segment_object(segment),
        "type": row.type,
        "reserved": bool(row.reserved),
        "control_attributes": row.control_attributes,
        "on_maintenance": bool(row.on_maintenance),
    }


def host_payload(values: Mapping[str, Any], fault: Payload | None = None) -> Payload:
    return versioned("HostApiPayload", {**_present(values), "fault": fault})


def notification_fields(row: Any) -> dict[str, Any]:
    payload = row.payload
    if isinstance(payload, str):
        payload = json.loads(payload)
    return {
        "id": getattr(row, "id", _UNSET),
        "notification_uuid": getattr(row, "notification_uuid", _UNSET),
        "generated_time": iso_time(row.generated_time),
        "source_host_uuid": row.source_host_uuid,
        "type": row.type,
        "payload": payload,
        "status": row.status,
    }


def notification_payload(values: Mapping[str, Any], fault: Payload | None = None) -> Payload:
    return versioned("NotificationApiPayload", {**_present(values), "fault": fault})


def exception_payload(exc: BaseException) -> Payload:
    """Where the exception was raised (its innermost frame), what, and the traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    module_name = function_name = "unknown"
    if frames:
        last = frames[-1]
        function_name = last.name
        module = next(
            (
                m.__name__
                for m in list(sys.modules.values())
                if getattr(m, "__file__", None) == last.filename
            ),
            None,
        )
        module_name = module or "unknown"
    return versioned(
        "ExceptionPayload",
        {
            "module_name": module_name,
            "function_name": function_name,
            "exception": type(exc).__name__,
            "exception_message": str(exc),
            "traceback": "".join(traceback.format_exception(exc)),
        },
    )


class Notifier:
    """The versioned notifier of one service (``masakari-api`` or ``masakari-engine``)."""

    def __init__(self, conf: cfg.ConfigOpts | None, binary: str) -> None:
        """``conf`` None: a notifier that sends nothing."""
        self.publisher_id = f"{binary}:{socket.gethostname()}"
        self._notifier: Any = None
        if conf is None or not conf.oslo_messaging_notifications.driver:
            return
        with warnings.catch_warnings():
            # oslo.messaging imports oslo.service, which warns that eventlet is deprecated.
            warnings.filterwarnings("ignore", message=r"\s*eventlet(utils module)? is deprecated")
            import oslo_messaging
        transport = oslo_messaging.get_notification_transport(conf)
        self._notifier = oslo_messaging.Notifier(
            transport, publisher_id=self.publisher_id, topics=[TOPIC]
        )

    def publishing_as(self, binary: str) -> Notifier:
        """The same sender (same transport), naming ``binary`` on this machine as the
        publisher: the engine's own host changes are published as the reference's engine
        publishes them, as ``masakari-api``."""
        other = Notifier(None, binary)
        if self._notifier is not None:
            other._notifier = self._notifier.prepare(publisher_id=other.publisher_id)
        return other

    @property
    def enabled(self) -> bool:
        return self._notifier is not None

    def emit(
        self, event_type: str, payload: Payload, error: bool = False, warning: bool = False
    ) -> None:
        if self._notifier is None:
            return
        send = (
            self._notifier.error
            if error
            else self._notifier.warn
            if warning
            else self._notifier.info
        )
        try:
            send({}, event_type, payload)
        except Exception:
            LOG.exception("Could not send the versioned notification %s", event_type)

    @contextlib.contextmanager
    def around(
        self,
        event: str,
        start: Callable[[Payload | None], Payload],
    ) -> Iterator[Callable[[Payload], None]]:
        """``event``.start, then ``event``.end with the payload the block hands to the
        callable it gets, or ``event``.error (the start payload with the fault) when the
        block raises; the exception propagates."""
        if self._notifier is None:
            yield lambda payload: None
            return
        self.emit(f"{event}.start", start(None))
        ended: list[Payload] = []
        try:
            yield ended.append
        except Exception as exc:
            self.emit(f"{event}.error", start(exception_payload(exc)), error=True)
            raise
        if ended:
            self.emit(f"{event}.end", ended[-1])
