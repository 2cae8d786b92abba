"""Scheduled drills ([drill] schedule_interval): one spare per segment in rotation.

Run by the engine that runs the periodic tasks. A spare is a reserved host that is not on
maintenance, whose nova-compute is up and that holds no instance; the one drilled longest
ago (or never) goes first. A segment with a notification being recovered, or a drill under
way, is left alone this round.
"""

from __future__ import annotations

import datetime
import functools
import logging
import uuid as uuid_lib

import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy import orm

from masakari import exception
from masakari.compute.servers import first_service
from masakari.db import drills as drills_db
from masakari.db import segments as segments_db
from masakari.db.database import Database, transaction
from masakari.db.models import Host, Segment
from masakari.engine.ports import Clock, NovaReads

LOG = logging.getLogger(__name__)

NEVER = datetime.datetime.min


def _spares(session: orm.Session) -> dict[str, list[Host]]:
    """The enabled segments' reserved hosts off maintenance, by segment, when the segment
    is quiet (no notification recovered, no drill under way)."""
    rows = session.scalars(
        sa.select(Host)
        .join(Segment, Segment.uuid == Host.failover_segment_id)
        .where(
            Host.deleted == 0,
            Host.reserved.is_(True),
            Host.on_maintenance.is_(False),
            Segment.deleted == 0,
            Segment.enabled.is_(True),
        )
        .order_by(Host.name)
    )
    found: dict[str, list[Host]] = {}
    for host in rows:
        found.setdefault(host.failover_segment_id, []).append(host)
    return {
        segment: hosts
        for segment, hosts in found.items()
        if not segments_db.is_under_recovery(session, segment)
        and not drills_db.active_in_segment(session, segment)
    }


def schedule(conf: cfg.ConfigOpts, db: Database, nova: NovaReads, clock: Clock) -> list[str]:
    """Create this round's drills; returns their uuids."""
    with db.reader() as session:
        spares = _spares(session)
        last = drills_db.last_drilled(session, [h.uuid for hs in spares.values() for h in hs])
        candidates = {
            segment: sorted(
                ((h.uuid, h.name) for h in hosts), key=lambda h: (last.get(h[0], NEVER), h[1])
            )
            for segment, hosts in spares.items()
        }
    created: list[str] = []
    for segment, hosts in candidates.items():
        for host_uuid, name in hosts:
            if not _idle(nova, name):
                continue
            values = {
                "uuid": str(uuid_lib.uuid4()),
                "segment_uuid": segment,
                "host_uuid": host_uuid,
                "host_name": name,
                "no_fence": False,
                "allow_untagged": False,
                "move_back": False,
                "requested_by": "schedule",
                "created_at": clock.now(),
            }
            try:
                transaction(db, functools.partial(drills_db.create, values=values))
            except exception.DrillHostBusy:
                continue
            LOG.info("Scheduled drill %s of spare %s", values["uuid"], name)
            created.append(str(values["uuid"]))
            break
    return created


def _idle(nova: NovaReads, host: str) -> bool:
    """Up in Nova, and no instance on it."""
    service = first_service(nova.find_compute_services(host))
    if service is None or service.state != "up" or service.forced_down:
        return False
    return not nova.list_servers_on_host(host)
