"""Fixtures: a migrated SQLite database (or one on each database server), the Nova simulator,
options and engines (the helpers are in tests/support/engine.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from oslo_config import cfg

from masakari.db.database import Database
from masakari.engine.service import EngineService
from tests.db import backends
from tests.fakes.nova import NovaSimulator
from tests.support.engine import make_conf
from tests.support.sqlite import migrated_sqlite


@pytest.fixture
def db(tmp_path: Any) -> Iterator[Database]:
    database = migrated_sqlite(tmp_path)
    yield database
    database.dispose()


@pytest.fixture(params=["postgresql", "mysql"])
def server_db(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Database]:
    """A migrated database on each database server (a test may narrow the backends, SQLite
    included, with ``parametrize("server_db", [...], indirect=True)``)."""
    with backends.migrated(request, request.param, str(tmp_path)) as database:
        yield database


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    with NovaSimulator() as simulator:
        yield simulator


@pytest.fixture
def conf(sim: NovaSimulator) -> cfg.ConfigOpts:
    return make_conf(sim)


@pytest.fixture
def engine_factory(db: Database, sim: NovaSimulator) -> Iterator[Any]:
    started: list[EngineService] = []

    def make(
        conf: cfg.ConfigOpts, start: bool = True, nova: Any = None, **kwargs: Any
    ) -> EngineService:
        service = EngineService(conf, db, nova or sim.client(timeout=5), **kwargs)
        if start:
            service.start()
        started.append(service)
        return service

    yield make
    for service in started:
        service.stop(grace=2)
