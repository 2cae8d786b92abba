"""The cap on evacuations in flight (``max_evacuations_in_flight``), as one engine sees it.

Every evacuation of every running notification of this engine waits here for a slot, best
priority first; only the best waiter asks the database (:mod:`masakari.db.slots`), which
holds the cap across engines. A waiter that the database turns down asks again after
``RETRY`` seconds, or at once when a slot of this engine is given back.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from typing import TYPE_CHECKING

from masakari.db import database

if TYPE_CHECKING:
    from masakari.engine.context import RunContext

LOG = logging.getLogger(__name__)

# Seconds between two asks of the database while every slot is held (other engines' slots
# free up without telling this one).
RETRY = 0.25
# Longest wait on the local queue between two checks of the run's cancel flag and lease.
CHECK = 0.5

Priority = tuple[int, ...]


class EvacuationSlots:
    """Hands out up to ``cap`` slots, shared through the database with the other engines."""

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("an evacuation cap is at least 1")
        self.cap = cap
        self._cond = threading.Condition()
        self._queue: list[tuple[Priority, int]] = []
        self._seq = itertools.count()
        self._held = 0

    def acquire(self, run: RunContext, priority: Priority, instance_uuid: str) -> int:
        """Block until this evacuation holds a slot; its number. Raises Cancelled or LeaseLost
        (the run stops) while waiting."""
        entry = (priority, next(self._seq))
        with self._cond:
            heapq.heappush(self._queue, entry)
        acquired = False
        try:
            while True:
                run.check()
                with self._cond:
                    if self._queue[0] != entry or self._held >= self.cap:
                        self._cond.wait(CHECK)
                        continue
                try:
                    number = run.effects.take_evacuation_slot(self.cap, instance_uuid)
                except database.DUPLICATE_ERRORS:
                    continue  # another engine inserted the same number first: ask again
                with self._cond:
                    if number is not None:
                        # A better waiter may have come in while the database answered.
                        self._queue.remove(entry)
                        heapq.heapify(self._queue)
                        self._held += 1
                        acquired = True
                        self._cond.notify_all()
                        return number
                    self._cond.wait(RETRY)
        finally:
            if not acquired:
                with self._cond:
                    self._queue.remove(entry)
                    heapq.heapify(self._queue)
                    self._cond.notify_all()

    def release(self, run: RunContext, number: int) -> None:
        """Give a slot back. Should the database refuse, the slot still dies with the claim."""
        try:
            run.effects.give_back_evacuation_slot(number)
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
                self._cond.notify_all()

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)
