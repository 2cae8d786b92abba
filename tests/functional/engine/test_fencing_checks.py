"""Host fencing before any failure: the engine's readiness checks of every host's drivers
against fake IPMI BMCs (recorded for the doctor), ``masakari-manage segment check`` running
them live, and masakari-engine refusing a fencing file that does not load."""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.cmd import manage
from masakari.db import fencing
from masakari.db.database import Database
from masakari.db.models import FenceCheck
from masakari.engine.fence_checks import FenceChecker
from masakari.engine.fencing import FencedHost, HostFencing
from masakari.fencing import drivers, ipmi, lease
from masakari.fencing.base import DriverSpec, PowerState
from masakari.ha import fence_doctor
from tests.fakes.ipmi_bmc import FakeBMC
from tests.support.clock import FakeClock
from tests.support.engine import (
    add_host,
    add_segment,
    make_conf,
    wait_for,
    write_engine_conf,
)

USER, PASSWORD = "admin", "s3cret-bmc-pw"


def entry(bmc: FakeBMC, password: str = PASSWORD, timeout: float = 10) -> dict[str, Any]:
    return {
        "driver": "ipmi",
        "address": bmc.address,
        "port": bmc.port,
        "username": USER,
        "password": password,
        "timeout": timeout,
    }


def test_the_engine_checks_every_hosts_drivers_and_the_doctor_reads_them(
    db: Database, sim: Any, engine_factory: Any, tmp_path: Path
) -> None:
    # compute-2 has a BMC of its own, as every host does: entries with two passwords for one
    # BMC and user share one IPMI session key (masakari.fencing._worker).
    with (
        FakeBMC(USER, PASSWORD) as good,
        FakeBMC(USER, PASSWORD) as dead,
        FakeBMC(USER, PASSWORD) as other,
    ):
        dead.dead = True
        segment = add_segment(db)
        for name in ("compute-1", "compute-2", "compute-3", "compute-4"):
            add_host(db, segment, name)
        path = tmp_path / "fencing.yaml"
        path.write_text(
            json.dumps(
                {
                    "version": 1,
                    "hosts": {
                        "compute-1": [entry(good)],
                        "compute-2": [entry(other, password="wrong")],
                        "compute-3": [entry(dead, timeout=1.5), entry(good)],
                    },
                }
            )
        )
        path.chmod(0o600)
        conf = make_conf(sim, **{"fencing.config_file": str(path), "fencing.check_interval": 3600})
        engine_factory(conf, fencing=HostFencing.from_conf(conf))

        def recorded() -> dict[tuple[str, int], str]:
            with db.reader() as s:
                return {(c.host_name, c.position): c.result for c in fencing.checks(s)}

        wait_for(lambda: len(recorded()) == 5, 60, "the first checks are recorded")
        assert recorded() == {
            ("compute-1", 0): "ok",
            ("compute-2", 0): "refused",
            ("compute-3", 0): "unreachable",
            ("compute-3", 1): "ok",
            ("compute-4", 0): "unfenced",
        }
        # read-only: nothing was switched
        assert good.power == "on" and not {"off", "on"} & set(good.commands)

        conf_file = tmp_path / "manage.conf"
        write_engine_conf(conf_file, sim, str(db.engine.url))
        out = io.StringIO()
        with redirect_stdout(out):
            code = manage.main(["--config-file", str(conf_file), "segment", "check"])
        lines = [line for line in out.getvalue().splitlines() if " fencing " in line]
        assert code == 2
        assert lines[0].startswith("OK       fencing") and "1 host(s)" in lines[0]
        assert any(
            line.startswith("FAILURE  fencing") and "'compute-2': no fencing driver answers" in line
            for line in lines
        )
        assert sum(line.startswith("WARNING  fencing") for line in lines) == 2


def test_the_engine_keeps_its_bmc_sessions_in_one_worker_from_start_to_stop(
    db: Database, sim: Any, engine_factory: Any, tmp_path: Path
) -> None:
    with FakeBMC(USER, PASSWORD) as bmc:
        segment = add_segment(db)
        add_host(db, segment, "compute-1")
        path = tmp_path / "fencing.yaml"
        path.write_text(json.dumps({"version": 1, "hosts": {"compute-1": [entry(bmc)]}}))
        path.chmod(0o600)
        conf = make_conf(sim, **{"fencing.config_file": str(path), "fencing.check_interval": 3600})
        engine = engine_factory(conf, fencing=HostFencing.from_conf(conf))
        worker = ipmi.SESSIONS.pid
        assert worker is not None  # started with the engine, before any call

        # The check at start logs in; the session it made serves the fence's calls.
        wait_for(lambda: bmc.commands == ["status"], 30, "the check at start")
        driver = engine.fencing.power_driver(engine.fencing.drivers_for(FencedHost("compute-1"))[0])
        driver.power_off()
        assert driver.power_status() is PowerState.OFF
        assert bmc.logins == 1 and ipmi.SESSIONS.pid == worker

        engine.stop(grace=2)
        assert ipmi.SESSIONS.pid is None
        with pytest.raises(ProcessLookupError):
            os.kill(worker, 0)  # exited and reaped


