"""The engine's queue on every backend: claims, per-host order, renewal, takeover, expiry."""

from __future__ import annotations

import concurrent.futures
import datetime
import json
import threading
import uuid

import pytest
import sqlalchemy as sa

from masakari.db import migration, work
from masakari.db.database import Database
from masakari.db.models import Host, Notification, NotificationClaim, Segment

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)
LATER = T0 + datetime.timedelta(minutes=1)


@pytest.fixture
def db(db_url: str):
    database = Database.from_url(db_url)
    migration.upgrade(database.engine)
    yield database
    database.dispose()


def _segment_with_hosts(db: Database, *names: str, reserved: tuple[str, ...] = ()):
    seg = str(uuid.uuid4())
    hosts = {}
    with db.writer() as s:
        s.add(Segment(uuid=seg, name="s-" + seg[:8], service_type="c", recovery_method="auto"))
        s.flush()
        for i, name in enumerate(names):
            hosts[name] = str(uuid.uuid4())
            s.add(
                Host(
                    uuid=hosts[name],
                    name=name,
                    type="COMPUTE",
                    control_attributes="x",
                    failover_segment_id=seg,
                    reserved=name in reserved,
                    created_at=T0 + datetime.timedelta(seconds=i),
                )
            )
    return seg, hosts


def _notify(db: Database, host: str, status: str = "new", generated: datetime.datetime = T0):
    nid = str(uuid.uuid4())
    with db.writer() as s:
        s.add(
            Notification(
                notification_uuid=nid,
                generated_time=generated,
                source_host_uuid=host,
                type="VM",
                payload=json.dumps({}),
                status=status,
            )
        )
    return nid


def _claim(db, nid, owner="a", token=1, statuses=("new",), expires=LATER):
    return work.transaction(db, lambda s: work.claim(s, nid, owner, token, list(statuses), expires))


def _status(db, nid):
    with db.reader() as s:
        return work.get_notification(s, nid).status


