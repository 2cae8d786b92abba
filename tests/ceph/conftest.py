"""Fixtures: one real Ceph cluster for the session (tests/fakes/ceph_cluster.py), two "hosts"
writing to it per test, and an engine with host fencing on a fresh SQLite database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from masakari.db.database import Database
from masakari.engine.fencing import HostFencing
from masakari.engine.service import EngineService
from tests.fakes.ceph_cluster import NETWORK, CephCluster, RBDHost, available
from tests.fakes.ipmi_bmc import FakeBMC
from tests.fakes.nova import NovaSimulator
from tests.support.engine import make_conf
from tests.support.fencing_drills import FENCING, fake_bmcs
from tests.support.sqlite import migrated_sqlite


@pytest.fixture(scope="session")
def ceph(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CephCluster]:
    reason = available()
    if reason:
        # CI installs the packages (.ci/run): a skip there would hide the storage fencing.
        if request.config.getoption("--require-servers"):
            pytest.fail(reason)
        pytest.skip(reason)
    with CephCluster(tmp_path_factory.mktemp("ceph")) as cluster:
        yield cluster


@pytest.fixture
def rbd_hosts(ceph: CephCluster) -> Iterator[tuple[RBDHost, RBDHost]]:
    """Hosts A (``NETWORK.2``) and B (``.3``), each writing to its own image; stopped, and the
    blocklist emptied, after the test."""
    a, b = ceph.host(f"{NETWORK}.2"), ceph.host(f"{NETWORK}.3")
    a.wait_writes(3)
    b.wait_writes(3)
    yield a, b
    for host in (a, b):
        host.close()
        ceph.hosts.remove(host)
    ceph.ceph("osd", "blocklist", "clear")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = migrated_sqlite(tmp_path)
    yield database
    database.dispose()


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    with NovaSimulator() as simulator:
        yield simulator


@pytest.fixture
def engine(db: Database, sim: NovaSimulator) -> Iterator[Callable[..., EngineService]]:
    """``engine(fencing_file, **options)``: an engine with host fencing, stopped after."""
    started: list[EngineService] = []

    def start(config_file: str, **overrides: Any) -> EngineService:
        conf = make_conf(
            sim,
            wait_period_after_evacuation=30,
            **{"fencing.config_file": config_file, **FENCING, **overrides},
        )
        service = EngineService(
            conf, db, sim.client(timeout=5), sweep_interval=0.3, fencing=HostFencing.from_conf(conf)
        )
        service.start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop(grace=2)


@pytest.fixture
def bmcs() -> Iterator[Callable[..., FakeBMC]]:
    with fake_bmcs() as make:
        yield make
