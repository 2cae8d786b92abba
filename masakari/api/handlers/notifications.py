"""Notifications: /v1/notifications and /v1/notifications/{id}."""

from __future__ import annotations

from typing import Any

from masakari import exception, metrics
from masakari.api import faults, handlers, listjson, notify, validation, views
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
    v14 = req.at_least("1.4")
    rows = notifications_api.list_(
        req.state.db, filters, page.sort_keys, page.sort_dirs, page.limit, page.marker, v14
    )
    if not v14:
        return ok(listjson.notifications(rows))
    extras = notifications_api.extras(req.state.db, [row.notification_uuid for row in rows])
    return ok({"notifications": [_since_1_4(row, extras) for row in rows]})


def _since_1_4(
    row: Any, extras: notifications_api.Extras, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return views.notification(
        row,
        details,
        hold_reason=extras.hold_reasons.get(row.notification_uuid),
        since_1_4=True,
        failure_reason=extras.failure_reasons.get(row.notification_uuid),
    )


def _view(req: ApiRequest, row: Any, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One notification as the request's version shows it."""
    if not req.at_least("1.4"):
        return {"notification": views.notification(row, details)}
    extras = notifications_api.extras(req.state.db, [row.notification_uuid])
    return {"notification": _since_1_4(row, extras, details)}


def show(req: ApiRequest) -> Reply:
    """GET /v1/notifications/{id}: 200; from 1.1 with recovery_workflow_details, from 1.4
    the failed task's last message says why the recovery failed, from 1.6 with the host
    fencing attempts (``fencing``), from 1.7 with the evidence (lists carry neither; each
    only when its own rule allows the caller)."""
    req.can(policies.DETAIL)
    notification_uuid = req.route_args["id"]
    if req.at_least("1.1"):
        row, details = notifications_api.get_with_details(
            req.state.db, notification_uuid, failure_message=req.at_least("1.4")
        )
        body = _view(req, row, details)
        # Each field only for callers its own rule allows (admins by default): opening
        # notification show to members does not show them BMC addresses and agent errors.
        if req.at_least("1.6") and req.context.can(policies.FENCING, fatal=False):
            attempts = notifications_api.fence_attempts(req.state.db, notification_uuid)
            body["notification"]["fencing"] = [views.fence_attempt(a) for a in attempts]
        if req.at_least("1.7") and req.context.can(policies.EVIDENCE, fatal=False):
            found = notifications_api.evidence(req.state.db, notification_uuid)
            body["notification"]["evidence"] = [views.evidence(item) for item in found]
        return ok(body)
    return ok(
        {"notification": views.notification(notifications_api.get(req.state.db, notification_uuid))}
    )


def create(req: ApiRequest) -> Reply:
    """POST /v1/notifications, counted by type and answer (masakari_notifications_received)."""
    try:
        reply = _create(req)
    except Exception as exc:
        metrics.notification_received(_reported_type(req), faults.classify(exc)[0])
        raise
    metrics.notification_received(_reported_type(req), reply.status)
    return reply


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
    try:
        row, hold_reason = notify.notification_create(
            req,
            data,
            lambda: notifications_api.record(req.state.db, data, req.state.intake_rules),
        )
    except notifications_api.DuplicateJudgedAgain as exc:
        req.state.wake_engine(exc.notification_uuid)  # the one it duplicates waits again
        raise
    req.state.wake_engine(row.notification_uuid)
    if req.at_least("1.4"):
        return accepted(
            {"notification": views.notification(row, hold_reason=hold_reason, since_1_4=True)}
        )
    return accepted({"notification": views.notification(row)})


def action(req: ApiRequest) -> Reply:
    """POST /v1/notifications/{id}/action (1.4): release or cancel a held notification.

    200 with the notification; 404 when there is none, 409 when it is not held.
    """
    body = req.validated(schemas.ACTION)
    verb = next(iter(body))
    req.can(policies.RELEASE if verb == "release" else policies.CANCEL)
    notification_uuid = req.route_args["id"]
    if verb == "release":
        row = notifications_api.release(req.state.db, notification_uuid)
        req.state.wake_engine(notification_uuid)
    else:
        row = notifications_api.cancel(req.state.db, notification_uuid)
    return ok(_view(req, row))
