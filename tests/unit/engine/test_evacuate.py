"""The per-instance evacuation state machine and the evacuation task, on a fake Nova."""

from __future__ import annotations

import pytest

from masakari import exception
from masakari.db import hosts as db_hosts
from masakari.db import instances
from masakari.db import vmoves as db_vmoves
from masakari.db.database import transaction
from masakari.db.instances import Plan
from masakari.db.models import VMove
from masakari.engine.lease import LeaseLost
from masakari.engine.recovery import evacuate, moves
from masakari.engine.recovery.flow import Flow, Store
from masakari.engine.recovery.prepare import prepare_ha_enabled_instances
from tests.unit.engine.conftest import add_rows, make_run, task_rows
from tests.unit.engine.fakes import nova_error


def _move(db, run, sid, source="compute-1"):
    return transaction(db, lambda s: db_vmoves.create(s, run.notification_uuid, sid, "vm", source))


def _vmoves(db, nid):
    with db.reader() as s:
        return db_vmoves.of_notification(s, nid)


def _status(db, run):
    return [(v.status, v.message, v.dest_host) for v in _vmoves(db, run.notification_uuid)]


def _plan(db, run, sid):
    with db.reader() as s:
        return instances.get_plan(s, run.notification_uuid, sid)


def _locks(db, run):
    with db.reader() as s:
        return instances.locked(s, run.notification_uuid)


def _reserved(db, host_uuid):
    with db.reader() as s:
        return db_hosts.get_for_recovery(s, host_uuid).reserved


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
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert cloud.actions("vm") == actions
    server = cloud.servers["vm"]
    assert (server["OS-EXT-SRV-ATTR:host"], server["OS-EXT-STS:vm_state"]) == ("compute-2", final)
    assert server["locked"] == bool(extra.get("locked"))
    assert _status(db, run) == [("succeeded", None, "compute-2")]
    assert _locks(db, run) == []


@pytest.mark.parametrize(
    ("vm_state", "extra", "plan"),
    [
        ("active", {}, Plan("active", True)),
        ("stopped", {}, Plan("stopped", False)),
        ("error", {}, Plan("error", True)),
        ("paused", {}, Plan("paused", True)),
        ("resized", {}, Plan("resized", False)),
        ("resized", {"power_state": 4}, Plan("resized", True)),
        ("active", {"task_state": "rebooting"}, Plan("active", False)),
        ("stopped", {"task_state": "powering-on"}, Plan("stopped", True)),
        ("active", {"locked": True}, Plan("active", True)),
    ],
)
def test_plan_is_the_instance_as_found_recorded_before_the_first_change(
    db, cloud, clock, vm_state, extra, plan
):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", vm_state, **extra)
    plans_at_first_change = []
    real_call = cloud._call

    def call(name, server=None, *args):
        if name != "get_server" and not plans_at_first_change:
            plans_at_first_change.append(_plan(db, run, "vm"))
        return real_call(name, server, *args)

    cloud._call = call
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert plans_at_first_change == [plan]
    final = _plan(db, run, "vm")
    assert (final.vm_state, final.stop_after) == (plan.vm_state, plan.stop_after)
    # the restoring stop is noted too, before it is sent
    assert final.last_action == ("stop" if plan.stop_after and vm_state != "active" else None)


def test_plan_of_an_earlier_attempt_is_what_is_restored(db, cloud, clock):
    """An engine lost after resetting a paused instance to error: the next one stops it.

    Left to what it finds (error), it would leave the instance in error.
    """
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", "error")
    transaction(
        db, lambda s: instances.put_plan(s, run.notification_uuid, "vm", Plan("paused", True))
    )
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert cloud.actions("vm") == ["lock", "evacuate", "stop", "unlock"]
    assert cloud.servers["vm"]["OS-EXT-STS:vm_state"] == "stopped"
    assert _plan(db, run, "vm") == Plan("paused", True, last_action="stop")
    assert _status(db, run) == [("succeeded", None, "compute-2")]


