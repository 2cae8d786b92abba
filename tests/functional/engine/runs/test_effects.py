"""The one seam of a recovery's changes: nothing is changed, in Nova or in the database,
once the lease is over or the claim is no longer this run's."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
import sqlalchemy as sa

from masakari import exception
from masakari.compute.servers import Server, Service
from masakari.db import instances
from masakari.db import vmoves as db_vmoves
from masakari.db.database import transaction
from masakari.db.instances import Plan
from masakari.db.models import Base, Host, Notification, NotificationClaim, RecoveryTask
from masakari.engine.effects import TaskNote
from masakari.engine.lease import LeaseLost
from tests.support import rows
from tests.support.runs import make_run, task_rows

NOW = datetime.datetime(2026, 1, 1)
# Nova's service ids are uuids: PUT /os-services/{id} answers 400 to any other.
SERVICE_ID = "5d3f7c4e-8a51-4c62-9f0b-2e7d6a1c9b40"
SERVICE = Service(SERVICE_ID, host="compute-1")

# Every change Effects makes in Nova: (facet.method, arguments).
NOVA_CHANGES: list[tuple[str, tuple[Any, ...]]] = [
    ("nova.disable_service", (SERVICE, "why")),
    ("nova.enable_service", (SERVICE,)),
    ("nova.force_down_service", (SERVICE,)),
    ("nova.lock_server", ("vm",)),
    ("nova.unlock_server", ("vm",)),
    ("nova.reset_state", ("vm", "error")),
    ("nova.stop_server", ("vm",)),
    ("nova.start_server", ("vm",)),
    ("nova.evacuate", ("vm", "compute-2")),
    ("nova.add_host_to_aggregate", (1, "compute-2")),
]

# Every database change Effects makes (lock_server writes before it calls Nova): the run's
# own records on Effects, the others through a facet.
DB_CHANGES: list[tuple[str, tuple[Any, ...]]] = [
    ("hosts.put_host_on_maintenance", ("HOST", True)),
    ("record_moves", ([Server("vm", "vm")], "compute-1", NOW)),
    ("update_vmove", ("VMOVE",)),
    ("put_plan", ("vm", Plan("active", True))),
    ("hosts.take_reserved_host", ("reserved-1",)),
    ("hosts.give_back_reserved_host", ("compute-1",)),
    ("next_attempt", ()),
    ("record_task", (1, 0, "Task", "RUNNING", 0.5, {"message": "m"})),
    ("nova.lock_server", ("vm",)),
    ("nova.unlock_server", ("vm",)),
]


@pytest.fixture
def world(db, sim):
    """A segment with a failed host, a spare, their services and an instance with a vmove."""
    _, hosts = rows.segment_with_hosts(
        db, "compute-1", "reserved-1", reserved=("reserved-1",), recovery_method="reserved_host"
    )
    sim.add_service("compute-1", id=SERVICE_ID, state="down")
    sim.add_service("compute-2")
    sim.add_server("vm", host="compute-1")
    sim.add_aggregate(1, "a", ["compute-1"])
    return hosts


def _setup_run(db, nova, clock, world, **kw):
    run = make_run(db, nova, clock, **kw)
    vmove = transaction(
        db, lambda s: db_vmoves.create(s, run.notification_uuid, "vm", "vm", "compute-1")
    )
    transaction(db, lambda s: instances.record_lock(s, run.notification_uuid, "vm"))
    return run, vmove


def _args(args, world, vmove):
    out = []
    for a in args:
        if a == "HOST":
            out.append(world["compute-1"])
        elif a == "VMOVE":
            out.append(vmove.id)
        else:
            out.append(a)
    return out


def _call(run, world, vmove, name, args):
    target = run.effects
    for part in name.split("."):
        target = getattr(target, part)
    method = target
    if name == "update_vmove":
        return method(*_args(args, world, vmove), status="ongoing")
    return method(*_args(args, world, vmove))


def _rows(db) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table: what a refused change must leave as it was."""
    with db.reader() as s:
        return {
            table.name: sorted(
                (tuple(map(repr, row)) for row in s.execute(sa.select(table)).all()),
            )
            for table in Base.metadata.sorted_tables
        }


