"""A rolling upgrade with the reference's processes and the project's on one database.

kolla-ansible, openstack-ansible (`serial: ['1', '100%']`) and openstack-helm (RollingUpdate)
all run old and new services side by side for a while (docs/upgrade.md). Asserted on what Nova
received and what the database holds: every notification ends finished, each instance is
evacuated once, whichever version recovers it.
"""

from __future__ import annotations

import collections
import os
import re
import time
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.db import migration
from masakari.db.database import Database
from tests.db import backends
from tests.fakes.nova import SERVICE_PROJECT_ID, NovaSimulator
from tests.support.ports import free_port
from tests.support.upgrade import (
    HOST_DOWN,
    REF_PYTHON,
    REFERENCE_SERVER,
    conf_file,
    connect,
    project,
    reference,
)

pytestmark = [
    pytest.mark.skipif(not REF_PYTHON, reason="MASAKARI_REF_PYTHON (the reference's Python) unset"),
    pytest.mark.skipif(
        not os.path.exists(REFERENCE_SERVER), reason=f"{REFERENCE_SERVER} not found"
    ),
]

# Long enough evacuations, two at a time, that the reference is still at it (with instances
# not yet evacuated) when the project's engine starts.
EVACUATION_SECONDS = 20
SERVERS_PER_HOST = 6


@pytest.fixture(params=["postgresql", "mysql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    reason = backends.server_reachable(request.param)
    if reason:
        if request.config.getoption("--require-servers"):
            pytest.fail(reason)
        pytest.skip(reason)
    with backends.temporary_database(request.param, str(tmp_path)) as url:
        yield url


@pytest.fixture
def sim() -> Any:
    with NovaSimulator(service_down_time=0, evacuate_delay=EVACUATION_SECONDS) as simulator:
        for host in ("compute-1", "compute-2", "compute-3", "compute-4"):
            simulator.add_service(host)
        yield simulator


def _shared_conf(directory: str, sim: NovaSimulator, port: int, db_url: str) -> str:
    path = conf_file(directory, sim, port)
    with open(path) as fh:
        text = fh.read()
    text = re.sub(r"(?m)^connection = sqlite:///.*/masakari\.db$", f"connection = {db_url}", text)
    # The reference waits this long for each evacuation to show.
    text = text.replace(
        "wait_period_after_evacuation = 3",
        "wait_period_after_evacuation = 60\nhost_failure_recovery_threads = 2",
    )
    with open(path, "w") as fh:
        fh.write(text)
    return path


def _evacuations(sim: NovaSimulator) -> collections.Counter[str]:
    return collections.Counter(
        c["path"].split("/")[-2]
        for c in sim.nova_calls()
        if c["method"] == "POST" and isinstance(c["body"], dict) and "evacuate" in c["body"]
    )


def _statuses(db_url: str) -> dict[str, str]:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT notification_uuid, status FROM notifications"))
            return {r[0]: r[1] for r in rows}
    finally:
        engine.dispose()


def _wait_engine(db_url: str, timeout: float = 60) -> None:
    """Until a project engine has written its first heartbeat."""
    engine = sa.create_engine(db_url)
    deadline = time.monotonic() + timeout
    try:
        while True:
            with engine.connect() as conn:
                if conn.scalar(sa.text("SELECT count(*) FROM masakari_engine_heartbeats")):
                    return
            assert time.monotonic() < deadline, "no engine heartbeat"
            time.sleep(0.2)
    finally:
        engine.dispose()


def _report(sim: NovaSimulator, host: str) -> str:
    sim.power_off(host)
    conn = connect(sim)
    try:
        created = conn.instance_ha.create_notification(
            type="COMPUTE_HOST",
            hostname=host,
            generated_time=time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
            payload=HOST_DOWN,
        )
        return str(created.notification_uuid)
    finally:
        conn.close()


def _wait_status(db_url: str, uuid: str, wanted: set[str], timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while (status := _statuses(db_url).get(uuid)) not in wanted:
        assert time.monotonic() < deadline, f"{uuid} still {status}"
        time.sleep(0.2)
    return str(status)


def _setup(sim: NovaSimulator) -> dict[str, list[str]]:
    servers = {
        host: [
            sim.add_server(host=host, metadata={"HA_Enabled": "True"})
            for _ in range(SERVERS_PER_HOST)
        ]
        for host in ("compute-1", "compute-3")
    }
    conn = connect(sim)
    try:
        ha = conn.instance_ha
        seg = ha.create_segment(name="rack-1", recovery_method="auto", service_type="compute")
        for host in ("compute-1", "compute-2", "compute-3", "compute-4"):
            ha.create_host(seg.uuid, name=host, type="COMPUTE", control_attributes="SSH")
    finally:
        conn.close()
    return servers


def test_old_and_new_services_overlap(tmp_path: Any, sim: NovaSimulator, db_url: str) -> None:
    old_dir = tmp_path / "old"
    new_dir = tmp_path / "new"
    old_dir.mkdir()
    new_dir.mkdir()
    old_port, new_port = free_port(), free_port()
    sim.catalog_extra["instance-ha"] = f"http://127.0.0.1:{old_port}/v1/{SERVICE_PROJECT_ID}"
    old_conf = _shared_conf(str(old_dir), sim, old_port, db_url)
    new_conf = _shared_conf(str(new_dir), sim, new_port, db_url)

    old = reference(str(old_dir), old_conf, old_port, sync=True)
    new = None
    try:
        # The upgrade's db sync, while the reference runs (its schema is left as it is).
        database = Database.from_url(db_url)
        try:
            migration.upgrade(database.engine)
        finally:
            database.dispose()
        servers = _setup(sim)

        # 1. The old engine is in the middle of a host recovery when a new engine starts.
        first = _report(sim, "compute-1")
        _wait_status(db_url, first, {"running"})
        new = project(str(new_dir), new_conf, new_port)
        _wait_engine(db_url)
        # The new engine looked for orphans at its start: the old one is still at it.
        time.sleep(2)
        assert _statuses(db_url)[first] == "running"
        assert _wait_status(db_url, first, {"finished", "error", "failed"}) == "finished"

        # 2. A new API beside the old engine (and the new one): a report through it.
        sim.catalog_extra["instance-ha"] = f"http://127.0.0.1:{new_port}/v1/{SERVICE_PROJECT_ID}"
        second = _report(sim, "compute-3")
        assert _wait_status(db_url, second, {"finished", "error", "failed"}) == "finished"
    finally:
        if new is not None:
            new.stop()
        old.stop()

    evacuated = _evacuations(sim)
    assert {server: evacuated[server] for host in servers.values() for server in host} == {
        server: 1 for host in servers.values() for server in host
    }, evacuated
    assert set(_statuses(db_url).values()) == {"finished"}
