"""Fixtures: one API deployment per module (Keystone tokens, SQLite, the Nova simulator)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.support.deployment import Deployment, Objects


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    with Deployment() as d:
        yield d


@pytest.fixture
def objects(deployment: Deployment) -> Objects:
    return Objects(deployment)


@pytest.fixture
def clean(deployment: Deployment) -> Iterator[Deployment]:
    """The module's deployment, emptied afterwards (host names are unique)."""
    yield deployment
    with deployment.db.writer() as session:
        for table in ("vmoves", "notifications", "hosts", "failover_segments"):
            session.execute(sa.text(f"DELETE FROM {table}"))
