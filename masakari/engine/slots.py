"""The cap on evacuations in flight (``max_evacuations_in_flight``), as one engine sees it.

Every evacuation of every running notification of this engine waits here for a slot, best
priority first; only the best waiter asks the database (:mod:`masakari.db.slots`), which
holds the cap across engines. A waiter that the database turns down asks again after
``RETRY`` seconds.

A slot given back while a waiter of this engine exists is handed to the best one directly:
one conditional update moves the row to the waiter's claim (the slot is never free, so the
cap cannot be overrun and no other engine can slip in between). A waiter whose evacuation is
prepared (instance read, plan and lock recorded) has its vmove marked ongoing in that same
write, so that only the evacuate request is left once the slot arrives.

Every wait is the engine clock's (``Clock.wait``), so that a test's clock drives the pauses.

Fairness to other engines, which cannot see this engine's waiters: a slot is handed on
directly at most ``HANDOFFS`` times in a row; the next time it goes back to the database,
and this engine's waiters then ask no sooner than ``RETRY`` later, as a waiter of another
engine turned down before would. Should an engine die, its slots still die with its claims.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import heapq
import itertools
import logging
import threading
from collections.abc import Callable

from masakari.db import database
from masakari.engine import admission
from masakari.engine.admission import Prepare, Prepared, Priority, Run, Slot
from masakari.engine.effects import VMoveData
from masakari.engine.errors import Cancelled
from masakari.engine.ports import Clock

LOG = logging.getLogger(__name__)

# Seconds between two asks of the database while every slot is held (other engines' slots
# free up without telling this one).
RETRY = 0.25
# Longest wait on the local queue between two checks of the run's cancel flag and lease.
CHECK = 0.5
# Direct hand-offs of one slot in a row before it goes back to every engine's waiters.
HANDOFFS = 4

# The vmove to mark ongoing with the slot, once its evacuation is prepared (else None).
Ready = Callable[[], "int | None"]


@dataclasses.dataclass(eq=False)
class _Waiter:
    priority: Priority
    seq: int
    run: Run
    instance_uuid: str
    ready: Ready | None
    number: int | None = None
    # Asking the database, or being handed a slot: nobody else may act for it meanwhile.
    busy: bool = False
    started: bool = False

    def __lt__(self, other: _Waiter) -> bool:
        return (self.priority, self.seq) < (other.priority, other.seq)

    def vmove_id(self) -> int | None:
        return self.ready() if self.ready is not None else None


class EvacuationSlots:
    """Hands out up to ``cap`` slots, shared through the database with the other engines."""

    def __init__(self, cap: int, clock: Clock | None = None, retry: float = RETRY) -> None:
        if cap < 1:
            raise ValueError("an evacuation cap is at least 1")
        self.cap = cap
        self._clock = clock or Clock()
        self._retry = retry
        self._cond = threading.Condition()
        self._queue: list[_Waiter] = []
        self._seq = itertools.count()
        self._held = 0
        # Direct hand-offs of each slot held since it was last taken from the database.
        self._chain: dict[int, int] = {}
        # After a slot went back to the database: no local ask before then (monotonic).
        self._pooled_until = 0.0

    def acquire(
        self,
        run: Run,
        priority: Priority,
        instance_uuid: str,
        ready: Ready | None = None,
    ) -> Slot:
        """Block until this evacuation holds a slot. Raises Cancelled or LeaseLost (the run
        stops) while waiting."""
        waiter = _Waiter(priority, next(self._seq), run, instance_uuid, ready)
        with self._cond:
            heapq.heappush(self._queue, waiter)
        try:
            while True:
                with self._cond:
                    if waiter.number is not None:
                        return Slot(waiter.number, waiter.started)
                run.check()
                with self._cond:
                    if waiter.number is not None:
                        return Slot(waiter.number, waiter.started)
                    pause = self._pooled_until - self._clock.monotonic()
                    if (
                        waiter.busy
                        or self._queue[0] is not waiter
                        or self._held >= self.cap
                        or pause > 0
                    ):
                        self._clock.wait(self._cond, min(CHECK, pause) if pause > 0 else CHECK)
                        continue
                    waiter.busy = True
                vmove_id = waiter.vmove_id()
                number: int | None = None
                try:
                    number = run.effects.slots.take_evacuation_slot(
                        self.cap, instance_uuid, vmove_id
                    )
                except database.DUPLICATE_ERRORS:
                    pass  # another engine inserted the same number first: ask again
                finally:
                    with self._cond:
                        waiter.busy = False
                        if number is not None:
                            # A better waiter may have come in while the database answered.
                            self._drop(waiter)
                            self._held += 1
                            self._chain[number] = 0
                            waiter.number = number
                            waiter.started = vmove_id is not None
                        self._cond.notify_all()
                if number is None:
                    with self._cond:
                        self._clock.wait(self._cond, self._retry)
        except BaseException:
            with self._cond:
                while waiter.busy:  # a hand-off to it is under way: see how it ends
                    self._clock.wait(self._cond)
                self._drop(waiter)
                self._cond.notify_all()
                handed, started = waiter.number, waiter.started
            if handed is not None:
                if started:
                    # Its vmove already says ongoing: go on, as with a slot taken just
                    # before the stop (the next acquire stops the run).
                    return Slot(handed, started)
                self.release(run, handed)
            raise

    def release(self, run: Run, number: int) -> None:
        """Give a slot back: to the best waiter of this engine, or to the database. Should
        the database refuse, the slot still dies with the claim."""
        if self._hand_off(run, number):
            return
        try:
            run.effects.slots.give_back_evacuation_slot(number)
        except Exception as exc:
            LOG.warning(
                "Evacuation slot %s not given back (%s): it is free again when notification "
                "%s ends",
                number,
                exc,
                run.notification_uuid,
            )
        finally:
            # After the database write: a waiter woken now finds the slot free there too.
            with self._cond:
                self._held -= 1
                if self._chain.pop(number, 0) >= HANDOFFS:
                    self._pooled_until = self._clock.monotonic() + self._retry
                self._cond.notify_all()

    def _hand_off(self, run: Run, number: int) -> bool:
        """Move the slot to the best local waiter; False when none took it."""
        with self._cond:
            if self._chain.get(number, 0) >= HANDOFFS:
                return False
            # The best waiter asking the database now may get a slot there: wait and see.
            while self._queue and self._queue[0].busy:
                self._clock.wait(self._cond, CHECK)
            if not self._queue:
                return False
            waiter = heapq.heappop(self._queue)
            waiter.busy = True
        moved = False
        vmove_id: int | None = None
        try:
            vmove_id = waiter.vmove_id()
            moved = waiter.run.effects.slots.receive_evacuation_slot(
                number, run.effects.slots.slot_holder(), waiter.instance_uuid, vmove_id
            )
        except (Cancelled, Exception) as exc:
            # The waiter's run lost its claim or the database is away: give the slot back.
            LOG.info("Evacuation slot %s not handed to %s: %s", number, waiter.instance_uuid, exc)
        with self._cond:
            waiter.busy = False
            if moved:
                waiter.number = number
                waiter.started = vmove_id is not None
                self._chain[number] = self._chain.get(number, 0) + 1
            else:
                heapq.heappush(self._queue, waiter)
            self._cond.notify_all()
        return moved

    def _drop(self, waiter: _Waiter) -> None:
        if waiter in self._queue:
            self._queue.remove(waiter)
            heapq.heapify(self._queue)

    def enter(
        self,
        run: Run,
        priority: Priority,
        vmove: VMoveData,
        prepare: Prepare,
        preparer: concurrent.futures.Executor,
    ) -> _SlotTicket:
        """The admission interface: prepare the evacuation meanwhile, and hold its slot
        before returning (the evacuation loop waits with it, so that each notification
        prepares one evacuation ahead, no more)."""
        prepared = preparer.submit(prepare)
        slot = self.acquire(run, priority, vmove.instance_uuid, ready=admission.ready(prepared))
        return _SlotTicket(self, run, slot, prepared)

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    def has_waiters(self) -> bool:
        """Whether an evacuation of this engine waits for a slot (the batched poll then
        looks sooner for the end of those in flight)."""
        return self.waiting > 0


class _SlotTicket:
    def __init__(
        self,
        slots: EvacuationSlots,
        run: Run,
        slot: Slot,
        prepared: concurrent.futures.Future[Prepared | None],
    ) -> None:
        self._slots = slots
        self._run = run
        self._slot = slot
        self._prepared = prepared
        self._released = False
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._slot.started

    def wait(self) -> Prepared | None:
        return self._prepared.result()

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._slots.release(self._run, self._slot.number)
