"""Which spares a host's recoveries took, read back from their progress rows."""

from __future__ import annotations

import datetime
import json

from masakari.db import spares
from masakari.db.database import Database
from masakari.db.models import RecoveryTask
from tests.support import rows

NOW = datetime.datetime(2026, 6, 1, 10, 0, 0)


def _notification(session, host: str, task: str, *messages: str) -> str:
    """A finished recovery of ``host`` whose ``task`` wrote ``messages``."""
    nid = rows.notification(session, host, "COMPUTE_HOST", {}, "finished", NOW)
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
        seg, other = rows.segment(s, "rh_priority"), rows.segment(s, "rh_priority")
        failed = rows.host(s, seg, "compute-1")
        rows.host(s, seg, "spare-old")
        rows.host(s, seg, "spare-1")
        rows.host(s, seg, "spare-given-back", reserved=True)  # taken, enabling failed: reserved
        rows.host(s, other, "spare-9")
        _notification(s, failed, spares.EVACUATE_TASK, spares.TAKEN_MESSAGE % "spare-old")
        _notification(s, failed, spares.RETURN_TASK, "Returning host 'compute-1' to service")
        _notification(
            s,
            failed,
            spares.EVACUATE_TASK,
            "Start evacuation of instances",
            spares.TAKEN_MESSAGE % "spare-given-back",
            spares.TAKEN_MESSAGE % "spare-1",
            spares.TAKEN_MESSAGE % "spare-9",
        )
        current = _notification(s, failed, spares.RETURN_TASK, "Returning")
        failed_uuid = failed
    with db.reader() as s:
        assert spares.taken_for(s, failed_uuid, seg, current) == ["spare-1"]
    with db.writer() as s:
        assert spares.give_back(s, "spare-1") is True
        assert spares.give_back(s, "spare-1") is False
    with db.reader() as s:
        assert spares.taken_for(s, failed_uuid, seg, current) == []
