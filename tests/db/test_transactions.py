"""Transactions: the one retry mechanism (lost races, an unreachable database) and, on
SQLite, the writers' turn that every process's writers queue for."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
import types

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from masakari.db import database, sqlite
from masakari.db.database import Database, RetryPolicy, read, transaction

SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
LOCKED = sa.exc.OperationalError("BEGIN IMMEDIATE", {}, Exception("database is locked"))


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the retry takes, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(database, "time", types.SimpleNamespace(sleep=slept.append))
    return slept


def failing(times: int, error: BaseException) -> tuple[list[int], object]:
    """A transaction body that writes a row, then fails ``times`` times with ``error``."""
    calls: list[int] = []

    def fn(session):
        session.execute(sa.text("INSERT INTO t (n) VALUES (:n)"), {"n": len(calls)})
        calls.append(1)
        if len(calls) <= times:
            raise error
        return len(calls)

    return calls, fn


@pytest.fixture
def table(db: Database) -> Database:
    with db.writer() as session:
        session.execute(sa.text("CREATE TABLE t (n INTEGER)"))
    return db


def rows(db: Database) -> list[int]:
    with db.reader() as session:
        return [r.n for r in session.execute(sa.text("SELECT n FROM t"))]


@pytest.mark.parametrize("error", [LOCKED, db_exc.DBDeadlock()], ids=["sqlite-busy", "deadlock"])
def test_a_lost_race_is_replayed_and_only_the_last_attempt_is_kept(table, pauses, error):
    calls, fn = failing(3, error)
    assert transaction(table, fn) == 4
    assert rows(table) == [3]  # the three lost attempts were rolled back
    assert len(pauses) == 3
    policy = database.LOCK_RACES
    assert all(0 <= p <= policy.max_pause for p in pauses)
    assert pauses[0] <= policy.first_pause


def test_replays_end_with_the_last_error_once_the_policy_gives_up(table, pauses):
    calls, fn = failing(100, db_exc.DBDeadlock())
    with pytest.raises(db_exc.DBDeadlock):
        transaction(table, fn, policy=RetryPolicy(attempts=5))
    assert len(calls) == 5
    assert rows(table) == []


def test_the_engines_replays_are_bounded_in_time(table):
    calls, fn = failing(10_000, LOCKED)
    started = time.monotonic()
    with pytest.raises(sa.exc.OperationalError):
        transaction(table, fn, policy=RetryPolicy(seconds=0.3, first_pause=0.01, max_pause=0.02))
    assert 0.3 <= time.monotonic() - started < 5
    assert 2 < len(calls) < 10_000


def test_other_errors_are_not_replayed(table, pauses):
    for error in (db_exc.DBError("disk full"), ValueError("a bug")):
        calls, fn = failing(100, error)
        with pytest.raises(type(error)):
            transaction(table, fn)
        assert len(calls) == 1
    assert pauses == []


def test_an_unreachable_database_is_waited_for_while_the_caller_allows(table, pauses):
    gone = db_exc.DBConnectionError("server closed the connection")
    asked: list[int] = []
    calls, fn = failing(4, gone)
    assert transaction(table, fn, retry_while=lambda: asked.append(1)) == 5
    assert len(asked) == 4

    class LeaseLost(Exception):
        pass

    def lease() -> None:
        raise LeaseLost

    calls, fn = failing(100, gone)
    with pytest.raises(LeaseLost):
        transaction(table, fn, retry_while=lease)
    assert len(calls) == 1
    # Without a caller to ask, an unreachable database is the caller's error at once.
    calls, fn = failing(100, gone)
    with pytest.raises(db_exc.DBConnectionError):
        transaction(table, fn)
    assert len(calls) == 1


def test_a_read_waits_for_the_database_but_does_not_replay_races(table, pauses):
    gone = db_exc.DBConnectionError("server closed the connection")
    outcomes = iter([gone, gone, None])

    def fn(session):
        error = next(outcomes)
        if error:
            raise error
        return "read"

    asked: list[int] = []
    assert read(table, fn, retry_while=lambda: asked.append(1)) == "read"
    assert len(asked) == 2

    def locked(session):
        raise db_exc.DBDeadlock()

    with pytest.raises(db_exc.DBDeadlock):
        read(table, locked, retry_while=lambda: None)


@SQLITE_ONLY
def test_sqlite_writers_wait_for_the_turn_another_process_holds(table, db_url):
    """The turn is a flock beside the file: one taken through another open file (as another
    process's is) keeps every writer of this process out until it is given back."""
    path = os.path.abspath(sa.engine.make_url(db_url).database) + sqlite.TURN_SUFFIX
    other = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX)
    entered = threading.Event()

    def write() -> None:
        with table.writer() as session:
            session.execute(sa.text("INSERT INTO t (n) VALUES (1)"))  # the turn comes first
            entered.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert not entered.wait(0.3)
    finally:
        fcntl.flock(other, fcntl.LOCK_UN)
        os.close(other)
    writer.join(10)
    assert entered.is_set()
    assert rows(table) == [1]


