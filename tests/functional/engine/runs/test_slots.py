"""The evacuation cap as engines share it: a freed slot goes straight to the best local
waiter in one update of its row, other engines still get slots, the cap always holds.
Asserted on the slot rows and the vmove rows."""

from __future__ import annotations

import datetime
import threading
from typing import Any

from masakari.compute.nova import NovaClient
from masakari.db import slots as db_slots
from masakari.db import vmoves as db_vmoves
from masakari.db.database import Database, transaction
from masakari.db.models import EvacuationSlot, VMove
from masakari.engine import slots as slots_module
from masakari.engine.context import RunContext
from masakari.engine.slots import EvacuationSlots, Slot
from tests.support.clock import FakeClock
from tests.support.runs import make_run

FOREVER = datetime.datetime(2100, 1, 1)


def _run(db: Database, nova: NovaClient, clock: FakeClock, owner: str = "engine-a") -> RunContext:
    return make_run(db, nova, clock, owner=owner)


def _rows(db: Database) -> dict[int, tuple[str, str]]:
    with db.reader() as s:
        return {r.slot: (r.notification_uuid, r.owner) for r in s.query(EvacuationSlot)}


def _held(db: Database, cap: int) -> int:
    with db.reader() as s:
        return db_slots.held(s, cap, FOREVER - datetime.timedelta(days=1))


class _Waiting:
    """acquire() in a thread of its own."""

    def __init__(
        self, slots: EvacuationSlots, run: RunContext, priority: tuple[int, ...], **kw: Any
    ) -> None:
        self.slot: Slot | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._go, args=(slots, run, priority, kw), daemon=True
        )
        self._thread.start()

    def _go(
        self, slots: EvacuationSlots, run: RunContext, priority: tuple[int, ...], kw: dict[str, Any]
    ) -> None:
        try:
            self.slot = slots.acquire(run, priority, f"vm-{run.notification_uuid}", **kw)
        except BaseException as exc:
            self.error = exc

    def join(self, timeout: float = 10) -> Slot:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "still waiting for a slot"
        assert self.error is None, self.error
        assert self.slot is not None
        return self.slot

    @property
    def waiting(self) -> bool:
        return self._thread.is_alive()


def _until_waiting(slots: EvacuationSlots, count: int) -> None:
    for _ in range(1000):
        if slots.waiting == count:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{slots.waiting} waiters, not {count}")


def test_a_freed_slot_moves_to_the_best_local_waiter(db, nova, clock) -> None:
    slots = EvacuationSlots(1)
    first, worse, better = (_run(db, nova, clock) for _ in range(3))
    assert slots.acquire(first, (1, 0), "vm-first") == Slot(0, False)
    assert _rows(db) == {0: (first.notification_uuid, "engine-a")}
    # The better waiter's evacuation is prepared: its vmove turns ongoing with the slot.
    vmove = transaction(
        db, lambda s: db_vmoves.create(s, better.notification_uuid, "vm-b", "vm", "compute-1")
    )
    late = _Waiting(slots, worse, (1, 5))
    early = _Waiting(slots, better, (0, 9), ready=lambda: vmove.id)
    _until_waiting(slots, 2)

    gave_back: list[int] = []
    first.effects.slots.give_back_evacuation_slot = gave_back.append  # type: ignore[method-assign]
    slots.release(first, 0)

    assert early.join() == Slot(0, True)
    # Moved, not freed and taken again: nothing was given back, and the row names the waiter.
    assert gave_back == []
    assert _rows(db) == {0: (better.notification_uuid, "engine-a")}
    assert _held(db, 1) == 1
    with db.reader() as s:
        row = s.get(VMove, vmove.id)
        assert (row.status, row.start_time) == ("ongoing", clock.now())
    assert late.waiting

    slots.release(better, 0)
    assert late.join() == Slot(0, False)
    assert _rows(db) == {0: (worse.notification_uuid, "engine-a")}
    slots.release(worse, 0)
    assert _rows(db) == {}


def test_another_engines_waiter_gets_the_slot_when_no_local_one_waits(db, nova, clock) -> None:
    here, there = EvacuationSlots(1), EvacuationSlots(1)
    ours, theirs = _run(db, nova, clock, "engine-a"), _run(db, nova, clock, "engine-b")
    assert here.acquire(ours, (1,), "vm-a") == Slot(0, False)
    remote = _Waiting(there, theirs, (1,))
    _until_waiting(there, 1)
    here.release(ours, 0)
    assert remote.join() == Slot(0, False)
    assert _rows(db) == {0: (theirs.notification_uuid, "engine-b")}


