"""The flow runner's parts that need no database: the store's required values, task names,
and a stop going through run_flow."""

from __future__ import annotations

import pytest

from masakari import exception
from masakari.engine.context import Cancelled
from masakari.engine.lease import LeaseLost
from masakari.engine.recovery.flow import required, run_flow, task, task_name
from tests.support.runs import idle_run


def reporting(name: str):
    @task(name)
    def run(ctx) -> None:
        pass

    return run


def silent(ctx) -> None:
    """Reports nothing: never shown."""


def test_required_store_values():
    assert required("compute-1", "host_name") == "compute-1"
    with pytest.raises(exception.InvalidConfiguration, match="No host_name for this task"):
        required(None, "host_name")


@pytest.mark.parametrize("raised", [Cancelled(), LeaseLost()])
def test_run_flow_lets_a_stop_through(clock, raised):
    run = idle_run(clock)

    def body() -> None:
        raise raised

    with pytest.raises(type(raised)):
        run_flow(run, body)


def test_task_names():
    assert task_name(reporting("Shown")) == "Shown"
    assert task_name(silent) == "silent"

    class Callable:
        def __call__(self, ctx):
            pass

    assert task_name(Callable()) == "Callable"
