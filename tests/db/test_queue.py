"""The engine's reads on every backend: the queue, and the host, vmove, plan and instance-lock
rows a recovery works with (its writes of them go through the fence, tested in
tests/functional/engine/runs/test_effects.py)."""

from __future__ import annotations

import datetime
import functools
import json
import uuid

from masakari.db import claims, hosts, instances, queue, vmoves
from masakari.db.database import transaction
from masakari.db.instances import Plan
from tests.support import rows

T0, LATER = rows.T0, rows.LATER


_segment_with_hosts = functools.partial(rows.segment_with_hosts, recovery_method="reserved_host")


_notify = functools.partial(
    rows.notification, type="VM", payload={"event": "LIFECYCLE"}, generated_time=T0
)


# --- the queue -----------------------------------------------------------------------------------


def test_new_after_is_a_bounded_range(db):
    _, h = _segment_with_hosts(db, "h1")
    nids = [_notify(db, h["h1"]) for _ in range(5)]
    _notify(db, h["h1"], status="finished")
    with db.reader() as s:
        first = queue.new_after(s, 0, 2)
        assert [r.notification_uuid for r in first] == nids[:2]
        rest = queue.new_after(s, first[-1].id, 10)
        assert [r.notification_uuid for r in rest] == nids[2:]


def test_new_after_of_idle_hosts_skips_rows_of_busy_ones(db):
    _, h = _segment_with_hosts(db, "h1", "h2")
    _notify(db, h["h1"], status="running")
    queued = _notify(db, h["h1"])
    idle = _notify(db, h["h2"])
    with db.reader() as s:
        assert [r.notification_uuid for r in queue.new_after(s, 0, 10)] == [queued, idle]
        found = queue.new_after(s, 0, 10, idle_hosts_only=True)
        assert [r.notification_uuid for r in found] == [idle]
        lowest = queue.lowest_new_after(s, 0)
        assert lowest is not None
        assert queue.new_after(s, lowest - 1, 1)[0].notification_uuid == queued
        assert queue.lowest_new_after(s, found[0].id) is None


def test_after_moves_over_every_status(db):
    _, h = _segment_with_hosts(db, "h1")
    new = _notify(db, h["h1"])
    done = _notify(db, h["h1"], status="finished")
    with db.reader() as s:
        rows = queue.after(s, 0, 10)
        assert [(r.notification_uuid, r.status) for r in rows] == [(new, "new"), (done, "finished")]
        assert queue.max_id(s) == rows[-1].id


def test_max_id_of_an_empty_queue(db):
    with db.reader() as s:
        assert queue.max_id(s) == 0


def test_get_notification(db):
    _, h = _segment_with_hosts(db, "h1")
    nid = _notify(db, h["h1"])
    with db.reader() as s:
        found = queue.get_notification(s, nid)
        assert found is not None
        assert (found.notification_uuid, found.type, found.source_host_uuid, found.status) == (
            nid,
            "VM",
            h["h1"],
            "new",
        )
        assert json.loads(found.payload) == {"event": "LIFECYCLE"}
        assert found.generated_time == T0
        assert queue.get_notification(s, str(uuid.uuid4())) is None


def test_retry_candidates(db):
    _, h = _segment_with_hosts(db, "h1", "h2", "h3")
    error = _notify(db, h["h1"], status="error", generated_time=LATER)
    old_new = _notify(db, h["h2"], status="new", generated_time=T0)
    _notify(db, h["h3"], status="new", generated_time=LATER)
    _notify(db, h["h3"], status="failed", generated_time=T0)
    with db.reader() as s:
        found = queue.retry_candidates(s, T0 + datetime.timedelta(seconds=30), 10)
    assert [r.notification_uuid for r in found] == [error, old_new]
    # A new one is claimed by the retry only while it is still old enough.
    assert (
        transaction(
            db,
            lambda s: claims.claim(s, old_new, "a", 1, ["new"], LATER, generated_before=T0),
        )
        == claims.ClaimResult.GONE
    )
    assert (
        transaction(
            db,
            lambda s: claims.claim(s, old_new, "a", 1, ["new"], LATER, generated_before=LATER),
        )
        == claims.ClaimResult.CLAIMED
    )


def test_takeover_candidates_oldest_expiry_first(db):
    _, h = _segment_with_hosts(db, "h1", "h2", "h3")
    first, second, live = (_notify(db, h[name]) for name in ("h1", "h2", "h3"))
    for nid, expires in ((second, T0), (first, T0 - datetime.timedelta(seconds=5))):
        transaction(db, lambda s, n=nid, e=expires: claims.claim(s, n, "a", 1, ["new"], e))
    transaction(db, lambda s: claims.claim(s, live, "a", 1, ["new"], LATER))
    with db.reader() as s:
        assert queue.takeover_candidates(s, T0 + datetime.timedelta(seconds=1), 10) == [
            first,
            second,
        ]
        assert queue.takeover_candidates(s, T0 + datetime.timedelta(seconds=1), 1) == [first]


# --- what a recovery reads and writes besides its claim --------------------------------------


