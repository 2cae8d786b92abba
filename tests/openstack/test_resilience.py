"""A recovery that loses its engine or its path to the real Nova half-way: each server is
still evacuated exactly once (its instance actions say so), none is left locked, and every
one runs on another host."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.db import backends
from tests.openstack import records
from tests.support.openstack.cloud import Cloud, wait_for
from tests.support.openstack.masakari import Masakari
from tests.support.tcpproxy import TCPProxy

FAILED = "compute-1"
OTHERS = ["compute-2", "compute-3"]
SERVERS = 4


def _boot(cloud: Cloud) -> list[str]:
    return cloud.wait_active([cloud.boot(f"vm-{n}", FAILED, wait=False) for n in range(SERVERS)])


def _first_evacuation(cloud: Cloud, servers: list[str], timeout: float = 120) -> None:
    wait_for(
        "a first evacuation in Nova",
        lambda: any(records.evacuations(cloud, s) for s in servers),
        timeout,
        interval=0.5,
    )


def _assert_each_evacuated_once(cloud: Cloud, servers: list[str]) -> None:
    for server in servers:
        records.assert_recovered(cloud, server, FAILED, "active")


@pytest.fixture
def postgresql(tmp_path: Path) -> Iterator[str]:
    """An empty PostgreSQL database: engines that take over from each other share it
    (requested before ``masakari``, so that it is dropped after the engines stopped)."""
    with backends.temporary_database("postgresql", str(tmp_path)) as url:
        yield url


def test_engine_killed_mid_recovery(
    cloud: Cloud, postgresql: str, masakari: Callable[..., Masakari]
) -> None:
    servers = _boot(cloud)
    deployment = masakari({"DEFAULT": {"wait_period_after_service_update": 0}}, db_url=postgresql)
    deployment.segment("seg", [FAILED, *OTHERS])
    cloud.kill_compute(FAILED)
    cloud.wait_computes([FAILED], "down", timeout=60)
    nid = deployment.report_host_down(FAILED)
    _first_evacuation(cloud, servers)
    deployment.kill_engine(0)
    deployment.start_engine()
    deployment.wait_notification(nid, timeout=300)
    _assert_each_evacuated_once(cloud, servers)


def test_nova_path_cut_and_late(cloud: Cloud, masakari: Callable[..., Masakari]) -> None:
    """masakari reaches Nova through a proxy (the catalog's nova-drill entry) that, once the
    evacuations started, resets every connection and then answers later than masakari's
    time-out: ambiguous failures of changes, which must be checked in Nova, not repeated."""
    servers = _boot(cloud)
    timeout = 5
    with TCPProxy(
        "127.0.0.1", cloud.layout.port("nova"), port=cloud.layout.port("nova-proxy")
    ) as proxy:
        deployment = masakari(
            {
                "DEFAULT": {
                    "wait_period_after_service_update": 0,
                    "nova_catalog_admin_info": "compute:nova-drill:publicURL",
                    "nova_api_timeout": timeout,
                }
            }
        )
        deployment.segment("seg", [FAILED, *OTHERS])
        cloud.kill_compute(FAILED)
        cloud.wait_computes([FAILED], "down", timeout=60)
        nid = deployment.report_host_down(FAILED)
        _first_evacuation(cloud, servers)
        stop = threading.Event()
        reset = []

        def trouble() -> None:
            # Resets, then answers later than the client waits, then both again.
            while not stop.is_set():
                reset.append(proxy.connections)
                proxy.cut()
                proxy.answer_delay = timeout + 1
                stop.wait(timeout * 2)
                proxy.answer_delay = 0
                stop.wait(1)

        thread = threading.Thread(target=trouble, daemon=True)
        thread.start()
        try:
            time.sleep(timeout * 4)
        finally:
            stop.set()
            thread.join()
            proxy.answer_delay = 0
        deployment.wait_notification(nid, timeout=300)
    # The engine keeps its connections to Nova open between requests: the cuts met some.
    assert sum(reset) > 0
    _assert_each_evacuated_once(cloud, servers)
