"""Races between two engines on one claim, committed at the worst moment (server backends).

SQLite runs one writer at a time, so nothing can commit inside another engine's
transaction there: these races exist on PostgreSQL and MariaDB only.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from masakari.db import claims, migration
from masakari.db.database import DB_ERRORS, Database, transaction
from masakari.db.models import NotificationClaim
from tests.support import rows

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)
SOON = NOW + datetime.timedelta(seconds=20)


@pytest.fixture
def two_engines(backend: str, db_url: str) -> Iterator[tuple[Database, Database]]:
    if backend == "sqlite":
        pytest.skip("SQLite serialises writers: no commit can land inside a transaction")
    first = Database.from_url(db_url)
    migration.upgrade(first.engine)
    second = Database.from_url(db_url)
    yield first, second
    first.dispose()
    second.dispose()


def _running_claimed_by(db: Database, owner: str, token: int) -> str:
    with db.writer() as s:
        nid = rows.notification(s, str(uuid.uuid4()), "COMPUTE_HOST", {}, "running", NOW)
        rows.claim(s, nid, owner, token, expires_at=SOON)
    return nid


def _before_first(db: Database, table_update: str, action: Callable[[], None]) -> list[str]:
    """Run ``action`` (in another connection) right before ``db`` first sends that UPDATE."""
    fired: list[str] = []

    @event.listens_for(db.engine, "before_cursor_execute")
    def _hook(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not fired and statement.lstrip().upper().startswith(table_update):
            fired.append(statement)
            action()

    return fired


def _owner(db: Database, nid: str) -> tuple[str, int]:
    with db.reader() as s:
        row = s.execute(
            sa.select(NotificationClaim.owner, NotificationClaim.attempt).where(
                NotificationClaim.notification_uuid == nid
            )
        ).one()
    return row.owner, row.attempt


def test_takeover_between_a_renewal_read_and_update_wins(two_engines):
    slow, other = two_engines
    nid = _running_claimed_by(slow, "engine-a", 1)

    def take_over() -> None:
        # The claim looks expired to engine B (its clock is past the expiry).
        taken = transaction(
            other,
            lambda s: claims.take_over(
                s, nid, "engine-b", 7, now=SOON + datetime.timedelta(seconds=1), expires_at=SOON
            ),
        )
        assert taken

    fired = _before_first(slow, "UPDATE MASAKARI_NOTIFICATION_CLAIMS", take_over)
    mine = transaction(
        slow,
        lambda s: claims.renew(
            s, "engine-a", {nid: 1}, now=NOW, expires_at=SOON + datetime.timedelta(minutes=5)
        ),
    )
    assert fired, "the takeover was not put inside the renewal"
    assert mine == set()
    assert _owner(slow, nid) == ("engine-b", 7)


def test_takeover_between_a_fenced_write_and_its_commit_stops_the_writer(two_engines):
    slow, other = two_engines
    nid = _running_claimed_by(slow, "engine-a", 1)
    done: list[bool] = []

    def take_over() -> None:
        # Engine B's takeover must wait for, or be refused by, the write that holds the row.
        with other.engine.connect() as conn:
            lock_wait = (
                "SET lock_timeout = 1000"
                if other.engine.url.get_backend_name() == "postgresql"
                else "SET SESSION innodb_lock_wait_timeout = 1"
            )
            conn.exec_driver_sql(lock_wait)
            try:
                result = conn.execute(
                    sa.update(NotificationClaim)
                    .where(NotificationClaim.notification_uuid == nid)
                    .values(owner="engine-b", attempt=7)
                )
                conn.commit()
                done.append(result.rowcount == 1)
            except DB_ERRORS:
                conn.rollback()
                done.append(False)  # it waited on the fenced writer's row lock and gave up

    def fenced_then_takeover(session: Any) -> bool:
        ours = claims.fence(session, nid, "engine-a", 1, now=NOW)
        take_over()  # from another connection, while this transaction is open
        return ours

    assert transaction(slow, fenced_then_takeover) is True
    # The fenced write held the claim row: the takeover could not commit inside it.
    assert done == [False]
    assert _owner(slow, nid) == ("engine-a", 1)
