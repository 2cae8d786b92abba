"""Failover segments: CRUD with the in-use rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oslo_utils import strutils, uuidutils

from masakari import exception
from masakari.db import segments as segments_db
from masakari.db.database import Database
from masakari.db.models import Segment
from masakari.db.paging import Row


def list_(
    db: Database,
    filters: Mapping[str, str],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Row]:
    with db.reader() as session:
        return segments_db.list_(session, filters, sort_keys, sort_dirs, limit, marker)


def get(db: Database, segment_uuid: str) -> Row:
    if not uuidutils.is_uuid_like(segment_uuid):
        raise exception.SegmentNotFound(id=segment_uuid)
    with db.reader() as session:
        return segments_db.read(session, segment_uuid)


def in_use(db: Database, segment_uuid: str) -> bool:
    """Whether the segment's hosts have a notification in new, running or error (False for
    a segment that does not exist)."""
    with db.reader() as session:
        return segments_db.is_under_recovery(session, segment_uuid)


def create(db: Database, data: Mapping[str, Any]) -> Segment:
    values = {
        "name": data["name"],
        "description": data.get("description"),
        "recovery_method": data["recovery_method"],
        "service_type": data["service_type"],
        "enabled": strutils.bool_from_string(data.get("enabled", True), strict=True),
    }
    with db.writer() as session:
        return segments_db.create(session, values)


def update(db: Database, segment_uuid: str, data: Mapping[str, Any]) -> Segment:
    """409 while a host of the segment has a notification in new, running or error."""
    values = dict(data)
    if "enabled" in values:
        # As the reference's object field: any string is true, only JSON false disables.
        values["enabled"] = bool(values["enabled"])
    with db.writer() as session:
        row = segments_db.get(session, segment_uuid)
        if segments_db.is_under_recovery(session, segment_uuid):
            raise exception.SegmentInUse(uuid=segment_uuid)
        return segments_db.update(session, row, values)


def delete(db: Database, segment_uuid: str) -> None:
    """Soft-deletes the segment and its hosts; 409 while in use."""
    with db.writer() as session:
        segments_db.get(session, segment_uuid)
        if segments_db.is_under_recovery(session, segment_uuid):
            raise exception.SegmentInUse(
                message=f"Failover segment ({segment_uuid}) can't be deleted as it is in-use "
                "to process notifications."
            )
        segments_db.soft_delete(session, segment_uuid)
