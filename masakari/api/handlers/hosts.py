"""Hosts of a segment: /v1/segments/{segment_id}/hosts and .../hosts/{id}."""

from __future__ import annotations

from typing import Any

from masakari.api import handlers, listjson, microversion, notify, views
from masakari.api.request import ApiRequest, Reply, created, no_content, ok
from masakari.api.schemas import hosts as schemas
from masakari.ha import hosts as hosts_api
from masakari.ha import plans
from masakari.policies import hosts as policies

# Accepted by the reference but not applied: the segment comes from the path, and name
# and control_attributes never reached its query.
FILTERS = ("type",)
FLAG_FILTERS = ("on_maintenance", "reserved")


def index(req: ApiRequest) -> Reply:
    """GET .../hosts: 200 with the page of hosts of the segment (404 for an unknown one)."""
    req.can(policies.INDEX)
    page = handlers.page(req)
    segment_uuid = req.route_args["segment_id"]
    segment = views.segment(hosts_api.get_segment(req.state.db, segment_uuid))
    filters: dict[str, Any] = handlers.filters(req, FILTERS)
    for name in FLAG_FILTERS:
        if name in req.params:
            filters[name] = handlers.boolean_filter(req, name)
    rows = hosts_api.list_(
        req.state.db, segment_uuid, filters, page.sort_keys, page.sort_dirs, page.limit, page.marker
    )
    return ok(listjson.hosts(rows, segment))


def show(req: ApiRequest) -> Reply:
    """GET .../hosts/{id}: 200 with the host and its segment."""
    req.can(policies.DETAIL)
    row, segment = hosts_api.get(req.state.db, req.route_args["segment_id"], req.route_args["id"])
    return ok({"host": views.host(row, views.segment(segment))})


def create(req: ApiRequest) -> Reply:
    """POST .../hosts: 201 with the host; Nova must know a nova-compute on that host."""
    body = req.validated(schemas.CREATE)
    req.can(policies.CREATE)
    segment_uuid = req.route_args["segment_id"]
    row = notify.host_create(
        req,
        segment_uuid,
        body["host"],
        lambda: hosts_api.create(req.state.db, req.state.check_compute, segment_uuid, body["host"]),
    )
    return created({"host": views.host(row)})


def update(req: ApiRequest) -> Reply:
    """PUT .../hosts/{id}: 200 with the host; a new name is checked with Nova; 409 in use."""
    body = req.validated(schemas.UPDATE)
    req.can(policies.UPDATE)
    segment_uuid, host_uuid = req.route_args["segment_id"], req.route_args["id"]
    row = notify.host_change(
        req,
        "update",
        segment_uuid,
        host_uuid,
        lambda: hosts_api.update(
            req.state.db, req.state.check_compute, segment_uuid, host_uuid, body["host"]
        ),
        body["host"],
    )
    return ok({"host": views.host(row)})


def delete(req: ApiRequest) -> Reply:
    """DELETE .../hosts/{id}: 204; 409 while its segment is in use."""
    req.can(policies.DELETE)
    segment_uuid, host_uuid = req.route_args["segment_id"], req.route_args["id"]
    notify.host_change(
        req,
        "delete",
        segment_uuid,
        host_uuid,
        lambda: hosts_api.delete(req.state.db, segment_uuid, host_uuid),
    )
    return no_content()


@microversion.since("1.5")
def recovery_plan(req: ApiRequest) -> Reply:
    """GET .../hosts/{id}/recovery_plan (1.5): 200 with what recovering the host would do
    now, from live Nova and Placement data; nothing changes."""
    req.can(policies.RECOVERY_PLAN)
    state = req.state
    row, _segment = hosts_api.get(state.db, req.route_args["segment_id"], req.route_args["id"])
    found = plans.for_host(state.conf, state.db, state.nova, state.placement, row)
    return ok({"recovery_plan": found.view()})
