"""Evacuation slots: giving one back frees it only under the claim that took it.

An engine's tokens are unique per owner, so one engine may hold a slot under a later claim
(a takeover, another notification) that it first held under an earlier, expired one. A
late give-back from the earlier run must not free it: the cap would be overrun.
"""

from __future__ import annotations

import datetime

import pytest

from masakari.db import slots
from masakari.db.database import Database, transaction
from masakari.db.models import EvacuationSlot
from tests.support import rows

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0)
# Plain Python over one table: SQLite shows it.
pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


def _take(db: Database, nid: str, owner: str, token: int, now: datetime.datetime) -> int | None:
    return transaction(db, lambda s: slots.take(s, 1, nid, owner, token, f"vm-{nid}", now))


def test_a_late_give_back_leaves_the_slot_of_a_later_claim_of_the_same_engine(
    db: Database,
) -> None:
    rows.claim(db, "n1", "engine-a", 1, NOW + datetime.timedelta(seconds=10))
    assert _take(db, "n1", "engine-a", 1, NOW) == 0
    # n1's claim expired (the engine froze); the same engine now recovers n2, token 2.
    later = NOW + datetime.timedelta(seconds=20)
    rows.claim(db, "n2", "engine-a", 2, later + datetime.timedelta(seconds=60))
    assert _take(db, "n2", "engine-a", 2, later) == 0
    # The frozen run of n1 wakes up and gives back what it took.
    transaction(db, lambda s: slots.give_back(s, 0, "engine-a", 1))
    with db.reader() as s:
        slots_held = [(r.slot, r.notification_uuid, r.attempt) for r in s.query(EvacuationSlot)]
    assert slots_held == [(0, "n2", 2)]
    assert _take(db, "n3", "engine-b", 1, later) is None
    transaction(db, lambda s: slots.give_back(s, 0, "engine-a", 2))
    with db.reader() as s:
        assert s.query(EvacuationSlot).count() == 0
