"""Fixtures: one run's parts (tasks, the flow runner, the effects seam, slots) on the fake
clock, against the Nova simulator on the same clock (in process: these are tests of the
engine, not of the transport) and a migrated SQLite database.

A run's sleeps move the clock at once, and with it Nova's evacuations and heartbeats: a
180 s wait costs nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from masakari import conf as masakari_conf
from masakari.compute import retry
from masakari.compute.nova import NovaClient
from masakari.db.database import Database
from masakari.engine.context import RunContext
from masakari.engine.effects import Effects
from masakari.engine.lease import Lease
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.clock import EPOCH, FakeClock

# A lease no run here outlives, even on a clock that jumps hours through polls.
LONG_LEASE = 1e9


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


def make_run(
    db: Database,
    nova: NovaClient,
    clock: FakeClock,
    notification_uuid: str | None = None,
    lease_term: float = LONG_LEASE,
    owner: str = "engine-test",
    **overrides: Any,
) -> RunContext:
    """A run of engine ``owner`` holding a claim on a running notification (created unless
    given); ``overrides`` are options."""
    if notification_uuid is None:
        notification_uuid = rows.notification(
            db, str(uuid.uuid4()), "COMPUTE_HOST", {}, "running", generated_time=EPOCH
        )
    rows.claim(db, notification_uuid, owner=owner)
    lease = Lease(owner, 1, clock, lease_term, clock.monotonic())
    conf = masakari_conf.for_tests(**{"wait_period_after_service_update": 0, **overrides})
    return RunContext(
        conf=conf, effects=Effects(db, nova, clock, lease, notification_uuid), clock=clock
    )


# The progress rows: (attempt, task, state, progress, [(progress, message)]).
task_rows = rows.task_rows