def test_a_slot_handed_on_goes_back_to_every_engine_after_a_few_turns(db, nova, clock) -> None:
    """Fairness: engine B cannot see engine A's waiters, so A's chain of hand-offs ends."""
    here = EvacuationSlots(1, retry=5.0)  # A's waiters stand back that long
    holder = _run(db, nova, clock)
    assert here.acquire(holder, (1,), "vm").number == 0
    for _ in range(slots_module.HANDOFFS):
        nxt = _run(db, nova, clock)
        waiting = _Waiting(here, nxt, (1,))
        _until_waiting(here, 1)
        here.release(holder, 0)
        assert waiting.join().number == 0
        assert _rows(db) == {0: (nxt.notification_uuid, "engine-a")}
        holder = nxt
    local = _Waiting(here, _run(db, nova, clock), (0,))
    _until_waiting(here, 1)
    here.release(holder, 0)
    # Back in the database although a local waiter exists: engine B's ask gets it.
    assert _rows(db) == {}
    theirs = _run(db, nova, clock, "engine-b")
    assert theirs.effects.slots.take_evacuation_slot(1, "vm-b") == 0
    assert local.waiting
    assert _rows(db) == {0: (theirs.notification_uuid, "engine-b")}


def test_a_turned_down_waiter_asks_again_on_the_engine_s_clock(db, nova, clock) -> None:
    """A waiter the database turned down (another engine holds the only slot) asks again once
    ``retry`` seconds of the engine's clock have passed: a test's clock drives the pause."""
    driven = FakeClock()
    here, there = EvacuationSlots(1, driven, retry=60.0), EvacuationSlots(1)
    theirs = _run(db, nova, clock, "engine-b")
    assert there.acquire(theirs, (1,), "vm-b").number == 0
    waiting = _Waiting(here, _run(db, nova, clock, "engine-a"), (1,))
    _until_waiting(here, 1)
    there.release(theirs, 0)  # free in the database; this engine is not told
    threading.Event().wait(0.5)
    assert waiting.waiting  # its clock has not moved: the pause is not over
    driven.advance(60.0)
    assert waiting.join(timeout=5).number == 0


def test_the_cap_holds_while_slots_change_hands(db, nova, clock) -> None:
    cap = 2
    here, there = EvacuationSlots(cap), EvacuationSlots(cap)
    runs = [(here, _run(db, nova, clock, "engine-a")) for _ in range(4)]
    runs += [(there, _run(db, nova, clock, "engine-b")) for _ in range(4)]
    most = 0
    lock = threading.Lock()
    errors: list[BaseException] = []

    def evacuations(slots: EvacuationSlots, run: RunContext) -> None:
        nonlocal most
        try:
            for turn in range(3):
                slot = slots.acquire(run, (1, turn), f"vm-{turn}")
                with lock:
                    most = max(most, _held(db, cap), len(_rows(db)))
                slots.release(run, slot.number)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=evacuations, args=pair) for pair in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert not any(t.is_alive() for t in threads)
    assert 1 <= most <= cap
    assert _rows(db) == {}


def test_a_waiter_cancelled_while_a_slot_is_handed_to_it_passes_it_on(db, nova, clock) -> None:
    slots = EvacuationSlots(1)
    first, cancelled, other = (_run(db, nova, clock) for _ in range(3))
    slots.acquire(first, (1,), "vm")
    doomed = _Waiting(slots, cancelled, (0,))
    patient = _Waiting(slots, other, (1,))
    _until_waiting(slots, 2)
    cancelled.cancel.set()
    doomed._thread.join(10)
    assert doomed.error is not None
    slots.release(first, 0)
    assert patient.join().number == 0
    assert _rows(db) == {0: (other.notification_uuid, "engine-a")}


def test_a_slot_handed_with_its_vmove_started_is_used_even_if_the_run_stops(db, nova, clock):
    """The vmove turned ongoing with the slot: giving the slot back would leave an ongoing
    vmove never sent, which the next attempt would record as failed."""
    slots = EvacuationSlots(1)
    first, stopping = _run(db, nova, clock), _run(db, nova, clock)
    slots.acquire(first, (1,), "vm")
    vmove = transaction(
        db, lambda s: db_vmoves.create(s, stopping.notification_uuid, "vm-s", "vm", "compute-1")
    )
    receive = stopping.effects.slots.receive_evacuation_slot

    def stopped_meanwhile(*args: Any) -> bool:
        stopping.cancel.set()
        threading.Event().wait(1.0)  # the waiter sees the stop while the slot is on its way
        return receive(*args)

    stopping.effects.slots.receive_evacuation_slot = stopped_meanwhile  # type: ignore[method-assign]
    waiting = _Waiting(slots, stopping, (1,), ready=lambda: vmove.id)
    _until_waiting(slots, 1)
    slots.release(first, 0)
    assert waiting.join() == Slot(0, True)
    assert _rows(db) == {0: (stopping.notification_uuid, "engine-a")}
