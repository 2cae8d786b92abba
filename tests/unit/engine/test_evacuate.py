"""The per-instance evacuation state machine and the evacuation task, on a fake Nova."""

from __future__ import annotations

import pytest

from masakari import exception
from masakari.db import work
from masakari.engine.recovery import evacuate
from masakari.engine.recovery.flow import Flow
from masakari.engine.recovery.host import prepare_ha_enabled_instances
from tests.unit.engine.conftest import add_rows, make_run, task_rows
from tests.unit.engine.fakes import nova_error


def _move(db, run, sid, source="compute-1"):
    return work.transaction(
        db, lambda s: work.create_vmove(s, run.notification_uuid, sid, "vm", source)
    )


def _status(db, run):
    with db.reader() as s:
        return [(v.status, v.message, v.dest_host) for v in work.vmoves(s, run.notification_uuid)]


@pytest.fixture
def cloud(nova):
    nova.add_service("compute-1", state="down")
    nova.add_service("compute-2")
    return nova


@pytest.mark.parametrize(
    ("vm_state", "extra", "actions", "final"),
    [
        ("active", {}, ["lock", "evacuate", "unlock"], "active"),
        ("stopped", {}, ["lock", "evacuate", "unlock"], "stopped"),
        ("error", {}, ["lock", "evacuate", "stop", "reset_state", "unlock"], "error"),
        ("paused", {}, ["lock", "reset_state", "evacuate", "stop", "unlock"], "stopped"),
        ("resized", {}, ["lock", "reset_state", "evacuate", "unlock"], "active"),
        (
            "resized",
            {"power_state": 4},
            ["lock", "reset_state", "evacuate", "stop", "unlock"],
            "stopped",
        ),
        (
            "active",
            {"task_state": "rebooting"},
            ["lock", "reset_state", "evacuate", "unlock"],
            "active",
        ),
        (
            "stopped",
            {"task_state": "powering-on"},
            ["lock", "reset_state", "evacuate", "stop", "unlock"],
            "stopped",
        ),
        ("active", {"locked": True}, ["evacuate"], "active"),
    ],
)
def test_state_machine(db, cloud, clock, vm_state, extra, actions, final):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", vm_state, **extra)
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert cloud.actions("vm") == actions
    server = cloud.servers["vm"]
    assert (server["OS-EXT-SRV-ATTR:host"], server["OS-EXT-STS:vm_state"]) == ("compute-2", final)
    assert server["locked"] == bool(extra.get("locked"))
    assert _status(db, run) == [("succeeded", None, "compute-2")]


def test_reserved_host_is_the_target(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_service("reserved-1")
    cloud.add_server("vm", "compute-1")
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), "reserved-1")
    assert ("evacuate", "vm", "reserved-1") in cloud.calls
    assert _status(db, run) == [("succeeded", None, "reserved-1")]


def test_instance_that_never_arrives_times_out_and_is_unlocked(db, cloud, clock):
    run = make_run(db, cloud, clock, wait_period_after_evacuation=90)
    cloud.add_server("vm", "compute-1")
    cloud.sticky.add("vm")
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed reason: timeout.", None)]
    assert not cloud.servers["vm"]["locked"]
    assert clock.offset > 90


