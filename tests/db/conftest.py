"""Fixtures: a fresh database URL on each backend this machine runs."""

from __future__ import annotations

import pytest

from masakari.db import migration
from masakari.db.database import Database
from tests.db import backends

BACKENDS = ["sqlite", "postgresql", "mysql"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name = request.param
    if name != "sqlite":
        reason = backends.server_reachable(name)
        if reason:
            # CI starts both servers; a skip there would hide a real gap, so fail instead.
            if request.config.getoption("--require-servers"):
                pytest.fail(reason)
            pytest.skip(reason)
    return name


@pytest.fixture
def db_url(backend: str, tmp_path) -> str:
    with backends.temporary_database(backend, str(tmp_path)) as url:
        yield url


@pytest.fixture
def db(db_url: str):
    """A migrated database on the backend (modules with other needs define their own)."""
    database = Database.from_url(db_url)
    migration.upgrade(database.engine)
    yield database
    database.dispose()
