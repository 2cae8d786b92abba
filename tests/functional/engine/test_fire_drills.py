"""Fire drills on SQLite: an in-process engine drills a host of the Nova simulator whose
power follows a fake IPMI BMC (tests/fakes/ipmi_bmc.py), then restores it.

Asserted on what Nova holds (where each canary runs, the compute service's status,
forced_down and state, the instance actions), the BMC's power state and what it received,
and masakari's rows after the drill; never on logs.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from masakari import exception
from masakari.db import drills as drills_db
from masakari.db.database import Database
from masakari.engine.fencing import HostFencing
from masakari.ha import drills as drills_api
from tests.fakes.nova import NovaSimulator
from tests.fakes.placement import Flavor
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    host_row,
    make_conf,
    notify,
    spawn_engine,
    wait_for,
    write_engine_conf,
)
from tests.support.fencing_drills import Events, fencing_file, ipmi, sent

TAG = "masakari-canary"
DRILL = {
    "drill.enabled": True,
    "drill.poll_interval": 0.1,
    "drill.service_up_timeout": 10,
    "drill.migration_timeout": 10,
    "fencing.confirm_interval": 0.2,
    "fencing.confirm_timeout": 3,
    "fencing.check_interval": 0,
    "wait_period_after_evacuation": 10,
}


def _cloud(db: Database, sim: NovaSimulator, bmcs: Any, tmp_path: Path, **knobs: Any) -> Any:
    """compute-1 (its BMC, one canary) and compute-2 in one auto segment."""
    bmc = bmcs(**knobs)
    sim.add_service("compute-1")
    sim.add_service("compute-2")
    sim.tie_power("compute-1", bmc)
    segment = add_segment(db)
    host = add_host(db, segment, "compute-1")
    add_host(db, segment, "compute-2")
    path = fencing_file(tmp_path, {"compute-1": [ipmi(bmc)]})
    return bmc, segment, host, path


def _engine(engine_factory: Any, sim: NovaSimulator, path: str, **overrides: Any) -> Any:
    conf = make_conf(sim, **{**DRILL, "fencing.config_file": path, **overrides})
    return engine_factory(conf, fencing=HostFencing.from_conf(conf)), conf


def _ended(db: Database, drill_uuid: str, timeout: float = 60) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        found = drills_api.get(db, None, drill_uuid)
        return found if found["status"] in ("succeeded", "failed") else None

    return wait_for(ended, timeout, f"drill {drill_uuid} ended", interval=0.1)


def _phases(found: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["name"], p["result"]) for p in found["phases"]]


def _restored(
    db: Database, sim: NovaSimulator, bmc: Any, host: str, status: str = "enabled"
) -> None:
    service = sim.service("compute-1")
    assert (service["status"], service["forced_down"], service["state"]) == (status, False, "up")
    assert bmc.power == "on"
    assert host_row(db, host).on_maintenance is False


def test_a_drill_fences_evacuates_and_restores(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    canary = sim.add_server(host="compute-1", tags=[TAG, "other"])
    engine, conf = _engine(engine_factory, sim, path)
    engine.drills.notifier = events = Events()
    events.enabled = True

    drill = drills_api.request(conf, db, segment, "compute-1")
    found = _ended(db, drill["id"])

    assert found["status"] == "succeeded", found
    assert _phases(found) == [
        ("check", "ok"),
        ("maintenance", "ok"),
        ("fence", "ok"),
        ("disable", "ok"),
        ("evacuate", "ok"),
        ("restore", "ok"),
        ("return", "ok"),
    ]
    # Nova: the canary runs on compute-2, moved by one evacuation; compute-1 is back.
    assert sim.server(canary)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert sim.actions(canary) == ["evacuate"]
    _restored(db, sim, bmc, host)
    # The BMC was powered off, read off, then powered on.
    commands = sent(bmc)
    assert "off" in commands and "on" in commands
    assert commands.index("off") < commands.index("on")
    report = found["report"]
    assert report["canaries"] == [
        {
            "id": canary,
            "name": sim.server(canary)["name"],
            "predicted": "scheduler",
            "landed": "compute-2",
            "seconds": report["canaries"][0]["seconds"],
        }
    ]
    assert report["restored"] is True and report["service_was"] == "enabled"
    assert [e[0] for e in events.sent] == ["drill.end"]
    payload = events.sent[0][1]
    assert payload["masakari_object.name"] == "DrillPayload"
    assert payload["masakari_object.data"]["status"] == "succeeded"
    with db.reader() as session:
        row = drills_db.get(session, drill["id"])
        assert row is not None and row.active_host is None


def test_a_host_with_an_untagged_server_is_refused_and_nothing_changes(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    sim.add_server(host="compute-1", tags=[TAG])
    tenant = sim.add_server(host="compute-1")
    _, conf = _engine(engine_factory, sim, path)
    sim.clear_calls()

    found = _ended(db, drills_api.request(conf, db, segment, "compute-1")["id"])

    assert found["status"] == "failed"
    assert found["failure_reason"] == f"check: 1 server(s) without the tag '{TAG}': {tenant}"
    assert _phases(found) == [("check", "failed")]
    assert [c for c in sim.calls if c.method != "GET"] == []
    assert bmc.commands.count("off") == 0
    _restored(db, sim, bmc, host)


def test_allow_untagged_evacuates_every_server(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    tenant = sim.add_server(host="compute-1")
    _, conf = _engine(engine_factory, sim, path)

    drill = drills_api.request(conf, db, segment, "compute-1", allow_untagged=True)
    found = _ended(db, drill["id"])

    assert found["status"] == "succeeded", found
    assert sim.server(tenant)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    _restored(db, sim, bmc, host)


def test_a_bmc_that_refuses_the_power_off_stops_the_drill_and_restores(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path, refuse_off=True)
    canary = sim.add_server(host="compute-1", tags=[TAG])
    _, conf = _engine(engine_factory, sim, path)

    found = _ended(db, drills_api.request(conf, db, segment, "compute-1")["id"])

    assert found["status"] == "failed"
    assert found["failure_reason"].startswith("fence: ")
    assert _phases(found)[:3] == [("check", "ok"), ("maintenance", "ok"), ("fence", "failed")]
    assert [name for name, _ in _phases(found)[3:]] == ["restore", "return"]
    # Nothing evacuated, nothing disabled: the host is as it was.
    assert sim.server(canary)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    assert sim.actions(canary) == []
    _restored(db, sim, bmc, host)


def test_an_evacuation_nova_refuses_stops_the_drill_and_restores(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    canary = sim.add_server(host="compute-1", tags=[TAG])
    _, conf = _engine(engine_factory, sim, path)
    sim.fail(409, method="POST", action="evacuate", server=canary)

    found = _ended(db, drills_api.request(conf, db, segment, "compute-1")["id"])

    assert found["status"] == "failed"
    assert found["failure_reason"].startswith("evacuate: ")
    assert _phases(found)[-3:] == [("evacuate", "failed"), ("restore", "ok"), ("return", "ok")]
    assert sim.server(canary)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    _restored(db, sim, bmc, host)
    assert "on" in sent(bmc)


def test_a_bmc_that_stays_off_leaves_the_host_disabled_and_on_maintenance(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    canary = sim.add_server(host="compute-1", tags=[TAG])
    _, conf = _engine(engine_factory, sim, path)
    # The BMC takes the power off, then answers a power on without turning it on.
    original = bmc.power_on
    bmc.power_on = lambda: None

    found = _ended(db, drills_api.request(conf, db, segment, "compute-1")["id"])
    bmc.power_on = original

    assert found["status"] == "failed"
    assert "restore: restore: " in found["failure_reason"]
    assert "power on: not within" in found["failure_reason"]
    assert sim.server(canary)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    service = sim.service("compute-1")
    # Never enabled while not up: disabled, forced down, and on maintenance in masakari.
    assert (service["status"], service["state"]) == ("disabled", "down")
    assert bmc.power == "off"
    assert host_row(db, host).on_maintenance is True


def test_no_fence_forces_the_service_down_and_moves_the_canaries_back(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    canary = sim.add_server(host="compute-1", tags=[TAG])
    _, conf = _engine(engine_factory, sim, path)

    drill = drills_api.request(conf, db, segment, "compute-1", no_fence=True, move_back=True)
    found = _ended(db, drill["id"])

    assert found["status"] == "succeeded", found
    assert [n for n, _ in _phases(found)][-3:] == ["restore", "move_back", "return"]
    assert bmc.commands == []  # the BMC was never asked anything
    assert sim.server(canary)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    assert sim.actions(canary) == ["evacuate", "os-migrateLive"]
    # Nova's own record of the server, newest first.
    assert [a.action for a in sim.client().list_instance_actions(canary)] == [
        "live-migration",
        "evacuate",
    ]
    assert found["report"]["canaries"][0]["moved_back"] is True
    _restored(db, sim, bmc, host)


def test_a_spare_is_returned_disabled_and_reserved(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc = bmcs()
    sim.add_service("compute-1")
    sim.add_service("spare-1", status="disabled", disabled_reason="a spare")
    sim.tie_power("spare-1", bmc)
    segment = add_segment(db, "reserved_host")
    add_host(db, segment, "compute-1")
    spare = add_host(db, segment, "spare-1", reserved=True)
    _, conf = _engine(
        engine_factory,
        sim,
        fencing_file(tmp_path, {"spare-1": [ipmi(bmc)]}),
        **{"drill.schedule_interval": 1},
    )

    drill_uuid = wait_for(
        lambda: next(iter(drills_api.list_(db, segment)), None), 10, "a scheduled drill"
    )["id"]
    found = _ended(db, drill_uuid)

    assert found["status"] == "succeeded", found
    assert found["requested_by"] == "schedule" and found["host_name"] == "spare-1"
    service = sim.service("spare-1")
    assert (service["status"], service["disabled_reason"], service["state"]) == (
        "disabled",
        "a spare",
        "up",
    )
    row = host_row(db, spare)
    assert (row.reserved, row.on_maintenance) == (True, False)
    assert sent(bmc).count("off") == 1 and bmc.power == "on"


def test_requests_are_refused_with_clear_errors(
    db: Database, sim: NovaSimulator, bmcs: Any, tmp_path: Path
) -> None:
    _, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    conf = make_conf(sim, **{**DRILL, "fencing.config_file": path})
    with pytest.raises(exception.DrillsDisabled):
        drills_api.request(make_conf(sim), db, segment, "compute-1")
    with pytest.raises(exception.HostNotFoundUnderSegment):
        drills_api.request(conf, db, segment, "compute-9")
    drills_api.request(conf, db, segment, "compute-1")
    with pytest.raises(exception.DrillHostBusy):  # one drill of a host at a time
        drills_api.request(conf, db, segment, host)
    other = add_host(db, segment, "compute-3")
    notify(db, other, "COMPUTE_HOST", HOST_DOWN)
    with pytest.raises(exception.DrillHostBusy):
        drills_api.request(conf, db, segment, "compute-3")


def test_an_engine_killed_mid_drill_is_taken_over_and_the_host_restored(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    canary = sim.add_server(host="compute-1", tags=[TAG])
    sim.set_evacuate_delay(60)  # the evacuation never ends while engine A lives
    conf_file = tmp_path / "engine-a.conf"
    url = db.engine.url.render_as_string(hide_password=False)
    write_engine_conf(conf_file, sim, url, user="engine-a")
    with conf_file.open("a") as fh:
        fh.write(
            "[drill]\nenabled = true\npoll_interval = 0.1\nservice_up_timeout = 10\n"
            f"[fencing]\nconfig_file = {path}\nconfirm_interval = 0.2\nconfirm_timeout = 3\n"
            "check_interval = 0\n"
        )
    conf = make_conf(sim, **{**DRILL, "fencing.config_file": path})
    drill = drills_api.request(conf, db, segment, "compute-1")
    engine_a = spawn_engine(conf_file, tmp_path / "engine-a.log")
    try:
        wait_for(lambda: sim.actions(canary) == ["evacuate"], 30, "engine A evacuates")
        assert bmc.power == "off"
        os.killpg(engine_a.pid, signal.SIGKILL)
    finally:
        engine_a.wait(10)
    _engine(engine_factory, sim, path, host="engine-b", os_privileged_user_name="engine-b")

    found = _ended(db, drill["id"])

    assert found["status"] == "failed"
    assert found["failure_reason"].startswith(
        "the engine that ran it stopped during its evacuate phase; restored by engine-b"
    )
    assert found["engine"].startswith("engine-b")
    _restored(db, sim, bmc, host)
    phases = _phases(found)
    assert ("evacuate", "running") in phases  # what engine A left
    assert phases[-2:] == [("restore", "ok"), ("return", "ok")]
    assert json.loads(json.dumps(found["report"]))["restored"] is True


def test_nova_keeps_a_host_forced_down_until_its_compute_restarts(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    """As Nova 2023.2 on: forced_down stays while evacuations are `done` from the host; the
    restore's power on restarts nova-compute, which completes them, and the unset follows."""
    sim.force_up_checks_evacuations = True
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    canary = sim.add_server(host="compute-1", tags=[TAG])
    _, conf = _engine(engine_factory, sim, path)

    found = _ended(db, drills_api.request(conf, db, segment, "compute-1")["id"])

    assert found["status"] == "succeeded", found
    assert sim.server(canary)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    _restored(db, sim, bmc, host)


