"""Evacuation slots on every backend: a slot lives exactly as long as the claim it names."""

from __future__ import annotations

import datetime

import pytest

from masakari.db import slots
from masakari.db.database import DUPLICATE_ERRORS, Database, transaction
from masakari.db.models import EvacuationSlot
from tests.support import rows

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0)
LATER = NOW + datetime.timedelta(seconds=30)


def _take(db: Database, nid: str, owner: str, attempt: int, now=NOW, cap=2) -> int | None:
    return transaction(
        db, lambda s: slots.take(s, cap, nid, owner, attempt, f"vm-{nid}-{owner}", now)
    )


def _held(db: Database, now=NOW, cap=2) -> int:
    with db.reader() as s:
        return slots.held(s, cap, now)


def test_cap_dead_claims_and_give_back(db: Database) -> None:
    rows.claim(db, "n1", "a", 1, LATER)
    rows.claim(db, "n2", "b", 1, LATER + datetime.timedelta(seconds=60))
    assert _take(db, "n1", "a", 1) == 0
    assert _take(db, "n2", "b", 1) == 1
    assert _take(db, "n2", "b", 1) is None  # the cap is 2
    assert _held(db) == 2
    # Engine a's claim expires (it died): its slot is free without anyone giving it back.
    assert _held(db, now=LATER + datetime.timedelta(seconds=1)) == 1
    rows.claim(db, "n3", "c", 1, LATER + datetime.timedelta(seconds=60))
    assert _take(db, "n3", "c", 1, now=LATER + datetime.timedelta(seconds=1)) == 0
    # A claim taken over (same notification, new owner) does not revive the old slot.
    rows.claim(db, "n2", "c", 2, LATER + datetime.timedelta(seconds=60))
    assert _held(db) == 1
    transaction(db, lambda s: slots.give_back(s, 0, "c", 1))
    transaction(db, lambda s: slots.give_back(s, 1, "x", 9))  # not ours: left alone
    with db.reader() as s:
        assert {r.slot for r in s.query(EvacuationSlot)} == {1}


def test_a_number_inserted_twice_is_refused(db: Database) -> None:
    rows.claim(db, "n1", "a", 1, LATER)
    with db.writer() as s:
        s.add(
            EvacuationSlot(
                slot=0,
                notification_uuid="n1",
                owner="a",
                attempt=1,
                instance_uuid="vm",
                taken_at=NOW,
            )
        )
    with pytest.raises(DUPLICATE_ERRORS), db.writer() as s:
        s.add(
            EvacuationSlot(
                slot=0,
                notification_uuid="n1",
                owner="a",
                attempt=1,
                instance_uuid="vm2",
                taken_at=NOW,
            )
        )


def test_hand_over_moves_a_held_slot_without_freeing_it(db: Database) -> None:
    rows.claim(db, "n1", "a", 1, LATER)
    rows.claim(db, "n2", "a", 2, LATER)
    assert _take(db, "n1", "a", 1, cap=1) == 0
    giver = ("n1", "a", 1)
    assert transaction(db, lambda s: slots.hand_over(s, 0, giver, "n2", "a", 2, "vm2", NOW))
    with db.reader() as s:
        row = s.get(EvacuationSlot, 0)
        assert (row.notification_uuid, row.owner, row.attempt, row.instance_uuid) == (
            "n2",
            "a",
            2,
            "vm2",
        )
    assert _held(db, cap=1) == 1
    # The giver no longer holds it: a second hand-over from it moves nothing.
    assert not transaction(db, lambda s: slots.hand_over(s, 0, giver, "n3", "a", 3, "vm3", NOW))
    assert _take(db, "n1", "a", 1, cap=1) is None
