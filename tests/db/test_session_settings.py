"""Session settings the database layer applies on every connection it opens."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from masakari import conf as masakari_conf
from masakari.db.database import DB_ERRORS, Database


def _scalar(db: Database, sql: str):
    with db.reader() as s:
        return s.execute(sa.text(sql)).scalar()


def test_engine_session_limits(backend: str, db_url: str) -> None:
    """A frozen engine's open transaction ends on the server's side (see docs/engine.md)."""
    db = Database.from_url(db_url)
    try:
        db.limit_sessions(idle_in_transaction=1.5, lock_wait=5)
        if backend == "postgresql":
            assert _scalar(db, "SHOW idle_in_transaction_session_timeout") == "1500ms"
            assert _scalar(db, "SHOW lock_timeout") == "5s"
        elif backend == "mysql":
            assert _scalar(db, "SELECT @@session.idle_transaction_timeout") == 2
            assert _scalar(db, "SELECT @@session.innodb_lock_wait_timeout") == 5
        else:
            assert _scalar(db, "SELECT 1") == 1  # nothing to set on SQLite
    finally:
        db.dispose()


def test_idle_transaction_is_ended_by_postgresql(backend: str, db_url: str) -> None:
    if backend != "postgresql":
        pytest.skip("the server-side end of an idle transaction is checked on PostgreSQL")
    db = Database.from_url(db_url)
    db.limit_sessions(idle_in_transaction=0.3, lock_wait=5)
    try:
        with db.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))  # a transaction is open from here
            time.sleep(1.0)
            with pytest.raises(DB_ERRORS):
                conn.execute(sa.text("SELECT 1"))
    finally:
        db.dispose()


def test_wsrep_sync_wait_is_applied(backend: str, db_url: str) -> None:
    if backend != "mysql":
        pytest.skip("a MariaDB/Galera session variable")
    conf = masakari_conf.for_tests(
        **{"database.connection": db_url, "database.mysql_wsrep_sync_wait": 1}
    )
    db = Database.from_conf(conf)
    try:
        assert _scalar(db, "SELECT @@session.wsrep_sync_wait") == 1
    finally:
        db.dispose()
