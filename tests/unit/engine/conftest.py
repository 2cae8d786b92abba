"""Fixtures: the fake clock, options, and a run that may touch neither Nova nor a database.

The engine's parts that need Nova or a database are tested in tests/functional/engine/runs
(the simulator and SQLite, on the same fake clock).
"""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from masakari import conf as masakari_conf
from masakari.engine.context import RunContext
from masakari.engine.effects import Effects
from masakari.engine.lease import Lease
from tests.support.clock import FakeClock


def make_conf(**overrides: Any) -> Any:
    return masakari_conf.for_tests(**{"wait_period_after_service_update": 0, **overrides})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


class Unreachable:
    """Stands for Nova or the database where a unit test must not reach them."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"a unit test reached {self._what} ({name})")


def idle_run(clock: FakeClock, lease_term: float = 1e9, **overrides: Any) -> RunContext:
    """A run of a notification whose waits, lease and cancellation are real, and whose
    Nova and database are out of reach."""
    lease = Lease("engine-test", 1, clock, lease_term, clock.monotonic())
    effects = Effects(
        Unreachable("the database"),  # type: ignore[arg-type]
        Unreachable("Nova"),  # type: ignore[arg-type]
        clock,
        lease,
        "00000000-0000-4000-8000-000000000001",
    )
    return RunContext(conf=make_conf(**overrides), effects=effects, clock=clock)
