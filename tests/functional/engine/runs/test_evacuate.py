"""The per-instance evacuation state machine and the evacuation task, against the simulator."""

from __future__ import annotations

import re

import pytest

from masakari import exception
from masakari.db import hosts as db_hosts
from masakari.db import instances
from masakari.db import vmoves as db_vmoves
from masakari.db.database import transaction
from masakari.db.instances import Plan
from masakari.db.models import VMove
from masakari.engine.hostpoll import HostPoller
from masakari.engine.lease import LeaseLost
from masakari.engine.recovery import evacuate, moves
from masakari.engine.recovery.flow import Flow, Store
from masakari.engine.recovery.prepare import prepare_ha_enabled_instances
from tests.support import rows
from tests.support.runs import make_run, task_rows


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
def cloud(sim):
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    return sim


@pytest.mark.parametrize(
    ("vm_state", "extra", "actions", "final"),
    [
        ("active", {}, ["lock", "evacuate", "unlock"], "active"),
        ("stopped", {}, ["lock", "evacuate", "unlock"], "stopped"),
        ("error", {}, ["lock", "evacuate", "os-stop", "os-resetState", "unlock"], "error"),
        ("paused", {}, ["lock", "os-resetState", "evacuate", "os-stop", "unlock"], "stopped"),
        ("resized", {}, ["lock", "os-resetState", "evacuate", "unlock"], "active"),
        (
            "resized",
            {"power_state": 4},
            ["lock", "os-resetState", "evacuate", "os-stop", "unlock"],
            "stopped",
        ),
        (
            "active",
            {"task_state": "rebooting"},
            ["lock", "os-resetState", "evacuate", "unlock"],
            "active",
        ),
        (
            "stopped",
            {"task_state": "powering-on"},
            ["lock", "os-resetState", "evacuate", "os-stop", "unlock"],
            "stopped",
        ),
        ("active", {"locked": True}, ["evacuate"], "active"),
    ],
)
def test_state_machine(db, cloud, nova, clock, vm_state, extra, actions, final):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1", vm_state=vm_state, **extra)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert cloud.actions("vm") == actions
    server = cloud.server("vm")
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
    db, cloud, nova, clock, vm_state, extra, plan
):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1", vm_state=vm_state, **extra)
    plans_at_first_change = []
    real_call = nova._call

    def call(method, path, **kwargs):
        if method != "GET" and not plans_at_first_change:
            plans_at_first_change.append(_plan(db, run, "vm"))
        return real_call(method, path, **kwargs)

    nova._call = call
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert plans_at_first_change == [plan]
    final = _plan(db, run, "vm")
    assert (final.vm_state, final.stop_after) == (plan.vm_state, plan.stop_after)
    # the restoring stop is noted too, before it is sent
    assert final.last_action == ("stop" if plan.stop_after and vm_state != "active" else None)


def test_plan_of_an_earlier_attempt_is_what_is_restored(db, cloud, nova, clock):
    """An engine lost after resetting a paused instance to error: the next one stops it.

    Left to what it finds (error), it would leave the instance in error.
    """
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1", vm_state="error")
    transaction(
        db, lambda s: instances.put_plan(s, run.notification_uuid, "vm", Plan("paused", True))
    )
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert cloud.actions("vm") == ["lock", "evacuate", "os-stop", "unlock"]
    assert cloud.server("vm")["OS-EXT-STS:vm_state"] == "stopped"
    assert _plan(db, run, "vm") == Plan("paused", True, last_action="stop")
    assert _status(db, run) == [("succeeded", None, "compute-2")]


def test_lock_is_recorded_until_the_unlock(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1")
    locks_at_lock = []
    real_lock = nova.lock_server

    def lock_server(server_id):
        locks_at_lock.append(_locks(db, run))
        real_lock(server_id)

    nova.lock_server = lock_server
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert locks_at_lock == [["vm"]]
    assert _locks(db, run) == []


def test_failed_unlock_is_left_for_the_next_attempt(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})
    cloud.fail(500, action="unlock", server="vm", times=1)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("succeeded", None, "compute-2")]
    assert cloud.server("vm")["locked"]
    assert _locks(db, run) == ["vm"]
    # The next attempt's prepare task unlocks it (and finds nothing left on compute-1).
    run2 = make_run(db, nova, clock, notification_uuid=run.notification_uuid)
    with pytest.raises(exception.SkipHostRecovery):
        _host_flow(run2)
    assert not cloud.server("vm")["locked"]
    assert _locks(db, run) == []


