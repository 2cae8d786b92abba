"""The host fencing drills' helpers (tests/functional/engine/test_fencing_drills.py and
test_fencing_agent_drills.py): fencing files for fake BMCs, failed hosts, and what Nova, the
BMCs and the database saw. Their fixtures ``bmcs`` and ``engines`` are in the engine
conftest."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from masakari import metrics
from masakari.db import holds
from masakari.db.database import Database
from masakari.db.models import RecoveryTask
from tests.fakes.ipmi_bmc import FakeBMC
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.engine import add_host, wait_for

USER, PASSWORD = "admin", "s3cret-bmc-pw"


@contextlib.contextmanager
def fake_bmcs() -> Iterator[Callable[..., FakeBMC]]:
    """Makes fake IPMI BMCs with the drills' credentials (``knobs`` set on each), closed at
    the end."""
    made: list[FakeBMC] = []

    def make(**knobs: Any) -> FakeBMC:
        bmc = FakeBMC(USER, PASSWORD)
        for name, value in knobs.items():
            setattr(bmc, name, value)
        made.append(bmc)
        return bmc

    try:
        yield make
    finally:
        for bmc in made:
            bmc.close()


# A call to a dead BMC gives up after this; a live one may take the default's order (the
# IPMI worker process, slow to start on a loaded machine, starts again after a dead BMC's
# call). A power off is confirmed within CONFIRM_TIMEOUT.
DEAD_TIMEOUT = 1.5
LIVE_TIMEOUT = 10.0
CONFIRM_TIMEOUT = 1.5
# What the fence step asks of Nova before the power off ([host_failure]'s default reason).
DISABLE = {"status": "disabled", "disabled_reason": "Masakari detected host failed."}
FENCING = {
    "fencing.confirm_interval": 0.2,
    "fencing.confirm_timeout": CONFIRM_TIMEOUT,
    "fencing.check_interval": 0,
    # Without host fencing's hand-off the evacuations would wait 3 minutes: they do not.
    "wait_period_after_service_update": 180,
}


def ipmi(bmc: FakeBMC, name: str = "") -> dict[str, Any]:
    timeout = DEAD_TIMEOUT if bmc.dead else LIVE_TIMEOUT
    entry = {
        "driver": "ipmi",
        "address": bmc.address,
        "port": bmc.port,
        "username": USER,
        "password": PASSWORD,
        "timeout": timeout,
    }
    return {**entry, "name": name} if name else entry


def fencing_file(tmp_path: Path, hosts: dict[str, list[dict[str, Any]]]) -> str:
    path = tmp_path / "fencing.yaml"
    path.write_text(json.dumps({"version": 1, "hosts": hosts}))  # JSON is YAML
    path.chmod(0o600)
    return str(path)


def failed_host(
    db: Database,
    sim: NovaSimulator,
    segment: str,
    name: str,
    instances: int = 2,
    status: str = "enabled",
) -> tuple[str, list[str]]:
    """A host with HA instances that is still up in Nova (its monitor saw it die)."""
    sim.add_service(name, status=status)
    servers = [sim.add_server(host=name, metadata={"HA_Enabled": "True"}) for _ in range(instances)]
    return add_host(db, segment, name), servers


class Events:
    """Stands for the engine's versioned notifier: what the runner asked it to send (the
    host.update notices, which ask ``enabled`` first, stay off)."""

    enabled = False

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any], str]] = []

    def emit(
        self, event_type: str, payload: dict[str, Any], error: bool = False, warning: bool = False
    ) -> None:
        self.sent.append(
            (event_type, payload, "error" if error else "warning" if warning else "info")
        )

    def wait_for(self, event_type: str) -> tuple[str, dict[str, Any], str]:
        return wait_for(
            lambda: next((e for e in self.sent if e[0] == event_type), None), 10, event_type
        )


def counted(name: str, *labels: str) -> float:
    counter = getattr(metrics.instruments(), name)
    return float((counter.labels(*labels) if labels else counter)._value.get())


def sent(bmc: FakeBMC) -> list[str]:
    """What the BMC received, pyghmi's retransmissions counted once."""
    return [c for i, c in enumerate(bmc.commands) if i == 0 or bmc.commands[i - 1] != c]


def mutations(sim: NovaSimulator) -> list[Any]:
    return [c for c in sim.calls if c.method in ("POST", "PUT", "DELETE")]


def evacuations(sim: NovaSimulator) -> list[Any]:
    return [c for c in mutations(sim) if isinstance(c.body, dict) and "evacuate" in c.body]


attempts = rows.fence_attempts


def fence_task(db: Database, nid: str) -> list[tuple[int, str, list[str]]]:
    with db.reader() as s:
        rows = s.scalars(
            sa.select(RecoveryTask)
            .where(RecoveryTask.notification_uuid == nid, RecoveryTask.name == "FenceHostTask")
            .order_by(RecoveryTask.attempt)
        )
        return [(r.attempt, r.state, [d["message"] for d in json.loads(r.details)]) for r in rows]


def held(db: Database, nid: str) -> str | None:
    with db.reader() as s:
        return holds.reasons(s, [nid]).get(nid)


def assert_evacuated_once(sim: NovaSimulator, servers: list[str], source: str) -> None:
    assert sorted(
        c.path for c in evacuations(sim) if c.path in {f"/servers/{v}/action" for v in servers}
    ) == sorted(f"/servers/{v}/action" for v in servers)
    for vm in servers:
        assert sim.evacuations_accepted.get(vm) == 1, vm
        assert sim.server(vm)["OS-EXT-SRV-ATTR:host"] != source, vm
