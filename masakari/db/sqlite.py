"""SQLite, the embedded default: one file shared by an API and an engine process (or more).

WAL lets readers run beside the writer. Writers begin with ``BEGIN IMMEDIATE`` (asked for
by ``Database.writer``), taking the write lock at once: a deferred transaction that read,
then wrote after another process committed, would fail with "database is locked".

Writers take turns (:class:`WriteTurn`) before SQLite's lock: its own wait for the lock
is a poll that sleeps longer the longer it has waited (up to 100 ms between tries), so a
writer that started waiting a while ago keeps missing the short gaps between other
writers' transactions while newer ones, polling every millisecond, take them: an API
request waited seconds so behind the engine's claims. The busy timeout stays, for writers
that do not take turns (the sqlite3 shell, another program).
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

LOG = logging.getLogger(__name__)
BUSY_TIMEOUT_MS = 30_000
TURN_SUFFIX = "-writer.lock"


# Writes that go before the others of their process (first_in_line).
_first: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "masakari_sqlite_first", default=False
)


@contextlib.contextmanager
def first_in_line() -> Iterator[None]:
    """The writes of this block take their process's write turn before its other waiting
    writers: for the engine's claim renewals, whose lateness costs a whole recovery (a lease
    that ends before the renewal lands), where the others only wait a little longer."""
    token = _first.set(True)
    try:
        yield
    finally:
        _first.reset(token)


class WriteTurn:
    """An exclusive ``flock`` on a file beside the database, for every writer of the file.

    Waiters try again every millisecond, whatever they have waited. One thread of a
    process queues for it, its others behind a process gate, where a writer in
    :func:`first_in_line` goes first; a writer opened inside a writer of the same thread is
    already in its turn. Taken right before ``BEGIN IMMEDIATE``, given back once the
    connection returns to the pool (after the commit or the rollback): it spans exactly the
    time SQLite's write lock is held.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._gate = threading.Condition()
        self._held = False
        self._first_waiting = 0
        self._depth = threading.local()
        self._fd: int | None = None
        self._pid = 0

    def _enter(self, deadline: float) -> bool:
        """The process's gate: free, and no writer first in line waits (unless this is one)."""
        first = _first.get()
        with self._gate:
            self._first_waiting += first
            try:
                while self._held or (self._first_waiting and not first):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._gate.wait(remaining)
                self._held = True
                return True
            finally:
                self._first_waiting -= first

    def _leave(self) -> None:
        with self._gate:
            self._held = False
            self._gate.notify_all()

    def _file(self) -> int | None:
        # A forked child opens its own: a flock belongs to the open file, which a fork
        # shares with the parent.
        if self._pid != os.getpid():
            self._pid = os.getpid()
            try:
                # Like SQLite's own -wal and -shm files: whoever may write the database may
                # open it (0666 less the umask).
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except OSError as exc:
                LOG.warning(
                    "Cannot open %s (%s): this process's writers wait in SQLite's busy "
                    "handler instead of taking turns.",
                    self._path,
                    exc,
                )
                self._fd = None
        return self._fd

    def take(self, timeout: float = BUSY_TIMEOUT_MS / 1000) -> None:
        """Wait for the turn at most ``timeout`` seconds, as SQLite waits for its lock: a
        writer frozen in its turn (SIGSTOP, a stalled disk) makes the others fail "database
        is locked", as before, rather than hang."""
        depth = getattr(self._depth, "n", 0)
        if depth == 0:
            deadline = time.monotonic() + timeout
            if not self._enter(deadline):
                raise _locked()
            try:
                fd = self._file()
                if fd is not None:
                    _flock_before(fd, deadline)
            except BaseException:
                self._leave()
                raise
        self._depth.n = depth + 1

    def give_back(self) -> None:
        depth = getattr(self._depth, "n", 0)
        if depth == 0:
            return
        self._depth.n = depth - 1
        if depth == 1:
            try:
                if self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                self._leave()


# A waiter tries again this often, whatever it has waited: the unfairness of SQLite's own
# wait was its growing pause, and one waiter a process polls (its others queue behind the
# process lock), so the cost is a few hundred system calls a second while waiting.
TURN_POLL = 0.001


def _locked() -> sqlite3.OperationalError:
    return sqlite3.OperationalError("database is locked (the writers' turn was not given back)")


def _flock_before(fd: int, deadline: float) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise _locked() from None
            time.sleep(TURN_POLL)


_TURNS: dict[str, WriteTurn] = {}
_TURNS_LOCK = threading.Lock()


def write_turn(database: str) -> WriteTurn:
    """The turn of a database file: one per file in a process, whatever its engines."""
    path = os.path.abspath(database) + TURN_SUFFIX
    with _TURNS_LOCK:
        return _TURNS.setdefault(path, WriteTurn(path))


def create_engine(url: sa.engine.URL, synchronous: bool) -> sa.engine.Engine:
    in_memory = not url.database or url.database == ":memory:"
    if url.database and not in_memory:
        os.makedirs(os.path.dirname(os.path.abspath(url.database)), exist_ok=True)
    engine = sa.create_engine(url, poolclass=sa.pool.StaticPool if in_memory else None)
    # One connection in memory: its writers cannot overlap, there is nobody to wait for.
    turn = None if in_memory or not url.database else write_turn(url.database)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # The driver must not open transactions on its own: the "begin" hook below does,
        # with the mode the session asked for.
        dbapi_conn.isolation_level = None
        dbapi_conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not in_memory:
            dbapi_conn.execute("PRAGMA journal_mode = WAL")
        if not synchronous:
            dbapi_conn.execute("PRAGMA synchronous = OFF")

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.engine.Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "BEGIN")
        if mode == "BEGIN":
            # A deferred BEGIN takes no lock and cannot fail busy: straight to the driver,
            # without a statement execution's cost on every read.
            conn.connection.driver_connection.execute(mode)  # type: ignore[union-attr]
            return
        if turn is not None:
            turn.take()
            conn.info["write_turn"] = True
        conn.exec_driver_sql(mode)

    if turn is not None:
        # Back in the pool, or dropped after an error: either way the transaction is over.
        @event.listens_for(engine, "checkin")
        def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
            if record.info.pop("write_turn", False):
                turn.give_back()

        @event.listens_for(engine, "invalidate")
        def _on_invalidate(_dbapi_conn: Any, record: Any, _exc: Any) -> None:
            if record.info.pop("write_turn", False):
                turn.give_back()

    return engine