def test_deleted_instance_counts_as_unlocked(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1")
    cloud.fail(404, action="unlock", server="vm", times=1)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _locks(db, run) == []


def test_lease_running_out_mid_evacuation_leaves_it_to_the_next_engine(db, cloud, nova, clock):
    run = make_run(db, nova, clock, lease_term=30, wait_period_after_evacuation=90)
    cloud.add_server("vm", host="compute-1")
    cloud.state_fault("never_move", "vm")
    with pytest.raises(LeaseLost):
        moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert clock.offset == 30
    # No change once the lease is over: the move stays ongoing (no end time), the instance
    # stays locked and recorded, for whoever takes the notification over.
    assert cloud.actions("vm") == ["lock", "evacuate"]
    assert _status(db, run) == [("ongoing", None, None)]
    with db.reader() as s:
        assert s.get(VMove, _vmoves(db, run.notification_uuid)[0].id).end_time is None
    assert cloud.server("vm")["locked"]
    assert _locks(db, run) == ["vm"]


def test_reserved_host_is_the_target(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_service("reserved-1")
    cloud.add_server("vm", host="compute-1")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), "reserved-1")
    evacuations = [c["body"] for c in cloud.nova_calls() if c["path"] == "/servers/vm/action"]
    assert {"evacuate": {"host": "reserved-1"}} in evacuations
    assert _status(db, run) == [("succeeded", None, "reserved-1")]


def test_instance_that_never_arrives_times_out_and_is_unlocked(db, cloud, nova, clock):
    run = make_run(db, nova, clock, wait_period_after_evacuation=90)
    cloud.add_server("vm", host="compute-1")
    cloud.state_fault("never_move", "vm")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed reason: timeout.", None)]
    assert not cloud.server("vm")["locked"]
    assert clock.offset > 90


