"""The tests' one fake clock: the engine's clock (masakari.engine.ports.Clock) whose time moves
only when the code under test sleeps or a test says so, so that a 180 s timeout, a lease running
out or a 60 s service_down_time cost nothing. The Nova simulator (tests/fakes/nova.py) reads
the same clock, so that an engine's sleeps also move Nova's heartbeats and evacuations.

    clock = FakeClock()
    clock.now()            # EPOCH + clock.offset (naive UTC, as the database stores times)
    clock.monotonic()      # clock.offset
    clock.sleep(5, cancel) # returns at once, 5 s later; raises Cancelled if cancel is set
    clock.advance(60)      # a test moving time
    clock.every(4, renew)  # renew() each time 4 more seconds have passed: a background
                           # thread's periodic work, such as a heartbeat renewing a lease
"""

from __future__ import annotations

import dataclasses
import datetime
import threading
from collections.abc import Callable

from masakari.engine.errors import Cancelled
from masakari.engine.ports import Clock

# 2026-01-01T00:00:00, naive UTC: the simulator's epoch seconds 1_767_225_600.
EPOCH = datetime.datetime(2026, 1, 1)


@dataclasses.dataclass
class _Timer:
    at: float
    interval: float
    fn: Callable[[], None]


class FakeClock(Clock):
    """Time moves only by ``sleep`` and ``advance``; ``offset`` (seconds since ``start``) may
    also be set outright. Sleeps of several threads add up, as the one clock they share."""

    def __init__(self, start: datetime.datetime = EPOCH) -> None:
        self.start = start
        self.offset = 0.0
        self.lock = threading.Lock()
        self._timers: list[_Timer] = []
        self._waiting: set[threading.Condition] = set()

    def now(self) -> datetime.datetime:
        return self.start + datetime.timedelta(seconds=self.offset)

    def monotonic(self) -> float:
        return self.offset

    def sleep(self, seconds: float, cancel: threading.Event) -> None:
        if cancel.is_set():
            raise Cancelled()
        self.advance(max(seconds, 0.0))

    def wait(self, condition: threading.Condition, seconds: float | None = None) -> None:
        """Wait (``condition`` held) until it is notified or the clock moves: nothing waits
        on the wall clock, and a waiter whose pause is over sees it on its next look."""
        with self.lock:
            self._waiting.add(condition)
        condition.wait()

    def advance(self, seconds: float) -> None:
        """Move time forward, running each ``every`` callback at its time on the way, then
        wake the waiters (:meth:`wait`)."""
        remaining = seconds
        while True:
            with self.lock:
                due = min(self._timers, key=lambda t: t.at, default=None)
                if due is None or due.at > self.offset + remaining:
                    self.offset += remaining
                    waiting = list(self._waiting)
                    break
                remaining -= max(due.at - self.offset, 0.0)
                self.offset = max(self.offset, due.at)
                due.at += due.interval
            due.fn()
        for condition in waiting:
            with condition:
                condition.notify_all()

    def every(self, interval: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` each time ``interval`` more seconds have passed, from now on."""
        if interval <= 0:
            raise ValueError("interval must be positive")
        with self.lock:
            self._timers.append(_Timer(self.offset + interval, interval, fn))
