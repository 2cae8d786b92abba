"""The engine's periodic tasks on futurist's worker: first runs, and no task holding another."""

from __future__ import annotations

import threading
import time

from masakari import coordination
from masakari.engine.outage import Outage
from masakari.engine.periodic import Periodic, Task
from masakari.engine.ports import Clock


def _wait(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_first_runs_and_a_stuck_task_delays_no_other() -> None:
    runs: list[str] = []
    stuck, release = threading.Event(), threading.Event()

    def hang() -> None:
        stuck.set()
        release.wait(30)

    periodic = Periodic(
        [
            Task("later", 60, lambda: runs.append("later")),
            Task("at_start", 60, lambda: runs.append("at_start"), at_start=True),
            Task("hang", 0.05, hang, at_start=True),
            Task("often", 0.1, lambda: runs.append("often")),
        ],
        Outage(),
        coordination.Everyone(),
        Clock(),
    )
    periodic.start()
    try:
        _wait(stuck.is_set)
        _wait(lambda: runs.count("often") >= 3)  # while "hang" still runs
        assert runs.count("at_start") == 1
        assert "later" not in runs  # one period (60 s) after start, never at start
    finally:
        release.set()
        periodic.stop(grace=5)


def test_a_follower_skips_leader_only_tasks_and_a_failing_task_runs_again() -> None:
    runs: list[str] = []

    class Follower:
        def start(self) -> None:
            pass

        def stop(self) -> None:
            pass

        def runs_periodic_tasks(self) -> bool:
            return False

    def fail() -> None:
        runs.append("fail")
        raise RuntimeError("boom")

    periodic = Periodic(
        [
            Task("leader", 0.05, lambda: runs.append("leader"), at_start=True, leader_only=True),
            Task("fail", 0.05, fail, at_start=True),
        ],
        Outage(),
        Follower(),
        Clock(),
    )
    periodic.start()
    try:
        _wait(lambda: runs.count("fail") >= 3)
        assert "leader" not in runs
    finally:
        periodic.stop(grace=5)
