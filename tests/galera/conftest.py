"""Fixtures: one 3-node Galera cluster for the whole session, a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from masakari.db import migration
from masakari.db.database import Database
from tests.galera.cluster import GaleraCluster, unavailable


@pytest.fixture(scope="session")
def galera(request: pytest.FixtureRequest) -> Iterator[GaleraCluster]:
    reason = unavailable()
    if reason:
        # CI installs galera-4; a skip there would hide the only multi-master tests.
        if request.config.getoption("--require-servers"):
            pytest.fail(reason)
        pytest.skip(reason)
    cluster = GaleraCluster(size=3)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def galera_urls(galera: GaleraCluster) -> Iterator[list[str]]:
    """One URL per node for a new database with the current schema (migrated through node 0)."""
    with galera.database() as name:
        urls = galera.urls(name)
        db = Database.from_url(urls[0])
        try:
            migration.upgrade(db.engine)
        finally:
            db.dispose()
        yield urls
        # A test that stopped a node and failed before starting it again must not leave
        # the next one a smaller cluster.
        for index, node in enumerate(galera.nodes):
            if not node.running:
                galera.start_node(index)
