"""A run of the engine for a test: idle (its Nova and database out of reach, for tests/unit), or
holding a claim on a notification of a migrated SQLite database against the Nova simulator on
the fake clock (tests/functional/engine/runs)."""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

from masakari import conf as masakari_conf
from masakari.compute.nova import NovaClient
from masakari.db.database import Database
from masakari.engine.context import RunContext
from masakari.engine.effects import Effects
from masakari.engine.lease import Lease
from tests.support import rows
from tests.support.clock import EPOCH, FakeClock

# A lease no run here outlives, even on a clock that jumps hours through polls.
LONG_LEASE = 1e9


def make_conf(**overrides: Any) -> Any:
    return masakari_conf.for_tests(**{"wait_period_after_service_update": 0, **overrides})


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
    return RunContext(
        conf=make_conf(**overrides),
        effects=Effects(db, nova, clock, lease, notification_uuid),
        clock=clock,
    )


# The progress rows: (attempt, task, state, progress, [(progress, message)]).
task_rows = rows.task_rows
