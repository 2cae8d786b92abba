"""The engine's steps through a database outage (masakari.engine.outage)."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from masakari.engine.outage import Outage

REFUSED = sa.exc.OperationalError(None, None, Exception("connection refused"))


def test_the_engine_says_an_outage_once(caplog: pytest.LogCaptureFixture) -> None:
    """The engine's steps share the API's transitions: one line down, one line back, and a
    query that failed on a live connection is a step's failure, not an outage."""
    guard = Outage()
    caplog.set_level(logging.INFO)

    def refused() -> None:
        raise REFUSED

    def locked() -> None:
        raise sa.exc.OperationalError("UPDATE x", {}, Exception("database is locked"))

    for _ in range(3):
        guard.guard(refused, name="poll")
    guard.guard(lambda: None, name="poll")
    guard.guard(locked, name="sweep")
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "Database unreachable, the engine's steps wait for it (engine step poll)",
        "Database reachable again",
        "Engine step sweep failed",
    ]