def test_instance_that_goes_to_error_fails_at_once(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1")
    cloud.state_fault("evacuate_error", "vm")  # accepted, then in error on its host
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed to evacuate instance vm", None)]


def test_nova_error_text_is_the_vmove_message(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1")
    cloud.fail(500, action="evacuate", server="vm", times=1)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    [(status, message, dest)] = _status(db, run)
    assert (status, dest) == ("failed", None)
    # novaclient's text, with the request id Nova answered
    assert re.fullmatch(
        r"Unexpected API Error\. \(HTTP 500\) \(Request-ID: req-[0-9a-f-]+\)", message
    )
    assert cloud.actions("vm") == ["lock", "evacuate", "unlock"]


def test_evacuation_that_cannot_start_counts_as_failed(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1")
    cloud.fail(500, action="lock", server="vm", times=1)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run)[0][0] == "failed"


def test_stop_timeout_after_evacuation_fails_the_move(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1", vm_state="error")
    cloud.state_fault("ignore_action", "vm", action="os-stop")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed reason: timeout.", None)]


def test_compares_the_service_host_not_the_hypervisor_name(db, cloud, nova, clock):
    run = make_run(db, nova, clock, wait_period_after_evacuation=5)
    cloud.update_service("compute-1", hypervisor_hostname="compute-1.example.org")
    cloud.add_server("vm", host="compute-1")
    assert cloud.server("vm")["OS-EXT-SRV-ATTR:hypervisor_hostname"] == "compute-1.example.org"
    cloud.state_fault("never_move", "vm")
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


def test_ha_instances_are_evacuated_first(db, cloud, nova, clock):
    run = make_run(db, nova, clock, host_failure_recovery_threads=1)
    cloud.add_server("ha-old", host="compute-1", metadata={"HA_Enabled": "True"})
    cloud.add_server("plain", host="compute-1")
    cloud.add_server("ha-new", host="compute-1", metadata={"HA_Enabled": "on"})
    _host_flow(run)
    order = [c["path"].split("/")[2] for c in cloud.nova_calls() if "evacuate" in (c["body"] or {})]
    assert order == ["ha-old", "ha-new", "plain"]
    prepare, evac = task_rows(db, run.notification_uuid)
    assert prepare[4][-1] == ("1.0", "Instances to be evacuated are: 'ha-new,ha-old,plain'")
    assert evac[4][0][1].endswith("instance uuids are: 'ha-old,ha-new,plain'")
    assert evac[4][-2:] == [
        ("0.7", "Successfully evacuate instances 'ha-new,ha-old,plain' from host 'compute-1'"),
        ("1.0", "Evacuation process completed!"),
    ]


def test_only_this_attempts_moves_count(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})
    old = _move(db, run, "other")
    transaction(db, lambda s: db_vmoves.update(s, old.id, {"status": "failed"}))
    _host_flow(run)
    assert task_rows(db, run.notification_uuid)[1][2] == "SUCCESS"


def test_failed_moves_fail_the_task(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("a", host="compute-1", metadata={"HA_Enabled": "True"})
    cloud.add_server("b", host="compute-1", metadata={"HA_Enabled": "True"})
    cloud.fail(500, action="evacuate", server="b", times=1)
    with pytest.raises(exception.HostRecoveryFailure, match="'b' from host 'compute-1'"):
        _host_flow(run)


def test_ignore_error_instances_and_ha_only(db, cloud, nova, clock):
    run = make_run(
        db,
        nova,
        clock,
        **{
            "host_failure.ignore_instances_in_error_state": True,
            "host_failure.evacuate_all_instances": False,
        },
    )
    cloud.add_server(
        "ha-error", host="compute-1", vm_state="error", metadata={"HA_Enabled": "True"}
    )
    cloud.add_server("ha", host="compute-1", metadata={"HA_Enabled": "True"})
    cloud.add_server("off", host="compute-1", metadata={"HA_Enabled": "False"})
    _host_flow(run)
    messages = [m for _, m in task_rows(db, run.notification_uuid)[0][4]]
    assert messages == [
        "Preparing instances for evacuation",
        "Total instances running on failed host 'compute-1' is 3",
        "Ignoring recovery of HA_Enabled instance 'ha-error' as it is in 'error' state.",
        "Total HA Enabled instances count: '1'",
        "Instances to be evacuated are: 'ha'",
    ]


def test_reserved_host_is_taken_enabled_and_added_to_aggregates(db, cloud, nova, clock):
    _, hosts = rows.segment_with_hosts(
        db, "compute-1", "reserved-1", reserved=("reserved-1",), recovery_method="reserved_host"
    )
    run = make_run(db, nova, clock, **{"host_failure.add_reserved_host_to_aggregate": True})
    cloud.add_service("reserved-1", status="disabled")
    cloud.add_aggregate(1, "a", ["compute-1"])
    cloud.add_aggregate(2, "b", ["compute-1", "reserved-1"])
    cloud.add_aggregate(3, "c", ["compute-2"])
    cloud.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})
    _host_flow(run, reserved=["reserved-1"])
    assert cloud.service("reserved-1")["status"] == "enabled"
    assert [cloud.aggregate(i)["hosts"] for i in (1, 2, 3)] == [
        ["compute-1", "reserved-1"],
        ["compute-1", "reserved-1"],
        ["compute-2"],
    ]
    assert _reserved(db, hosts["reserved-1"]) is False


def test_reserved_host_taken_elsewhere_moves_to_the_next(db, cloud, nova, clock):
    rows.segment_with_hosts(
        db, "reserved-1", "reserved-2", reserved=("reserved-1",), recovery_method="reserved_host"
    )
    run = make_run(db, nova, clock)
    cloud.add_service("reserved-1", status="disabled")
    cloud.add_service("reserved-2", status="disabled")
    cloud.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})
    # reserved-2 is no longer a spare: another recovery took it.
    _host_flow(run, reserved=["reserved-2", "reserved-1"])
    assert cloud.server("vm")["OS-EXT-SRV-ATTR:host"] == "reserved-1"


