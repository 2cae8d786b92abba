"""Fire drills of a segment (1.9): /v1/segments/{segment_id}/drills and .../{drill_id}."""

from __future__ import annotations

from masakari.api import microversion
from masakari.api.request import ApiRequest, Reply, accepted, ok
from masakari.api.schemas import drills as schemas
from masakari.ha import drills as drills_api
from masakari.policies import drills as policies


@microversion.since("1.9")
def create(req: ApiRequest) -> Reply:
    """POST .../drills (1.9): 202 with the new drill, which an engine runs; 400 while
    [drill] enabled is off, 404 for a host not of the segment, 409 when the host is on
    maintenance, recovered or drilled already."""
    body = req.validated(schemas.CREATE)
    req.can(policies.CREATE)
    data = body["drill"]
    drill = drills_api.request(
        req.state.conf,
        req.state.db,
        req.route_args["segment_id"],
        data["host"],
        no_fence=data.get("no_fence", False),
        allow_untagged=data.get("allow_untagged", False),
        move_back=data.get("move_back", False),
        requested_by="api",
    )
    return accepted({"drill": drill})


@microversion.since("1.9")
def index(req: ApiRequest) -> Reply:
    """GET .../drills (1.9): 200 with the segment's drills, newest first (without their
    phases)."""
    req.can(policies.INDEX)
    return ok({"drills": drills_api.list_(req.state.db, req.route_args["segment_id"])})


@microversion.since("1.9")
def show(req: ApiRequest) -> Reply:
    """GET .../drills/{drill_id} (1.9): 200 with the drill, its phases and report."""
    req.can(policies.SHOW)
    drill = drills_api.get(req.state.db, req.route_args["segment_id"], req.route_args["drill_id"])
    return ok({"drill": drill})
