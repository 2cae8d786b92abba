"""Host fencing's rows on every backend: the migration equals the models, times keep their
microseconds, a hold gives the claim up in one transaction, purge takes them with their
notification."""

from __future__ import annotations

import datetime
import uuid

import pytest
import sqlalchemy as sa
from alembic import autogenerate
from alembic.migration import MigrationContext

from masakari.db import claims, fencing, holds, models, purge, queue
from masakari.db.database import Database

NOW = models.utcnow()
OLD = NOW - datetime.timedelta(days=40)
TABLES = {"masakari_fence_attempts", "masakari_kdump_messages", "masakari_fence_checks"}


def _notification(db: Database, status: str = "running", updated_at=None) -> str:
    nid = str(uuid.uuid4())
    with db.writer() as s:
        s.add(
            models.Notification(
                notification_uuid=nid,
                generated_time=NOW,
                type="COMPUTE_HOST",
                source_host_uuid=str(uuid.uuid4()),
                status=status,
                payload="{}",
            )
        )
        s.flush()
        if updated_at is not None:
            s.execute(
                sa.update(models.Notification)
                .where(models.Notification.notification_uuid == nid)
                .values(updated_at=updated_at)
            )
    return nid


def test_migration_creates_what_the_models_say(db: Database) -> None:
    with db.engine.connect() as conn:
        diffs = autogenerate.compare_metadata(
            MigrationContext.configure(conn), models.Base.metadata
        )

    def tables(item: object) -> set[str]:
        if isinstance(item, (list, tuple)):
            return set().union(*(tables(part) for part in item)) if item else set()
        if isinstance(item, str):
            return {item}
        table = getattr(item, "table", None)
        if isinstance(table, sa.Table):
            return {table.name}
        return {item.name} if isinstance(item, sa.Table) else set()

    assert [d for d in diffs if tables(d) & TABLES] == []


def test_attempts_keep_microseconds_and_their_order(db: Database) -> None:
    nid = _notification(db)
    first = datetime.datetime(2026, 6, 1, 10, 0, 0, 123456)
    with db.writer() as s:
        off = fencing.start(s, nid, "e-1", 3, "compute-1", 0, "ipmi 10.0.0.1:623", "off", first)
        fencing.start(
            s,
            nid,
            "e-1",
            3,
            "compute-1",
            0,
            "ipmi 10.0.0.1:623",
            "status",
            first + datetime.timedelta(microseconds=5),
        )
    with db.writer() as s:
        assert fencing.answer(s, off, fencing.DONE, "accepted", 0.25)
    with db.reader() as s:
        found = fencing.attempts(s, nid)
    assert [(a.action, a.result, a.duration) for a in found] == [
        ("off", "done", 0.25),
        ("status", "sent", None),
    ]
    assert found[0].started_at == first
    assert not found[0].proves_dead


def test_kdump_after_lists_the_messages_of_the_addresses_strictly_after(db: Database) -> None:
    at = datetime.datetime(2026, 6, 1, 10, 0, 0, 500000)
    later = at + datetime.timedelta(seconds=10)
    with db.writer() as s:
        fencing.record_kdump(s, "192.0.2.7", later, "e-2")
        fencing.record_kdump(s, "192.0.2.7", at, "e-1")
        fencing.record_kdump(s, "192.0.2.8", at + datetime.timedelta(seconds=20), "e-1")
    with db.reader() as s:
        assert fencing.kdump_after(s, ["192.0.2.7"], at - datetime.timedelta(seconds=1)) == [
            at,
            later,
        ]
        assert fencing.kdump_after(s, ["192.0.2.7"], at) == [later]  # at is not after at
        assert fencing.kdump_after(s, ["192.0.2.7"], later) == []
        assert fencing.kdump_after(s, ["192.0.2.9"], at) == []
        both = fencing.kdump_after(s, ["192.0.2.7", "192.0.2.8"], at)
        assert both == [later, at + datetime.timedelta(seconds=20)]
        assert fencing.kdump_after(s, [], at) == []


