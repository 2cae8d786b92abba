"""[host_failure] retry_only_while_host_down: the periodic retry of a host failure recovery
that ended in error, with the host back or still down. Asserted on what Nova received and
holds, and on what the database holds.

Each test runs the first attempt on one engine, which is stopped once the notification is in
error (its retry would come only after 120 s), changes the host, then starts the engine that
retries it (every second): the retry sees the host as the test left it. Every evacuation
fails until then, so that a takeover of the first attempt (a claim renewed late on a busy
machine) ends in error too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from masakari import metrics
from masakari.db import failures
from masakari.db.database import Database
from masakari.engine.fencing import HostFencing
from masakari.engine.service import EngineService
from masakari.fencing.base import DriverSpec, PowerState
from tests.fakes.nova import NovaSimulator
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    details,
    host_row,
    make_conf,
    notify,
    vmoves,
    wait_status,
)

OPTION = "host_failure.retry_only_while_host_down"
FORCE_DOWN = "host_failure.force_down_fenced_host"
FINAL = ("finished", "failed")


@dataclasses.dataclass
class BMC:
    """compute-1's power, as a fencing driver sees it and as Nova does (sim.tie_power): what
    it was asked is kept."""

    spec: DriverSpec = dataclasses.field(default_factory=lambda: DriverSpec("ipmi", "192.0.2.1"))
    state: PowerState = PowerState.ON
    calls: list[str] = dataclasses.field(default_factory=list)
    followers: list[Callable[[str], None]] = dataclasses.field(default_factory=list)

    def on_power_change(self, callback: Callable[[str], None]) -> None:
        self.followers.append(callback)

    def switch(self, state: PowerState) -> None:
        self.state = state
        for follow in self.followers:
            follow(state.value)

    def power_off(self) -> None:
        self.calls.append("off")
        self.switch(PowerState.OFF)

    def power_status(self) -> PowerState:
        self.calls.append("status")
        return self.state

    def power_on(self) -> None:
        self.calls.append("on")
        self.switch(PowerState.ON)


@dataclasses.dataclass
class Plan:
    bmc: BMC

    def drivers_for(
        self, host_name: str, segment_name: str | None = None, segment_uuid: str | None = None
    ) -> Sequence[DriverSpec] | None:
        return [self.bmc.spec] if host_name == "compute-1" else None


def _fencing(bmc: BMC) -> HostFencing:
    return HostFencing(plan=Plan(bmc), power_driver=lambda spec: bmc, confirm_interval=0.1)


def _start(
    db: Database, sim: NovaSimulator, fencing: HostFencing | None = None, **options: Any
) -> EngineService:
    conf = make_conf(sim, **options)
    engine = EngineService(conf, db, sim.client(timeout=5), sweep_interval=1, fencing=fencing)
    engine.start()
    return engine


@dataclasses.dataclass(frozen=True)
class Failed:
    """A host failure whose recovery ended in error: what the retry starts from."""

    host: str  # the host's uuid
    nid: str
    vm: str
    attempts: int  # the attempts recorded so far
    vmoves: list[str]  # their statuses


def _first_attempt_errors(
    db: Database, sim: NovaSimulator, fencing: HostFencing | None = None, **options: Any
) -> Failed:
    """compute-1 failed with one instance, whose evacuations get a 500: the recovery ends in
    error. Then Nova evacuates again."""
    sim.add_service("compute-1", state="down")
    sim.add_service("compute-2")
    vm = sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
    sim.fail(500, method="POST", action="evacuate")
    host = add_host(db, add_segment(db), "compute-1")
    nid = notify(db, host, "COMPUTE_HOST", HOST_DOWN)
    engine = _start(db, sim, fencing, **options)
    try:
        assert wait_status(db, nid, ("error", *FINAL)) == "error"
    finally:
        engine.stop(grace=2)
    sim.clear_faults()
    attempts = max(a for a, *_ in details(db, nid))
    return Failed(host, nid, vm, attempts, [v.status for v in vmoves(db, nid)])


def _retried(db: Database, failed: Failed) -> list[tuple[int, str, str, list[str]]]:
    """The progress rows of the retry: (attempt, task, state, [message])."""
    return [row for row in details(db, failed.nid) if row[0] > failed.attempts]


def _retry(
    db: Database, sim: NovaSimulator, nid: str, fencing: HostFencing | None = None, **options: Any
) -> str:
    """Run the periodic retry on a fresh engine; what Nova received is recorded from here."""
    sim.clear_calls()
    engine = _start(db, sim, fencing, process_unfinished_notifications_interval=1, **options)
    try:
        return wait_status(db, nid, FINAL)
    finally:
        engine.stop(grace=2)


def _changes(sim: NovaSimulator) -> list[tuple[str, str]]:
    return [(c["method"], c["path"]) for c in sim.nova_calls() if c["method"] != "GET"]


def _settings(sim: NovaSimulator) -> tuple[str, str | None, bool]:
    """What masakari sets on compute-1's nova-compute: status, disabled reason, forced down."""
    service = sim.service("compute-1")
    return service["status"], service["disabled_reason"], service["forced_down"]


def _failure_reason(db: Database, nid: str) -> str | None:
    with db.reader() as session:
        return failures.reasons(session, [nid]).get(nid)


def _retries_host_back() -> float:
    return float(metrics.instruments().retries_host_back._value.get())