def _fence_counter(db, run):
    with db.reader() as s:
        return s.get(NotificationClaim, run.notification_uuid).fence


def _take_claim(db, run, **values):
    with db.writer() as s:
        s.execute(
            sa.update(NotificationClaim)
            .where(NotificationClaim.notification_uuid == run.notification_uuid)
            .values(**values)
        )


# --- the lease ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "args"), NOVA_CHANGES, ids=[n for n, _ in NOVA_CHANGES])
def test_no_nova_change_once_the_lease_is_over(db, sim, nova, clock, world, name, args):
    run, vmove = _setup_run(db, nova, clock, world, lease_term=10)
    clock.offset = 10
    before = _rows(db)
    with pytest.raises(LeaseLost):
        _call(run, world, vmove, name, args)
    assert sim.nova_calls() == []
    assert _rows(db) == before


@pytest.mark.parametrize(("name", "args"), DB_CHANGES, ids=[n for n, _ in DB_CHANGES])
def test_no_row_written_once_the_lease_is_over(db, sim, nova, clock, world, name, args):
    run, vmove = _setup_run(db, nova, clock, world, lease_term=10)
    clock.offset = 10
    before = _rows(db)
    with pytest.raises(LeaseLost):
        _call(run, world, vmove, name, args)
    assert _rows(db) == before
    assert sim.nova_calls() == []


@pytest.mark.parametrize(("name", "args"), DB_CHANGES, ids=[n for n, _ in DB_CHANGES])
def test_no_row_written_once_the_lease_was_lost(db, sim, nova, clock, world, name, args):
    run, vmove = _setup_run(db, nova, clock, world)
    run.lease.lose()
    before = _rows(db)
    with pytest.raises(LeaseLost):
        _call(run, world, vmove, name, args)
    assert _rows(db) == before
    assert sim.nova_calls() == []


# --- the fence ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "taken",
    [
        {"owner": "engine-other", "attempt": 7},
        {"attempt": 2},
        {"expires_at": datetime.datetime(2025, 12, 31)},
    ],
    ids=["other-owner", "other-token", "expired"],
)
@pytest.mark.parametrize(("name", "args"), DB_CHANGES, ids=[n for n, _ in DB_CHANGES])
def test_write_with_the_claim_no_longer_ours_is_refused(
    db, sim, nova, clock, world, name, args, taken
):
    run, vmove = _setup_run(db, nova, clock, world)
    _take_claim(db, run, **taken)
    before = _rows(db)
    with pytest.raises(LeaseLost):
        _call(run, world, vmove, name, args)
    assert _rows(db) == before
    assert run.lease.lost
    # Only the unlock reaches Nova, while the lease still ran: its record is then kept,
    # and whoever holds the notification now unlocks it again.
    made = ["unlock"] if name == "nova.unlock_server" else []
    assert sim.actions("vm") == made
    assert len(sim.nova_calls()) == len(made)
    # The lease is lost for good: the Nova changes are refused too.
    with pytest.raises(LeaseLost):
        run.effects.nova.stop_server("vm")
    assert sim.actions("vm") == made
    assert len(sim.nova_calls()) == len(made)


def test_write_for_a_notification_no_longer_running_is_refused(db, nova, clock, world):
    run, vmove = _setup_run(db, nova, clock, world)
    with db.writer() as s:
        s.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == run.notification_uuid)
            .values(status="failed")
        )
    before = _rows(db)
    with pytest.raises(LeaseLost):
        run.effects.update_vmove(vmove.id, status="ongoing")
    assert _rows(db) == before
    assert run.lease.lost


def test_write_with_the_claim_deleted_is_refused(db, nova, clock, world):
    run, vmove = _setup_run(db, nova, clock, world)
    with db.writer() as s:
        s.execute(
            sa.delete(NotificationClaim).where(
                NotificationClaim.notification_uuid == run.notification_uuid
            )
        )
    before = _rows(db)
    with pytest.raises(LeaseLost):
        run.effects.put_plan("vm", Plan("error", True))
    assert _rows(db) == before
    assert run.lease.lost


