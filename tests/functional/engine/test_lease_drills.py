"""Shared-disk lease drills on PostgreSQL and MariaDB: a real masakari-lease-agent process
renews its host's slot on a loop device (an 8 MiB sparse file; the file itself where
losetup is not permitted), engines judge it on their own clock next to a fake IPMI BMC.

The agent process stands for the host: no watchdog device exists here, so its death is
the host's (kill -9), its freeze a hung host (SIGSTOP). Asserted on what the BMC received,
what Nova received and the database's rows; never on logs.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from masakari.db.database import Database
from tests.fakes.nova import NovaSimulator
from tests.support.engine import HOST_DOWN, add_segment, notify, status_of, wait_for, wait_status
from tests.support.fencing_drills import (
    DISABLE,
    assert_evacuated_once,
    attempts,
    counted,
    evacuations,
    failed_host,
    fence_task,
    fencing_file,
    held,
    ipmi,
    mutations,
    sent,
)
from tests.support.lease import Agent, lease_device

HOST = "compute-1"
# Renewals every 0.5 s, watchdog 3 s: stalled after 3 s (6 misses), expired after 6 s.
INTERVAL, WATCHDOG = 0.5, 3.0
STALLED, EXPIRY = 3.0, 6.0


@pytest.fixture
def device(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with lease_device(request, tmp_path) as path:
        yield path


@pytest.fixture
def agent(device: str, tmp_path: Path) -> Iterator[Agent]:
    running = Agent(device, HOST, INTERVAL, WATCHDOG, tmp_path)
    yield running
    running.stop()


def lease(device: str) -> dict[str, Any]:
    return {"driver": "lease", "path": device, "interval": INTERVAL, "watchdog_timeout": WATCHDOG}


def test_a_partitioned_host_that_renews_is_neither_fenced_nor_evacuated(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path, agent: Agent
) -> None:
    bmc = bmcs()
    sim.tie_power(HOST, bmc)
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, HOST)
    sim.add_service("compute-2")
    # The BMC first in the list: the lease is read before it all the same.
    engines("engine-a", fencing_file(tmp_path, {HOST: [ipmi(bmc), lease(agent.device)]}))
    held_before = counted("notifications_held", "lease_renewed")

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)  # its monitor lost it
    reason = wait_for(lambda: held(server_db, nid), 30, "the notification is held")

    assert reason.startswith(f"host renews its lease: lease {agent.device}: slot 0: counter ")
    assert status_of(server_db, nid) == "new"
    assert sent(bmc) == [] and bmc.power == "on"  # no power off, not even a status read
    assert attempts(server_db, nid) == [(1, "lease", "renewing")]
    assert evacuations(sim) == [] and [c.body for c in mutations(sim)] == [DISABLE]
    assert all(sim.server(vm)["OS-EXT-SRV-ATTR:host"] == HOST for vm in servers)
    assert counted("notifications_held", "lease_renewed") == held_before + 1
    [(_, state, messages)] = fence_task(server_db, nid)
    assert state == "FAILURE" and messages[-1] == f"Held for an operator: {reason}"


def test_a_host_whose_agent_died_is_proven_dead_by_its_lease_without_a_bmc(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path, agent: Agent
) -> None:
    bmc = bmcs(dead=True)  # a total power loss: the BMC went down with the host
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, HOST)
    sim.add_service("compute-2")
    engines("engine-a", fencing_file(tmp_path, {HOST: [ipmi(bmc), lease(agent.device)]}))

    agent.signal(signal.SIGKILL)  # the host died: nothing renews its slot any more
    agent.process.wait(timeout=10)
    last = agent.counter()
    sim.power_off(HOST)
    started = time.monotonic()
    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(server_db, nid, timeout=60) == "finished"

    assert time.monotonic() - started >= EXPIRY
    assert sent(bmc) == []
    assert attempts(server_db, nid) == [
        (1, "lease", "stalled"),
        (0, "off", "unreachable"),
        (1, "lease", "expired"),
    ]
    assert agent.counter() == last
    assert_evacuated_once(sim, servers, HOST)
    disable, force_down, *_ = mutations(sim)
    assert (disable.body, force_down.body) == (DISABLE, {"forced_down": True})


def test_a_frozen_agent_that_renews_again_before_the_expiry_vetoes(
    server_db: Database, sim: NovaSimulator, bmcs: Any, engines: Any, tmp_path: Path, agent: Agent
) -> None:
    bmc = bmcs()
    sim.tie_power(HOST, bmc)
    segment = add_segment(server_db)
    host, servers = failed_host(server_db, sim, segment, HOST)
    sim.add_service("compute-2")
    engines("engine-a", fencing_file(tmp_path, {HOST: [lease(agent.device), ipmi(bmc)]}))

    agent.signal(signal.SIGSTOP)  # a hung host: no renewal, for now
    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    wait_for(
        lambda: any(
            m.startswith("Watching lease") for t in fence_task(server_db, nid) for m in t[2]
        ),
        30,
        "the fence step watches the lease",
    )
    time.sleep(STALLED + 0.5)  # past the stall, before the expiry
    agent.signal(signal.SIGCONT)
    reason = wait_for(lambda: held(server_db, nid), 30, "the notification is held")

    found = re.search(r"counter (\d+) -> (\d+) within ([\d.]+) s", reason)
    assert found is not None, reason
    assert float(found[3]) >= STALLED, "renewed again only after the stall"
    assert attempts(server_db, nid) == [(0, "lease", "renewing")]
    assert sent(bmc) == [] and bmc.power == "on"
    assert evacuations(sim) == []
    assert all(sim.server(vm)["OS-EXT-SRV-ATTR:host"] == HOST for vm in servers)