def test_host_for_recovery(db):
    seg, h = _segment_with_hosts(db, "c1", "r1", reserved=("r1",), enabled=False)
    with db.reader() as s:
        found = hosts.get_for_recovery(s, h["r1"])
        assert found == hosts.RecoveryHost(
            uuid=h["r1"],
            name="r1",
            reserved=True,
            on_maintenance=False,
            failover_segment_id=seg,
            segment_enabled=False,
            recovery_method="reserved_host",
            segment_name="seg-" + seg[:8],  # the row builder names it so
        )
        assert hosts.get_for_recovery(s, str(uuid.uuid4())) is None


def test_put_on_maintenance(db):
    _, h = _segment_with_hosts(db, "c1", "r1", "r2", reserved=("r1", "r2"))
    transaction(db, lambda s: hosts.put_on_maintenance(s, h["r1"], unreserve=True))
    transaction(db, lambda s: hosts.put_on_maintenance(s, h["r2"], unreserve=False))
    with db.reader() as s:
        r1, r2, c1 = (hosts.get_for_recovery(s, h[n]) for n in ("r1", "r2", "c1"))
    assert (r1.on_maintenance, r1.reserved) == (True, False)
    assert (r2.on_maintenance, r2.reserved) == (True, True)
    assert (c1.on_maintenance, c1.reserved) == (False, False)


def test_reserved_hosts_newest_first_and_taken_once(db):
    seg, h = _segment_with_hosts(db, "c1", "r1", "r2", reserved=("r1", "r2"))
    with db.reader() as s:
        assert hosts.reserved_host_names(s, seg) == ["r2", "r1"]
    assert transaction(db, lambda s: hosts.take_reserved_host(s, "r2"))
    assert not transaction(db, lambda s: hosts.take_reserved_host(s, "r2"))
    with db.reader() as s:
        assert hosts.reserved_host_names(s, seg) == ["r1"]
    transaction(db, lambda s: hosts.give_back_reserved_host(s, "r2"))
    transaction(db, lambda s: hosts.put_on_maintenance(s, h["r1"], unreserve=True))
    with db.reader() as s:
        assert hosts.reserved_host_names(s, seg) == ["r2"]
        host = hosts.get_for_recovery(s, h["r1"])
        assert host.on_maintenance and not host.reserved
    # A spare on maintenance is no spare to take.
    transaction(db, lambda s: hosts.put_on_maintenance(s, h["r2"], unreserve=False))
    assert not transaction(db, lambda s: hosts.take_reserved_host(s, "r2"))


def test_vmoves_newest_first(db):
    nid = str(uuid.uuid4())
    moves = [
        transaction(db, lambda s, i=i: vmoves.create(s, nid, f"vm{i}", f"n{i}", "h1"))
        for i in range(3)
    ]
    assert [(m.status, m.source_host, m.instance_name) for m in moves] == [
        ("pending", "h1", "n0"),
        ("pending", "h1", "n1"),
        ("pending", "h1", "n2"),
    ]
    transaction(db, lambda s: vmoves.update(s, moves[1].id, {"status": "ongoing"}))
    with db.reader() as s:
        assert [v.instance_uuid for v in vmoves.of_notification(s, nid)] == ["vm2", "vm1", "vm0"]
        assert [v.instance_uuid for v in vmoves.of_notification(s, nid, statuses=["pending"])] == [
            "vm2",
            "vm0",
        ]
        assert [v.instance_uuid for v in vmoves.of_notification(s, nid, ids=[moves[0].id])] == [
            "vm0"
        ]
        assert {v.status for v in vmoves.of_notification(s, nid)} == {"pending", "ongoing"}
        assert vmoves.of_notification(s, str(uuid.uuid4())) == []


def test_plan_is_recorded_once(db):
    nid = str(uuid.uuid4())
    with db.reader() as s:
        assert instances.get_plan(s, nid, "vm") is None
    transaction(db, lambda s: instances.put_plan(s, nid, "vm", Plan("error", True)))
    transaction(db, lambda s: instances.put_plan(s, nid, "vm", Plan("active", False)))
    transaction(db, lambda s: instances.put_plan(s, nid, "other", Plan(None, False)))
    with db.reader() as s:
        assert instances.get_plan(s, nid, "vm") == Plan("error", True)
        assert instances.get_plan(s, nid, "other") == Plan(None, False)
        assert instances.get_plan(s, str(uuid.uuid4()), "vm") is None


def test_instance_locks(db):
    nid, other = str(uuid.uuid4()), str(uuid.uuid4())
    transaction(db, lambda s: instances.record_lock(s, nid, "vm1"))
    transaction(db, lambda s: instances.record_lock(s, nid, "vm2"))
    transaction(db, lambda s: instances.record_lock(s, nid, "vm1"))  # once per instance
    transaction(db, lambda s: instances.record_lock(s, other, "vm3"))
    with db.reader() as s:
        assert sorted(instances.locked(s, nid)) == ["vm1", "vm2"]
    transaction(db, lambda s: instances.forget_lock(s, "vm1"))
    transaction(db, lambda s: instances.forget_lock(s, "gone"))
    with db.reader() as s:
        assert instances.locked(s, nid) == ["vm2"]
        assert instances.locked(s, other) == ["vm3"]
