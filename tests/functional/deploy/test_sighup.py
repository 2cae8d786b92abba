"""SIGHUP to the real processes: they re-read masakari.conf's mutable options (log levels)
and keep running; the API's new workers read the policy file afresh. SIGTERM still stops."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from masakari.db import migration
from masakari.db.database import Database
from tests.fakes.nova import NovaSimulator
from tests.support.api_process import APIProcess, request
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    notify,
    spawn_engine,
    status_of,
    vmoves,
    wait_for,
    write_engine_conf,
)

RELOADED = "SIGHUP: configuration files read again; changed: DEFAULT.debug"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database.from_url(f"sqlite:///{tmp_path}/masakari.db")
    migration.upgrade(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    with NovaSimulator() as simulator:
        yield simulator


def _debug_lines(log: str) -> int:
    return sum(1 for line in log.splitlines() if " DEBUG " in line)


def test_sighup_changes_the_engines_log_level_and_it_goes_on_recovering(
    tmp_path: Path, db: Database, sim: NovaSimulator
) -> None:
    conf_file = tmp_path / "masakari.conf"
    log_file = tmp_path / "engine.log"
    url = str(db.engine.url)
    write_engine_conf(conf_file, sim, url, debug="false")
    engine = spawn_engine(conf_file, log_file)
    try:
        wait_for(lambda: "starting" in log_file.read_text(), 60, "the engine starts")
        time.sleep(1)
        assert _debug_lines(log_file.read_text()) == 0
        write_engine_conf(conf_file, sim, url, debug="true")
        os.killpg(engine.pid, signal.SIGHUP)
        wait_for(lambda: RELOADED in log_file.read_text(), 10, "the reload line")
        assert engine.poll() is None

        # Still recovering; the option values logged at the reload are at DEBUG, now shown.
        sim.add_service("compute-1", state="down")
        sim.add_service("compute-2")
        server = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        host = add_host(db, add_segment(db), "compute-1")
        nid = notify(db, host, "COMPUTE_HOST", HOST_DOWN)
        wait_for(lambda: status_of(db, nid) == "finished", 60, "the recovery", interval=0.2)
        assert [(v.instance_uuid, v.status) for v in vmoves(db, nid)] == [(server, "succeeded")]
        after = log_file.read_text().split(RELOADED, 1)[1]
        assert _debug_lines(after) > 0
    finally:
        if engine.poll() is None:
            os.killpg(engine.pid, signal.SIGTERM)
        assert engine.wait(timeout=30) == 0, log_file.read_text()[-3000:]


def _policy(path: Path, rule: str) -> None:
    path.write_text(f'"os_masakari_api:segments:index": "{rule}"\n')


def test_sighup_reloads_the_apis_log_level_and_policy_and_it_keeps_serving(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yaml"
    _policy(policy, "@")
    api = APIProcess(
        str(tmp_path),
        f"sqlite:///{tmp_path}/masakari.db",
        workers=2,
        extra=f"[DEFAULT]\ndebug = false\n[oslo_policy]\npolicy_file = {policy}\n",
    )
    try:
        assert request(api.port, "GET", "/v1/segments")[0] == 200
        # The policy file changes under a new rule the workers would read only within their
        # recheck; and debug is turned on in masakari.conf.
        with open(api.conf) as fh:
            text = fh.read()
        with open(api.conf, "w") as fh:
            fh.write(text.replace("debug = false", "debug = true"))
        _policy(policy, "!")
        os.killpg(api.proc.pid, signal.SIGHUP)
        wait_for(lambda: RELOADED in api.log(), 20, "the reload line")

        def refused() -> bool:
            try:
                return request(api.port, "GET", "/v1/segments")[0] == 403
            except OSError:
                return False

        wait_for(refused, 30, "the new policy", interval=0.2)
        assert api.proc.poll() is None
        assert request(api.port, "GET", "/")[0] == 200
        assert _debug_lines(api.log().split(RELOADED, 1)[1]) > 0
    finally:
        assert api.stop() == 0, api.log()[-3000:]
