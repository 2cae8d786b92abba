"""Response bodies: database rows as the reference shows them (ids, soft-delete fields, times).

A row is an ORM instance (after a write) or a plain row of the table's columns (reads): both
give the columns as attributes.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from masakari.db import fencing, models, statuses
from masakari.db.paging import Row

# oslo.serialization's format: naive, always with microseconds.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def _time(value: datetime.datetime | None) -> str | None:
    if value is None:
        return None
    # isoformat is several times cheaper than strftime and, for a naive time with 4-digit
    # year, writes the same text; strftime keeps the reference's unpadded years below 1000.
    if value.year >= 1000 and value.tzinfo is None:
        return value.isoformat(timespec="microseconds")
    return value.strftime(TIME_FORMAT)


def _soft_delete_fields(row: Any) -> dict[str, Any]:
    return {
        "created_at": _time(row.created_at),
        "updated_at": _time(row.updated_at),
        "deleted_at": _time(row.deleted_at),
        "deleted": bool(row.deleted),
        "id": row.id,
    }


def segment(row: models.Segment | Row) -> dict[str, Any]:
    return {
        **_soft_delete_fields(row),
        "uuid": row.uuid,
        "name": row.name,
        "service_type": row.service_type,
        "enabled": bool(row.enabled),
        "description": row.description,
        "recovery_method": row.recovery_method,
    }


def host(row: models.Host | Row, segment_body: dict[str, Any] | None = None) -> dict[str, Any]:
    """``segment_body``: the view of the host's segment, built once for a whole list; without
    it the row must be an ORM host with its segment loaded."""
    if segment_body is None:
        segment_body = segment(row.failover_segment)  # type: ignore[union-attr]
    return {
        **_soft_delete_fields(row),
        "uuid": row.uuid,
        "name": row.name,
        "failover_segment_id": row.failover_segment_id,
        "failover_segment": segment_body,
        "type": row.type,
        "reserved": bool(row.reserved),
        "control_attributes": row.control_attributes,
        "on_maintenance": bool(row.on_maintenance),
    }


def notification(
    row: models.Notification | Row,
    workflow_details: list[dict[str, Any]] | None = None,
    hold_reason: str | None = None,
    since_1_4: bool = False,
    failure_reason: str | None = None,
) -> dict[str, Any]:
    """A notification; ``since_1_4`` adds hold_reason and failure_reason, and shows a held
    one as held."""
    body = {
        **_soft_delete_fields(row),
        "notification_uuid": row.notification_uuid,
        "generated_time": _time(row.generated_time),
        "source_host_uuid": row.source_host_uuid,
        "type": row.type,
        "payload": None if row.payload is None else json.loads(row.payload),
        "status": row.status,
        "failover_segment_uuid": row.failover_segment_uuid,
        "message": row.message,
    }
    if since_1_4:
        if hold_reason is not None:
            body["status"] = statuses.HELD
        body["hold_reason"] = hold_reason
        body["failure_reason"] = failure_reason
    if workflow_details is not None:
        body["recovery_workflow_details"] = workflow_details
    return body


def vmove(row: models.VMove | Row) -> dict[str, Any]:
    return {
        **_soft_delete_fields(row),
        "uuid": row.uuid,
        "notification_uuid": row.notification_uuid,
        "instance_uuid": row.instance_uuid,
        "instance_name": row.instance_name,
        "source_host": row.source_host,
        "dest_host": row.dest_host,
        "start_time": _time(row.start_time),
        "end_time": _time(row.end_time),
        "type": row.type,
        "status": row.status,
        "message": row.message,
    }


def fence_attempt(attempt: fencing.Attempt) -> dict[str, Any]:
    """One host fencing attempt, as notification show shows it from 1.6 (the engine and
    claim it was made under stay internal; the driver never names a credential)."""
    return {
        "host": attempt.host_name,
        "position": attempt.position,
        "driver": attempt.driver,
        "action": attempt.action,
        "result": attempt.result,
        "message": attempt.message,
        "started_at": _time(attempt.started_at),
        "duration": attempt.duration,
    }


def evidence(item: Any) -> dict[str, Any]:
    """One signal of a host failure (masakari.db.evidence.Evidence), at 1.7."""
    return {
        "kind": item.kind,
        "source": item.source,
        "failed": item.failed,
        "value": item.value,
        "detail": item.detail,
        "observed_at": _time(item.observed_at),
    }