@SQLITE_ONLY
def test_sqlite_writers_of_one_process_take_turns(table, db_url):
    second = Database.from_url(db_url)  # another engine on the same file shares the turn
    inside: list[int] = []
    overlaps: list[int] = []

    def write(db: Database) -> None:
        for _ in range(5):
            with db.writer() as session:
                session.execute(sa.text("INSERT INTO t (n) VALUES (1)"))
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(1)
                time.sleep(0.005)
                inside.pop()

    threads = [threading.Thread(target=write, args=(d,)) for d in (table, second, table)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert overlaps == []
    assert len(rows(table)) == 15
    second.dispose()


@SQLITE_ONLY
def test_a_failed_sqlite_writer_gives_its_turn_back(table):
    with pytest.raises(sa.exc.OperationalError):
        with table.writer() as session:
            session.execute(sa.text("INSERT INTO t (n) VALUES (1)"))
            session.execute(sa.text("INSERT INTO missing (n) VALUES (1)"))
    done = threading.Event()

    def write() -> None:
        with table.writer() as session:
            session.execute(sa.text("INSERT INTO t (n) VALUES (2)"))
        done.set()

    threading.Thread(target=write).start()
    assert done.wait(10)
    assert rows(table) == [2]


def test_sqlite_writers_work_without_the_turn_file(tmp_path):
    """A turn file that cannot be opened (here a directory in its place): the writers wait
    in SQLite's busy handler as they would without turns, and still write."""
    path = tmp_path / "alone.db"
    (tmp_path / ("alone.db" + sqlite.TURN_SUFFIX)).mkdir()
    db = Database.from_url(f"sqlite:///{path}")
    try:
        with db.writer() as session:
            session.execute(sa.text("CREATE TABLE t (n INTEGER)"))
            session.execute(sa.text("INSERT INTO t (n) VALUES (1)"))
        assert rows(db) == [1]
    finally:
        db.dispose()


@SQLITE_ONLY
def test_a_turn_never_given_back_fails_the_writer_after_the_timeout(table, db_url):
    """A writer frozen in its turn (another process's flock here) holds the others no longer
    than SQLite's own busy timeout would: "database is locked", nothing written."""
    path = os.path.abspath(sa.engine.make_url(db_url).database) + sqlite.TURN_SUFFIX
    other = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX)
    turn = sqlite.write_turn(sa.engine.make_url(db_url).database)
    try:
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            turn.take(timeout=0.2)
    finally:
        fcntl.flock(other, fcntl.LOCK_UN)
        os.close(other)
    with table.writer() as session:  # the failed wait left the turn free
        session.execute(sa.text("INSERT INTO t (n) VALUES (1)"))
    assert rows(table) == [1]


@SQLITE_ONLY
def test_a_writer_first_in_line_goes_before_the_waiting_ones(table):
    """The engine's claim renewals (heartbeat) go before its other writers waiting for the
    turn, which only wait a little longer: measured at load 10, renewals took up to 2.3 s
    behind them on SQLite (a test lease has 2.5 s to spare), 0.4 s once first."""
    order: list[str] = []
    holding = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with table.writer() as session:
            session.execute(sa.text("INSERT INTO t (n) VALUES (0)"))
            holding.set()
            release.wait(10)

    def write(name: str, first: bool) -> None:
        with sqlite.first_in_line() if first else contextlib.nullcontext():
            with table.writer() as session:
                session.execute(sa.text("INSERT INTO t (n) VALUES (1)"))
                order.append(name)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    waiters = [threading.Thread(target=write, args=(f"other-{i}", False)) for i in range(3)]
    for w in waiters:
        w.start()
    time.sleep(0.2)  # the others are waiting for the turn before the renewal comes
    renewal = threading.Thread(target=write, args=("renewal", True))
    renewal.start()
    time.sleep(0.2)
    release.set()
    for t in [holder, *waiters, renewal]:
        t.join(10)
    assert order[0] == "renewal"
    assert sorted(order) == ["other-0", "other-1", "other-2", "renewal"]
