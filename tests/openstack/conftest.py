"""Fixtures of the real-OpenStack drills: the running control plane (tools/openstack.sh up,
named by MASAKARI_REAL_OPENSTACK), put back to a clean state before each drill, and masakari
deployments in front of it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.openstack.cloud import Cloud, wait_for
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


def reset(cloud: Cloud) -> None:
    """Every compute running, enabled and up; no server and no aggregate left."""
    # Enabled before its nova-compute starts: the compute then clears the COMPUTE_STATUS_DISABLED
    # trait of its resource provider at start (the scheduler skips a provider with it).
    for service in cloud.services().values():
        if service["status"] != "enabled":
            cloud.nova.put(f"/os-services/{service['id']}", json={"status": "enabled"})
    for host in cloud.layout.computes:
        cloud.start_compute(host)
    for service in cloud.services().values():
        if service["forced_down"]:
            # Refused (400) while the host has evacuations its restarted nova-compute has not
            # completed yet (it does at start).
            path = f"/os-services/{service['id']}"
            wait_for(
                f"{service['host']} no longer forced down",
                lambda path=path: (
                    cloud.nova.put(path, json={"forced_down": False}, raise_exc=False).ok
                ),
                90,
                interval=2,
            )
    cloud.wait_computes(cloud.layout.computes, "up", timeout=90)
    wait_for("no provider disabled", lambda: not cloud.disabled_providers(), 90, interval=1)
    cloud.delete_all_servers()
    for aggregate in cloud.nova.get("/os-aggregates").json()["aggregates"]:
        for host in aggregate["hosts"]:
            cloud.nova.post(
                f"/os-aggregates/{aggregate['id']}/action", json={"remove_host": {"host": host}}
            )
        cloud.nova.delete(f"/os-aggregates/{aggregate['id']}")


@pytest.fixture
def cloud(running_cloud: Cloud) -> Cloud:
    reset(running_cloud)
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
