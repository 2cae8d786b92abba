"""Engine heartbeats (``masakari_engine_heartbeats``): which engines run, and since when.

Each engine stamps its row every claim-renewal round and deletes it when it stops; a row
whose stamp is old belongs to an engine that died or lost the database. Rows older than
``FORGET_AFTER`` are dropped by the next stamp of any engine, so that engines restarted over
months leave no trail.
"""

from __future__ import annotations

import dataclasses
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import EngineHeartbeat

FORGET_AFTER = datetime.timedelta(days=1)


@dataclasses.dataclass(frozen=True)
class EngineRow:
    engine: str
    host: str
    started_at: datetime.datetime
    heartbeat_at: datetime.datetime


def beat(session: orm.Session, engine: str, host: str, now: datetime.datetime) -> None:
    """Record that ``engine`` is alive at ``now`` (its first beat inserts its row)."""
    updated = session.execute(
        sa.update(EngineHeartbeat).where(EngineHeartbeat.engine == engine).values(heartbeat_at=now)
    )
    if affected_rows(updated) == 0:
        session.add(EngineHeartbeat(engine=engine, host=host, started_at=now, heartbeat_at=now))
    session.execute(
        sa.delete(EngineHeartbeat).where(EngineHeartbeat.heartbeat_at < now - FORGET_AFTER)
    )


def forget(session: orm.Session, engine: str) -> None:
    session.execute(sa.delete(EngineHeartbeat).where(EngineHeartbeat.engine == engine))


def latest(session: orm.Session, limit: int) -> list[EngineRow]:
    """At most ``limit`` engines, the most recently alive first."""
    rows = session.execute(
        sa.select(EngineHeartbeat)
        .order_by(EngineHeartbeat.heartbeat_at.desc(), EngineHeartbeat.engine)
        .limit(limit)
    ).scalars()
    return [EngineRow(r.engine, r.host, r.started_at, r.heartbeat_at) for r in rows]
