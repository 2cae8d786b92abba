"""Fixtures: one run's parts (tasks, the flow runner, the effects seam, slots) on the fake
clock, against the Nova simulator on the same clock (in process: these are tests of the
engine, not of the transport) and a migrated SQLite database (a run: tests/support/runs.py).

A run's sleeps move the clock at once, and with it Nova's evacuations and heartbeats: a
180 s wait costs nothing.
"""

from __future__ import annotations

import pytest

from masakari.compute import retry
from masakari.compute.nova import NovaClient
from tests.fakes.nova import NovaSimulator
from tests.support.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> NovaSimulator:
    return NovaSimulator(clock=clock)  # not started: answers in process


@pytest.fixture
def nova(sim: NovaSimulator) -> NovaClient:
    """The engine's client of the simulator (its retry policy)."""
    return sim.client(timeout=5, policy=retry.ENGINE)
