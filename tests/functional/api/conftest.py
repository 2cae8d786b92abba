"""Fixtures: one API deployment per module (Keystone tokens, SQLite, the Nova simulator)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.db.models import VMove
from tests.support.deployment import (
    Deployment,
    host_body,
    notification_body,
    segment_body,
)


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    with Deployment() as d:
        yield d


class Objects:
    """Creates rows through the API as admin, with unique names."""

    def __init__(self, d: Deployment) -> None:
        self.d = d
        self.hosts = iter(range(10_000))

    def segment(self, **fields: Any) -> str:
        name = fields.pop("name", f"seg-{uuid.uuid4().hex[:8]}")
        r = self.d.request("POST", "/v1/segments", segment_body(name, **fields), version="1.2")
        assert r.status_int == 201, r.text
        return str(r.json["segment"]["uuid"])

    def host(self, segment: str, name: str | None = None, **fields: Any) -> str:
        name = name or "compute-1"
        r = self.d.request("POST", f"/v1/segments/{segment}/hosts", host_body(name, **fields))
        assert r.status_int == 201, r.text
        return str(r.json["host"]["uuid"])

    def notification(self, hostname: str, type_: str = "PROCESS", **payload: str) -> str:
        body = notification_body(hostname, **payload)
        body["notification"]["type"] = type_
        body["notification"]["generated_time"] = (
            datetime.datetime(2026, 1, 1) + datetime.timedelta(hours=next(self.hosts))
        ).isoformat()
        r = self.d.request("POST", "/v1/notifications", body)
        assert r.status_int == 202, r.text
        return str(r.json["notification"]["notification_uuid"])

    def vmove(self, notification_uuid: str, **fields: Any) -> str:
        row = VMove(
            uuid=str(uuid.uuid4()),
            notification_uuid=notification_uuid,
            instance_uuid=str(uuid.uuid4()),
            instance_name=fields.pop("instance_name", "vm"),
            source_host="compute-1",
            type="evacuation",
            status=fields.pop("status", "pending"),
            **fields,
        )
        with self.d.db.writer() as session:
            session.add(row)
        return row.uuid


@pytest.fixture
def objects(deployment: Deployment) -> Objects:
    return Objects(deployment)


@pytest.fixture
def clean(deployment: Deployment) -> Iterator[Deployment]:
    """The module's deployment, emptied afterwards (host names are unique)."""
    yield deployment
    with deployment.db.writer() as session:
        for table in ("vmoves", "notifications", "hosts", "failover_segments"):
            session.execute(sa.text(f"DELETE FROM {table}"))
