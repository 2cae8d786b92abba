"""Fixtures: a migrated SQLite database (or one on each database server), the Nova simulator,
options and engines (the helpers are in tests/support/engine.py), the storms' deployments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from oslo_config import cfg

from masakari.db.database import Database
from masakari.engine.service import EngineService
from tests.db import backends
from tests.fakes.nova import NovaSimulator
from tests.support.deployment import Deployment
from tests.support.engine import make_conf
from tests.support.sqlite import migrated_sqlite
from tests.support.storms import FAST, Cloud


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


@pytest.fixture
def make_cloud() -> Iterator[Any]:
    """``make_cloud(count, **sections)``: the storms' deployment (API at 1.4, the simulator;
    tests/support/storms.py), its engine stopped and the deployment closed afterwards."""
    made: list[Cloud] = []

    def make(count: int, **sections: dict[str, str]) -> Cloud:
        dep = Deployment({"DEFAULT": FAST, **sections})
        cloud = Cloud(dep, count)
        made.append(cloud)
        return cloud

    yield make
    for cloud in made:
        if cloud.engine is not None:
            cloud.engine.stop(grace=2)
        cloud.dep.close()
