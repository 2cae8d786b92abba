"""Fire drill rows on every backend: one active drill per host (a unique key, no lock), the
claim one engine wins, the takeover of an expired claim, and fenced writes after it."""

from __future__ import annotations

import concurrent.futures
import datetime
import uuid

import pytest

from masakari import exception
from masakari.db import drills
from masakari.db.database import Database, transaction
from tests.support import rows

T0 = datetime.datetime(2026, 12, 6, 10, 0, 0)
LEASE = datetime.timedelta(seconds=20)


def _drill(db: Database, host_uuid: str, name: str = "compute-1") -> str:
    values = {
        "uuid": str(uuid.uuid4()),
        "segment_uuid": "seg",
        "host_uuid": host_uuid,
        "host_name": name,
        "no_fence": False,
        "allow_untagged": False,
        "move_back": False,
        "requested_by": "cli",
        "created_at": T0,
    }
    transaction(db, lambda s: drills.create(s, values))
    return str(values["uuid"])


def test_one_active_drill_per_host_until_it_ends(db: Database) -> None:
    first = _drill(db, "host-1")
    with pytest.raises(exception.DrillHostBusy):
        _drill(db, "host-1")
    _drill(db, "host-2")  # another host is free
    transaction(db, lambda s: drills.finish(s, first, drills.SUCCEEDED, None, T0))
    _drill(db, "host-1")


def test_concurrent_requests_for_one_host_create_one_drill(db: Database) -> None:
    def create(_: int) -> str:
        try:
            return _drill(db, "host-1")
        except exception.DrillHostBusy:
            return "busy"

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(create, range(4)))
    assert sorted(r == "busy" for r in results) == [False, True, True, True]


def test_one_engine_wins_the_claim_and_a_takeover_fences_the_first(db: Database) -> None:
    drill = _drill(db, "host-1")
    assert transaction(db, lambda s: drills.claimable(s, T0)) == [drill]
    won = transaction(db, lambda s: drills.claim(s, drill, "engine-a", T0, T0 + LEASE))
    assert won == drills.Claimed(drill, 1, takeover=False)
    assert transaction(db, lambda s: drills.claim(s, drill, "engine-b", T0, T0 + LEASE)) is None
    assert transaction(db, lambda s: drills.claimable(s, T0 + LEASE / 2)) == []
    # engine-a renews, writes; then stops renewing and its claim expires.
    assert transaction(db, lambda s: drills.renew(s, drill, "engine-a", 1, T0, T0 + LEASE))
    assert transaction(db, lambda s: drills.fence(s, drill, "engine-a", 1, T0))
    later = T0 + LEASE + datetime.timedelta(seconds=1)
    assert transaction(db, lambda s: drills.claimable(s, later)) == [drill]
    taken = transaction(db, lambda s: drills.claim(s, drill, "engine-b", later, later + LEASE))
    assert taken == drills.Claimed(drill, 2, takeover=True)
    # engine-a's writes and renewals are refused from now on.
    assert not transaction(db, lambda s: drills.fence(s, drill, "engine-a", 1, later))
    assert not transaction(db, lambda s: drills.renew(s, drill, "engine-a", 1, later, later))
    assert transaction(db, lambda s: drills.fence(s, drill, "engine-b", 2, later))


def test_notification_active_sees_busy_statuses(db: Database) -> None:
    segment, hosts = rows.segment_with_hosts(db, "compute-1")
    host = hosts["compute-1"]
    assert not transaction(db, lambda s: drills.notification_active(s, host))
    rows.notification(db, host, "COMPUTE_HOST", rows.HOST_DOWN)
    assert transaction(db, lambda s: drills.notification_active(s, host))
    assert not transaction(db, lambda s: drills.active_in_segment(s, segment))
