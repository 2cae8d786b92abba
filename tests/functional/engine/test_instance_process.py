"""VM and process notifications, and the ignored cases, through the database."""

from __future__ import annotations

import pytest

from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    details,
    host_row,
    make_conf,
    notify,
    vmoves,
    wait_status,
)

LIFECYCLE = {"event": "LIFECYCLE", "vir_domain_event": "STOPPED_FAILED"}


def _vm(instance: str, **payload: str) -> dict[str, str]:
    return {**LIFECYCLE, "instance_uuid": instance, **payload}


@pytest.fixture
def compute_1(db, sim):
    sim.add_service("compute-1")
    seg = add_segment(db, "auto")
    return add_host(db, seg, "compute-1")


def test_ha_instance_is_stopped_and_started(db, sim, conf, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert [(n, s) for _, n, s, _ in details(db, nid)] == [
        ("StopInstanceTask", "SUCCESS"),
        ("StartInstanceTask", "SUCCESS"),
        ("ConfirmInstanceActiveTask", "SUCCESS"),
    ]
    actions = [c["body"] for c in sim.nova_calls() if c["method"] == "POST"]
    assert actions == [{"os-stop": None}, {"os-start": None}]
    assert not host_row(db, compute_1).on_maintenance


def test_non_ha_instance_is_skipped_unless_all_are_processed(db, sim, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1")
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(make_conf(sim))
    assert wait_status(db, nid) == "finished"
    assert details(db, nid) == [
        (
            1,
            "StopInstanceTask",
            "REVERTED",
            [f"Skipping recovery for instance: {vm} as it is not Ha_Enabled"],
        )
    ]


def test_process_all_instances(db, sim, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1")
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(make_conf(sim, **{"instance_failure.process_all_instances": True}))
    assert wait_status(db, nid) == "finished"
    assert [s for _, _, s, _ in details(db, nid)] == ["SUCCESS"] * 3


@pytest.mark.parametrize("vm_state", ["paused", "rescued"])
def test_paused_or_rescued_instance_is_ignored(db, sim, conf, engine_factory, compute_1, vm_state):
    vm = sim.add_server(host="compute-1", vm_state=vm_state, metadata={"HA_Enabled": "True"})
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(conf)
    assert wait_status(db, nid) == "ignored"
    assert details(db, nid)[0][2] == "REVERTED"


@pytest.mark.parametrize(
    "payload",
    [
        {"event": "LIFECYCLE", "vir_domain_event": "STOPPED_SHUTDOWN"},
        {"event": "REBOOT", "vir_domain_event": "STOPPED_FAILED"},
        {"event": "IO_ERROR", "vir_domain_event": "STOPPED_FAILED"},
    ],
)
def test_unhandled_event_pairs_are_ignored(db, sim, conf, engine_factory, compute_1, payload):
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    nid = notify(db, compute_1, "VM", {**payload, "instance_uuid": vm})
    engine_factory(conf)
    assert wait_status(db, nid) == "ignored"
    assert sim.nova_calls() == []


def test_io_error_on_stopped_instance_starts_it(db, sim, conf, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1", vm_state="stopped", metadata={"HA_Enabled": "True"})
    payload = {"event": "IO_ERROR", "vir_domain_event": "IO_ERROR_REPORT", "instance_uuid": vm}
    nid = notify(db, compute_1, "VM", payload)
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert details(db, nid)[0][3] == [f"Stopped instance: '{vm}'"]
    assert sim.server(vm)["OS-EXT-STS:vm_state"] == "active"


def test_resized_instance_is_reset_to_active_first(db, sim, conf, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1", vm_state="resized", metadata={"HA_Enabled": "True"})
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    actions = [c["body"] for c in sim.nova_calls() if c["method"] == "POST"]
    assert actions[0] == {"os-resetState": {"state": "active"}}


def test_stop_conflict_on_a_running_instance_is_an_error(db, sim, conf, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(409, method="POST", action="os-stop")
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(conf)
    assert wait_status(db, nid) == "error"
    assert details(db, nid)[0][3] == [
        f"Stopping instance: {vm}",
        f"Conflict when stopping instance: {vm}",
    ]


def test_stop_conflict_on_a_stopped_instance_goes_on(db, sim, conf, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(409, method="POST", action="os-stop", apply=True)
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"


def test_instance_that_never_stops_times_out(db, sim, conf, engine_factory, compute_1):
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.state_fault("ignore_action", vm, action="os-stop")
    nid = notify(db, compute_1, "VM", _vm(vm))
    engine_factory(conf)
    assert wait_status(db, nid) == "error"
    assert details(db, nid) == [
        (
            1,
            "StopInstanceTask",
            "REVERTED",
            [f"Stopping instance: {vm}", f"Failed to stop instance {vm}"],
        )
    ]


def test_nova_compute_stopped_disables_the_service(db, sim, conf, engine_factory, compute_1):
    nid = notify(db, compute_1, "PROCESS", {"event": "STOPPED", "process_name": "nova-compute"})
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    service = sim.service("compute-1")
    assert (service["status"], service["disabled_reason"]) == (
        "disabled",
        "Masakari detected process failed.",
    )
    assert host_row(db, compute_1).on_maintenance
    assert [(n, s) for _, n, s, _ in details(db, nid)] == [
        ("DisableComputeNodeTask", "SUCCESS"),
        ("ConfirmComputeNodeDisabledTask", "SUCCESS"),
    ]


def test_already_disabled_service_is_left_alone(db, sim, conf, engine_factory):
    sim.add_service("compute-1", status="disabled", disabled_reason="maintenance window")
    h1 = add_host(db, add_segment(db), "compute-1")
    nid = notify(db, h1, "PROCESS", {"event": "STOPPED", "process_name": "nova-compute"})
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert sim.service("compute-1")["disabled_reason"] == "maintenance window"
    assert not [c for c in sim.nova_calls() if c["method"] == "PUT"]


def test_other_process_only_puts_the_host_on_maintenance(db, sim, conf, engine_factory, compute_1):
    nid = notify(db, compute_1, "PROCESS", {"event": "STOPPED", "process_name": "sshd"})
    engine_factory(conf)
    assert wait_status(db, nid) == "finished"
    assert host_row(db, compute_1).on_maintenance
    assert sim.nova_calls() == [] and details(db, nid) == []


def test_started_events_finish_without_recovery(db, sim, conf, engine_factory, compute_1):
    host_up = notify(db, compute_1, "COMPUTE_HOST", {**HOST_DOWN, "event": "STARTED"})
    process_up = notify(
        db, compute_1, "PROCESS", {"event": "STARTED", "process_name": "nova-compute"}
    )
    engine_factory(conf)
    assert wait_status(db, host_up) == "finished"
    assert wait_status(db, process_up) == "finished"
    assert not host_row(db, compute_1).on_maintenance
    assert sim.nova_calls() == []


@pytest.mark.parametrize(
    "payload", [{"event": "STOPPED", "host_status": "UNKNOWN"}, {"event": "STOPPED"}]
)
def test_host_status_other_than_normal_is_ignored(
    db, sim, conf, engine_factory, compute_1, payload
):
    nid = notify(db, compute_1, "COMPUTE_HOST", payload)
    engine_factory(conf)
    assert wait_status(db, nid) == "ignored"
    assert not host_row(db, compute_1).on_maintenance
    assert vmoves(db, nid) == []


def test_disabled_segment_ignores_with_a_message(db, sim, conf, engine_factory):
    from masakari.db.models import Notification

    sim.add_service("compute-1", state="down")
    h1 = add_host(db, add_segment(db, enabled=False), "compute-1")
    nid = notify(db, h1, "COMPUTE_HOST", HOST_DOWN)
    engine_factory(conf)
    assert wait_status(db, nid) == "ignored"
    with db.reader() as s:
        row = s.query(Notification).filter_by(notification_uuid=nid).one()
        assert row.message == "Recovery aboart: the segment HA is disabled."
    assert not host_row(db, h1).on_maintenance
