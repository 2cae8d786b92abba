"""The flow runner: taskflow's visible states, reverts, and the per-reserved-host retry."""

from __future__ import annotations

import pytest

from masakari import exception
from masakari.engine.context import Cancelled
from masakari.engine.recovery.flow import Flow, TaskContext, task, task_name
from tests.unit.engine.conftest import make_run, task_rows


def reporting(name: str, fail_with: Exception | None = None, log: list | None = None):
    @task(name)
    def run(ctx: TaskContext) -> None:
        if log is not None:
            log.append((name, ctx.store.get("reserved_host")))
        ctx.update_details(f"{name} starts")
        if fail_with is not None:
            raise fail_with
        ctx.update_details(f"{name} done", 1.0)

    return run


def silent(ctx: TaskContext) -> None:
    """Reports nothing: never shown."""


def states(db, run):
    return [(a, n, s, p) for a, n, s, p, _ in task_rows(db, run.notification_uuid)]


def test_success_shows_every_reporting_task(db, nova, clock):
    run = make_run(db, nova, clock)
    Flow(run, [reporting("A")], [silent], [reporting("B")]).run_linear({})
    assert states(db, run) == [(1, "A", "SUCCESS", 1.0), (1, "B", "SUCCESS", 1.0)]
    assert task_rows(db, run.notification_uuid)[0][4] == [("0.0", "A starts"), ("1.0", "A done")]


def test_failure_reverts_what_ran_and_propagates(db, nova, clock):
    run = make_run(db, nova, clock)
    flow = Flow(
        run, [reporting("A")], [reporting("B", exception.HostRecoveryFailure())], [reporting("C")]
    )
    with pytest.raises(exception.HostRecoveryFailure):
        flow.run_linear({})
    assert states(db, run) == [(1, "A", "REVERTED", 1.0), (1, "B", "REVERTED", 1.0)]


def test_skip_is_a_failure_for_the_flow(db, nova, clock):
    run = make_run(db, nova, clock)
    with pytest.raises(exception.SkipHostRecovery):
        Flow(run, [reporting("A", exception.SkipHostRecovery())], [], []).run_linear({})
    assert states(db, run) == [(1, "A", "REVERTED", 1.0)]


def test_each_flow_is_a_new_attempt(db, nova, clock):
    run = make_run(db, nova, clock)
    with pytest.raises(RuntimeError):
        Flow(run, [reporting("A", RuntimeError())], [], []).run_linear({})
    Flow(run, [reporting("A")], [], []).run_linear({})
    assert states(db, run) == [(1, "A", "REVERTED", 1.0), (2, "A", "SUCCESS", 1.0)]


def test_per_candidate_retries_main_and_keeps_pre(db, nova, clock):
    run = make_run(db, nova, clock)
    log: list = []

    @task("Main")
    def main(ctx: TaskContext) -> None:
        log.append(ctx.store["reserved_host"])
        ctx.update_details(f"with {ctx.store['reserved_host']}")
        if ctx.store["reserved_host"] != "r2":
            raise exception.HostRecoveryFailure()

    Flow(run, [reporting("Pre")], [main], [reporting("Post")]).run_per_candidate({}, ["r1", "r2"])
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
        flow.run_per_candidate({}, ["r1", "r2"])
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
        Flow(run, [stops], [reporting("Never")], []).run_linear({})
    assert states(db, run) == [(1, "Stops", "RUNNING", 0.5)]


def test_task_names():
    assert task_name(reporting("Shown")) == "Shown"
    assert task_name(silent) == "silent"

    class Callable:
        def __call__(self, ctx):
            pass

    assert task_name(Callable()) == "Callable"
