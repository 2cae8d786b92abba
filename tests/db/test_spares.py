"""Which spares a host's recoveries took, read back from their progress rows."""

from __future__ import annotations

import datetime
import json
import uuid

from masakari.db import spares
from masakari.db.database import Database
from masakari.db.models import Host, Notification, RecoveryTask, Segment

NOW = datetime.datetime(2026, 6, 1, 10, 0, 0)


def _host(session, segment: str, name: str, reserved: bool) -> Host:
    host = Host(
        uuid=str(uuid.uuid4()),
        name=name,
        reserved=reserved,
        type="COMPUTE",
        control_attributes="ssh",
        failover_segment_id=segment,
        on_maintenance=False,
    )
    session.add(host)
    return host


def _notification(session, host: Host, task: str, *messages: str) -> str:
    nid = str(uuid.uuid4())
    session.add(
        Notification(
            notification_uuid=nid,
            generated_time=NOW,
            source_host_uuid=host.uuid,
            type="COMPUTE_HOST",
            payload="{}",
            status="finished",
        )
    )
    details = [{"timestamp": str(NOW), "message": m, "progress": "0.1"} for m in messages]
    session.add(
        RecoveryTask(
            notification_uuid=nid,
            attempt=1,
            position=0,
            name=task,
            state="SUCCESS",
            progress=1.0,
            details=json.dumps(details),
        )
    )
    session.flush()
    return nid


def test_spares_taken_since_the_last_return(db: Database) -> None:
    with db.writer() as s:
        seg, other = str(uuid.uuid4()), str(uuid.uuid4())
        for name, key in (("s", seg), ("t", other)):
            s.add(
                Segment(uuid=key, name=name, service_type="compute", recovery_method="rh_priority")
            )
        s.flush()
        failed = _host(s, seg, "compute-1", False)
        old = _host(s, seg, "spare-old", False)
        used = _host(s, seg, "spare-1", False)
        _host(s, seg, "spare-given-back", True)  # taken, enabling failed: reserved again
        elsewhere = _host(s, other, "spare-9", False)
        _notification(s, failed, spares.EVACUATE_TASK, spares.TAKEN_MESSAGE % old.name)
        _notification(s, failed, spares.RETURN_TASK, "Returning host 'compute-1' to service")
        _notification(
            s,
            failed,
            spares.EVACUATE_TASK,
            "Start evacuation of instances",
            spares.TAKEN_MESSAGE % "spare-given-back",
            spares.TAKEN_MESSAGE % used.name,
            spares.TAKEN_MESSAGE % elsewhere.name,
        )
        current = _notification(s, failed, spares.RETURN_TASK, "Returning")
        failed_uuid = failed.uuid
    with db.reader() as s:
        assert spares.taken_for(s, failed_uuid, seg, current) == ["spare-1"]
    with db.writer() as s:
        assert spares.give_back(s, "spare-1") is True
        assert spares.give_back(s, "spare-1") is False
    with db.reader() as s:
        assert spares.taken_for(s, failed_uuid, seg, current) == []
