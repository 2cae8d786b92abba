"""Rows the engine's database tests start from: a segment with hosts, notifications."""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any

from masakari.db.database import Database
from masakari.db.models import Host, Notification, Segment

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)
LATER = T0 + datetime.timedelta(minutes=1)


def segment_with_hosts(
    db: Database,
    *names: str,
    reserved: tuple[str, ...] = (),
    enabled: bool = True,
    recovery_method: str = "auto",
) -> tuple[str, dict[str, str]]:
    """A segment and its hosts (created one second apart, in order): (segment, name → uuid)."""
    seg = str(uuid.uuid4())
    out = {}
    with db.writer() as s:
        s.add(
            Segment(
                uuid=seg,
                name="s-" + seg[:8],
                service_type="c",
                recovery_method=recovery_method,
                enabled=enabled,
            )
        )
        s.flush()
        for i, name in enumerate(names):
            out[name] = str(uuid.uuid4())
            s.add(
                Host(
                    uuid=out[name],
                    name=name,
                    type="COMPUTE",
                    control_attributes="x",
                    failover_segment_id=seg,
                    reserved=name in reserved,
                    created_at=T0 + datetime.timedelta(seconds=i),
                )
            )
    return seg, out


def notify(
    db: Database,
    host: str,
    status: str = "new",
    generated: datetime.datetime = T0,
    payload: Any = None,
) -> str:
    """A VM notification of ``host``."""
    nid = str(uuid.uuid4())
    with db.writer() as s:
        s.add(
            Notification(
                notification_uuid=nid,
                generated_time=generated,
                source_host_uuid=host,
                type="VM",
                payload=json.dumps(payload or {}),
                status=status,
            )
        )
    return nid
