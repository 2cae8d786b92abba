"""The shared-disk lease in the fence step and the verdict, on SQLite with the fake clock: a
slot in a real file, renewed by a stand-in agent on the same clock (the real agent process
on a loop device: tests/functional/engine/test_lease_drills.py).

Asserted on the fence attempts, the hold and what the power driver was asked.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.db import evidence as ev
from masakari.db import holds
from masakari.db.models import Notification
from masakari.engine import verdict
from masakari.engine.errors import Held
from masakari.engine.fencing import FencedHost, HostFencing
from masakari.engine.payloads import HostPayload
from masakari.engine.recovery import fence
from masakari.engine.recovery.flow import Store
from masakari.fencing import lease
from masakari.fencing.base import DriverSpec, PowerState, Unreachable
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.clock import EPOCH, FakeClock
from tests.support.fencing import IPMI, Plan
from tests.support.runs import make_run

HOST = "compute-1"


@dataclasses.dataclass
class Agent:
    """The host's agent on the fake clock: renews its slot each interval while running."""

    path: str
    watchdog_ms: int = 5000
    running: bool = True
    counter: int = 0

    def renew(self) -> None:
        if self.running:
            self.counter += 1
            slot = lease.Slot(HOST, self.counter, lease.HELD, 1000, self.watchdog_ms)
            lease.write_slot(self.path, 0, slot)


@dataclasses.dataclass
class BMC:
    """A power driver that records its calls; reads Off after its off, or is unreachable."""

    spec: DriverSpec
    dead: bool = False
    calls: list[str] = dataclasses.field(default_factory=list)

    def power_off(self) -> None:
        self.calls.append("off")
        if self.dead:
            raise Unreachable("no answer in 10 s")

    def power_status(self) -> PowerState:
        self.calls.append("status")
        return PowerState.OFF

    def power_on(self) -> None:
        self.calls.append("on")


@pytest.fixture(autouse=True)
def compute(sim: NovaSimulator) -> None:
    sim.add_service(HOST, state="down")


@pytest.fixture
def agent(tmp_path: Path, clock: FakeClock) -> Agent:
    path = tmp_path / "lease"
    path.write_bytes(bytes(4 * lease.SLOT_SIZE))
    renewing = Agent(str(path))
    renewing.renew()
    clock.every(1.0, renewing.renew)
    return renewing


def lease_entry(path: str, timeout: float = 12.0) -> DriverSpec:
    """Renewals every second, 5 misses, watchdog 5 s: stalled after 5 s, expired after 10."""
    options = {"interval": "1", "misses": "5", "watchdog_timeout": "5", "host": HOST}
    return DriverSpec("lease", address=path, timeout=timeout, options=options)


def fencing_of(specs: list[DriverSpec], bmc: BMC | None = None) -> HostFencing:
    return HostFencing(
        plan=Plan({HOST: specs}),
        power_driver=lambda spec: bmc,  # type: ignore[arg-type,return-value]
        confirm_interval=1.0,
        confirm_timeout=5.0,
    )


def step(run: Any, fencing: HostFencing) -> Store:
    run.fencing = fencing
    store = Store(run.notification_uuid, host_name=HOST, host_status="NORMAL")
    fence.fence_first(run, store, FencedHost(HOST))
    return store


attempts = rows.fence_attempts


def test_a_host_that_renews_is_held_before_its_power_driver_wherever_the_lease_sits(
    db, nova, clock, agent
) -> None:
    run = make_run(db, nova, clock)
    bmc = BMC(IPMI)
    with pytest.raises(Held) as held:
        step(run, fencing_of([IPMI, lease_entry(agent.path)], bmc))
    nid = run.notification_uuid
    assert bmc.calls == [], "neither powered off nor read"
    assert held.value.reason.startswith(
        f"host renews its lease: lease {agent.path}: slot 0: counter 1 -> 2 within "
    )
    assert held.value.reason.endswith(" s")
    assert attempts(db, nid) == [(1, "lease", "renewing")]
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {nid: held.value.reason}
    assert clock.monotonic() <= 1.0, "seen within one interval"
    assert holds.is_fence_reason(held.value.reason)  # its release: the host is dead


def test_an_expired_lease_proves_the_host_dead_without_a_bmc(db, nova, clock, agent) -> None:
    run = make_run(db, nova, clock)
    agent.running = False  # the host died after its last renewal
    bmc = BMC(IPMI, dead=True)
    store = step(run, fencing_of([lease_entry(agent.path), IPMI], bmc))
    assert store.host_fenced
    assert bmc.calls == []
    assert attempts(db, run.notification_uuid) == [(0, "lease", "expired")]
    assert 10.0 <= clock.monotonic() <= 10.5, "the expiry on masakari's clock, no more"


def test_a_timeout_equal_to_the_expiry_still_sees_it(db, nova, clock, agent) -> None:
    run = make_run(db, nova, clock)
    agent.running = False
    assert step(run, fencing_of([lease_entry(agent.path, timeout=10.0)])).host_fenced
    assert attempts(db, run.notification_uuid) == [(0, "lease", "expired")]


