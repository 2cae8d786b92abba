"""vmoves of a host recovery: /v1/notifications/{notification_id}/vmoves[/{id}]."""

from __future__ import annotations

from masakari.api import handlers, views
from masakari.api.request import ApiRequest, Reply, ok
from masakari.ha import vmoves as vmoves_api
from masakari.policies import vmoves as policies

FILTERS = ("status", "type")


def index(req: ApiRequest) -> Reply:
    """GET .../vmoves: 200 with the page of vmoves (400 under a notification of another type)."""
    req.can(policies.INDEX)
    page = handlers.page(req)
    rows = vmoves_api.list_(
        req.state.db,
        req.route_args["notification_id"],
        handlers.filters(req, FILTERS),
        page.sort_keys,
        page.sort_dirs,
        page.limit,
        page.marker,
    )
    return ok({"vmoves": [views.vmove(row) for row in rows]})


def show(req: ApiRequest) -> Reply:
    """GET .../vmoves/{id}: 200 with the vmove."""
    req.can(policies.DETAIL)
    row = vmoves_api.get(req.state.db, req.route_args["notification_id"], req.route_args["id"])
    return ok({"vmove": views.vmove(row)})
