"""One engine and session factory per process; transactions are visible context managers."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import sqlalchemy as sa
import tenacity
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
from sqlalchemy import event, orm

from masakari.db import sqlite

# What a database failure raises: SQLAlchemy's errors, or oslo.db's translations of them on
# PostgreSQL and MariaDB (a unique violation there is DBDuplicateEntry, not IntegrityError).
DB_ERRORS = (sa.exc.SQLAlchemyError, db_exc.DBError)
DUPLICATE_ERRORS = (sa.exc.IntegrityError, db_exc.DBDuplicateEntry)

T = TypeVar("T")


class Database:
    """An engine plus ``reader()``/``writer()`` transactions yielding ORM sessions."""

    def __init__(self, engine: sa.engine.Engine) -> None:
        self.engine = engine
        self._sessions = orm.sessionmaker(bind=engine, expire_on_commit=False)
        # On SQLite a writer takes the write lock when it begins (BEGIN IMMEDIATE), waiting
        # for it up to the busy timeout: a deferred transaction that reads, then writes after
        # another process committed, would fail at once with "database is locked".
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
                mysql_wsrep_sync_wait=db.mysql_wsrep_sync_wait,
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

    def limit_sessions(self, idle_in_transaction: float, lock_wait: float) -> None:
        """Bound how long a session may sit in an open transaction, and wait for a lock.

        For the engine: a process frozen in the middle of a transaction would otherwise hold
        its row locks (a claim row) for as long as it is frozen, and keep the engine taking
        its work over waiting on them. PostgreSQL and MariaDB end such a session's
        transaction after ``idle_in_transaction`` seconds; a lock wait fails after
        ``lock_wait`` seconds and is retried. SQLite has one writer at a time: nothing to do.
        """
        backend = self.engine.url.get_backend_name()
        if backend == "postgresql":
            statements = [
                f"SET idle_in_transaction_session_timeout = {int(idle_in_transaction * 1000)}",
                f"SET lock_timeout = {int(lock_wait * 1000)}",
            ]
        elif backend == "mysql":
            statements = [
                # MariaDB only (10.3+); MySQL has no such limit and refuses the name.
                f"SET SESSION idle_transaction_timeout = {max(1, round(idle_in_transaction))}",
                f"SET SESSION innodb_lock_wait_timeout = {max(1, round(lock_wait))}",
            ]
        else:
            return

        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            try:
                for statement in statements:
                    try:
                        cursor.execute(statement)
                    except Exception:  # an unknown variable (MySQL): keep the default
                        if backend == "postgresql":
                            raise
            finally:
                cursor.close()
            if backend == "postgresql":
                dbapi_conn.commit()

        self.engine.dispose()  # connections made before the limits would not have them

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


def lost_lock_race(exc: BaseException) -> bool:
    """A deadlock (MySQL, PostgreSQL, a Galera certification failure) or SQLite's busy answer."""
    if isinstance(exc, db_exc.DBDeadlock):
        return True
    text = str(exc)
    return "database is locked" in text or "database table is locked" in text


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not be reached or is not serving (a restart,
    a cut, a Galera node out of its cluster, every pooled connection busy), not that a query
    failed on a live connection: the one judgement behind the API's 503 and the engine's
    waiting out an outage."""
    if isinstance(exc, db_exc.DBConnectionError | sa.exc.TimeoutError):
        return True  # TimeoutError: every pooled connection busy past pool_timeout
    inner = exc.inner_exception if isinstance(exc, db_exc.DBError) else exc
    if not isinstance(inner, _LINK_ERRORS):
        return False
    if inner.connection_invalidated or not inner.statement:
        # No statement: raised while connecting (oslo.db translates a connection lost under
        # a query, but not a new connection refused).
        return True
    return _server_gone(inner.orig)


# What a driver raises when the server is gone; lock and constraint errors are not these.
_LINK_ERRORS = (sa.exc.OperationalError, sa.exc.InterfaceError)
# MariaDB/MySQL: WSREP not ready (a Galera node out of its cluster), shutdown in progress,
# connection killed, can't connect, gone away, lost during a query.
_MYSQL_GONE = {1047, 1053, 1927, 2002, 2003, 2006, 2013}
# PostgreSQL: admin shutdown, crash shutdown, cannot connect now (starting or stopping).
_PG_GONE = {"57P01", "57P02", "57P03"}


def _server_gone(orig: BaseException | None) -> bool:
    # psycopg2 names the SQLSTATE pgcode, psycopg 3 sqlstate; PyMySQL's first argument is
    # the server's error number.
    code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    if code in _PG_GONE:
        return True
    args: tuple[Any, ...] = getattr(orig, "args", ())
    return bool(args) and args[0] in _MYSQL_GONE


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How a transaction that lost a race is replayed: jittered, doubling pauses (full
    jitter: each pause drawn below a ceiling that doubles from ``first_pause`` up to
    ``max_pause``), for at most ``seconds`` or ``attempts`` tries, whichever comes first.

    ``lost``: the errors that are a lost race (by default a deadlock, or SQLite busy).
    """

    seconds: float | None = None
    attempts: int | None = None
    first_pause: float = 0.01
    max_pause: float = 0.25
    lost: Callable[[BaseException], bool] = lost_lock_race

    def replays(self, exc: BaseException) -> bool:
        return isinstance(exc, DB_ERRORS) and self.lost(exc)

    def stop(self) -> tenacity.stop.stop_base:
        stop: tenacity.stop.stop_base = tenacity.stop_never
        if self.seconds is not None:
            stop = stop | tenacity.stop_after_delay(self.seconds)
        if self.attempts is not None:
            stop = stop | tenacity.stop_after_attempt(self.attempts)
        return stop