def test_without_fencing_the_restore_waits_for_a_restart_of_nova_compute(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    """no_fence: nothing restarts nova-compute, so Nova keeps it forced down; the restore
    waits (service_up_timeout) for the operator's restart, then returns the host."""
    sim.force_up_checks_evacuations = True
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    sim.add_server(host="compute-1", tags=[TAG])
    _, conf = _engine(engine_factory, sim, path)
    drill = drills_api.request(conf, db, segment, "compute-1", no_fence=True)

    def refused() -> bool:
        return any(
            c.method == "PUT" and c.body == {"forced_down": False} and c.status == 400
            for c in list(sim.calls)
        )

    wait_for(refused, 30, "Nova refusing to unset forced_down")
    assert sim.service("compute-1")["forced_down"] is True
    sim.power_on("compute-1")  # the operator restarts nova-compute
    found = _ended(db, drill["id"])

    assert found["status"] == "succeeded", found
    restore = next(p for p in found["phases"] if p["name"] == "restore")
    assert "forced_down kept by Nova until nova-compute restarts" in restore["detail"]
    _restored(db, sim, bmc, host)


def test_a_host_is_enabled_only_once_it_heartbeats_again(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    """Seconds after its power off a host still reads up in Nova (its last heartbeat is
    younger than service_down_time): the restore waits for a heartbeat after the power on,
    here 2 s late as a booting nova-compute's, before it enables the host."""
    bmc = bmcs()
    sim.add_service("compute-1")
    sim.add_service("compute-2")
    booted: list[datetime.datetime] = []

    def boot() -> None:
        booted.append(datetime.datetime.now(datetime.UTC).replace(tzinfo=None))
        sim.power_on("compute-1")

    def follow(state: str) -> None:
        if state == "off":
            sim.power_off("compute-1")
        else:
            threading.Timer(2.0, boot).start()

    bmc.on_power_change(follow)
    segment = add_segment(db)
    host = add_host(db, segment, "compute-1")
    add_host(db, segment, "compute-2")
    sim.add_server(host="compute-1", tags=[TAG])
    _, conf = _engine(engine_factory, sim, fencing_file(tmp_path, {"compute-1": [ipmi(bmc)]}))

    found = _ended(db, drills_api.request(conf, db, segment, "compute-1")["id"])

    assert found["status"] == "succeeded", found
    returned = next(p for p in found["phases"] if p["name"] == "return")
    assert booted and datetime.datetime.fromisoformat(returned["started_at"]) >= booted[0]
    _restored(db, sim, bmc, host)


def test_a_canary_the_plan_has_no_room_for_refuses_the_drill(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    bmc = bmcs()
    sim.add_service("compute-1")
    sim.add_service("compute-2", vcpus=2)
    sim.tie_power("compute-1", bmc)
    segment = add_segment(db)
    host = add_host(db, segment, "compute-1")
    add_host(db, segment, "compute-2")
    big = sim.add_server(host="compute-1", tags=[TAG], flavor=Flavor("m1.large", 4, 8192, 80))
    _, conf = _engine(engine_factory, sim, fencing_file(tmp_path, {"compute-1": [ipmi(bmc)]}))
    sim.clear_calls()

    found = _ended(db, drills_api.request(conf, db, segment, "compute-1")["id"])

    assert found["status"] == "failed"
    assert found["failure_reason"].startswith(f"check: the recovery plan leaves behind {big}")
    assert [c for c in sim.calls if c.method != "GET"] == []
    assert bmc.commands.count("off") == 0
    _restored(db, sim, bmc, host)


def test_an_engine_that_stops_gives_its_drill_up_at_once(
    db: Database, sim: NovaSimulator, bmcs: Any, engine_factory: Any, tmp_path: Path
) -> None:
    """Claims that would last a minute: the other engine restores the host within seconds
    only because the stopping one released its drill."""
    bmc, segment, host, path = _cloud(db, sim, bmcs, tmp_path)
    canary = sim.add_server(host="compute-1", tags=[TAG])
    sim.set_evacuate_delay(60)
    slow_claims = {"engine_claim_timeout": 60, "engine_claim_renew_interval": 1}
    engine_a, conf = _engine(engine_factory, sim, path, **slow_claims)
    drill = drills_api.request(conf, db, segment, "compute-1")
    wait_for(lambda: sim.actions(canary) == ["evacuate"], 30, "engine A evacuates")

    engine_a.stop(grace=0.5)
    sim.set_evacuate_delay(0)
    stopped = time.monotonic()
    _engine(engine_factory, sim, path, **slow_claims)
    found = _ended(db, drill["id"], timeout=30)

    assert time.monotonic() - stopped < 30
    assert found["status"] == "failed"
    assert found["failure_reason"].startswith("the engine that ran it stopped during its evacuate")
    _restored(db, sim, bmc, host)
