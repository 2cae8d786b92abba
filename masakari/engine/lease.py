"""The engine's side of a claim: a lease that ends on its own unless renewed in time.

The database holds the claim's expiry; the engine keeps a local deadline that ends a safety
margin earlier, measured on the monotonic clock from the moment a renewal was *sent*. A
frozen or cut-off engine therefore finds its lease over before any other engine may take the
claim over, whatever happened meanwhile, and stops acting on its own.
"""

from __future__ import annotations

import threading
from typing import Protocol

from masakari.engine.errors import Cancelled


class LeaseLost(Cancelled):
    """The claim was not renewed in time, or the database says it is no longer ours."""


class MonotonicClock(Protocol):
    def monotonic(self) -> float: ...


class Lease:
    """One claim held by this engine: its fencing token and how long it may still act.

    ``term`` is the claim's lifetime less the safety margin: the time after a renewal was
    sent during which the claim is surely still ours in the database.
    """

    def __init__(
        self, owner: str, token: int, clock: MonotonicClock, term: float, started: float
    ) -> None:
        self.owner = owner
        self.token = token
        self._clock = clock
        self._term = term
        self._lock = threading.Lock()
        self._deadline = started + term
        self._lost = False

    def renewed(self, sent_at: float) -> None:
        """The database accepted a renewal sent at ``sent_at`` (monotonic).

        A lease that ran out stays out: the run has been abandoned (or is being), and a
        late renewal must not bring it back half-way.
        """
        with self._lock:
            if self._lost or self._clock.monotonic() >= self._deadline:
                self._lost = True
                return
            self._deadline = max(self._deadline, sent_at + self._term)

    def lose(self) -> None:
        with self._lock:
            self._lost = True

    @property
    def lost(self) -> bool:
        with self._lock:
            return self._lost or self._clock.monotonic() >= self._deadline

    def remaining(self) -> float:
        """Seconds left before this engine must stop acting (0 once lost)."""
        with self._lock:
            if self._lost:
                return 0.0
            return max(0.0, self._deadline - self._clock.monotonic())

    def check(self) -> None:
        """Raise LeaseLost unless the lease still runs: call it right before every effect."""
        if self.remaining() <= 0.0:
            raise LeaseLost()
