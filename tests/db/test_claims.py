"""Claims on every backend: claim, per-host order, fence, renewal, finish, takeover, expiry.

The renewal racing with a takeover (between a renewal's read and its update) has its own
test elsewhere.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import functools
import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from masakari.db import claims, guards, models, queue
from masakari.db.database import DUPLICATE_ERRORS, Database, transaction
from masakari.db.models import HostGuard, Notification, NotificationClaim
from tests.support import rows

T0, LATER = rows.T0, rows.LATER
CLAIMED, GONE, BUSY = claims.ClaimResult.CLAIMED, claims.ClaimResult.GONE, claims.ClaimResult.BUSY


_segment_with_hosts = rows.segment_with_hosts


_notify = functools.partial(rows.notification, type="VM", generated_time=T0)


def _claim(db, nid, owner="a", token=1, statuses=("new",), expires=LATER):
    return transaction(db, lambda s: claims.claim(s, nid, owner, token, list(statuses), expires))


def _try_claim(db, nid, owner, token):
    """As the engine claims: a first use of a host's guard that lost the race is GONE."""
    try:
        return _claim(db, nid, owner, token)
    except DUPLICATE_ERRORS:
        return GONE


def _try_take_over(db, nid, owner, token, now, until):
    try:
        return transaction(db, lambda s: claims.take_over(s, nid, owner, token, now, until))
    except DUPLICATE_ERRORS:
        return False


def _status(db, nid):
    with db.reader() as s:
        return queue.get_notification(s, nid).status


def _claim_row(db, nid):
    with db.reader() as s:
        row = s.get(NotificationClaim, nid)
        return None if row is None else (row.owner, row.attempt, row.expires_at, row.fence)


def _fence(db, nid, owner, token, now=T0):
    return transaction(db, lambda s: claims.fence(s, nid, owner, token, now))


def _guard_version(db, host_uuid):
    with db.reader() as s:
        return s.scalar(sa.select(HostGuard.version).where(HostGuard.host_uuid == host_uuid))


def _set_status(db, nid, status):
    transaction(
        db,
        lambda s: s.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == nid)
            .values(status=status)
        ),
    )


# --- claim ---------------------------------------------------------------------------------------