# The engine's transactions: a few seconds of contention, past which the caller is told.
LOCK_RACES = RetryPolicy(seconds=15.0)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)  # looked up at each pause: tests record the pauses instead


def _retrying(
    policy: RetryPolicy | None, retry_while: Callable[[], None] | None
) -> tenacity.Retrying:
    """tenacity's loop for one transaction: lost races under ``policy`` (none: not
    replayed); with ``retry_while``, an unreachable database waited for until it raises."""
    race_stop = policy.stop() if policy is not None else tenacity.stop_never

    def waits(exc: BaseException | None) -> bool:
        return retry_while is not None and isinstance(exc, DB_ERRORS) and unreachable(exc)

    def replay(exc: BaseException) -> bool:
        if waits(exc):
            return True
        return policy is not None and policy.replays(exc)

    def stop(state: tenacity.RetryCallState) -> bool:
        if waits(state.outcome.exception() if state.outcome else None):
            assert retry_while is not None
            retry_while()  # raises when the wait must end (an engine's lease ran out)
            return False
        return bool(race_stop(state))

    pauses = policy or LOCK_RACES
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(replay),
        stop=stop,
        wait=tenacity.wait_random_exponential(multiplier=pauses.first_pause, max=pauses.max_pause),
        sleep=_sleep,
        reraise=True,
    )


def transaction(
    db: Database,
    fn: Callable[[orm.Session], T],
    retry_while: Callable[[], None] | None = None,
    policy: RetryPolicy = LOCK_RACES,
) -> T:
    """Run ``fn`` in one writer transaction; run it again when it lost a lock race.

    Only for transactions that read, then write under conditions: a deadlock victim (or, on
    SQLite, a transaction whose snapshot went stale before its first write) is safe to
    replay, because the replay decides again on what is committed then. Past ``policy``'s
    bound the last error is raised. With ``retry_while``, an unreachable database is waited
    for too, as long as that callable does not raise (an engine's lease that runs out ends
    the wait).
    """

    def attempt() -> T:
        with db.writer() as session:
            return fn(session)

    return _retrying(policy, retry_while)(attempt)


def read(
    db: Database,
    fn: Callable[[orm.Session], T],
    retry_while: Callable[[], None],
) -> T:
    """Run ``fn`` in a reader; wait for an unreachable database while ``retry_while`` allows."""

    def attempt() -> T:
        with db.reader() as session:
            return fn(session)

    return _retrying(None, retry_while)(attempt)


def flush_unique(session: orm.Session, error: Exception) -> None:
    """Flush, turning a unique-key violation into ``error`` (a name already taken)."""
    try:
        session.flush()
    except DUPLICATE_ERRORS as exc:
        raise error from exc


def affected_rows(result: sa.Result[Any]) -> int:
    """Rows an UPDATE or DELETE matched (only cursor results carry the count)."""
    return cast(sa.CursorResult[Any], result).rowcount


def create_engine(url: str, **kwargs: Any) -> sa.engine.Engine:
    """oslo.db's engine (pool, retries, sql_mode) for servers; a tuned plain one for SQLite."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return sqlite.create_engine(parsed, synchronous=kwargs.get("sqlite_synchronous", True))
    return engines.create_engine(url, **kwargs)
