"""A database that cannot be reached: which errors say so, the 503 fault, the log lines."""

from __future__ import annotations

import json
import logging

import pytest
import sqlalchemy as sa
import webob
from oslo_db import exception as db_exc

from masakari.api import faults, outage
from masakari.db import database
from masakari.db import outage as db_outage


class _MySQLError(Exception):
    """As PyMySQL's: the server's error number first."""


class _PgError(Exception):
    """As psycopg2's: the SQLSTATE as pgcode."""

    def __init__(self, pgcode: str) -> None:
        super().__init__(pgcode)
        self.pgcode = pgcode


REFUSED = sa.exc.OperationalError(None, None, Exception("connection refused"))
LOST = sa.exc.OperationalError(
    "SELECT 1", {}, Exception("server closed the connection"), connection_invalidated=True
)


@pytest.mark.parametrize(
    "exc",
    [
        db_exc.DBConnectionError("gone"),
        REFUSED,
        LOST,
        sa.exc.TimeoutError("QueuePool limit reached"),
        # Under a query, from servers that stopped serving: MariaDB shutting down, a Galera
        # node out of its cluster, PostgreSQL's administrator shutdown.
        sa.exc.OperationalError("SELECT 1", {}, _MySQLError(1053, "Server shutdown")),
        sa.exc.OperationalError("SELECT 1", {}, _MySQLError(1047, "WSREP not ready")),
        sa.exc.OperationalError("SELECT 1", {}, _PgError("57P01")),
        # oslo.db's generic wrapper around a refused connection
        db_exc.DBError(inner_exception=REFUSED),
    ],
)
def test_unreachable(exc: BaseException) -> None:
    assert database.unreachable(exc)


@pytest.mark.parametrize(
    "exc",
    [
        # A query that failed on a live connection is the query's problem, not an outage.
        sa.exc.OperationalError("UPDATE x", {}, Exception("database is locked")),
        sa.exc.OperationalError("UPDATE x", {}, _MySQLError(1205, "Lock wait timeout")),
        sa.exc.OperationalError("UPDATE x", {}, _PgError("55P03")),  # lock not available
        sa.exc.IntegrityError("INSERT", {}, Exception("duplicate")),
        db_exc.DBDeadlock(),
        db_exc.DBDuplicateEntry(),
        ValueError("x"),
    ],
)
def test_not_unreachable(exc: BaseException) -> None:
    assert not database.unreachable(exc)


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> outage.OutageLog:
    log = outage.OutageLog("answering 503")
    monkeypatch.setattr(outage, "OUTAGES", log)
    return log


def test_fault_is_503_with_retry_after(fresh: outage.OutageLog) -> None:
    response = faults.from_exception(REFUSED, (1, 0))
    assert response.status_int == 503
    assert response.headers["Retry-After"] == str(outage.RETRY_AFTER)
    assert json.loads(response.body) == {
        "serviceUnavailable": {"code": 503, "message": outage.MESSAGE}
    }
    assert fresh.down


def test_other_errors_stay_500_without_retry_after(fresh: outage.OutageLog) -> None:
    response = faults.from_exception(RuntimeError("bug"), None)
    assert response.status_int == 500
    assert "Retry-After" not in response.headers
    assert not fresh.down


def test_fault_wrapper_maps_an_outage_outside_the_router(fresh: outage.OutageLog) -> None:
    def failing(environ: dict, start_response: object) -> None:
        raise LOST

    response = webob.Request.blank("/").get_response(faults.FaultWrapper(failing))
    assert response.status_int == 503
    assert "serviceUnavailable" in response.json


def test_one_line_per_transition(fresh: outage.OutageLog, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=db_outage.LOG.name)
    fresh.succeeded()
    for _ in range(5):
        fresh.failed(REFUSED)
    for _ in range(5):
        fresh.succeeded()
    fresh.failed(REFUSED)
    messages = [record.getMessage() for record in caplog.records]
    assert [m.split(",")[0].split(":")[0] for m in messages] == [
        "Database unreachable",
        "Database reachable again",
        "Database unreachable",
    ]
    assert "connection refused" in messages[0]
    assert not any(record.exc_info for record in caplog.records)


def test_size_limit_raised_while_reading_is_413() -> None:
    exc = webob.exc.HTTPRequestEntityTooLarge(explanation="Request is too large.")
    assert faults.status_and_message(exc) == (413, "Request is too large.")
