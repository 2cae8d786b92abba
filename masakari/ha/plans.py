"""Recovery plans of hosts: the database's side (segment, reserved hosts, peers) handed to
:func:`masakari.engine.plan.build` with live Nova and Placement readers."""

from __future__ import annotations

from oslo_config import cfg

from masakari import exception
from masakari.compute.placement import HostCapacity
from masakari.db import hosts as hosts_db
from masakari.db.database import Database
from masakari.db.models import Host
from masakari.db.paging import Row
from masakari.engine import capacity, plan
from masakari.engine.capacity import Capacities
from masakari.engine.ports import NovaReads


def for_host(
    conf: cfg.ConfigOpts,
    db: Database,
    nova: NovaReads,
    placement: Capacities,
    host: Host | Row,
) -> plan.Plan:
    """What recovering ``host`` would do now; reads only."""
    return plan.for_host(
        conf,
        db,
        nova,
        _Named(capacity.unheld(db, placement)),
        host.name,
        host.failover_segment_id,
    )


class _Named:
    """Placement failures named as such (the API answers 503 with the text, not a 500
    about Nova); a missing resource provider is no failure (the plan says so)."""

    def __init__(self, placement: Capacities) -> None:
        self._placement = placement

    def host_capacity(self, name: str) -> HostCapacity | None:
        try:
            return self._placement.host_capacity(name)
        except exception.PlacementUnavailable:
            raise
        except exception.NovaError as exc:
            raise exception.PlacementUnavailable(reason=exc.format_message()) from exc


def host_by_name(db: Database, name: str) -> Host:
    with db.reader() as session:
        return hosts_db.get_by_name(session, name)