def test_every_write_goes_through_the_fence(db, nova, clock, world):
    run, vmove = _setup_run(db, nova, clock, world)
    assert _fence_counter(db, run) == 0
    run.effects.update_vmove(vmove.id, status="ongoing")
    assert _fence_counter(db, run) == 1
    run.effects.nova.lock_server("vm")  # one fenced write, then the Nova call
    assert _fence_counter(db, run) == 2
    assert not run.lease.lost


# --- the changes themselves ----------------------------------------------------------------------


def test_lock_server_records_the_lock_before_calling_nova(db, sim, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    transaction(db, lambda s: instances.forget_lock(s, "vm"))
    recorded_at_call = []
    real_lock = nova.lock_server

    def lock_server(server_id):
        with db.reader() as s:
            recorded_at_call.append(instances.locked(s, run.notification_uuid))
        real_lock(server_id)

    nova.lock_server = lock_server
    run.effects.nova.lock_server("vm")
    assert recorded_at_call == [["vm"]]
    assert sim.server("vm")["locked"]


def test_lock_server_that_nova_refuses_stays_recorded(db, sim, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    sim.fail(500, action="lock", server="vm", times=1)
    with pytest.raises(exception.NovaError):
        run.effects.nova.lock_server("vm")
    assert run.effects.locked_instances() == ["vm"]


def test_unlock_server_forgets_the_lock(db, sim, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    sim.update_server("vm", locked=True)
    run.effects.nova.unlock_server("vm")
    assert not sim.server("vm")["locked"]
    assert run.effects.locked_instances() == []


def test_unlock_of_a_deleted_instance_forgets_the_lock(db, sim, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    sim.delete_server("vm")
    run.effects.nova.unlock_server("vm")
    assert run.effects.locked_instances() == []


def test_unlock_that_nova_refuses_keeps_the_lock(db, sim, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    sim.fail(500, action="unlock", server="vm", times=1)
    with pytest.raises(exception.NovaError):
        run.effects.nova.unlock_server("vm")
    assert run.effects.locked_instances() == ["vm"]


def test_put_plan_keeps_the_first_plan(db, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    assert run.effects.plan("vm") is None
    assert run.effects.put_plan("vm", Plan("paused", True)) == Plan("paused", True)
    assert run.effects.put_plan("vm", Plan("error", True)) == Plan("paused", True)
    assert run.effects.plan("vm") == Plan("paused", True)


def test_record_moves_reuses_pending_rows_and_fails_stale_ones(db, nova, clock, world):
    run, first = _setup_run(db, nova, clock, world)  # a pending move of "vm"
    stale = transaction(
        db, lambda s: db_vmoves.create(s, run.notification_uuid, "gone", "gone", "compute-1")
    )
    created = run.effects.record_moves([Server("vm", "vm"), Server("new")], "compute-1", NOW)
    assert [(v.id == first.id, v.instance_uuid, v.instance_name) for v in created] == [
        (True, "vm", "vm"),
        (False, "new", ""),
    ]
    moves = {v.instance_uuid: v for v in run.effects.vmoves()}
    assert moves["gone"].id == stale.id
    assert (moves["gone"].status, moves["gone"].message) == (
        "failed",
        "Failed reason: evacuation not started.",
    )
    assert {moves["vm"].status, moves["new"].status} == {"pending"}


def test_put_host_on_maintenance(db, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    spare = run.effects.hosts.put_host_on_maintenance(world["reserved-1"], unreserve_spare=True)
    assert (spare.name, spare.reserved, spare.recovery_method) == (
        "reserved-1",
        True,  # as found
        "reserved_host",
    )
    with db.reader() as s:
        row = s.query(Host).filter_by(uuid=world["reserved-1"]).one()
        assert (row.on_maintenance, row.reserved) == (True, False)
    assert run.effects.hosts.reserved_host_names(spare.failover_segment_id) == []
    with pytest.raises(exception.HostNotFound):
        run.effects.hosts.put_host_on_maintenance("no-such-host", unreserve_spare=True)


def test_reserved_host_taken_once_and_given_back(db, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    assert run.effects.hosts.take_reserved_host("reserved-1")
    assert not run.effects.hosts.take_reserved_host("reserved-1")
    run.effects.hosts.give_back_reserved_host("reserved-1")
    assert run.effects.hosts.take_reserved_host("reserved-1")


def test_the_note_of_a_taken_spare_is_written_only_with_the_take(db, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    detail = {"message": "Enabling reserved host: 'reserved-1'"}
    note = TaskNote(1, 2, "EvacuateInstancesTask", "RUNNING", 0.1, detail)
    assert run.effects.hosts.take_reserved_host("reserved-1", note)
    assert not run.effects.hosts.take_reserved_host(
        "reserved-1", TaskNote(2, 2, "X", "RUNNING", 0.1, {})
    )
    with db.reader() as s:
        rows = [(r.attempt, r.name, r.details) for r in s.query(RecoveryTask)]
    assert rows == [(1, "EvacuateInstancesTask", json.dumps([detail]))]


def test_progress_rows(db, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    assert run.effects.next_attempt() == 1
    run.effects.record_task(1, 0, "Task", "RUNNING", 0.5, {"progress": "0.5", "message": "m"})
    assert run.effects.next_attempt() == 2
    assert task_rows(db, run.notification_uuid) == [(1, "Task", "RUNNING", 0.5, [("0.5", "m")])]


def test_nova_changes_while_the_lease_runs(db, sim, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    effects = run.effects
    effects.nova.force_down_service(SERVICE)
    effects.nova.disable_service(SERVICE, "why")
    effects.nova.enable_service(SERVICE)
    effects.nova.reset_state("vm", "error")
    effects.nova.evacuate("vm", "compute-2")
    effects.nova.stop_server("vm")
    effects.nova.start_server("vm")
    effects.nova.add_host_to_aggregate(1, "compute-2")
    assert [(c["method"], c["path"], c["body"]) for c in sim.nova_calls()] == [
        ("PUT", f"/os-services/{SERVICE_ID}", {"forced_down": True}),
        ("PUT", f"/os-services/{SERVICE_ID}", {"status": "disabled", "disabled_reason": "why"}),
        ("PUT", f"/os-services/{SERVICE_ID}", {"status": "enabled"}),
        ("POST", "/servers/vm/action", {"os-resetState": {"state": "error"}}),
        ("POST", "/servers/vm/action", {"evacuate": {"host": "compute-2"}}),
        ("POST", "/servers/vm/action", {"os-stop": None}),
        ("POST", "/servers/vm/action", {"os-start": None}),
        ("POST", "/os-aggregates/1/action", {"add_host": {"host": "compute-2"}}),
    ]
    assert sim.server("vm")["OS-EXT-SRV-ATTR:host"] == "compute-2"


# --- the outcome ----------------------------------------------------------------------------------


def _status(db, run):
    with db.reader() as s:
        row = s.query(Notification).filter_by(notification_uuid=run.notification_uuid).one()
        return row.status, row.message


def test_finish_writes_the_outcome_and_drops_the_claim(db, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    assert run.effects.finish("ignored", "why")
    assert _status(db, run) == ("ignored", "why")
    with db.reader() as s:
        assert s.get(NotificationClaim, run.notification_uuid) is None


def test_finish_just_after_the_local_deadline_is_still_the_truth(db, nova, clock, world):
    """Fenced by the database only: nobody else took the notification over."""
    run, _ = _setup_run(db, nova, clock, world, lease_term=10)
    clock.offset = 11
    assert run.lease.lost
    assert run.effects.finish("finished", None)
    assert _status(db, run) == ("finished", None)


def test_finish_after_a_takeover_writes_nothing(db, nova, clock, world):
    run, _ = _setup_run(db, nova, clock, world)
    _take_claim(db, run, owner="engine-other", attempt=7)
    assert not run.effects.finish("finished", None)
    assert _status(db, run) == ("running", None)
