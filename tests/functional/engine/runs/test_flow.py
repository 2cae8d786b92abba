"""The flow runner: taskflow's visible states, reverts, and the per-reserved-host retry."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from masakari import exception
from masakari.db import statuses
from masakari.db.models import NotificationClaim
from masakari.engine.context import Cancelled
from masakari.engine.lease import LeaseLost
from masakari.engine.recovery.flow import (
    Flow,
    Store,
    TaskContext,
    run_flow,
    task,
)
from tests.support.runs import make_run, task_rows


def reporting(name: str, fail_with: Exception | None = None, log: list | None = None):
    @task(name)
    def run(ctx: TaskContext) -> None:
        if log is not None:
            log.append((name, ctx.store.reserved_host))
        ctx.update_details(f"{name} starts")
        if fail_with is not None:
            raise fail_with
        ctx.update_details(f"{name} done", 1.0)

    return run


def silent(ctx: TaskContext) -> None:
    """Reports nothing: never shown."""


def _store(run) -> Store:
    return Store(run.notification_uuid)


def states(db, run):
    return [(a, n, s, p) for a, n, s, p, _ in task_rows(db, run.notification_uuid)]


def test_success_shows_every_reporting_task(db, nova, clock):
    run = make_run(db, nova, clock)
    Flow(run, [reporting("A")], [silent], [reporting("B")]).run_linear(_store(run))
    assert states(db, run) == [(1, "A", "SUCCESS", 1.0), (1, "B", "SUCCESS", 1.0)]
    assert task_rows(db, run.notification_uuid)[0][4] == [("0.0", "A starts"), ("1.0", "A done")]


def test_failure_reverts_what_ran_and_propagates(db, nova, clock):
    run = make_run(db, nova, clock)
    flow = Flow(
        run, [reporting("A")], [reporting("B", exception.HostRecoveryFailure())], [reporting("C")]
    )
    with pytest.raises(exception.HostRecoveryFailure):
        flow.run_linear(_store(run))
    assert states(db, run) == [(1, "A", "REVERTED", 1.0), (1, "B", "REVERTED", 1.0)]


def test_skip_is_a_failure_for_the_flow(db, nova, clock):
    run = make_run(db, nova, clock)
    with pytest.raises(exception.SkipHostRecovery):
        Flow(run, [reporting("A", exception.SkipHostRecovery())], [], []).run_linear(_store(run))
    assert states(db, run) == [(1, "A", "REVERTED", 1.0)]


def test_each_flow_is_a_new_attempt(db, nova, clock):
    run = make_run(db, nova, clock)
    with pytest.raises(RuntimeError):
        Flow(run, [reporting("A", RuntimeError())], [], []).run_linear(_store(run))
    Flow(run, [reporting("A")], [], []).run_linear(_store(run))
    assert states(db, run) == [(1, "A", "REVERTED", 1.0), (2, "A", "SUCCESS", 1.0)]


def test_per_candidate_retries_main_and_keeps_pre(db, nova, clock):
    run = make_run(db, nova, clock)
    log: list = []

    @task("Main")
    def main(ctx: TaskContext) -> None:
        log.append(ctx.store.reserved_host)
        ctx.update_details(f"with {ctx.store.reserved_host}")
        if ctx.store.reserved_host != "r2":
            raise exception.HostRecoveryFailure()

    Flow(run, [reporting("Pre")], [main], [reporting("Post")]).run_per_candidate(
        _store(run), ["r1", "r2"]
    )
    assert log == ["r1", "r2"]
    assert states(db, run) == [
        (1, "Pre", "SUCCESS", 1.0),
        (1, "Main", "SUCCESS", 1.0),
        (1, "Post", "SUCCESS", 1.0),
    ]
    # Both tries report into the same entry, as with taskflow's retry controller.
    assert [m for _, m in task_rows(db, run.notification_uuid)[1][4]] == ["with r1", "with r2"]


def test_per_candidate_exhausted_reverts_main_only(db, nova, clock):
    run = make_run(db, nova, clock)
    flow = Flow(run, [reporting("Pre")], [reporting("Main", exception.SkipHostRecovery())], [])
    with pytest.raises(exception.SkipHostRecovery):
        flow.run_per_candidate(_store(run), ["r1", "r2"])
    assert states(db, run) == [(1, "Pre", "SUCCESS", 1.0), (1, "Main", "REVERTED", 1.0)]
    assert len(task_rows(db, run.notification_uuid)[1][4]) == 2


def test_cancel_stops_without_revert(db, nova, clock):
    run = make_run(db, nova, clock)

    @task("Stops")
    def stops(ctx: TaskContext) -> None:
        ctx.update_details("going", 0.5)
        ctx.run.cancel.set()
        ctx.run.sleep(1)

    with pytest.raises(Cancelled):
        Flow(run, [stops], [reporting("Never")], []).run_linear(_store(run))
    assert states(db, run) == [(1, "Stops", "RUNNING", 0.5)]


def test_lease_running_out_stops_without_revert(db, nova, clock):
    run = make_run(db, nova, clock, lease_term=10)

    @task("Sleeps")
    def sleeps(ctx: TaskContext) -> None:
        ctx.update_details("going", 0.5)
        ctx.run.sleep(60)

    with pytest.raises(LeaseLost):
        Flow(run, [sleeps], [reporting("Never")], []).run_linear(_store(run))
    assert clock.offset == 10
    # Nothing more is written once the lease is over: no FAILURE, no REVERTED.
    assert states(db, run) == [(1, "Sleeps", "RUNNING", 0.5)]


def test_claim_taken_over_stops_at_the_next_write(db, nova, clock):
    run = make_run(db, nova, clock)

    @task("Taken")
    def taken(ctx: TaskContext) -> None:
        ctx.update_details("going", 0.5)
        with db.writer() as s:
            s.execute(
                sa.update(NotificationClaim)
                .where(NotificationClaim.notification_uuid == run.notification_uuid)
                .values(owner="engine-other", attempt=7)
            )
        ctx.update_details("never written", 0.7)

    with pytest.raises(LeaseLost):
        Flow(run, [taken], [reporting("Never")], []).run_linear(_store(run))
    assert run.lease.lost
    assert task_rows(db, run.notification_uuid) == [
        (1, "Taken", "RUNNING", 0.5, [("0.5", "going")])
    ]


def test_store_is_shared_by_the_tasks_of_a_flow(db, nova, clock):
    run = make_run(db, nova, clock)
    seen = []

    def first(ctx: TaskContext) -> None:
        ctx.store.vmove_ids = [1, 2]
        ctx.store.extra["third-party"] = "value"

    def second(ctx: TaskContext) -> None:
        seen.append((ctx.store.vmove_ids, ctx.store.extra, ctx.store.notification_uuid))

    Flow(run, [first], [second], []).run_linear(_store(run))
    assert seen == [([1, 2], {"third-party": "value"}, run.notification_uuid)]


@pytest.mark.parametrize(
    ("raised", "status"),
    [
        (None, statuses.FINISHED),
        (exception.SkipHostRecovery(), statuses.FINISHED),
        (exception.SkipInstanceRecovery(), statuses.FINISHED),
        (exception.IgnoreInstanceRecovery("paused"), statuses.IGNORED),
        (exception.HostRecoveryFailure(), statuses.ERROR),
        (RuntimeError("boom"), statuses.ERROR),
    ],
)
def test_run_flow_status(db, nova, clock, raised, status):
    run = make_run(db, nova, clock)

    def body() -> None:
        if raised is not None:
            raise raised

    assert run_flow(run, body) == status