def test_reserved_host_not_enabled_stays_a_spare(db, cloud, nova, clock):
    _, hosts = rows.segment_with_hosts(
        db, "reserved-1", reserved=("reserved-1",), recovery_method="reserved_host"
    )
    run = make_run(db, nova, clock)
    cloud.add_service("reserved-1", status="disabled")
    cloud.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})
    cloud.fail(500, method="PUT", path="/os-services/{id}", times=1)  # the enable
    with pytest.raises(exception.NovaError):
        _host_flow(run, reserved=["reserved-1"])
    assert _reserved(db, hosts["reserved-1"]) is True
    # The move never started: the next attempt reuses the row.
    assert [v.status for v in _vmoves(db, run.notification_uuid)] == ["pending"]
    cloud.add_service("compute-2")
    run2 = make_run(db, nova, clock, notification_uuid=run.notification_uuid)
    _host_flow(run2)
    assert [v.status for v in _vmoves(db, run.notification_uuid)] == ["succeeded"]


def test_next_attempt_settles_an_evacuation_left_ongoing(db, cloud, nova, clock):
    """The instance arrived while no engine watched: restored as planned, recorded as done."""
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-2")  # evacuated from compute-1; Nova made it active
    move = _move(db, run, "vm")
    transaction(db, lambda s: db_vmoves.update(s, move.id, {"status": "ongoing"}))
    transaction(
        db, lambda s: instances.put_plan(s, run.notification_uuid, "vm", Plan("error", True))
    )
    with pytest.raises(exception.SkipHostRecovery):
        _host_flow(run)
    assert cloud.actions("vm") == ["os-stop", "os-resetState"]
    assert cloud.server("vm")["OS-EXT-STS:vm_state"] == "error"
    assert _status(db, run) == [("succeeded", None, "compute-2")]


def test_next_attempt_waits_for_the_host_of_an_instance_rebuilt_to_move(db, cloud, nova, clock):
    """The lost engine's evacuation was rebuilt: Nova cleared its task, but (as a real Nova's
    resource tracker does a moment later) has not moved its host yet. Not an evacuation that
    never happened: waited for, and recorded as done where it went."""
    run = make_run(db, nova, clock)
    cloud.set_evacuate_delay(10)
    cloud.host_move_lag = 3 * run.conf.verify_interval
    cloud.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})
    move = _move(db, run, "vm")
    transaction(
        db,
        lambda s: db_vmoves.update(s, move.id, {"status": "ongoing", "start_time": clock.now()}),
    )
    nova.lock_server("vm")  # what the lost engine did before it was lost
    nova.evacuate("vm")
    clock.advance(10)
    seen = cloud.server("vm")
    assert (seen["OS-EXT-SRV-ATTR:host"], seen["OS-EXT-STS:task_state"]) == ("compute-1", None)
    with pytest.raises(exception.SkipHostRecovery):
        _host_flow(run)
    assert _status(db, run) == [("succeeded", None, "compute-2")]
    assert cloud.actions("vm") == ["lock", "evacuate"]  # not evacuated again


def test_next_attempt_fails_an_evacuation_that_never_happened(db, cloud, nova, clock):
    run = make_run(db, nova, clock)
    cloud.add_server("vm", host="compute-1", metadata={"HA_Enabled": "True"})
    move = _move(db, run, "vm")
    transaction(db, lambda s: db_vmoves.update(s, move.id, {"status": "ongoing"}))
    _host_flow(run)
    # The old move failed; a new one of this attempt evacuated the instance.
    assert _status(db, run) == [
        ("succeeded", None, "compute-2"),
        ("failed", "Failed reason: engine lost before confirmation.", None),
    ]


def test_ignored_error_instance_is_one_in_error_before_the_recovery(db, cloud, nova, clock):
    """An instance an earlier attempt reset to error is still recovered."""
    run = make_run(db, nova, clock, **{"host_failure.ignore_instances_in_error_state": True})
    cloud.add_server("reset", host="compute-1", vm_state="error", metadata={"HA_Enabled": "True"})
    cloud.add_server("broken", host="compute-1", vm_state="error", metadata={"HA_Enabled": "True"})
    nid = run.notification_uuid
    transaction(db, lambda s: instances.put_plan(s, nid, "reset", Plan("paused", True)))
    _host_flow(run)
    assert [v.instance_uuid for v in _vmoves(db, nid)] == ["reset"]
    assert cloud.server("reset")["OS-EXT-STS:vm_state"] == "stopped"
    assert cloud.server("broken")["OS-EXT-SRV-ATTR:host"] == "compute-1"


