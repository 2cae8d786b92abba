"""Fixtures: a migrated SQLite database (or one on each database server), the Nova simulator,
options and engines (the helpers are in tests/support/engine.py), the storms' deployments."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from oslo_config import cfg

from masakari.compute.nova import NovaClient
from masakari.db.database import Database
from masakari.engine.fencing import HostFencing
from masakari.engine.service import EngineService
from tests.db import backends
from tests.fakes.ipmi_bmc import FakeBMC
from tests.fakes.nova import NovaSimulator
from tests.support.deployment import Deployment
from tests.support.engine import make_conf
from tests.support.fencing_drills import FENCING, fake_bmcs
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


@pytest.fixture
def bmcs() -> Iterator[Callable[..., FakeBMC]]:
    with fake_bmcs() as make:
        yield make


@pytest.fixture
def engines(server_db: Database, sim: NovaSimulator) -> Iterator[Callable[..., EngineService]]:
    """In-process engines on the server database, each calling Nova as its own user."""
    started: list[EngineService] = []
    db = Database.from_url(server_db.engine.url.render_as_string(hide_password=False))
    # Once, before any engine connects: the session limits masakari-engine sets.
    db.limit_sessions(idle_in_transaction=make_conf(sim).engine_claim_margin, lock_wait=5)

    def start(user: str, config_file: str, **overrides: Any) -> EngineService:
        conf = make_conf(
            sim,
            os_privileged_user_name=user,
            host=user,
            wait_period_after_evacuation=30,
            **{"fencing.config_file": config_file, **FENCING, **overrides},
        )
        nova = NovaClient(sim.session(username=user), timeout=5)
        service = EngineService(
            conf, db, nova, sweep_interval=0.3, fencing=HostFencing.from_conf(conf)
        )
        service.start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()
    db.dispose()
