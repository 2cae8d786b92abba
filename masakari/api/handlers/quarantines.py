"""Quarantines (1.10): POST .../hosts/{id}/quarantine, /v1/quarantines and their action."""

from __future__ import annotations

from masakari.api import microversion
from masakari.api.request import ApiRequest, Reply, accepted, ok
from masakari.api.schemas import quarantines as schemas
from masakari.db import quarantines as q
from masakari.ha import hosts as hosts_api
from masakari.ha import quarantines as quarantines_api
from masakari.policies import quarantines as policies


@microversion.since("1.10")
def create(req: ApiRequest) -> Reply:
    """202 with the quarantine (a new one, or the host's open one: 200 then); 409 while
    quarantine is off or the host's failure is being recovered."""
    body = req.validated(schemas.CREATE)
    req.can(policies.CREATE)
    state = req.state
    row, _segment = hosts_api.get(state.db, req.route_args["segment_id"], req.route_args["id"])
    found, new = quarantines_api.request(
        state.conf, state.db, row.uuid, quarantines_api.OPERATOR, body["quarantine"]["reason"]
    )
    view = {"quarantine": quarantines_api.view(found)}
    return accepted(view) if new else ok(view)


@microversion.since("1.10")
def index(req: ApiRequest) -> Reply:
    """200 with every quarantine, newest first; ``?status=`` (repeatable) filters."""
    req.can(policies.INDEX)
    statuses = req.GET.getall("status") or None
    rows = quarantines_api.list_(req.state.db, statuses)
    return ok({"quarantines": [quarantines_api.view(r) for r in rows]})


@microversion.since("1.10")
def show(req: ApiRequest) -> Reply:
    req.can(policies.DETAIL)
    row, moves = quarantines_api.get(req.state.db, req.route_args["id"])
    return ok({"quarantine": quarantines_api.view(row, moves)})


@microversion.since("1.10")
def action(req: ApiRequest) -> Reply:
    """{"start": null}: run a held one; {"cancel": null}; {"release": null}: return an
    ended one's host to service. 200 with the quarantine; 409 in the wrong status."""
    body = req.validated(schemas.ACTION)
    verb = next(iter(body))
    req.can({"start": policies.START, "cancel": policies.CANCEL}.get(verb, policies.RELEASE))
    uuid = req.route_args["id"]
    state = req.state
    if verb == "start":
        row = quarantines_api.start(state.db, uuid)
    elif verb == "cancel":
        row = quarantines_api.cancel(state.db, uuid)
    else:
        row = quarantines_api.release(state.conf, state.db, state.nova, uuid)
    moves = quarantines_api.get(state.db, uuid)[1] if row.status != q.WITHDRAWN else []
    return ok({"quarantine": quarantines_api.view(row, moves)})
