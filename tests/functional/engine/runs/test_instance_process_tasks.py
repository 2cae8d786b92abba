"""Instance, process and compute-service tasks, one by one, against the simulator."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from masakari import exception
from masakari.db.models import Notification
from masakari.engine.context import PollTimeout
from masakari.engine.progress import FlowProgress
from masakari.engine.recovery import host, instance, prepare, process
from masakari.engine.recovery.flow import Store, TaskContext
from tests.support.runs import make_run


class Recorder:
    """A progress entry that keeps messages in memory."""

    def __init__(self) -> None:
        self.messages: list[tuple[float, str]] = []

    def update(self, message: str, progress: float = 0.0) -> None:
        self.messages.append((progress, message))


def _context(run, progress, store) -> TaskContext:
    return TaskContext(run, Store(run.notification_uuid, **store), progress)  # type: ignore[arg-type]


def run_task(fn, run, **store):
    progress = Recorder()
    fn(_context(run, progress, store))
    return progress.messages


def run_failing(fn, run, error, **store):
    progress = Recorder()
    with pytest.raises(error):
        fn(_context(run, progress, store))
    return progress.messages


@pytest.fixture
def vm(sim):
    sim.add_service("compute-1")
    return sim.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})


def test_stop_start_confirm(db, nova, clock, vm):
    run = make_run(db, nova, clock)
    assert run_task(instance.stop_instance, run, instance_uuid=vm) == [
        (0.0, "Stopping instance: vm"),
        (1.0, "Stopped instance: 'vm'"),
    ]
    assert run_task(instance.start_instance, run, instance_uuid=vm) == [
        (0.0, "Starting instance: 'vm'"),
        (1.0, "Instance started: 'vm'"),
    ]
    assert run_task(instance.confirm_instance_active, run, instance_uuid=vm) == [
        (0.0, "Confirming instance 'vm' vm_state is ACTIVE"),
        (1.0, "Confirmed instance 'vm' vm_state is ACTIVE"),
    ]


def test_an_attempt_after_an_engine_lost_past_start_does_not_restart_again(
    db, sim, nova, clock, vm
):
    first = make_run(db, nova, clock)
    run_task(instance.stop_instance, first, instance_uuid=vm)
    run_task(instance.start_instance, first, instance_uuid=vm)
    # The first engine is lost here; the next attempt of the same notification runs the flow.
    again = make_run(db, nova, clock, notification_uuid=first.notification_uuid)
    assert run_task(instance.stop_instance, again, instance_uuid=vm) == [
        (1.0, "Instance 'vm' was started by an earlier attempt: not stopped again")
    ]
    run_task(instance.start_instance, again, instance_uuid=vm)
    run_task(instance.confirm_instance_active, again, instance_uuid=vm)
    assert sim.actions(vm) == ["os-stop", "os-start"]


def test_an_attempt_after_an_engine_lost_past_stop_starts_it(db, sim, nova, clock, vm):
    first = make_run(db, nova, clock)
    run_task(instance.stop_instance, first, instance_uuid=vm)
    again = make_run(db, nova, clock, notification_uuid=first.notification_uuid)
    run_task(instance.stop_instance, again, instance_uuid=vm)  # stopped already: no request
    run_task(instance.start_instance, again, instance_uuid=vm)
    assert sim.actions(vm) == ["os-stop", "os-start"]


def test_a_retry_after_an_attempt_that_ended_restarts_it(db, sim, nova, clock, vm):
    """The periodic retry of an ``error`` notification runs the flow from scratch."""
    first = make_run(db, nova, clock)
    for task in (instance.stop_instance, instance.start_instance):
        run_task(task, first, instance_uuid=vm)
    assert first.effects.finish("error", None)
    with db.writer() as s:  # the retry task claims it again: running, a new claim
        s.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == first.notification_uuid)
            .values(status="running")
        )
    retry = make_run(db, nova, clock, notification_uuid=first.notification_uuid)
    for task in (instance.stop_instance, instance.start_instance):
        run_task(task, retry, instance_uuid=vm)
    assert sim.actions(vm) == ["os-stop", "os-start", "os-stop", "os-start"]


def test_another_notification_of_the_instance_restarts_it(db, sim, nova, clock, vm):
    first = make_run(db, nova, clock)
    for task in (instance.stop_instance, instance.start_instance):
        run_task(task, first, instance_uuid=vm)
    later = make_run(db, nova, clock)  # a new crash report: its own notification
    for task in (instance.stop_instance, instance.start_instance):
        run_task(task, later, instance_uuid=vm)
    assert sim.actions(vm) == ["os-stop", "os-start", "os-stop", "os-start"]


@pytest.mark.parametrize("value", ["False", "no", "0", "", "maybe"])
def test_non_ha_metadata_values_skip(db, sim, nova, clock, value):
    sim.add_service("compute-1")
    sim.add_server("vm", host="compute-1", metadata={"HA_Enabled": value})
    run = make_run(db, nova, clock)
    messages = run_failing(
        instance.stop_instance, run, exception.SkipInstanceRecovery, instance_uuid="vm"
    )
    assert messages == [(1.0, "Skipping recovery for instance: vm as it is not Ha_Enabled")]


def test_own_metadata_key(db, sim, nova, clock):
    sim.add_service("compute-1")
    sim.add_server("vm", host="compute-1", metadata={"ha": "yes"})
    run = make_run(db, nova, clock, **{"instance_failure.ha_enabled_instance_metadata_key": "ha"})
    run_task(instance.stop_instance, run, instance_uuid="vm")
    # HA by the configured key, so the instance is stopped (with the default key it is not)
    assert sim.actions("vm") == ["os-stop"]


def test_start_refuses_an_instance_that_is_not_stopped(db, nova, clock, vm):
    run = make_run(db, nova, clock)
    messages = run_failing(
        instance.start_instance, run, exception.InstanceRecoveryFailure, instance_uuid=vm
    )
    assert messages[-1] == (
        1.0,
        "Invalid state for Instance vm. Expected state: 'STOPPED', Actual state: 'active'",
    )


def test_start_timeout(db, sim, nova, clock, vm):
    sim.update_server(vm, vm_state="stopped", power_state=4)
    sim.state_fault("ignore_action", vm, action="os-start")
    run = make_run(db, nova, clock)
    run_task(instance.start_instance, run, instance_uuid=vm)
    messages = run_failing(
        instance.confirm_instance_active, run, exception.InstanceRecoveryFailure, instance_uuid=vm
    )
    assert messages[-1] == (1.0, "Failed to start instance vm")
    assert clock.offset > 60


def test_nova_error_propagates(db, sim, nova, clock, vm):
    sim.fail(500, action="os-stop", server=vm, times=1)
    run = make_run(db, nova, clock)
    run_failing(instance.stop_instance, run, exception.NovaError, instance_uuid=vm)


def test_disable_compute_node(db, sim, nova, clock):
    sim.add_service("compute-1")
    run = make_run(db, nova, clock)
    store = {"host_name": "compute-1", "process_name": "nova-compute"}
    assert run_task(process.disable_compute_node, run, **store)[-1] == (
        1.0,
        "Disabled compute service on host: 'compute-1'",
    )
    assert sim.service("compute-1")["disabled_reason"] == "Masakari detected process failed."
    assert run_task(process.disable_compute_node, run, **store)[-1] == (
        1.0,
        "Skipping recovery for process nova-compute as it is already disabled",
    )


def test_confirm_disabled_times_out(db, sim, nova, clock):
    sim.add_service("compute-1")
    run = make_run(db, nova, clock, wait_period_after_service_update=30)
    messages = run_failing(
        process.confirm_compute_node_disabled,
        run,
        exception.ProcessRecoveryFailure,
        host_name="compute-1",
        process_name="nova-compute",
    )
    assert messages[-1] == (1.0, "Failed to disable service nova-compute")


def test_confirm_disabled_without_timeout_waits(db, sim, nova, clock):
    sim.add_service("compute-1")
    run = make_run(db, nova, clock)  # wait_period_after_service_update = 0: no timeout
    polls = 0
    real = nova.find_compute_services

    def slowly_disabled(host_name):
        nonlocal polls
        polls += 1
        if polls == 500:
            sim.update_service(host_name, status="disabled")
        return real(host_name)

    nova.find_compute_services = slowly_disabled
    run_task(
        process.confirm_compute_node_disabled,
        run,
        host_name="compute-1",
        process_name="nova-compute",
    )
    assert polls == 500


def test_disable_compute_service_sleeps(db, sim, nova, clock):
    sim.add_service("compute-1", state="down")
    run = make_run(db, nova, clock, wait_period_after_service_update=180)
    messages = run_task(
        host.disable_compute_service, run, host_name="compute-1", host_status="NORMAL"
    )
    assert messages == [
        (0.0, "Disabling compute service on host: 'compute-1'"),
        (1.0, "Disabled compute service on host: 'compute-1'"),
    ]
    assert clock.offset == 180
    assert [(c["method"], c["path"].split("/")[1], c["body"]) for c in sim.nova_calls()] == [
        ("GET", "os-services", None),
        (
            "PUT",
            "os-services",
            {"status": "disabled", "disabled_reason": "Masakari detected host failed."},
        ),
    ]


def test_force_down_before_disabling_and_no_sleep(db, sim, nova, clock):
    sim.add_service("compute-1")
    run = make_run(
        db,
        nova,
        clock,
        wait_period_after_service_update=180,
        **{"host_failure.force_down_fenced_host": True},
    )
    messages = run_task(
        host.disable_compute_service, run, host_name="compute-1", host_status="normal"
    )
    assert [(c["method"], c["path"].split("/")[1], c["body"]) for c in sim.nova_calls()] == [
        ("GET", "os-services", None),
        ("PUT", "os-services", {"forced_down": True}),
        ("GET", "os-services", None),
        (
            "PUT",
            "os-services",
            {"status": "disabled", "disabled_reason": "Masakari detected host failed."},
        ),
    ]
    assert messages[1] == (0.5, "Forced down compute service on host: 'compute-1'")
    assert clock.offset == 0


def test_force_down_not_confirmed_fails(db, sim, nova, clock):
    sim.add_service("compute-1")
    nova.force_down_service = lambda *a, **k: None  # accepted, never applied
    run = make_run(
        db,
        nova,
        clock,
        wait_period_after_service_update=10,
        **{"host_failure.force_down_fenced_host": True},
    )
    run_failing(
        host.disable_compute_service, run, PollTimeout, host_name="compute-1", host_status="NORMAL"
    )
    assert not any(c["method"] == "PUT" for c in sim.nova_calls())


def test_missing_compute_service(db, nova, clock):
    run = make_run(db, nova, clock)
    run_failing(
        host.disable_compute_service, run, exception.ComputeNotFoundByName, host_name="nowhere"
    )


@pytest.mark.parametrize(
    ("fn", "store", "missing"),
    [
        (instance.stop_instance, {}, "instance_uuid"),
        (instance.start_instance, {}, "instance_uuid"),
        (instance.confirm_instance_active, {}, "instance_uuid"),
        (process.disable_compute_node, {"process_name": "nova-compute"}, "host_name"),
        (process.confirm_compute_node_disabled, {"host_name": "compute-1"}, "process_name"),
        (host.disable_compute_service, {}, "host_name"),
        (prepare.prepare_ha_enabled_instances, {}, "host_name"),
    ],
)
def test_task_in_a_flow_without_its_input(db, sim, nova, clock, fn, store, missing):
    run = make_run(db, nova, clock)
    with pytest.raises(exception.InvalidConfiguration, match=missing):
        run_task(fn, run, **store)
    assert sim.nova_calls() == []


def test_progress_values_and_states(db, nova, clock, vm):
    run = make_run(db, nova, clock)
    flow = FlowProgress(run)
    entry = flow.task(0, "StopInstanceTask")
    entry.set_state("RUNNING")
    entry.update("half", 0.5)
    assert (entry.state, entry.progress) == ("RUNNING", 0.5)
    entry.set_state("REVERTING")
    assert entry.progress == 0.0
    entry.set_state("REVERTED")
    assert entry.progress == 1.0