def test_lock_is_recorded_until_the_unlock(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1")
    locks_at_lock = []
    real_lock = cloud.lock_server

    def lock_server(server_id):
        locks_at_lock.append(_locks(db, run))
        real_lock(server_id)

    cloud.lock_server = lock_server
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert locks_at_lock == [["vm"]]
    assert _locks(db, run) == []


def test_failed_unlock_is_left_for_the_next_attempt(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", metadata={"HA_Enabled": "True"})
    cloud.fail[("unlock", "vm")] = nova_error(500)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("succeeded", None, "compute-2")]
    assert cloud.servers["vm"]["locked"]
    assert _locks(db, run) == ["vm"]
    # The next attempt's prepare task unlocks it (and finds nothing left on compute-1).
    run2 = make_run(db, cloud, clock, notification_uuid=run.notification_uuid)
    with pytest.raises(exception.SkipHostRecovery):
        _host_flow(run2)
    assert not cloud.servers["vm"]["locked"]
    assert _locks(db, run) == []


def test_deleted_instance_counts_as_unlocked(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1")
    cloud.fail[("unlock", "vm")] = nova_error(404, "Not found")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _locks(db, run) == []


def test_lease_running_out_mid_evacuation_leaves_it_to_the_next_engine(db, cloud, clock):
    run = make_run(db, cloud, clock, lease_term=30, wait_period_after_evacuation=90)
    cloud.add_server("vm", "compute-1")
    cloud.sticky.add("vm")
    with pytest.raises(LeaseLost):
        moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert clock.offset == 30
    # No change once the lease is over: the move stays ongoing (no end time), the instance
    # stays locked and recorded, for whoever takes the notification over.
    assert cloud.actions("vm") == ["lock", "evacuate"]
    assert _status(db, run) == [("ongoing", None, None)]
    with db.reader() as s:
        assert s.get(VMove, _vmoves(db, run.notification_uuid)[0].id).end_time is None
    assert cloud.servers["vm"]["locked"]
    assert _locks(db, run) == ["vm"]


def test_reserved_host_is_the_target(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_service("reserved-1")
    cloud.add_server("vm", "compute-1")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), "reserved-1")
    assert ("evacuate", "vm", "reserved-1") in cloud.calls
    assert _status(db, run) == [("succeeded", None, "reserved-1")]


def test_instance_that_never_arrives_times_out_and_is_unlocked(db, cloud, clock):
    run = make_run(db, cloud, clock, wait_period_after_evacuation=90)
    cloud.add_server("vm", "compute-1")
    cloud.sticky.add("vm")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
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
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed to evacuate instance vm", None)]


def test_nova_error_text_is_the_vmove_message(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1")
    cloud.fail[("evacuate", "vm")] = nova_error(500)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Unexpected API Error. (HTTP 500)", None)]
    assert cloud.actions("vm") == ["lock", "evacuate", "unlock"]


def test_evacuation_that_cannot_start_counts_as_failed(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1")
    cloud.fail[("lock", "vm")] = nova_error(500)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run)[0][0] == "failed"


def test_stop_timeout_after_evacuation_fails_the_move(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", "error")
    cloud.ignore.add(("stop", "vm"))
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed reason: timeout.", None)]


def test_compares_the_service_host_not_the_hypervisor_name(db, cloud, clock):
    run = make_run(db, cloud, clock, wait_period_after_evacuation=5)
    cloud.add_server("vm", "compute-1")
    cloud.servers["vm"]["OS-EXT-SRV-ATTR:hypervisor_hostname"] = "compute-1.example.org"
    cloud.sticky.add("vm")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    # The reference would see "compute-1.example.org" != "compute-1" and call it done.
    assert _status(db, run)[0][:2] == ("failed", "Failed reason: timeout.")


def _host_flow(run, reserved=None):
    tasks = [prepare_ha_enabled_instances, evacuate.evacuate_instances]
    store = Store(run.notification_uuid, host_name="compute-1")
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
    transaction(db, lambda s: db_vmoves.update(s, old.id, {"status": "failed"}))
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
    assert _reserved(db, hosts["reserved-1"]) is False


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
    assert _reserved(db, hosts["reserved-1"]) is True
    # The move never started: the next attempt reuses the row.
    assert [v.status for v in _vmoves(db, run.notification_uuid)] == ["pending"]
    cloud.add_service("compute-2")
    run2 = make_run(db, cloud, clock, notification_uuid=run.notification_uuid)
    _host_flow(run2)
    assert [v.status for v in _vmoves(db, run.notification_uuid)] == ["succeeded"]


def test_next_attempt_settles_an_evacuation_left_ongoing(db, cloud, clock):
    """The instance arrived while no engine watched: restored as planned, recorded as done."""
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-2")  # evacuated from compute-1; Nova made it active
    move = _move(db, run, "vm")
    transaction(db, lambda s: db_vmoves.update(s, move.id, {"status": "ongoing"}))
    transaction(
        db, lambda s: instances.put_plan(s, run.notification_uuid, "vm", Plan("error", True))
    )
    with pytest.raises(exception.SkipHostRecovery):
        _host_flow(run)
    assert cloud.actions("vm") == ["stop", "reset_state"]
    assert cloud.servers["vm"]["OS-EXT-STS:vm_state"] == "error"
    assert _status(db, run) == [("succeeded", None, "compute-2")]


def test_next_attempt_fails_an_evacuation_that_never_happened(db, cloud, clock):
    run = make_run(db, cloud, clock)
    cloud.add_server("vm", "compute-1", metadata={"HA_Enabled": "True"})
    move = _move(db, run, "vm")
    transaction(db, lambda s: db_vmoves.update(s, move.id, {"status": "ongoing"}))
    _host_flow(run)
    # The old move failed; a new one of this attempt evacuated the instance.
    assert _status(db, run) == [
        ("succeeded", None, "compute-2"),
        ("failed", "Failed reason: engine lost before confirmation.", None),
    ]


def test_ignored_error_instance_is_one_in_error_before_the_recovery(db, cloud, clock):
    """An instance an earlier attempt reset to error is still recovered."""
    run = make_run(db, cloud, clock, **{"host_failure.ignore_instances_in_error_state": True})
    cloud.add_server("reset", "compute-1", "error", metadata={"HA_Enabled": "True"})
    cloud.add_server("broken", "compute-1", "error", metadata={"HA_Enabled": "True"})
    nid = run.notification_uuid
    transaction(db, lambda s: instances.put_plan(s, nid, "reset", Plan("paused", True)))
    _host_flow(run)
    assert [v.instance_uuid for v in _vmoves(db, nid)] == ["reset"]
    assert cloud.servers["reset"]["OS-EXT-STS:vm_state"] == "stopped"
    assert cloud.servers["broken"]["OS-EXT-SRV-ATTR:host"] == "compute-1"