def test_segment_check_runs_the_checks_live_when_it_can_read_the_file(
    db: Database, sim: Any, tmp_path: Path
) -> None:
    with FakeBMC(USER, PASSWORD) as good:
        segment = add_segment(db)
        add_host(db, segment, "compute-1")
        path = tmp_path / "fencing.yaml"
        path.write_text(json.dumps({"version": 1, "hosts": {"compute-1": [entry(good)]}}))
        path.chmod(0o600)
        conf_file = tmp_path / "manage.conf"
        write_engine_conf(conf_file, sim, str(db.engine.url))
        with open(conf_file, "a") as f:
            f.write(f"[fencing]\nconfig_file = {path}\n")
        out = io.StringIO()
        with redirect_stdout(out):
            manage.main(["--config-file", str(conf_file), "segment", "check"])
        assert "OK       fencing" in out.getvalue()
        assert "status" in good.commands
        with db.reader() as s:  # made live, recorded nowhere
            assert s.scalars(sa.select(FenceCheck)).all() == []


def test_an_entry_whose_driver_cannot_be_built_is_said_at_start_and_by_the_doctor(
    db: Database, sim: Any, engine_factory: Any, tmp_path: Path, caplog: Any
) -> None:
    # A fence agent that is not installed stands for any driver that cannot be built (the
    # [fencing] extra missing: "the ipmi driver needs pyghmi").
    segment = add_segment(db)
    add_host(db, segment, "compute-1")
    path = tmp_path / "fencing.yaml"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "hosts": {
                    "compute-1": [{"driver": "agent", "agent": "fence_not_installed"}],
                    # No host matches it yet: only the start and the file's check say so.
                    "rack9-*": [{"driver": "agent", "agent": "/nonexistent/fence_x"}],
                },
            }
        )
    )
    path.chmod(0o600)
    conf = make_conf(sim, **{"fencing.config_file": str(path), "fencing.check_interval": 3600})
    with caplog.at_level("ERROR", logger="masakari.engine.fencing"):
        engine_factory(conf, fencing=HostFencing.from_conf(conf))
    said = [r.getMessage() for r in caplog.records if r.name == "masakari.engine.fencing"]
    assert said == [
        f"Host fencing: fencing file {path}: {where} (agent): its driver cannot be built: "
        f"fence agent {agent!r} not found (looked in /usr/sbin, /sbin, /usr/bin, /bin and "
        "$PATH); a host whose list reaches this entry is not fenced by it"
        for where, agent in (
            ("hosts['compute-1'][0]", "fence_not_installed"),
            ("hosts['rack9-*'][0]", "/nonexistent/fence_x"),
        )
    ]

    def recorded() -> list[tuple[str, str | None]]:
        with db.reader() as s:
            return [(c.result, c.message) for c in fencing.checks(s)]

    # The engine's first check (at start) records it for the readiness doctor.
    wait_for(recorded, 30, "the first check is recorded")
    ((result, message),) = recorded()
    assert result == "failed"
    assert message is not None and message.startswith(
        "its driver cannot be built: fence agent 'fence_not_installed' not found"
    )

    def check(*extra: str) -> tuple[int, list[str]]:
        conf_file = tmp_path / "manage.conf"
        write_engine_conf(conf_file, sim, str(db.engine.url))
        with open(conf_file, "a") as f:
            f.writelines(extra)
        out = io.StringIO()
        with redirect_stdout(out):
            code = manage.main(["--config-file", str(conf_file), "segment", "check"])
        return code, [line for line in out.getvalue().splitlines() if " fencing" in line]

    # Run as another user (the file unreadable): the engines' recorded checks.
    code, lines = check()
    assert code == 2
    (line,) = lines
    assert line.startswith("FAILURE  fencing [seg-") and "Host 'compute-1'" in line
    assert "no fencing driver answers (agent: failed (its driver cannot be built" in line
    # Run as the engine's user: the checks made live, and the file's own findings.
    code, lines = check(f"[fencing]\nconfig_file = {path}\n")
    assert code == 2
    assert lines[0].startswith("FAILURE  fencing [seg-") and "Host 'compute-1'" in lines[0]
    assert lines[1:] == [
        f"WARNING  fencing: fencing file {path}: {where} (agent): its driver cannot be built: "
        f"fence agent {agent!r} not found (looked in /usr/sbin, /sbin, /usr/bin, /bin and "
        "$PATH): a host whose list reaches it is not fenced by it."
        for where, agent in (
            ("hosts['compute-1'][0]", "fence_not_installed"),
            ("hosts['rack9-*'][0]", "/nonexistent/fence_x"),
        )
    ]


