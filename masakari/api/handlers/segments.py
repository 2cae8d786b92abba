"""Failover segments: /v1/segments and /v1/segments/{id}."""

from __future__ import annotations

from masakari.api import handlers, microversion, notify, views
from masakari.api.request import ApiRequest, Reply, created, no_content, ok
from masakari.api.schemas import segments as schemas
from masakari.engine import room, tolerance
from masakari.ha import doctor
from masakari.ha import segments as segments_api
from masakari.policies import segments as policies

FILTERS = ("recovery_method", "service_type", "enabled")


def index(req: ApiRequest) -> Reply:
    """GET /v1/segments: 200 with the page of segments, newest first by default."""
    req.can(policies.INDEX)
    page = handlers.page(req)
    rows = segments_api.list_(
        req.state.db,
        handlers.filters(req, FILTERS),
        page.sort_keys,
        page.sort_dirs,
        page.limit,
        page.marker,
    )
    return ok({"segments": [views.segment(row) for row in rows]})


def show(req: ApiRequest) -> Reply:
    """GET /v1/segments/{id}: 200 with the segment."""
    req.can(policies.DETAIL)
    return ok({"segment": views.segment(segments_api.get(req.state.db, req.route_args["id"]))})


def create(req: ApiRequest) -> Reply:
    """POST /v1/segments: 201 with the segment (enabled accepted from 1.2)."""
    body = req.validated(schemas.CREATE)
    req.can(policies.CREATE)
    data = body["segment"]
    row = notify.segment_create(req, data, lambda: segments_api.create(req.state.db, data))
    return created({"segment": views.segment(row)})


def update(req: ApiRequest) -> Reply:
    """PUT /v1/segments/{id}: 200 with the segment; 409 while in use."""
    body = req.validated(schemas.UPDATE)
    req.can(policies.UPDATE)
    uuid = req.route_args["id"]
    row = notify.segment_change(
        req,
        "update",
        uuid,
        lambda: segments_api.update(req.state.db, uuid, body["segment"]),
        body["segment"],
    )
    return ok({"segment": views.segment(row)})


def delete(req: ApiRequest) -> Reply:
    """DELETE /v1/segments/{id}: 204; its hosts are deleted with it; 409 while in use."""
    req.can(policies.DELETE)
    uuid = req.route_args["id"]
    notify.segment_change(req, "delete", uuid, lambda: segments_api.delete(req.state.db, uuid))
    return no_content()


@microversion.since("1.5")
def readiness(req: ApiRequest) -> Reply:
    """GET /v1/segments/{id}/readiness (1.5): 200 with the readiness doctor's findings for
    the segment (``masakari-manage segment check``), from 1.8 with the failures it
    tolerates; reads only."""
    req.can(policies.READINESS)
    state = req.state
    segment_uuid = req.route_args["id"]
    segments_api.get(state.db, segment_uuid)
    findings = doctor.check(
        state.conf,
        state.db,
        state.nova,
        state.placement,
        segment_uuid,
    )
    code = doctor.worst(findings)
    body = {
        "status": doctor.LABELS[code].lower(),
        "code": code,
        "findings": [f.view() for f in findings],
    }
    if req.at_least("1.8"):
        (found,) = tolerance.of_segments(
            state.conf, state.db, state.nova, state.placement, segment_uuid
        )
        tolerated = found.view()
        if req.at_least("1.9"):
            tolerated["held"] = room.shown(state.db, segment_uuid)
        body["failures_tolerated"] = tolerated
    return ok({"readiness": body})
