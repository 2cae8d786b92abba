"""Queries on vmoves: the API's reads and the engine's writes."""

from __future__ import annotations

import dataclasses
import datetime
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception
from masakari.db.models import VMove
from masakari.db.paging import Row, paginate
from masakari.db.statuses import VMOVE_EVACUATION, VMOVE_PENDING


def list_(
    session: orm.Session,
    notification_uuid: str,
    filters: Mapping[str, str],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Row]:
    """vmoves of one notification. Filters: status, type (as given)."""
    params = {"notification": notification_uuid, **filters}
    criteria = [(name, _FILTERS[name]) for name in _FILTERS if name in params]
    return paginate(session, VMove, criteria, params, sort_keys, sort_dirs, limit, marker)


_FILTERS = {
    "notification": VMove.notification_uuid == sa.bindparam("notification"),
    "type": VMove.type == sa.bindparam("type"),
    "status": VMove.status == sa.bindparam("status"),
}


# Built once: a statement's cache key is computed for each new statement object.
_READ = sa.select(*VMove.__table__.columns).where(
    VMove.uuid == sa.bindparam("uuid"), VMove.deleted == 0
)


def get(session: orm.Session, vmove_uuid: str) -> Row:
    """Any live vmove with this uuid, whatever its notification (as the reference)."""
    row = session.execute(_READ, {"uuid": vmove_uuid}).first()
    if row is None:
        raise exception.VMoveNotFound(id=vmove_uuid)
    return row


# --- the engine's ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class VMoveData:
    id: int
    uuid: str
    instance_uuid: str
    instance_name: str
    source_host: str | None
    dest_host: str | None
    status: str | None
    message: str | None
    # When the move was marked ongoing, just before its evacuate was sent (engine clock).
    start_time: datetime.datetime | None = None


def _data(row: VMove) -> VMoveData:
    return VMoveData(
        id=row.id,
        uuid=row.uuid,
        instance_uuid=row.instance_uuid,
        instance_name=row.instance_name,
        source_host=row.source_host,
        dest_host=row.dest_host,
        status=row.status,
        message=row.message,
        start_time=row.start_time,
    )


# The reference's column: a longer Nova server name is cut to it, so that the move (and the
# recovery of every other instance) is recorded rather than failed by the database.
NAME_LENGTH = 255


def create(
    session: orm.Session,
    notification_uuid: str,
    instance_uuid: str,
    instance_name: str,
    source_host: str,
) -> VMoveData:
    row = VMove(
        uuid=str(uuidlib.uuid4()),
        notification_uuid=notification_uuid,
        instance_uuid=instance_uuid,
        instance_name=instance_name[:NAME_LENGTH],
        source_host=source_host,
        type=VMOVE_EVACUATION,
        status=VMOVE_PENDING,
    )
    session.add(row)
    session.flush()
    return _data(row)


def update(session: orm.Session, vmove_id: int, values: Mapping[str, Any]) -> None:
    session.execute(
        sa.update(VMove)
        .where(VMove.id == vmove_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def of_notification(
    session: orm.Session,
    notification_uuid: str,
    statuses: Sequence[str] | None = None,
    ids: Sequence[int] | None = None,
) -> list[VMoveData]:
    """Vmoves of a notification, newest first (the reference's default order)."""
    stmt = sa.select(VMove).where(VMove.notification_uuid == notification_uuid, VMove.deleted == 0)
    if statuses is not None:
        stmt = stmt.where(VMove.status.in_(list(statuses)))
    if ids is not None:
        stmt = stmt.where(VMove.id.in_(list(ids)))
    stmt = stmt.order_by(VMove.created_at.desc(), VMove.id.desc())
    return [_data(row) for row in session.scalars(stmt)]
