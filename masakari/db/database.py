"""One engine and session factory per process; transactions are visible context managers."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg
from oslo_db.sqlalchemy import engines
from sqlalchemy import event, orm

# SQLite is the embedded default, shared by one API and one engine process: WAL lets readers
# run beside the writer, and the busy timeout makes a writer wait instead of failing.
SQLITE_BUSY_TIMEOUT_MS = 30_000


class Database:
    """An engine plus ``reader()``/``writer()`` transactions yielding ORM sessions."""

    def __init__(self, engine: sa.engine.Engine) -> None:
        self.engine = engine
        self._sessions = orm.sessionmaker(bind=engine, expire_on_commit=False)
        # On SQLite a writer takes the write lock when it begins (BEGIN IMMEDIATE): a deferred
        # transaction that upgrades from read to write fails at once instead of waiting.
        self._writers = orm.sessionmaker(
            bind=engine.execution_options(sqlite_begin="BEGIN IMMEDIATE"),
            expire_on_commit=False,
        )

    @classmethod
    def from_url(cls, url: str, **engine_args: Any) -> Database:
        return cls(create_engine(url, **engine_args))

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> Database:
        db = conf.database
        return cls(
            create_engine(
                db.connection,
                mysql_sql_mode=db.mysql_sql_mode,
                connection_recycle_time=db.connection_recycle_time,
                max_pool_size=db.max_pool_size,
                max_overflow=db.max_overflow,
                pool_timeout=db.pool_timeout,
                sqlite_synchronous=db.sqlite_synchronous,
                max_retries=db.max_retries,
                retry_interval=db.retry_interval,
                connection_debug=db.connection_debug,
            )
        )

    @contextlib.contextmanager
    def reader(self) -> Iterator[orm.Session]:
        with self._sessions() as session:
            yield session

    @contextlib.contextmanager
    def writer(self) -> Iterator[orm.Session]:
        """Commit on success, roll back on any error: nothing is half-written."""
        with self._writers.begin() as session:
            yield session

    def dispose(self) -> None:
        self.engine.dispose()


def create_engine(url: str, **kwargs: Any) -> sa.engine.Engine:
    parsed = sa.engine.make_url(url)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database and parsed.database != ":memory:":
        directory = os.path.dirname(os.path.abspath(parsed.database))
        os.makedirs(directory, exist_ok=True)
    if is_sqlite:
        kwargs.pop("max_pool_size", None)
        kwargs.pop("max_overflow", None)
        kwargs.pop("pool_timeout", None)
    engine = engines.create_engine(url, **kwargs)
    if is_sqlite:
        _tune_sqlite(engine, in_memory=not parsed.database or parsed.database == ":memory:")
    return engine


def _tune_sqlite(engine: sa.engine.Engine, in_memory: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.close()

    # Runs before oslo.db's own "begin" hook, which then sees the marker and emits nothing.
    @event.listens_for(engine, "begin", insert=True)
    def _on_begin(conn: sa.engine.Connection) -> None:
        if "in_transaction" not in conn.info:
            conn.exec_driver_sql(conn.get_execution_options().get("sqlite_begin", "BEGIN"))
            conn.info["in_transaction"] = True
