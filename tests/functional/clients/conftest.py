"""Fixtures: a deployment the real clients talk to, for the package
(tests/support/client_cloud.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.client_cloud import Cloud


@pytest.fixture(scope="package")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    deployment = Cloud(str(tmp_path_factory.mktemp("clients")))
    try:
        yield deployment
    finally:
        deployment.close()