def test_a_stalled_lease_lets_the_bmc_try_then_proves_when_it_does_not_answer(
    db, nova, clock, agent
) -> None:
    run = make_run(db, nova, clock)
    agent.running = False
    bmc = BMC(IPMI, dead=True)  # a total power loss: the BMC died with the host
    store = step(run, fencing_of([IPMI, lease_entry(agent.path)], bmc))
    assert store.host_fenced
    assert bmc.calls == ["off"]
    assert attempts(db, run.notification_uuid) == [
        (1, "lease", "stalled"),
        (0, "off", "unreachable"),
        (1, "lease", "expired"),
    ]


def test_a_stalled_lease_and_a_bmc_that_answers_need_no_expiry(db, nova, clock, agent) -> None:
    run = make_run(db, nova, clock)
    agent.running = False
    bmc = BMC(IPMI)
    assert step(run, fencing_of([IPMI, lease_entry(agent.path)], bmc)).host_fenced
    assert bmc.calls == ["off", "status"]
    assert attempts(db, run.notification_uuid) == [
        (1, "lease", "stalled"),
        (0, "off", "done"),
        (0, "status", "off"),
    ]
    assert clock.monotonic() < 6.0


def test_a_renewal_after_a_stall_still_vetoes(db, nova, clock, agent) -> None:
    """An agent that was frozen (SIGSTOP, a hung disk) renews again before the expiry."""
    run = make_run(db, nova, clock)
    agent.running = False
    clock.every(7.0, lambda: setattr(agent, "running", True))
    bmc = BMC(IPMI)
    with pytest.raises(Held):
        step(run, fencing_of([lease_entry(agent.path), IPMI], bmc))
    assert bmc.calls == []
    assert attempts(db, run.notification_uuid) == [(0, "lease", "renewing")]


def test_a_slot_that_cannot_be_read_is_no_proof(db, nova, clock, tmp_path) -> None:
    run = make_run(db, nova, clock)
    missing = str(tmp_path / "no-such-device")
    bmc = BMC(IPMI)
    assert step(run, fencing_of([lease_entry(missing), IPMI], bmc)).host_fenced
    assert attempts(db, run.notification_uuid) == [
        (0, "lease", "failed"),
        (1, "off", "done"),
        (1, "status", "off"),
    ]
    again = make_run(db, nova, clock)
    with pytest.raises(Held) as held:
        step(again, fencing_of([lease_entry(missing)]))
    assert held.value.reason == (
        f"power fencing failed: lease {missing}: cannot read {missing}: No such file or directory"
    )


def test_an_agent_without_watchdog_proves_nothing(db, nova, clock, agent) -> None:
    run = make_run(db, nova, clock)
    agent.watchdog_ms = 0
    agent.renew()
    agent.running = False
    with pytest.raises(Held) as held:
        step(run, fencing_of([lease_entry(agent.path)]))
    assert held.value.reason.endswith(
        "its agent runs without a watchdog: its expiry proves nothing"
    )


# --- the verdict -----------------------------------------------------------------------------

DETECTED = {"event": "STOPPED", "host_status": "UNKNOWN", "detector": "nova-services"}


def judged(db, nova, clock, agent: Agent, **conf: Any) -> tuple[Any, str, str]:
    _, hosts = rows.segment_with_hosts(db, HOST)
    nid = rows.notification(db, hosts[HOST], "COMPUTE_HOST", DETECTED, "running", EPOCH)
    run = make_run(db, nova, clock, notification_uuid=nid, **conf)
    run.fencing = fencing_of([lease_entry(agent.path)])
    return run, hosts[HOST], nid


def test_the_verdict_holds_a_host_whose_lease_renews(db, nova, clock, agent) -> None:
    # rule monitor: the detector's report waits for a monitor's, looking every 2 s
    run, host, nid = judged(db, nova, clock, agent, **{"verdict.wait": 30})
    with pytest.raises(Held) as held:
        verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED)))
    assert str(held.value) == (
        f"verdict: monitor: the host renews its lease (lease {agent.path}: slot 0: counter 1 -> 3 "
        "within 2.0 s): partitioned, not dead"
    )
    with db.reader() as s:
        fenced = [(e.failed, e.value) for e in ev.of(s, nid) if e.kind == ev.FENCE]
    assert fenced == [(False, "renewing")]


def test_an_expiry_the_verdict_saw_is_the_fence_steps_proof(db, nova, clock, agent) -> None:
    agent.running = False
    run, host, nid = judged(db, nova, clock, agent, **{"verdict.wait": 30})
    with pytest.raises(Held):  # no monitor's report: rule monitor still holds it
        verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED)))
    assert attempts(db, nid) == [(0, "lease", "expired")]
    with db.reader() as s:
        fenced = [(e.failed, e.value) for e in ev.of(s, nid) if e.kind == ev.FENCE]
    assert fenced == [(True, "off")]
    # released and taken again: the fence step reads the proof rather than watching again
    with db.writer() as s:
        holds.release(s, nid)
        s.execute(sa.update(Notification).values(status="running"))
    again = make_run(db, nova, clock, notification_uuid=nid, owner="engine-b")
    before = clock.monotonic()
    assert step(again, fencing_of([lease_entry(agent.path)])).host_fenced
    assert clock.monotonic() == before
    assert attempts(db, nid) == [(0, "lease", "expired")]
