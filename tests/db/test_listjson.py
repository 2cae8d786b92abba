"""The lists written straight to JSON are the bytes json.dumps writes of the views' dicts, for
rows as SQLite (in memory) returns them."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from masakari.api import listjson, views
from masakari.db import hosts as hosts_db
from masakari.db import models
from masakari.db import notifications as notifications_db

AWKWARD = ["plain", 'quo"te\\back/slash', "tab\tnew\nline\x00nul\x7fdel", "hôte-é", "日本", "🙂"]
TIMES = [
    datetime.datetime(2026, 1, 1),
    datetime.datetime(2026, 12, 31, 23, 59, 59, 123456),
    datetime.datetime(999, 5, 6, 7, 8, 9),
]
PAYLOADS = [
    None,
    '{"event": "STOPPED", "process_name": "nova-compute"}',
    '{"b":1,"a":[1,2.5,{"x":null}],"é":"ü🙂"}',
    "[]",
]


@pytest.fixture
def session() -> Iterator[orm.Session]:
    engine = sa.create_engine("sqlite://")
    models.Base.metadata.create_all(engine)
    with orm.Session(engine) as s:
        yield s


def _segment(session: orm.Session, name: str) -> models.Segment:
    row = models.Segment(
        uuid=f"seg-{name}", name=name, service_type="compute", recovery_method="auto",
        description=name, enabled=True, created_at=TIMES[0],
    )  # fmt: skip
    session.add(row)
    session.flush()
    return row


def _plain(session: orm.Session, model: Any) -> list[Any]:
    return list(session.connection().execute(sa.select(*model.__table__.columns)).all())


def test_hosts_match_json_dumps_of_views(session: orm.Session) -> None:
    segment = _segment(session, AWKWARD[3])
    for i, text in enumerate(AWKWARD * 2):
        session.add(
            models.Host(
                uuid=f"h-{i}", name=f"{text}-{i}", type=text, control_attributes=text,
                failover_segment_id=segment.uuid, reserved=i % 2 == 0,
                on_maintenance=i % 3 == 0, created_at=TIMES[i % 3],
                updated_at=None if i % 2 else TIMES[(i + 1) % 3],
                deleted_at=None if i % 4 else TIMES[1], deleted=0 if i % 4 else i + 1,
            )
        )  # fmt: skip
    session.flush()
    rows = _plain(session, models.Host)
    body = views.segment(_plain(session, models.Segment)[0])
    expected = json.dumps({"hosts": [views.host(row, body) for row in rows]}).encode()
    assert listjson.hosts(rows, body) == expected


def test_notifications_match_json_dumps_of_views(session: orm.Session) -> None:
    for i, text in enumerate(AWKWARD * 2):
        session.add(
            models.Notification(
                notification_uuid=f"n-{i}", generated_time=TIMES[(i + 2) % 3],
                source_host_uuid=text, type=text, payload=PAYLOADS[i % len(PAYLOADS)],
                status=models.NOTIFICATION_STATUSES[i % 6], failover_segment_uuid=text,
                message=None if i % 2 else text, created_at=TIMES[i % 3],
                updated_at=None if i % 2 else TIMES[1], deleted=0 if i % 5 else 7,
            )
        )  # fmt: skip
    session.flush()
    rows = _plain(session, models.Notification)
    expected = json.dumps({"notifications": [views.notification(row) for row in rows]}).encode()
    assert listjson.notifications(rows) == expected


def test_pages_read_by_the_lists_match_too(session: orm.Session) -> None:
    """The rows the handlers give: pages of the list statements (enum read as text)."""
    segment = _segment(session, "s")
    session.add(
        models.Host(
            uuid="h", name="h", type="COMPUTE", control_attributes="SSH",
            failover_segment_id=segment.uuid, created_at=TIMES[1],
        )
    )  # fmt: skip
    session.add(
        models.Notification(
            notification_uuid="n", generated_time=TIMES[0], source_host_uuid="h",
            type="VM", payload=PAYLOADS[2], status="new", failover_segment_uuid=segment.uuid,
        )
    )  # fmt: skip
    session.flush()
    hosts = hosts_db.list_(session, segment.uuid, {}, [], [], None, None)
    body = views.segment(_plain(session, models.Segment)[0])
    assert (
        listjson.hosts(hosts, body)
        == json.dumps({"hosts": [views.host(row, body) for row in hosts]}).encode()
    )
    notifications = notifications_db.list_(session, {}, [], [], None, None)
    assert (
        listjson.notifications(notifications)
        == json.dumps(
            {"notifications": [views.notification(row) for row in notifications]}
        ).encode()
    )


def test_empty_lists() -> None:
    assert listjson.hosts([], {}) == b'{"hosts": []}'
    assert listjson.notifications([]) == b'{"notifications": []}'
