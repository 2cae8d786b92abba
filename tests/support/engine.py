"""The engine tests' helpers: fast options, the row builders under their engine names, waits
for a notification's status, and masakari-engine as a process."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari import signals
from masakari.db import quarantines as quarantines_db
from masakari.db.database import Database
from masakari.db.models import Quarantine, VMove
from masakari.engine.fencing import HostFencing
from tests.fakes.nova import NovaSimulator
from tests.support import rows

# Fast timings: every confirmation polls every 0.1 s and gives up after 1.5 s.
FAST = {
    "wait_period_after_service_update": 0,
    "wait_period_after_evacuation": 2,
    "wait_period_after_power_off": 2,
    "wait_period_after_power_on": 2,
    "verify_interval": 1,
    "engine_poll_interval": 0.05,
    "engine_claim_timeout": 5,
    "engine_claim_renew_interval": 1,
    "engine_claim_margin": 1.5,
    "nova_api_timeout": 5,
}


def make_conf(sim: NovaSimulator, **overrides: Any) -> cfg.ConfigOpts:
    return masakari_conf.for_tests(**{**sim.conf_overrides(), **FAST, **overrides})


# The row builders, under the names the engine tests have always imported.
add_segment = rows.segment
add_host = rows.host
notify = rows.notification
HOST_DOWN = rows.HOST_DOWN
status_of = rows.status_of
host_row = rows.host_row


def with_signals(
    conf: cfg.ConfigOpts, db: Database, fencing: HostFencing | None = None
) -> dict[str, Any]:
    """EngineService's keywords for quarantine's signals, as masakari-engine wires them."""
    built = signals.build(conf, db, fencing)
    return {
        "addons": [built],
        "judge_instance": built.judge_instance,
        "record_host_failure": built.record_host_failure,
        "fencing": fencing,
    }


def wait_status(
    db: Database,
    nid: str,
    statuses: tuple[str, ...] = ("finished", "error", "ignored", "failed"),
    timeout: float = 30.0,
) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = status_of(db, nid)
        if status in statuses:
            return status
        time.sleep(0.05)
    raise AssertionError(f"notification {nid} still {status_of(db, nid)} after {timeout}s")


def details(db: Database, nid: str) -> list[tuple[int, str, str, list[str]]]:
    """The progress rows: (attempt, task, state, [message])."""
    return [(a, n, st, [m for _, m in msgs]) for a, n, st, _, msgs in rows.task_rows(db, nid)]


def vmoves(db: Database, nid: str) -> list[VMove]:
    with db.reader() as s:
        return s.query(VMove).filter_by(notification_uuid=nid).order_by(VMove.id).all()


def write_engine_conf(
    path: Any, sim: NovaSimulator, db_url: str, user: str = "masakari", **extra: Any
) -> None:
    """A masakari.conf for a masakari-engine process on ``db_url``, calling Nova as ``user``.

    Fast claims: lost 5 s after the last renewal, renewed every second, and the engine stops
    acting 1.5 s before the expiry.
    """
    conf = make_conf(sim)
    lines = [
        "[DEFAULT]",
        f"host = {user}",
        f"os_privileged_user_name = {user}",
        f"os_privileged_user_password = {conf.os_privileged_user_password}",
        f"os_privileged_user_tenant = {conf.os_privileged_user_tenant}",
        f"os_privileged_user_auth_url = {conf.os_privileged_user_auth_url}",
        "nova_catalog_admin_info = compute:nova:publicURL",
        "wait_period_after_service_update = 0",
        "wait_period_after_evacuation = 30",
        "verify_interval = 1",
        "engine_poll_interval = 0.1",
        "engine_claim_timeout = 5",
        "engine_claim_renew_interval = 1",
        "engine_claim_margin = 1.5",
        *(f"{k} = {v}" for k, v in extra.items()),
        "[database]",
        f"connection = {db_url}",
        "[keystone_authtoken]",
        "auth_type = password",
    ]
    path.write_text("\n".join(lines) + "\n")


def spawn_engine(conf_file: Any, log_file: Any) -> subprocess.Popen[bytes]:
    """masakari-engine in a session of its own (so that a test can signal it alone)."""
    with open(log_file, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "masakari.cmd.engine", "--config-file", str(conf_file)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout} s")


def quarantine_ended(db: Database, uuid: str, timeout: float = 30) -> Quarantine:
    """The quarantine once it is neither waiting for an engine nor running."""

    def ended() -> Quarantine | None:
        with db.reader() as session:
            row = quarantines_db.get(session, uuid)
            if row is None or row.status in (quarantines_db.REQUESTED, quarantines_db.RUNNING):
                return None
            session.expunge(row)
            return row

    return wait_for(ended, timeout, f"quarantine {uuid} ended")