def test_checks_replace_a_hosts_earlier_ones(db: Database) -> None:
    def check(host: str, position: int, result: str) -> fencing.Check:
        return fencing.Check(host, position, f"ipmi bmc-{position}", result, None, NOW, "e-1")

    with db.writer() as s:
        fencing.replace_checks(
            s, "compute-1", [check("compute-1", 0, "ok"), check("compute-1", 1, "ok")]
        )
        fencing.replace_checks(s, "compute-2", [check("compute-2", 0, "unreachable")])
    with db.writer() as s:
        fencing.replace_checks(s, "compute-1", [check("compute-1", 0, "refused")])
        fencing.forget_checks_except(s, ["compute-1"])
    with db.reader() as s:
        found = [(c.host_name, c.position, c.result) for c in fencing.checks(s)]
    assert found == [("compute-1", 0, "refused")]


def test_a_hold_gives_the_claim_up_and_a_release_of_it_is_known(db: Database) -> None:
    nid = _notification(db, status="new")
    expires = NOW + datetime.timedelta(seconds=60)
    with db.writer() as s:
        assert claims.claim(s, nid, "e-1", 7, ["new"], expires) == claims.ClaimResult.CLAIMED
    with db.writer() as s:
        assert claims.fence(s, nid, "e-1", 7, NOW)
        holds.hold_again(s, nid, holds.REASON_FENCE_FAILED + "x" * 400)
        assert claims.give_up(s, nid, "e-1", 7)
    with db.reader() as s:
        row = queue.get_notification(s, nid)
        assert row is not None and row.status == "new"
        assert s.get(models.NotificationClaim, nid) is None
        reason = holds.reasons(s, [nid])[nid]
        assert len(reason) == holds.MAX_REASON and holds.is_fence_reason(reason)
        assert holds.released_hold(s, nid) is None
        # held: no engine takes it
        assert claims.claim(s, nid, "e-2", 1, ["new"], expires) == claims.ClaimResult.GONE
    with db.writer() as s:
        assert holds.release(s, nid)
    with db.reader() as s:
        assert holds.released_hold(s, nid) == reason


def test_a_released_mass_failure_hold_is_replaced_by_the_fence_hold(db: Database) -> None:
    nid = _notification(db, status="new")
    with db.writer() as s:
        holds.hold(s, nid, holds.REASON_SEGMENT)
    with db.writer() as s:
        holds.release(s, nid)
        assert holds.released_hold(s, nid) == holds.REASON_SEGMENT
    with db.writer() as s:
        holds.hold_again(s, nid, holds.REASON_UNFENCED)
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {nid: holds.REASON_UNFENCED}
        assert holds.released_hold(s, nid) is None


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_purge_takes_attempts_with_their_notification_and_old_kdump_and_checks(
    db: Database,
) -> None:
    old = _notification(db, status="finished", updated_at=OLD)
    recent = _notification(db, status="finished")
    with db.writer() as s:
        for nid in (old, recent):
            fencing.start(s, nid, "e-1", 1, "compute-1", 0, "ipmi", "off", NOW)
        fencing.record_kdump(s, "192.0.2.7", OLD, "e-1")
        fencing.record_kdump(s, "192.0.2.7", NOW, "e-1")
        fencing.replace_checks(
            s, "gone", [fencing.Check("gone", 0, "ipmi", "ok", None, OLD, "e-1")]
        )
        fencing.replace_checks(
            s, "here", [fencing.Check("here", 0, "ipmi", "ok", None, NOW, "e-1")]
        )

    purge.purge(db, age_in_days=30)

    with db.reader() as s:
        owners = set(s.scalars(sa.select(models.FenceAttempt.notification_uuid)))
        kdump = list(s.scalars(sa.select(models.KdumpMessage.received_at)))
        checked = [c.host_name for c in fencing.checks(s)]
    assert owners == {recent}
    assert kdump == [NOW]
    assert checked == ["here"]
