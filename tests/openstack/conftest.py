"""Fixtures of the real-OpenStack drills: the running control plane (tools/openstack.sh up,
named by MASAKARI_REAL_OPENSTACK), put back to a clean state before each drill, and masakari
deployments in front of it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.ipmi_bmc import FakeBMC
from tests.support.openstack.cloud import Cloud
from tests.support.openstack.masakari import Masakari

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(HERE):
            item.add_marker(pytest.mark.real_openstack)


@pytest.fixture(scope="session")
def running_cloud() -> Cloud:
    state = os.environ.get("MASAKARI_REAL_OPENSTACK")
    if not state:
        pytest.skip("no real OpenStack: MASAKARI_REAL_OPENSTACK is unset (tools/openstack.sh up)")
    cloud = Cloud.load(Path(state))
    down = [name for name, pid in cloud.status().items() if pid is None and "compute" not in name]
    assert not down, f"the real OpenStack in {state} is not running: {down}"
    return cloud


@pytest.fixture
def cloud(running_cloud: Cloud) -> Cloud:
    running_cloud.reset()
    return running_cloud


@pytest.fixture
def masakari(cloud: Cloud, tmp_path: Path) -> Iterator[Callable[..., Masakari]]:
    """Start a masakari deployment: ``masakari(sections, engines=1, db_url=None)``."""
    started: list[Masakari] = []

    def start(
        sections: dict[str, dict[str, Any]] | None = None,
        engines: int = 1,
        db_url: str | None = None,
    ) -> Masakari:
        deployment = Masakari(cloud, tmp_path / f"masakari-{len(started)}", sections, db_url)
        started.append(deployment)
        return deployment.start(engines)

    yield start
    for deployment in started:
        deployment.stop()


@pytest.fixture
def bmc(cloud: Cloud) -> Iterator[FakeBMC]:
    """compute-1's BMC, on: its power state is whether compute-1's nova-compute runs (its
    credentials: ``bmc.username``, ``bmc.password``)."""
    with FakeBMC("admin", "bmc-secret") as made:

        def follow(state: str) -> None:
            # Called in the BMC's I/O thread, which must keep answering status reads.
            act = cloud.kill_compute if state == "off" else cloud.start_compute
            threading.Thread(target=act, args=("compute-1",), daemon=True).start()

        made.on_power_change(follow)
        yield made