def test_masakari_engine_refuses_a_fencing_file_that_does_not_load(tmp_path: Path) -> None:
    path = tmp_path / "fencing.yaml"
    path.write_text("version: 1\nhosts:\n  compute-1:\n    - driver: ipmi\n      password: x\n")
    conf_file = tmp_path / "engine.conf"
    conf_file.write_text(
        f"[database]\nconnection = sqlite:///{tmp_path}/m.db\n[fencing]\nconfig_file = {path}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "masakari.cmd.engine", "--config-file", str(conf_file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert f"fencing file {path}" in done.stderr and "hosts['compute-1'][0]" in done.stderr


class ReadsAs:
    """A power driver whose status read answers ``state`` (a BMC in a state the driver
    cannot map, or a driver that returns nothing)."""

    def __init__(self, spec: DriverSpec, state: Any) -> None:
        self.spec, self.state = spec, state

    def power_status(self) -> Any:
        return self.state


def test_a_power_state_neither_on_nor_off_fails_the_hosts_check(db: Database, sim: Any) -> None:
    answers = {"192.0.2.1": PowerState.ON, "192.0.2.2": PowerState.UNKNOWN, "192.0.2.3": None}
    specs = {f"compute-{i}": [DriverSpec("ipmi", address=a)] for i, a in enumerate(answers, 1)}

    def build(spec: DriverSpec) -> Any:
        return ReadsAs(spec, answers[spec.address or ""])

    class Plan:
        def drivers_for(self, host_name: str, *_: Any) -> list[DriverSpec]:
            return specs[host_name]

    host_fencing = HostFencing(
        plan=Plan(),
        power_driver=build,
        check=functools.partial(drivers.check, build=build),
    )
    clock = FakeClock()
    checker = FenceChecker(db, host_fencing, clock, "engine-a")
    found = checker.check_hosts([(name, "seg", "seg") for name in specs])
    assert {name: [c.result for c in rows] for name, rows in found.items()} == {
        "compute-1": ["ok"],
        "compute-2": ["failed"],
        "compute-3": ["failed"],
    }
    checks = [c for rows in found.values() for c in rows]
    findings = fence_doctor.findings(make_conf(sim), checks, "seg", list(specs), clock.now())
    assert findings[0] == (0, "fencing", "1 host(s) with a fencing driver that answers.")
    assert findings[1:] == [
        (
            2,
            "fencing",
            f"Host '{name}': no fencing driver answers (ipmi {address}: failed (power state "
            f"reads {shown}, neither on nor off: a power off could not be confirmed)): its "
            "failure would be held.",
        )
        for name, address, shown in (
            ("compute-2", "192.0.2.2", "unknown"),
            ("compute-3", "192.0.2.3", "None"),
        )
    ]


def test_a_lease_entry_is_checked_by_one_read_of_the_hosts_slot(
    db: Database, tmp_path: Path
) -> None:
    path = tmp_path / "lease.img"
    path.write_bytes(bytes(4 * lease.SLOT_SIZE))
    lease.write_slot(str(path), 0, lease.Slot("compute-1", 7, lease.HELD, 1000, 10000))
    lease.write_slot(str(path), 1, lease.Slot("compute-3", 7, lease.HELD, 1000, 0))
    options = {"interval": "1", "misses": "10", "watchdog_timeout": "10"}

    class Plan:
        def drivers_for(self, host_name: str, *_: Any) -> list[DriverSpec]:
            spec_options = {**options, "host": host_name}
            return [DriverSpec("lease", address=str(path), timeout=22, options=spec_options)]

    checker = FenceChecker(
        db, HostFencing(plan=Plan(), power_driver=drivers.power_driver), FakeClock(), "engine-a"
    )
    found = checker.check_hosts([(f"compute-{i}", "seg", "seg") for i in (1, 2, 3)])
    assert {name: [(c.result, c.message) for c in rows] for name, rows in found.items()} == {
        "compute-1": [("ok", "its slot is renewed by an agent with a watchdog")],
        "compute-2": [("failed", f"no slot of compute-2 in {path}")],
        "compute-3": [
            ("failed", "slot 1: its agent runs without a watchdog: its expiry proves nothing")
        ],
    }
