"""Host fencing drills through a ClusterLabs fence agent and with the power-on after the
recovery, on PostgreSQL and MariaDB: Debian's ``fence_ipmilan`` (a child process fed on
stdin, as pacemaker calls it) drives the same fake IPMI BMC as the ipmi driver's drills
(tests/functional/engine/test_fencing_drills.py, whose fixtures these share).

Asserted on what the BMC received and its power state, what Nova received and the
database's rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from masakari.db.database import Database
from tests.fakes.ipmi_bmc import FakeBMC
from tests.fakes.nova import NovaSimulator
from tests.support.engine import HOST_DOWN, add_segment, notify, wait_status
from tests.support.fencing import require_file
from tests.support.fencing_drills import (
    LIVE_TIMEOUT,
    PASSWORD,
    USER,
    assert_evacuated_once,
    attempts,
    evacuations,
    failed_host,
    fencing_file,
    ipmi,
    mutations,
    sent,
)


def agent_entry(bmc: FakeBMC) -> dict[str, Any]:
    return {
        "driver": "agent",
        "agent": "fence_ipmilan",
        "address": bmc.address,
        "port": bmc.port,
        "username": USER,
        "password": PASSWORD,
        "timeout": LIVE_TIMEOUT,
        # fence_ipmilan pauses 2 s after a power action by default: no need on a fake BMC.
        "args": {"lanplus": 1, "power_wait": 0},
    }


def one_failed_host(
    db: Database,
    sim: NovaSimulator,
    bmcs: Any,  # noqa: F811
) -> tuple[FakeBMC, str, list[str]]:
    """compute-1 failed, its power tied to a fake BMC; compute-2 takes its instances."""
    bmc = bmcs()
    sim.tie_power("compute-1", bmc)
    host, servers = failed_host(db, sim, add_segment(db), "compute-1")
    sim.add_service("compute-2")
    return bmc, host, servers


def test_fence_ipmilan_fences_the_host_before_its_evacuations(
    request: pytest.FixtureRequest,
    server_db: Database,
    sim: NovaSimulator,
    bmcs: Any,  # noqa: F811
    engines: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    require_file(request, "/usr/bin/ipmitool", "ipmitool")
    require_file(request, "/usr/sbin/fence_ipmilan", "fence-agents")
    bmc, host, servers = one_failed_host(server_db, sim, bmcs)
    engines("engine-a", fencing_file(tmp_path, {"compute-1": [agent_entry(bmc)]}))

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(server_db, nid) == "finished"

    assert bmc.power == "off" and sent(bmc).count("off") == 1
    assert attempts(server_db, nid) == [(0, "off", "done"), (0, "status", "off")]
    assert_evacuated_once(sim, servers, "compute-1")
    forced = [c for c in mutations(sim) if c.body == {"forced_down": True}]
    assert len(forced) == 1
    assert min(c.time for c in evacuations(sim)) >= forced[0].time


def test_the_host_is_powered_on_again_after_its_recovery_and_stays_out_of_scheduling(
    server_db: Database,
    sim: NovaSimulator,
    bmcs: Any,  # noqa: F811
    engines: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    bmc, host, servers = one_failed_host(server_db, sim, bmcs)
    config = fencing_file(tmp_path, {"compute-1": [ipmi(bmc)]})
    engines("engine-a", config, **{"fencing.power_on_after_recovery": True})

    where_at_power_on: list[dict[str, str]] = []

    def at_power_on(state: str) -> None:
        if state == "on":
            where_at_power_on.append({vm: sim.server(vm)["OS-EXT-SRV-ATTR:host"] for vm in servers})

    bmc.on_power_change(at_power_on)

    nid = notify(server_db, host, "COMPUTE_HOST", HOST_DOWN)
    assert wait_status(server_db, nid) == "finished"

    assert attempts(server_db, nid) == [(0, "off", "done"), (0, "status", "off"), (0, "on", "done")]
    assert bmc.power == "on" and sent(bmc).count("on") == 1
    assert_evacuated_once(sim, servers, "compute-1")
    # Powered on only once every instance was away, and it stays disabled and forced down:
    # Nova schedules nothing onto it until an operator says so.
    assert len(where_at_power_on) == 1
    assert "compute-1" not in where_at_power_on[0].values()
    service = sim.service("compute-1")
    assert service["status"] == "disabled" and service["forced_down"] is True