# --- an evacuation Nova finds no host for ----------------------------------------------------


def _no_room(cloud):
    """compute-2, the one possible destination, is disabled: Nova's scheduler finds no host,
    and the instance is in error on compute-1 with a failed evacuate action."""
    cloud.update_service("compute-2", status="disabled", disabled_reason="maintenance")


def _reads_of_actions(cloud):
    return sum(1 for c in cloud.nova_calls() if c["path"].endswith("/os-instance-actions"))


@pytest.mark.parametrize(
    ("vm_state", "actions"),
    [
        ("error", ["lock", "evacuate", "unlock"]),
        ("paused", ["lock", "os-resetState", "evacuate", "unlock"]),  # reset to error first
    ],
)
def test_instance_in_error_that_nova_finds_no_host_for_fails_at_the_first_poll(
    db, cloud, nova, clock, vm_state, actions
):
    """In error before the evacuation, the instance shows no change when it fails: its
    instance action says so, and the vmove fails at the first poll, not after
    wait_period_after_evacuation."""
    run = make_run(db, nova, clock, wait_period_after_evacuation=600, verify_interval=1)
    cloud.add_server("vm", host="compute-1", vm_state=vm_state)
    _no_room(cloud)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed to evacuate instance vm", None)]
    assert clock.offset <= 1
    assert cloud.actions("vm") == actions
    server = cloud.server("vm")
    assert (server["OS-EXT-SRV-ATTR:host"], server["OS-EXT-STS:vm_state"]) == ("compute-1", "error")
    assert not server["locked"]
    assert _reads_of_actions(cloud) == 1


def test_active_instance_that_nova_finds_no_host_for_fails_at_once(db, cloud, nova, clock):
    """Active before, in error after: the state alone says it; no instance action is read."""
    run = make_run(db, nova, clock, wait_period_after_evacuation=600)
    cloud.add_server("vm", host="compute-1")
    _no_room(cloud)
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed to evacuate instance vm", None)]
    assert clock.offset <= 1
    assert _reads_of_actions(cloud) == 0


def test_instance_in_error_that_never_moves_still_times_out(db, cloud, nova, clock):
    """Accepted, no failure recorded, no move: the actions are read at each poll that finds
    it in error on its host with no task, and it times out as before."""
    run = make_run(db, nova, clock, wait_period_after_evacuation=5, verify_interval=1)
    cloud.add_server("vm", host="compute-1", vm_state="error")
    cloud.state_fault("never_move", "vm")
    moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    assert _status(db, run) == [("failed", "Failed reason: timeout.", None)]
    assert 1 <= _reads_of_actions(cloud) <= 7


def test_an_earlier_failed_evacuation_is_not_this_one(db, cloud, nova, clock):
    """Only an action recorded since this evacuation was sent counts: an earlier failure of
    the same server does not end this one."""
    cloud.add_server("vm", host="compute-1", vm_state="error")
    _no_room(cloud)
    nova.evacuate("vm")  # an earlier attempt, failed: an evacuate action in Error
    cloud.update_service("compute-2", status="enabled", disabled_reason=None)
    clock.advance(60)
    run = make_run(db, nova, clock)
    cloud.state_fault("never_move", "vm")
    run.effects.nova.evacuate("vm", None)
    assert run.effects.nova.evacuation_failed("vm") is False


def test_the_batched_poll_recognises_it_too(db, cloud, nova, clock):
    """The host's list shows it in error with no task; its actions are read once."""
    poller = HostPoller(nova, interval=0.01)  # wall clock: the test's fake one never moves
    poller.start()
    try:
        run = make_run(db, nova, clock, wait_period_after_evacuation=30)
        run.host_poller = poller
        cloud.add_server("vm", host="compute-1", vm_state="error")
        _no_room(cloud)
        moves.evacuate_and_confirm(run, _move(db, run, "vm"), None)
    finally:
        poller.stop()
    assert _status(db, run) == [("failed", "Failed to evacuate instance vm", None)]
    assert _reads_of_actions(cloud) == 1
