"""Hosts of a segment: CRUD, the Nova compute-service check and the in-use rule."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oslo_utils import strutils, uuidutils

from masakari import exception
from masakari.db import hosts as hosts_db
from masakari.db import segments as segments_db
from masakari.db.database import Database
from masakari.db.models import Host
from masakari.db.paging import Row

# Raises ComputeNotFoundByName when Nova has no nova-compute service on that host,
# NovaError when Nova fails.
ComputeCheck = Callable[[str], None]

FLAGS = ("reserved", "on_maintenance")
# Columns that cannot be NULL although the reference's schema lets null through.
NOT_NULL = ("type", "control_attributes")


def list_(
    db: Database,
    segment_uuid: str,
    filters: Mapping[str, Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Row]:
    with db.reader() as session:
        return hosts_db.list_(session, segment_uuid, filters, sort_keys, sort_dirs, limit, marker)


def get_segment(db: Database, segment_uuid: str) -> Row:
    """The live segment, else SegmentNotFound (the host list checks it first)."""
    with db.reader() as session:
        return segments_db.read(session, segment_uuid)


def get(db: Database, segment_uuid: str, host_uuid: str) -> tuple[Row, Row]:
    """The host and its segment, as plain rows."""
    if not uuidutils.is_uuid_like(host_uuid):
        raise exception.HostNotFound(id=host_uuid)
    with db.reader() as session:
        host = hosts_db.read_in_segment(session, host_uuid, segment_uuid)
        return host, segments_db.read(session, segment_uuid)


def create(
    db: Database, check_compute: ComputeCheck, segment_uuid: str, data: Mapping[str, Any]
) -> Host:
    """Segment (404), nulls (400), then Nova (400/403), then the unique name (409)."""
    get_segment(db, segment_uuid)
    _refuse_nulls(data)
    values = {
        "name": data["name"],
        "type": data["type"],
        "control_attributes": data["control_attributes"],
        "failover_segment_id": segment_uuid,
    }
    for flag in FLAGS:
        values[flag] = strutils.bool_from_string(data.get(flag, False), strict=True)
    check_compute(values["name"])
    with db.writer() as session:
        return hosts_db.create(session, values, segments_db.get(session, segment_uuid))


def update(
    db: Database,
    check_compute: ComputeCheck,
    segment_uuid: str,
    host_uuid: str,
    data: Mapping[str, Any],
) -> Host:
    """Host (404), in use (409), Nova when the body names the host, even unchanged (400/403),
    then the unique name (409)."""
    with db.reader() as session:
        _usable(session, segment_uuid, host_uuid, "updated")
    if "name" in data:
        check_compute(data["name"])
    _refuse_nulls(data)
    values = dict(data)
    for flag in FLAGS:
        if flag in values:
            values[flag] = strutils.bool_from_string(values[flag], strict=True)
    with db.writer() as session:
        row = _usable(session, segment_uuid, host_uuid, "updated")
        return hosts_db.update(session, row, values)


def delete(db: Database, segment_uuid: str, host_uuid: str) -> None:
    with db.writer() as session:
        row = _usable(session, segment_uuid, host_uuid, "deleted")
        hosts_db.soft_delete(session, row)


def _usable(session: Any, segment_uuid: str, host_uuid: str, verb: str) -> Host:
    row = hosts_db.get_in_segment(session, host_uuid, segment_uuid)
    if segments_db.is_under_recovery(session, row.failover_segment_id):
        raise exception.HostInUse(
            message=f"Host {row.uuid} can't be {verb} as it is in-use to process notifications."
        )
    return row


def _refuse_nulls(data: Mapping[str, Any]) -> None:
    # The reference's schema accepts null for these and its object layer then fails (500);
    # the project answers 400 with the wording of a schema error.
    for field in NOT_NULL:
        if field in data and data[field] is None:
            raise exception.ValidationError(
                detail=f"Invalid input for field/attribute {field}. Value: None. "
                "None is not of type 'string'"
            )
