"""Fire drills as the API and masakari-manage ask for them: checks, the row, the views.

The checks here are the ones a request can fail at once (a clear 400, 404 or 409); the
engine's check phase looks again at Nova, the canaries and the plan before it changes
anything.
"""

from __future__ import annotations

import datetime
import uuid as uuid_lib
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy import orm

from masakari import exception
from masakari.db import drills as drills_db
from masakari.db import segments as segments_db
from masakari.db.database import Database, transaction
from masakari.db.models import Host

REQUESTERS = ("api", "cli", "schedule")


def _host(session: orm.Session, segment_uuid: str, host: str) -> Host:
    """The segment's host named ``host`` (its name or its uuid)."""
    row = session.scalar(
        sa.select(Host).where(
            Host.failover_segment_id == segment_uuid,
            Host.deleted == 0,
            sa.or_(Host.name == host, Host.uuid == host),
        )
    )
    if row is None:
        raise exception.HostNotFoundUnderSegment(host_uuid=host, segment_uuid=segment_uuid)
    return row


def request(
    conf: cfg.ConfigOpts,
    db: Database,
    segment_uuid: str,
    host: str,
    *,
    no_fence: bool = False,
    allow_untagged: bool = False,
    move_back: bool = False,
    requested_by: str = "api",
    now: datetime.datetime | None = None,
) -> dict[str, Any]:
    """A new drill of ``host`` (name or uuid) in the segment, for an engine to run."""
    if not conf.drill.enabled:
        raise exception.DrillsDisabled()

    def create(session: orm.Session) -> dict[str, Any]:
        segments_db.get(session, segment_uuid)
        row = _host(session, segment_uuid, host)
        if row.on_maintenance:
            raise exception.HostOnMaintenance(host_name=row.name)
        if drills_db.notification_active(session, row.uuid):
            raise exception.DrillHostBusy(host=row.name, why="a notification of it is recovered")
        drill = drills_db.create(
            session,
            {
                "uuid": str(uuid_lib.uuid4()),
                "segment_uuid": segment_uuid,
                "host_uuid": row.uuid,
                "host_name": row.name,
                "no_fence": no_fence,
                "allow_untagged": allow_untagged,
                "move_back": move_back,
                "requested_by": requested_by,
                "created_at": now or _now(),
            },
        )
        return drills_db.view(drill, [])

    return transaction(db, create)


def get(db: Database, segment_uuid: str | None, drill_uuid: str) -> dict[str, Any]:
    with db.reader() as session:
        row = drills_db.get(session, drill_uuid)
        if row is None or (segment_uuid is not None and row.segment_uuid != segment_uuid):
            raise exception.DrillNotFound(uuid=drill_uuid, segment=segment_uuid or "any")
        return drills_db.view(row, drills_db.phases(session, drill_uuid))


def list_(db: Database, segment_uuid: str | None, limit: int = 100) -> list[dict[str, Any]]:
    with db.reader() as session:
        if segment_uuid is not None:
            segments_db.get(session, segment_uuid)
        return [drills_db.view(row, None) for row in drills_db.list_(session, segment_uuid, limit)]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