def test_one_claim_wins(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    assert _claim(db, nid, "a") == CLAIMED
    assert _claim(db, nid, "b") == GONE
    assert _status(db, nid) == "running"
    assert _claim_row(db, nid) == ("a", 1, LATER, 0)


def test_claim_of_a_missing_notification_is_gone(db):
    assert _claim(db, str(uuid.uuid4())) == GONE


def test_claim_holds_the_host_guard(db):
    _, hosts = _segment_with_hosts(db, "h1")
    first = _notify(db, hosts["h1"])
    second = _notify(db, hosts["h1"])
    assert _guard_version(db, hosts["h1"]) is None
    assert _claim(db, first) == CLAIMED
    assert _guard_version(db, hosts["h1"]) == 1  # inserted by the first use
    # Every claim changes the guard row, also one that ends BUSY or GONE.
    assert _claim(db, second) == BUSY
    assert _claim(db, first, "b") == GONE
    assert _guard_version(db, hosts["h1"]) == 3


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
            if _try_claim(engines[index], nid, f"e{index}", index + 1) == CLAIMED
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
    assert _claim(db, first) == CLAIMED
    with db.reader() as s:
        rows = {r.notification_uuid: r for r in queue.new_after(s, 0, 10)}
    assert rows[second].host_busy and not rows[other].host_busy
    assert _claim(db, second) == BUSY
    assert _status(db, second) == "new"
    assert _claim_row(db, second) is None
    assert _claim(db, other) == CLAIMED
    assert transaction(db, lambda s: claims.finish(s, first, "a", 1, "finished"))
    assert _claim(db, second) == CLAIMED


def test_concurrent_claims_of_one_host_run_one_notification(db, db_url):
    _, hosts = _segment_with_hosts(db, "h1")
    nids = [_notify(db, hosts["h1"]) for _ in range(3)]
    transaction(db, lambda s: guards.hold(s, hosts["h1"]))
    engines = [Database.from_url(db_url) for _ in nids]
    barrier = threading.Barrier(len(engines))

    def claim_one(index):
        barrier.wait()
        return _try_claim(engines[index], nids[index], f"e{index}", 1)

    try:
        with concurrent.futures.ThreadPoolExecutor(len(engines)) as pool:
            results = list(pool.map(claim_one, range(len(engines))))
    finally:
        for engine in engines:
            engine.dispose()
    assert results.count(CLAIMED) == 1
    assert [_status(db, n) for n in nids].count("running") == 1


def test_claim_that_waited_for_the_host_guard_sees_the_claim_that_held_it(db, db_url):
    """The second claim of a host reads after the guard is its own, not before.

    On InnoDB (REPEATABLE READ) a transaction reads from the snapshot of its first plain
    read: a claim that read the notification, then waited for the guard, must still see the
    notification the guard's holder moved to running meanwhile.
    """
    _, hosts = _segment_with_hosts(db, "h1")
    first = _notify(db, hosts["h1"])
    second = _notify(db, hosts["h1"])
    transaction(db, lambda s: guards.hold(s, hosts["h1"]))  # the race is on an update
    other = Database.from_url(db_url)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        with db.writer() as s:
            assert claims.claim(s, first, "a", 1, ["new"], LATER) == CLAIMED
            waiting = pool.submit(_claim, other, second, "b", 2)
            time.sleep(1.0)  # the second claim has read the notification and waits
            assert not waiting.done()
        assert waiting.result(timeout=60) == BUSY
    finally:
        pool.shutdown(wait=True)
        other.dispose()
    assert (_status(db, first), _status(db, second)) == ("running", "new")


def test_claim_only_from_the_given_statuses(db):
    _, hosts = _segment_with_hosts(db, "h1", "h2")
    error = _notify(db, hosts["h1"], status="error")
    assert _claim(db, error, statuses=("new",)) == GONE
    assert _claim(db, error, statuses=("error",)) == CLAIMED
    finished = _notify(db, hosts["h2"], status="finished")
    assert _claim(db, finished, statuses=("new", "error")) == GONE


# --- fence ---------------------------------------------------------------------------------------


def test_fence_holds_for_the_live_owner_and_counts(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    assert _fence(db, nid, "a", 1)
    assert _claim_row(db, nid)[3] == 1
    assert _fence(db, nid, "a", 1, now=LATER - datetime.timedelta(seconds=1))
    assert _claim_row(db, nid) == ("a", 1, LATER, 2)


def test_fence_refuses_another_owner_or_token(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    assert not _fence(db, nid, "b", 1)
    assert not _fence(db, nid, "a", 2)
    assert _claim_row(db, nid) == ("a", 1, LATER, 0)


def test_fence_refuses_an_expired_claim(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=LATER)
    assert not _fence(db, nid, "a", 1, now=LATER)
    assert not _fence(db, nid, "a", 1, now=LATER + datetime.timedelta(seconds=1))
    assert _claim_row(db, nid)[3] == 0


@pytest.mark.parametrize("status", ["finished", "failed", "error", "ignored", "new"])
def test_fence_refuses_a_notification_no_longer_running(db, status):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    _set_status(db, nid, status)
    assert not _fence(db, nid, "a", 1)
    assert _claim_row(db, nid)[3] == 0


def test_fence_refuses_a_deleted_notification(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    transaction(
        db,
        lambda s: s.execute(
            sa.update(Notification).where(Notification.notification_uuid == nid).values(deleted=1)
        ),
    )
    assert not _fence(db, nid, "a", 1)


def test_fence_refuses_a_deleted_claim(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    transaction(
        db,
        lambda s: s.execute(
            sa.delete(NotificationClaim).where(NotificationClaim.notification_uuid == nid)
        ),
    )
    assert not _fence(db, nid, "a", 1)
    assert _claim_row(db, nid) is None  # and nothing was written back


# --- finish --------------------------------------------------------------------------------------


def test_finish_is_fenced_by_owner_and_token(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    assert not transaction(db, lambda s: claims.finish(s, nid, "a", 2, "finished"))
    assert not transaction(db, lambda s: claims.finish(s, nid, "b", 1, "finished"))
    assert _status(db, nid) == "running"
    # A refused finish leaves the claim as it was: its owner still holds it.
    assert _claim_row(db, nid) == ("a", 1, LATER, 0)
    assert _fence(db, nid, "a", 1)
    assert transaction(db, lambda s: claims.finish(s, nid, "a", 1, "ignored", "why"))
    with db.reader() as s:
        row = s.query(Notification).filter_by(notification_uuid=nid).one()
        assert (row.status, row.message) == ("ignored", "why")
    assert _claim_row(db, nid) is None


def test_finish_keeps_the_message_unless_given(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    with db.writer() as s:
        s.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == nid)
            .values(message="earlier")
        )
    _claim(db, nid, "a", 1)
    assert transaction(db, lambda s: claims.finish(s, nid, "a", 1, "finished"))
    with db.reader() as s:
        row = s.query(Notification).filter_by(notification_uuid=nid).one()
        assert (row.status, row.message) == ("finished", "earlier")


def test_finish_after_the_claim_expired_but_was_not_taken(db):
    """The outcome is still the truth while nobody else took the notification over."""
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=T0)
    assert transaction(db, lambda s: claims.finish(s, nid, "a", 1, "finished"))
    assert _status(db, nid) == "finished"


def test_finish_of_a_notification_no_longer_running_changes_nothing(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    _set_status(db, nid, "failed")  # the expiry task ended it
    assert not transaction(db, lambda s: claims.finish(s, nid, "a", 1, "finished"))
    assert _status(db, nid) == "failed"


def test_finish_after_a_takeover_changes_nothing(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=T0)
    assert transaction(db, lambda s: claims.take_over(s, nid, "b", 7, LATER, LATER))
    assert not transaction(db, lambda s: claims.finish(s, nid, "a", 1, "finished"))
    assert _status(db, nid) == "running"
    assert _claim_row(db, nid)[:2] == ("b", 7)


# --- renewal -------------------------------------------------------------------------------------


def test_renew_keeps_only_live_claims(db):
    _, hosts = _segment_with_hosts(db, "h1", "h2", "h3", "h4")
    live = _notify(db, hosts["h1"])
    ended = _notify(db, hosts["h2"])
    stale_token = _notify(db, hosts["h3"])
    expired = _notify(db, hosts["h4"])
    _claim(db, live, "a", 1)
    _claim(db, ended, "a", 2)
    _claim(db, stale_token, "a", 3)
    _claim(db, expired, "a", 4, expires=T0)
    # the expiry task ends one notification; another's claim was re-made with a new token;
    # the last one's claim ran out (nobody took it yet)
    _set_status(db, ended, "failed")
    now = T0 + datetime.timedelta(seconds=10)
    later = LATER + datetime.timedelta(minutes=5)
    tokens = {live: 1, ended: 2, stale_token: 99, expired: 4}
    assert transaction(db, lambda s: claims.renew(s, "a", tokens, now, later)) == {live}
    with db.reader() as s:
        expiry = dict(
            s.execute(
                sa.select(NotificationClaim.notification_uuid, NotificationClaim.expires_at)
            ).all()
        )
    assert expiry[live] == later
    assert expiry[ended] == LATER and expiry[stale_token] == LATER
    assert expiry[expired] == T0


def test_renew_refuses_a_claim_expiring_at_now(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=LATER)
    until = LATER + datetime.timedelta(minutes=1)
    assert transaction(db, lambda s: claims.renew(s, "a", {nid: 1}, LATER, until)) == set()
    assert _claim_row(db, nid)[2] == LATER


def test_renew_and_takeover(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=LATER)
    renewed = LATER + datetime.timedelta(minutes=1)
    assert transaction(db, lambda s: claims.renew(s, "a", {nid: 1}, T0, renewed)) == {nid}
    with db.reader() as s:
        assert queue.takeover_candidates(s, LATER + datetime.timedelta(seconds=30), 10) == []
        assert queue.takeover_candidates(s, renewed + datetime.timedelta(seconds=1), 10) == [nid]
    now = renewed + datetime.timedelta(seconds=1)
    # Not expired yet at LATER: refused.
    assert not transaction(db, lambda s: claims.take_over(s, nid, "b", 7, LATER, now))
    until = now + datetime.timedelta(minutes=1)
    assert transaction(db, lambda s: claims.take_over(s, nid, "b", 7, now, until))
    assert _claim_row(db, nid) == ("b", 7, until, 0)
    # The old owner is fenced out.
    assert transaction(db, lambda s: claims.renew(s, "a", {nid: 1}, T0, now)) == set()
    assert not _fence(db, nid, "a", 1, now=T0)
    assert _fence(db, nid, "b", 7, now=now)


# --- takeover, release, orphans --------------------------------------------------------------


def test_take_over_resets_the_fence_counter(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=LATER)
    assert _fence(db, nid, "a", 1) and _fence(db, nid, "a", 1)
    assert _claim_row(db, nid)[3] == 2
    now = LATER + datetime.timedelta(seconds=1)
    until = LATER + datetime.timedelta(minutes=1)
    assert transaction(db, lambda s: claims.take_over(s, nid, "b", 2, now, until))
    assert _claim_row(db, nid) == ("b", 2, until, 0)


def test_take_over_only_a_running_notification(db):
    _, hosts = _segment_with_hosts(db, "h1", "h2")
    ended = _notify(db, hosts["h1"])
    _claim(db, ended, "a", 1, expires=T0)
    _set_status(db, ended, "failed")
    assert not transaction(db, lambda s: claims.take_over(s, ended, "b", 1, LATER, LATER))
    assert _claim_row(db, ended)[:2] == ("a", 1)
    new = _notify(db, hosts["h2"])
    assert not transaction(db, lambda s: claims.take_over(s, new, "b", 1, LATER, LATER))
    assert _claim_row(db, new) is None


@pytest.mark.parametrize("orphan", [False, True], ids=["expired", "orphan"])
def test_concurrent_takeovers_one_winner(db, db_url, orphan):
    _, hosts = _segment_with_hosts(db, "h1")
    if orphan:
        nid = _notify(db, hosts["h1"], status="running")
    else:
        nid = _notify(db, hosts["h1"])
        _claim(db, nid, "a", 1, expires=T0)
    engines = [Database.from_url(db_url) for _ in range(3)]
    barrier = threading.Barrier(len(engines))
    until = LATER + datetime.timedelta(minutes=1)

    def take(index):
        barrier.wait()
        return _try_take_over(engines[index], nid, f"e{index}", index + 1, LATER, until)

    try:
        with concurrent.futures.ThreadPoolExecutor(len(engines)) as pool:
            results = list(pool.map(take, range(len(engines))))
    finally:
        for engine in engines:
            engine.dispose()
    assert results.count(True) == 1
    winner = results.index(True)
    assert _claim_row(db, nid) == (f"e{winner}", winner + 1, until, 0)


def test_a_running_notification_whose_vmoves_move_is_no_orphan(db):
    # What an engine of the reference writes while it evacuates: the vmoves, not the
    # notification. A vmove changed within the quiet period keeps the notification its.
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"], status="running")
    long_ago = models.utcnow() - queue.ORPHAN_QUIET_PERIOD - datetime.timedelta(minutes=1)
    transaction(
        db,
        lambda s: s.execute(
            sa.update(Notification)
            .where(Notification.notification_uuid == nid)
            .values(created_at=long_ago, updated_at=long_ago)
        ),
    )
    with db.reader() as s:
        assert queue.orphan_candidates(s, 10) == [nid]
    vmove = models.VMove(
        uuid=str(uuid.uuid4()),
        notification_uuid=nid,
        instance_uuid=str(uuid.uuid4()),
        instance_name="vm",
        status="ongoing",
    )
    transaction(db, lambda s: s.add(vmove))
    with db.reader() as s:
        assert queue.orphan_candidates(s, 10) == []
    transaction(
        db,
        lambda s: s.execute(
            sa.update(models.VMove)
            .where(models.VMove.notification_uuid == nid)
            .values(created_at=long_ago, updated_at=long_ago)
        ),
    )
    with db.reader() as s:
        assert queue.orphan_candidates(s, 10) == [nid]


def test_release_lets_another_engine_take_over_at_once(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1, expires=LATER)
    transaction(db, lambda s: claims.release(s, "b", {nid: 1}, T0))  # not b's: unchanged
    with db.reader() as s:
        assert queue.takeover_candidates(s, T0, 10) == []
    transaction(db, lambda s: claims.release(s, "a", {nid: 1}, T0))
    with db.reader() as s:
        assert queue.takeover_candidates(s, T0, 10) == [nid]
    assert not _fence(db, nid, "a", 1, now=T0)
    assert transaction(db, lambda s: claims.take_over(s, nid, "b", 2, T0, LATER))


def test_orphans_are_running_rows_without_claim(db):
    _, hosts = _segment_with_hosts(db, "h1")
    orphan = _notify(db, hosts["h1"], status="running")
    quiet = models.utcnow() + datetime.timedelta(seconds=1)
    with db.reader() as s:
        # Changed within the quiet period (a live engine of the reference may be on it).
        assert queue.orphan_candidates(s, 10) == []
        assert queue.orphan_candidates(s, 10, quiet_before=quiet) == [orphan]
    assert transaction(db, lambda s: claims.take_over(s, orphan, "b", 1, T0, LATER))
    assert _claim_row(db, orphan) == ("b", 1, LATER, 0)
    with db.reader() as s:
        assert queue.orphan_candidates(s, 10, quiet_before=quiet) == []
    # Taken now: a second takeover finds a live claim and leaves it.
    assert not transaction(db, lambda s: claims.take_over(s, orphan, "c", 1, T0, LATER))
    assert _claim_row(db, orphan)[:2] == ("b", 1)


# --- expiry --------------------------------------------------------------------------------------


def test_expire_is_bounded_and_conditional(db):
    _, hosts = _segment_with_hosts(db, "h1")
    old = [_notify(db, hosts["h1"], status=st) for st in ("new", "running", "error", "error")]
    done = _notify(db, hosts["h1"], status="finished")
    young = _notify(db, hosts["h1"], status="new", generated_time=LATER)
    cutoff = T0 + datetime.timedelta(seconds=1)
    first = transaction(db, lambda s: claims.expire(s, cutoff, 3))
    second = transaction(db, lambda s: claims.expire(s, cutoff, 3))
    assert len(first) == 3
    assert sorted(first + second) == sorted(old)
    assert transaction(db, lambda s: claims.expire(s, cutoff, 3)) == []
    assert {_status(db, n) for n in old} == {"failed"}
    assert (_status(db, done), _status(db, young)) == ("finished", "new")


def test_expire_drops_the_claim_and_fences_its_owner_out(db):
    _, hosts = _segment_with_hosts(db, "h1")
    nid = _notify(db, hosts["h1"])
    _claim(db, nid, "a", 1)
    assert transaction(db, lambda s: claims.expire(s, LATER, 10)) == [nid]
    assert _claim_row(db, nid) is None
    assert not _fence(db, nid, "a", 1)
    assert not transaction(db, lambda s: claims.finish(s, nid, "a", 1, "finished"))
    assert _status(db, nid) == "failed"