@pytest.mark.parametrize("server_db", ["sqlite", "postgresql", "mysql"], indirect=True)
@pytest.mark.parametrize("forced", [False, True], ids=["disabled", "forced-down"])
def test_a_host_back_before_the_retry_is_left_alone(
    server_db: Database, sim: NovaSimulator, forced: bool
) -> None:
    db = server_db
    options = {OPTION: True, FORCE_DOWN: forced}
    failed = _first_attempt_errors(db, sim, **options)
    left = _settings(sim)
    assert left == ("disabled", "Masakari detected host failed.", forced)
    sim.power_on("compute-1")
    counted = _retries_host_back()

    assert _retry(db, sim, failed.nid, **options) == "failed"

    # One read of the host's nova-compute, and nothing else: no disable, evacuation or lock.
    assert [(c["method"], c["path"]) for c in sim.nova_calls()] == [("GET", "/os-services")]
    query = sorted(sim.nova_calls()[0]["query"])
    assert query == [["binary", "nova-compute"], ["host", "compute-1"]]
    assert _settings(sim) == left
    assert sim.server(failed.vm)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    assert host_row(db, failed.host).on_maintenance
    assert [v.status for v in vmoves(db, failed.nid)] == failed.vmoves
    [(_, task, state, [message])] = _retried(db, failed)
    assert (task, state) == ("CheckHostDownTask", "FAILURE")
    state = "forced down" if forced else "up"
    assert message.startswith(f"Host 'compute-1' is back: its nova-compute is {state}, ")
    assert "the recovery is not retried" in message
    assert "(its nova-compute disabled" + (", forced down" if forced else "") in message
    assert "the host on maintenance)" in message
    assert _failure_reason(db, failed.nid) == message
    assert _retries_host_back() == counted + 1


@pytest.mark.parametrize("server_db", ["sqlite", "postgresql", "mysql"], indirect=True)
def test_a_host_still_down_is_retried_as_before(server_db: Database, sim: NovaSimulator) -> None:
    db = server_db
    failed = _first_attempt_errors(db, sim, **{OPTION: True})

    assert _retry(db, sim, failed.nid, **{OPTION: True}) == "finished"

    assert sim.server(failed.vm)["OS-EXT-SRV-ATTR:host"] == "compute-2"
    assert [v.status for v in vmoves(db, failed.nid)] == [*failed.vmoves, "succeeded"]
    assert "evacuate" in sim.actions(failed.vm)
    assert ("PUT", f"/os-services/{sim.service('compute-1')['id']}") in _changes(sim)
    check, *flow = _retried(db, failed)
    after = failed.attempts
    assert check[:3] == (after + 1, "CheckHostDownTask", "SUCCESS")
    [message] = check[3]
    assert message.startswith("Host 'compute-1' is not back: its nova-compute is down, ")
    tasks = [(a, name, state) for a, name, state, _ in flow]
    assert (after + 2, "DisableComputeServiceTask", "SUCCESS") in tasks
    assert (after + 2, "EvacuateInstancesTask", "SUCCESS") in tasks


def test_without_the_option_the_retry_disables_and_evacuates_a_host_back(
    db: Database, sim: NovaSimulator
) -> None:
    """masakari 22.0.0's retry, kept at the defaults: the host is disabled again and its
    instances sent to Nova, which refuses them (its nova-compute is up)."""
    failed = _first_attempt_errors(db, sim)
    sim.power_on("compute-1")

    assert _retry(db, sim, failed.nid) == "failed"

    service = sim.service("compute-1")
    assert ("PUT", f"/os-services/{service['id']}") in _changes(sim)
    evacuations = [c for c in sim.nova_calls() if c["body"] == {"evacuate": {}}]
    assert [c["status"] for c in evacuations] == [400]
    assert service["status"] == "disabled"
    assert sim.server(failed.vm)["OS-EXT-SRV-ATTR:host"] == "compute-1"
    retried = {name for _, name, _, _ in _retried(db, failed)}
    assert "DisableComputeServiceTask" in retried
    assert "CheckHostDownTask" not in retried


def test_a_fenced_host_back_before_the_retry_is_not_fenced_again(
    db: Database, sim: NovaSimulator
) -> None:
    """With host fencing, the check comes before FenceHostTask: a host powered on again
    after the first attempt fenced it is not powered off by the retry."""
    bmc = BMC()
    sim.tie_power("compute-1", bmc)
    fencing = _fencing(bmc)
    failed = _first_attempt_errors(db, sim, fencing, **{OPTION: True})
    assert bmc.state is PowerState.OFF
    assert _settings(sim) == ("disabled", "Masakari detected host failed.", True)
    bmc.power_on()  # the operator's, say
    bmc.calls.clear()

    assert _retry(db, sim, failed.nid, fencing, **{OPTION: True}) == "failed"

    assert bmc.calls == []
    assert bmc.state is PowerState.ON
    assert [(c["method"], c["path"]) for c in sim.nova_calls()] == [("GET", "/os-services")]
    assert _settings(sim) == ("disabled", "Masakari detected host failed.", True)
    assert host_row(db, failed.host).on_maintenance
    [(_, task, state, [message])] = _retried(db, failed)
    assert (task, state) == ("CheckHostDownTask", "FAILURE")
    assert message.startswith("Host 'compute-1' is back: its nova-compute is forced down, ")