def test_one_claim_wins(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    assert _claim(db, nid, "a") == work.ClaimResult.CLAIMED
    assert _claim(db, nid, "b") == work.ClaimResult.GONE
    assert _status(db, nid) == "running"
    with db.reader() as s:
        claim = s.get(NotificationClaim, nid)
        assert (claim.owner, claim.attempt, claim.expires_at) == ("a", 1, LATER)


def test_concurrent_claims_one_winner_per_notification(db, db_url):
    _, hosts = _segment_with_hosts(db, *[f"h{i}" for i in range(6)])
    nids = [_notify(db, h) for h in hosts.values()]
    engines = [Database.from_url(db_url) for _ in range(3)]
    barrier = threading.Barrier(len(engines))

    def claim_all(index):
        barrier.wait()
        return [
            nid
            for nid in nids
            if _claim(engines[index], nid, f"e{index}", index + 1) == work.ClaimResult.CLAIMED
        ]

    try:
        with concurrent.futures.ThreadPoolExecutor(len(engines)) as pool:
            won = list(pool.map(claim_all, range(len(engines))))
    finally:
        for engine in engines:
            engine.dispose()
    assert sorted(n for w in won for n in w) == sorted(nids)


def test_one_running_notification_per_host(db):
    _, hosts = _segment_with_hosts(db, "h1", "h2")
    first = _notify(db, hosts["h1"])
    second = _notify(db, hosts["h1"])
    other = _notify(db, hosts["h2"])
    assert _claim(db, first) == work.ClaimResult.CLAIMED
    with db.reader() as s:
        rows = {r.notification_uuid: r for r in work.new_after(s, 0, 10)}
    assert rows[second].host_busy and not rows[other].host_busy
    assert _claim(db, second) == work.ClaimResult.BUSY
    assert _status(db, second) == "new"
    assert _claim(db, other) == work.ClaimResult.CLAIMED
    assert work.transaction(db, lambda s: work.finish(s, first, "a", 1, "finished"))
    assert _claim(db, second) == work.ClaimResult.CLAIMED


def test_new_after_is_a_bounded_range(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nids = [_notify(db, hosts["h1"]) for _ in range(5)]
    _notify(db, hosts["h1"], status="finished")
    with db.reader() as s:
        first = work.new_after(s, 0, 2)
        assert [r.notification_uuid for r in first] == nids[:2]
        rest = work.new_after(s, first[-1].id, 10)
        assert [r.notification_uuid for r in rest] == nids[2:]


def test_finish_is_fenced_by_owner_and_token(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    assert not work.transaction(db, lambda s: work.finish(s, nid, "a", 2, "finished"))
    assert not work.transaction(db, lambda s: work.finish(s, nid, "b", 1, "finished"))
    assert _status(db, nid) == "running"
    assert work.transaction(db, lambda s: work.finish(s, nid, "a", 1, "ignored", "why"))
    with db.reader() as s:
        row = s.query(Notification).filter_by(notification_uuid=nid).one()
        assert (row.status, row.message) == ("ignored", "why")
        assert s.get(NotificationClaim, nid) is None


def test_renew_keeps_only_live_claims(db):
    _, hosts = _segment_with_hosts(db, "h1", "h2", "h3")
    live = _notify(db, hosts["h1"])
    expired = _notify(db, hosts["h2"])
    stale_token = _notify(db, hosts["h3"])
    _claim(db, live, "a", 1)
    _claim(db, expired, "a", 2)
    _claim(db, stale_token, "a", 3)
    # the expiry task ends one notification; another's claim was re-made with a new token
    work.transaction(
        db,
        lambda s: s.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == expired)
            .values(status="failed")
        ),
    )
    later = LATER + datetime.timedelta(minutes=5)
    tokens = {live: 1, expired: 2, stale_token: 99}
    assert work.transaction(db, lambda s: work.renew(s, "a", tokens, later)) == {live}
    with db.reader() as s:
        expiry = dict(
            s.execute(sa.select(NotificationClaim.notification_uuid, NotificationClaim.expires_at))
            .tuples()
            .all()
        )
    assert expiry[live] == later
    assert expiry[expired] == LATER and expiry[stale_token] == LATER


def test_renew_and_takeover(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=LATER)
    renewed = LATER + datetime.timedelta(minutes=1)
    assert work.transaction(db, lambda s: work.renew(s, "a", {nid: 1}, renewed)) == {nid}
    with db.reader() as s:
        assert work.takeover_candidates(s, LATER + datetime.timedelta(seconds=30), 10) == []
        assert work.takeover_candidates(s, renewed + datetime.timedelta(seconds=1), 10) == [nid]
    now = renewed + datetime.timedelta(seconds=1)
    assert not work.transaction(db, lambda s: work.take_over(s, nid, "b", 7, LATER, now))
    until = now + datetime.timedelta(minutes=1)
    assert work.transaction(db, lambda s: work.take_over(s, nid, "b", 7, now, until))
    # The old owner is fenced out.
    assert work.transaction(db, lambda s: work.renew(s, "a", {nid: 1}, now)) == set()
    with db.reader() as s:
        assert not work.owns(s, nid, "a", 1)
        assert work.owns(s, nid, "b", 7)


def test_release_lets_another_engine_take_over_at_once(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=LATER)
    work.transaction(db, lambda s: work.release(s, "a", {nid: 1}, T0))
    with db.reader() as s:
        assert work.takeover_candidates(s, T0, 10) == [nid]


def test_orphans_are_running_rows_without_claim(db):
    _, hosts = _segment_with_hosts(db, "h1")
    orphan = _notify(db, hosts["h1"], status="running")
    with db.reader() as s:
        assert work.orphan_candidates(s, 10) == [orphan]
    assert work.transaction(db, lambda s: work.take_over(s, orphan, "b", 1, T0, LATER))
    with db.reader() as s:
        assert work.orphan_candidates(s, 10) == []


def test_retry_candidates(db):
    _, hosts = _segment_with_hosts(db, "h1", "h2", "h3")
    error = _notify(db, hosts["h1"], status="error", generated=LATER)
    old_new = _notify(db, hosts["h2"], status="new", generated=T0)
    _notify(db, hosts["h3"], status="new", generated=LATER)
    _notify(db, hosts["h3"], status="failed", generated=T0)
    with db.reader() as s:
        found = work.retry_candidates(s, T0 + datetime.timedelta(seconds=30), 10)
    assert [r.notification_uuid for r in found] == [error, old_new]
    # A new one is claimed by the retry only while it is still old enough.
    assert (
        work.transaction(
            db,
            lambda s: work.claim(s, old_new, "a", 1, ["new"], LATER, generated_before=T0),
        )
        == work.ClaimResult.GONE
    )


def test_expire_is_bounded_and_conditional(db):
    _, hosts = _segment_with_hosts(db, "h1")
    old = [_notify(db, hosts["h1"], status=st) for st in ("new", "running", "error", "error")]
    done = _notify(db, hosts["h1"], status="finished")
    young = _notify(db, hosts["h1"], status="new", generated=LATER)
    cutoff = T0 + datetime.timedelta(seconds=1)
    first = work.transaction(db, lambda s: work.expire(s, cutoff, 3))
    second = work.transaction(db, lambda s: work.expire(s, cutoff, 3))
    assert sorted(first + second) == sorted(old)
    assert {_status(db, n) for n in old} == {"failed"}
    assert (_status(db, done), _status(db, young)) == ("finished", "new")


def test_reserved_hosts_newest_first_and_taken_once(db):
    seg, hosts = _segment_with_hosts(db, "c1", "r1", "r2", reserved=("r1", "r2"))
    with db.reader() as s:
        assert work.reserved_host_names(s, seg) == ["r2", "r1"]
    assert work.transaction(db, lambda s: work.take_reserved_host(s, "r2"))
    assert not work.transaction(db, lambda s: work.take_reserved_host(s, "r2"))
    work.transaction(db, lambda s: work.give_back_reserved_host(s, "r2"))
    work.transaction(db, lambda s: work.put_on_maintenance(s, hosts["r1"], unreserve=True))
    with db.reader() as s:
        assert work.reserved_host_names(s, seg) == ["r2"]
        host = work.get_host(s, hosts["r1"])
        assert host.on_maintenance and not host.reserved


def test_vmoves_newest_first(db):
    nid = str(uuid.uuid4())
    moves = [
        work.transaction(db, lambda s, i=i: work.create_vmove(s, nid, f"vm{i}", f"n{i}", "h1"))
        for i in range(3)
    ]
    work.transaction(db, lambda s: work.update_vmove(s, moves[1].id, status="ongoing"))
    with db.reader() as s:
        assert [v.instance_uuid for v in work.vmoves(s, nid)] == ["vm2", "vm1", "vm0"]
        assert [v.instance_uuid for v in work.vmoves(s, nid, statuses=["pending"])] == [
            "vm2",
            "vm0",
        ]
        assert [v.instance_uuid for v in work.vmoves(s, nid, ids=[moves[0].id])] == ["vm0"]
        assert {v.status for v in work.vmoves(s, nid)} == {"pending", "ongoing"}