def test_instance_that_goes_to_error_fails_at_once(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1")
    cloud.sticky.add("vm")
    real_evacuate = cloud.evacuate

    def evacuate_to_error(server_id, host=None):
        real_evacuate(server_id, host)
        cloud.servers[server_id]["OS-EXT-STS:vm_state"] = "error"

    cloud.evacuate = evacuate_to_error
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed to evacuate instance vm", None)]


def test_nova_error_text_is_the_vmove_message(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1")
    cloud.fail[("evacuate", "vm")] = nova_error(500)
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Unexpected API Error. (HTTP 500)", None)]
    assert cloud.actions("vm") == ["lock", "evacuate", "unlock"]


def test_evacuation_that_cannot_start_counts_as_failed(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1")
    cloud.fail[("lock", "vm")] = nova_error(500)
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run)[0][0] == "failed"


def test_stop_timeout_after_evacuation_fails_the_move(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", "error")
    cloud.ignore.add(("stop", "vm"))
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed reason: timeout.", None)]


def test_compares_the_service_host_not_the_hypervisor_name(db, cloud, clock):
    run = make_run(db, cloud, clock, wait_period_after_evacuation=5)
    cloud.add_server("vm", "compute-1")
    cloud.servers["vm"]["OS-EXT-SRV-ATTR:hypervisor_hostname"] = "compute-1.example.org"
    cloud.sticky.add("vm")
    evacuate.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    # The reference would see "compute-1.example.org" != "compute-1" and call it done.
    assert _status(db, run)[0][:2] == ("failed", "Failed reason: timeout.")


def _host_flow(run, reserved=None):
    tasks = [prepare_ha_enabled_instances, evacuate.evacuate_instances]
    store = {"host_name": "compute-1", "notification_uuid": run.notification_uuid}
    flow = Flow(run, [], tasks, [])
    if reserved:
        flow.run_per_candidate(store, reserved)
    else:
        flow.run_linear(store)


def test_ha_instances_are_evacuated_first(db, cloud, clock):
    run = make_run(db, cloud, clock, host_failure_recovery_threads=1)
    cloud.add_server("ha-old", "compute-1", metadata={"HA_Enabled": "True"})
    cloud.add_server("plain", "compute-1")
    cloud.add_server("ha-new", "compute-1", metadata={"HA_Enabled": "on"})
    _host_flow(run)
    order = [c[1] for c in cloud.calls if c[0] == "evacuate"]
    assert order == ["ha-old", "ha-new", "plain"]
    prepare, evac = task_rows(db, run.notification_uuid)
    assert prepare[4][-1] == ("1.0", "Instances to be evacuated are: 'ha-new,ha-old,plain'")
    assert evac[4][0][1].endswith("instance uuids are: 'ha-old,ha-new,plain'")
    assert evac[4][-2:] == [
        ("0.7", "Successfully evacuate instances 'ha-new,ha-old,plain' from host 'compute-1'"),
        ("1.0", "Evacuation process completed!"),
    ]


def test_only_this_attempts_moves_count(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", metadata={"HA_Enabled": "True"})
    old = _move(db, run, "other")
    work.transaction(db, lambda s: work.update_vmove(s, old.id, status="failed"))
    _host_flow(run)
    assert task_rows(db, run.notification_uuid)[1][2] == "SUCCESS"


def test_failed_moves_fail_the_task(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("a", "compute-1", metadata={"HA_Enabled": "True"})
    cloud.add_server("b", "compute-1", metadata={"HA_Enabled": "True"})
    cloud.fail[("evacuate", "b")] = nova_error(500)
    with pytest.raises(exception.HostRecoveryFailure, match="'b' from host 'compute-1'"):
        _host_flow(run)


def test_ignore_error_instances_and_ha_only(db, cloud, clock):
    run = make_run(
        db,
        cloud,
        clock,
        **{
            "host_failure.ignore_instances_in_error_state": True,
            "host_failure.evacuate_all_instances": False,
        },
    )
    cloud.add_server("ha-error", "compute-1", "error", metadata={"HA_Enabled": "True"})
    cloud.add_server("ha", "compute-1", metadata={"HA_Enabled": "True"})
    cloud.add_server("off", "compute-1", metadata={"HA_Enabled": "False"})
    _host_flow(run)
    messages = [m for _, m in task_rows(db, run.notification_uuid)[0][4]]
    assert messages == [
        "Preparing instances for evacuation",
        "Total instances running on failed host 'compute-1' is 3",
        "Ignoring recovery of HA_Enabled instance 'ha-error' as it is in 'error' state.",
        "Total HA Enabled instances count: '1'",
        "Instances to be evacuated are: 'ha'",
    ]


def test_reserved_host_is_taken_enabled_and_added_to_aggregates(db, cloud, clock):
    hosts = add_rows(db, "reserved_host", (("compute-1", False), ("reserved-1", True)))
    run = make_run(db, cloud, clock, **{"host_failure.add_reserved_host_to_aggregate": True})
    cloud.add_service("reserved-1", status="disabled")
    cloud.aggregates = [
        {"id": 1, "name": "a", "hosts": ["compute-1"]},
        {"id": 2, "name": "b", "hosts": ["compute-1", "reserved-1"]},
        {"id": 3, "name": "c", "hosts": ["compute-2"]},
    ]
    cloud.add_server("vm", "compute-1", metadata={"HA_Enabled": "True"})
    _host_flow(run, reserved=["reserved-1"])
    assert cloud.services["reserved-1"]["status"] == "enabled"
    assert [a["hosts"] for a in cloud.aggregates] == [
        ["compute-1", "reserved-1"],
        ["compute-1", "reserved-1"],
        ["compute-2"],
    ]
    with db.reader() as s:
        assert work.get_host(s, hosts["reserved-1"]).reserved is False


def test_reserved_host_taken_elsewhere_moves_to_the_next(db, cloud, clock):
    add_rows(db, "reserved_host", (("reserved-1", True), ("reserved-2", False)))
    run = make_run(db, cloud, clock)
    cloud.add_service("reserved-1", status="disabled")
    cloud.add_service("reserved-2", status="disabled")
    cloud.add_server("vm", "compute-1", metadata={"HA_Enabled": "True"})
    # reserved-2 is no longer a spare: another recovery took it.
    _host_flow(run, reserved=["reserved-2", "reserved-1"])
    assert cloud.servers["vm"]["OS-EXT-SRV-ATTR:host"] == "reserved-1"


def test_reserved_host_not_enabled_stays_a_spare(db, cloud, clock):
    hosts = add_rows(db, "reserved_host", (("reserved-1", True),))
    run = make_run(db, cloud, clock)
    cloud.add_service("reserved-1", status="disabled")
    cloud.add_server("vm", "compute-1", metadata={"HA_Enabled": "True"})
    cloud.fail[("enable_service", None)] = nova_error(500)
    with pytest.raises(exception.NovaError):
        _host_flow(run, reserved=["reserved-1"])
    with db.reader() as s:
        assert work.get_host(s, hosts["reserved-1"]).reserved is True
        # The move never started: the next attempt reuses the row.
        assert [v.status for v in work.vmoves(s, run.notification_uuid)] == ["pending"]
    cloud.add_service("compute-2")
    run2 = make_run(db, cloud, clock)
    run2.notification_uuid = run.notification_uuid
    _host_flow(run2)
    with db.reader() as s:
        assert [v.status for v in work.vmoves(s, run.notification_uuid)] == ["succeeded"]
