"""Quarantine's Redfish signal: an engine reads the health of the hosts of its fencing file's
redfish entries (sushy-tools' emulator, its knobs degrading the system) and requests or
withdraws their quarantines; a BMC that does not answer requests nothing."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from masakari import signals
from masakari.db.database import Database
from masakari.engine.fencing import HostFencing
from masakari.ha import quarantines
from masakari.metrics import quarantine as quarantine_metrics
from tests.fakes.nova import NovaSimulator
from tests.fakes.redfish_bmc import RedfishBMC
from tests.support.engine import add_host, add_segment, make_conf, wait_for, with_signals
from tests.support.fencing_drills import PASSWORD, USER, fencing_file

# Each pass reads every BMC: a second apart, so that a test sees several.
INTERVAL = 1


def redfish(bmc: RedfishBMC, timeout: float = 5) -> dict[str, Any]:
    return {
        "driver": "redfish",
        "address": bmc.url,
        "allow_http": True,  # the emulator on loopback: no password crosses a network
        "username": USER,
        "password": PASSWORD,
        "timeout": timeout,
    }


def health_conf(sim: NovaSimulator, path: str, **overrides: Any) -> Any:
    return make_conf(
        sim,
        **{
            "fencing.config_file": path,
            "fencing.check_interval": 0,
            "quarantine.enabled": True,
            "quarantine.redfish_health_interval": INTERVAL,
            # No quarantine is started while a test looks: a requested one can be withdrawn.
            "quarantine.poll_interval": 3600,
            **overrides,
        },
    )


def of_host(db: Database, name: str) -> list[tuple[str, str, str | None]]:
    return [(r.source, r.status, r.signal) for r in quarantines.list_(db) if r.host_name == name]


def reads(result: str) -> float:
    return quarantine_metrics.instruments().redfish_reads.labels(result)._value.get()


@pytest.fixture
def bmc() -> Any:
    with RedfishBMC(USER, PASSWORD) as made:
        yield made


def test_critical_requests_the_quarantine_and_ok_again_withdraws_it(
    db: Database, sim: NovaSimulator, engine_factory: Any, bmc: RedfishBMC, tmp_path: Path
) -> None:
    segment = add_segment(db)
    for name in ("compute-1", "compute-2", "compute-3"):
        add_host(db, segment, name)
    # compute-2 has no redfish entry: never read. compute-3's BMC is healthy.
    with RedfishBMC(USER, PASSWORD) as healthy:
        healthy.set_knobs(health="OK", health_rollup="OK")
        path = fencing_file(
            tmp_path, {"compute-1": [redfish(bmc)], "compute-3": [redfish(healthy)]}
        )
        conf = health_conf(sim, path, **{"quarantine.max_hosts_per_segment": 3})
        bmc.set_knobs(health="OK", health_rollup="Critical")  # a part failed: a DIMM, a PSU
        critical_before = reads("critical")
        engine_factory(conf, **with_signals(conf, db, HostFencing.from_conf(conf)))

        wait_for(lambda: of_host(db, "compute-1"), 30, "the quarantine is requested")
        assert of_host(db, "compute-1") == [("redfish", "requested", "redfish:compute-1")]
        (row,) = quarantines.list_(db)
        assert row.reason == (
            f"Redfish health of redfish {bmc.url}: Health OK, HealthRollup Critical"
        )
        # Passes go on: a repeat changes nothing.
        wait_for(lambda: reads("critical") >= critical_before + 3, 30, "three critical reads")
        assert len(quarantines.list_(db)) == 1
        assert of_host(db, "compute-2") == of_host(db, "compute-3") == []
        assert bmc.resets() == healthy.resets() == []  # read-only

        bmc.set_knobs(health_rollup="OK")
        wait_for(lambda: of_host(db, "compute-1")[0][1] == "withdrawn", 30, "withdrawn once OK")
        assert quarantines.get(db, row.uuid)[0].signal_ended_at is not None


def test_warning_is_no_quarantine_and_the_list_of_values_is_an_option(
    db: Database, sim: NovaSimulator, engine_factory: Any, bmc: RedfishBMC, tmp_path: Path
) -> None:
    segment = add_segment(db)
    add_host(db, segment, "compute-1")
    path = fencing_file(tmp_path, {"compute-1": [redfish(bmc)]})
    bmc.set_knobs(health="Warning")
    warnings = reads("warning")
    first = health_conf(sim, path)
    engine = engine_factory(first, **with_signals(first, db, HostFencing.from_conf(first)))
    wait_for(lambda: reads("warning") >= warnings + 2, 30, "two warning reads")
    assert of_host(db, "compute-1") == []
    engine.stop(grace=2)

    conf = health_conf(sim, path, **{"quarantine.redfish_health_quarantine": ["Warning"]})
    engine_factory(conf, **with_signals(conf, db, HostFencing.from_conf(conf)))
    wait_for(lambda: of_host(db, "compute-1"), 30, "the quarantine is requested")


def test_an_unreachable_bmc_requests_nothing(
    db: Database,
    sim: NovaSimulator,
    engine_factory: Any,
    bmc: RedfishBMC,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    segment = add_segment(db)
    add_host(db, segment, "compute-1")
    path = fencing_file(tmp_path, {"compute-1": [redfish(bmc, timeout=1)]})
    bmc.set_knobs(health="Critical", health_rollup="Critical")
    bmc.dead = True  # hung: connections accepted, never answered
    unreachable = reads("unreachable")
    conf = health_conf(sim, path)
    with caplog.at_level(logging.WARNING, "masakari.signals.redfish_health"):
        engine_factory(conf, **with_signals(conf, db, HostFencing.from_conf(conf)))
        wait_for(lambda: reads("unreachable") >= unreachable + 2, 30, "two unreachable reads")
    assert of_host(db, "compute-1") == []
    assert "Redfish health of host compute-1 not read: redfish" in caplog.text
    bmc.dead = False


def test_the_task_needs_quarantine_and_a_fencing_file(
    db: Database, sim: NovaSimulator, bmc: RedfishBMC, tmp_path: Path
) -> None:
    path = fencing_file(tmp_path, {"compute-1": [redfish(bmc)]})
    on = health_conf(sim, path)
    (task,) = signals.build(on, db, HostFencing.from_conf(on)).tasks()
    assert (task.name, task.leader_only, task.every) == ("redfish_health", True, INTERVAL)
    off = health_conf(sim, path, **{"quarantine.enabled": False})
    assert signals.build(off, db, HostFencing.from_conf(off)).tasks() == []
    assert signals.build(on, db, None).tasks() == []  # no fencing file: no BMC known
    unset = health_conf(sim, path, **{"quarantine.redfish_health_interval": 0})
    assert signals.build(unset, db, HostFencing.from_conf(unset)).tasks() == []
