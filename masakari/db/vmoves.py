"""Queries on vmoves (read-only here: the engine writes them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception
from masakari.db.models import VMove
from masakari.db.paging import paginate


def list_(
    session: orm.Session,
    notification_uuid: str,
    filters: Mapping[str, str],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[VMove]:
    """vmoves of one notification. Filters: status, type (as given)."""
    criteria: list[Any] = [VMove.notification_uuid == notification_uuid]
    if "type" in filters:
        criteria.append(VMove.type == filters["type"])
    if "status" in filters:
        criteria.append(VMove.status == filters["status"])
    return paginate(session, VMove, criteria, sort_keys, sort_dirs, limit, marker)


def get(session: orm.Session, vmove_uuid: str) -> VMove:
    """Any live vmove with this uuid, whatever its notification (as the reference)."""
    row = session.scalar(sa.select(VMove).where(VMove.uuid == vmove_uuid, VMove.deleted == 0))
    if row is None:
        raise exception.VMoveNotFound(id=vmove_uuid)
    return row
