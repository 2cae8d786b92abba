"""Notifications: /v1/notifications and /v1/notifications/{id}."""

from __future__ import annotations

from typing import Any

from masakari import exception
from masakari.api import handlers, validation, views
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
    """POST /v1/notifications: 202 with the notification in status new.

    The envelope is validated before the policy check, the payload of its type after.
    """
    body = req.validated(schemas.CREATE)
    req.can(policies.CREATE)
    data = body["notification"]
    validation.validate(schemas.PAYLOADS[data["type"]], data["payload"])
    row = notifications_api.create(
        req.state.db, req.state.conf.duplicate_notification_detection_interval, data
    )
    req.state.wake_engine(row.notification_uuid)
    return accepted({"notification": views.notification(row)})
