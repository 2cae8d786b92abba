"""The default admission: host_failure_recovery_threads evacuations of a group at once,
each prepared only once admitted; a ticket released twice frees one place; a stopped run
stops its waiters."""

from __future__ import annotations

import concurrent.futures
import threading

import pytest

from masakari.engine.admission import Threads
from masakari.engine.errors import Cancelled


class _Run:
    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.effects = None
        self.notification_uuid = "n"

    def check(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()


def _tickets(gate: Threads, run: _Run, count: int, prepared: list[int]) -> list:
    def prepare(n: int):
        return lambda: prepared.append(n)

    with concurrent.futures.ThreadPoolExecutor(1) as preparer:
        return [gate.enter(run, (n,), None, prepare(n), preparer) for n in range(count)]  # type: ignore[arg-type]


def test_threads_admit_their_count_and_prepare_once_admitted() -> None:
    run, prepared = _Run(), []
    first, second, third = _tickets(Threads(2), run, 3, prepared)
    assert prepared == []  # nothing read or locked before admission
    first.wait()
    second.wait()
    waiting = threading.Thread(target=third.wait)
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and prepared == [0, 1]
    first.release()
    first.release()  # idempotent: one place back, not two
    waiting.join(2)
    assert not waiting.is_alive() and prepared == [0, 1, 2]
    assert not third.started


def test_a_stopped_run_stops_its_waiter() -> None:
    run, prepared = _Run(), []
    first, second = _tickets(Threads(1), run, 2, prepared)
    first.wait()
    run.cancel.set()
    with pytest.raises(Cancelled):
        second.wait()
    assert prepared == [0]
