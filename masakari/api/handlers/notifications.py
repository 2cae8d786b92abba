"""Notifications: /v1/notifications and /v1/notifications/{id}."""

from __future__ import annotations

from typing import Any

from masakari import exception, metrics
from masakari.api import faults, handlers, notify, outage, validation, views
from masakari.api.request import ApiRequest, Reply, accepted, ok
from masakari.api.schemas import notifications as schemas
from masakari.ha import notifications as notifications_api
from masakari.policies import notifications as policies

FILTERS = ("status", "source_host_uuid", "type")


class InvalidGeneratedSince(exception.Invalid):
    msg_fmt = "Invalid generated-since value"


def index(req: ApiRequest) -> Reply:
    """GET /v1/notifications: 200 with the page of notifications (never with details)."""
    req.can(policies.INDEX)
    page = handlers.page(req)
    filters: dict[str, Any] = handlers.filters(req, FILTERS)
    if "generated-since" in req.params:
        try:
            filters["generated-since"] = notifications_api.to_utc(req.params["generated-since"])
        except ValueError as exc:
            raise InvalidGeneratedSince() from exc
    rows = notifications_api.list_(
        req.state.db, filters, page.sort_keys, page.sort_dirs, page.limit, page.marker
    )
    return ok({"notifications": [views.notification(row) for row in rows]})


def show(req: ApiRequest) -> Reply:
    """GET /v1/notifications/{id}: 200; from 1.1 with recovery_workflow_details."""
    req.can(policies.DETAIL)
    notification_uuid = req.route_args["id"]
    if req.at_least("1.1"):
        row, details = notifications_api.get_with_details(req.state.db, notification_uuid)
        return ok({"notification": views.notification(row, details)})
    return ok(
        {"notification": views.notification(notifications_api.get(req.state.db, notification_uuid))}
    )


def create(req: ApiRequest) -> Reply:
    """POST /v1/notifications, counted by type and answer (masakari_notifications_received)."""
    try:
        reply = _create(req)
    except Exception as exc:
        metrics.notification_received(_reported_type(req), _answer_code(exc))
        raise
    metrics.notification_received(_reported_type(req), reply.status)
    return reply


def _answer_code(exc: Exception) -> int:
    # As faults.status_and_message decides, without its side effects (outage bookkeeping).
    if outage.is_unreachable(exc):
        return 503
    for cls in type(exc).__mro__:
        if cls in faults.STATUSES:
            return faults.STATUSES[cls]
    return 500


def _reported_type(req: ApiRequest) -> str:
    # A bounded label: only the three types the schema accepts, whatever a client sends.
    body = getattr(req, "body_data", None)
    data = body.get("notification") if isinstance(body, dict) else None
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if kind in schemas.PAYLOADS else "invalid"


def _create(req: ApiRequest) -> Reply:
    """POST /v1/notifications: 202 with the notification in status new.

    The envelope is validated before the policy check, the payload of its type after.
    """
    body = req.validated(schemas.CREATE)
    req.can(policies.CREATE)
    data = body["notification"]
    validation.validate(schemas.PAYLOADS[data["type"]], data["payload"])
    row = notify.notification_create(
        req,
        data,
        lambda: notifications_api.create(
            req.state.db, req.state.conf.duplicate_notification_detection_interval, data
        ),
    )
    return accepted({"notification": views.notification(row)})
