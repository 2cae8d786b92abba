"""The fence step's decisions, driver by driver, on SQLite with scripted drivers.

The drivers here are test doubles of the PowerDriver interface that answer from a script:
the decisions (escalation, confirmation, takeover, hold, release) are the engine's, and
are what these tests assert. The drills (tests/functional/fencing) run the same step
against real BMC peers.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy as sa

from masakari.db import fencing as evidence
from masakari.db import holds
from masakari.db.models import FenceAttempt, Notification, NotificationClaim
from masakari.engine.errors import Held
from masakari.engine.fencing import FencedHost, HostFencing
from masakari.engine.lease import LeaseLost
from masakari.engine.recovery import fence, host
from masakari.engine.recovery.flow import Store, TaskContext
from masakari.fencing import drivers
from masakari.fencing.base import DriverSpec, FenceError, PowerState, Refused, Unreachable
from tests.fakes.nova import NovaSimulator
from tests.support import rows
from tests.support.fencing import IPMI, Plan
from tests.support.runs import make_run, task_rows

HOST = "compute-1"
FENCED = FencedHost(HOST, "seg")
REDFISH = DriverSpec("redfish", address="https://192.0.2.2", password="s3cret")
KDUMP = DriverSpec("kdump", address="192.0.2.10", options={"wait": "3"})


@dataclasses.dataclass
class ScriptedBMC:
    """A PowerDriver whose answers are a script: ``off`` raises or not; ``states`` are read
    in order (the last one repeats); every call is kept."""

    spec: DriverSpec
    off_error: Exception | None = None
    states: Sequence[PowerState | Exception] = (PowerState.OFF,)
    calls: list[str] = dataclasses.field(default_factory=list)

    def power_off(self) -> None:
        self.calls.append("off")
        if self.off_error is not None:
            raise self.off_error

    def power_status(self) -> PowerState:
        answer = self.states[min(self.calls.count("status"), len(self.states) - 1)]
        self.calls.append("status")
        if isinstance(answer, Exception):
            raise answer
        return answer

    def power_on(self) -> None:
        self.calls.append("on")


@pytest.fixture(autouse=True)
def compute(sim: NovaSimulator) -> None:
    """The failed host's nova-compute: the fence step disables it before the power off."""
    sim.add_service(HOST)


def fencing_for(
    bmcs: Sequence[ScriptedBMC], extra: Sequence[DriverSpec] = (), **options: Any
) -> HostFencing:
    by_spec = {id(b.spec): b for b in bmcs}
    specs = [b.spec for b in bmcs] + list(extra)
    order = options.pop("order", None)
    if order is not None:
        specs = order
    return HostFencing(
        plan=Plan({HOST: specs}),
        power_driver=lambda spec: by_spec[id(spec)],  # type: ignore[return-value]
        **{"confirm_interval": 1.0, "confirm_timeout": 5.0, **options},
    )


def step(run: Any, fencing: HostFencing) -> Store:
    run.fencing = fencing
    store = Store(run.notification_uuid, host_name=HOST, host_status="NORMAL")
    fence.fence_first(run, store, FENCED)
    return store


attempts = rows.fence_attempts


def test_off_then_status_until_off_proves_the_host_dead(db, nova, clock):
    run = make_run(db, nova, clock)
    bmc = ScriptedBMC(IPMI, states=(PowerState.ON, PowerState.ON, PowerState.OFF))
    store = step(run, fencing_for([bmc]))
    assert store.host_fenced
    assert bmc.calls == ["off", "status", "status", "status"]
    assert attempts(db, run.notification_uuid) == [(0, "off", "done"), (0, "status", "off")]
    [(_, name, state, _, details)] = task_rows(db, run.notification_uuid)
    assert (name, state) == ("FenceHostTask", "SUCCESS")
    assert details[-1] == ("1.0", f"Host '{HOST}' is powered off (ipmi 192.0.2.1:623)")
    # the credential is nowhere in the evidence
    with db.reader() as s:
        texts = [str(r) for r in s.execute(sa.select(FenceAttempt.__table__)).all()]
    assert not any("s3cret" in t for t in texts)


def test_nova_compute_is_disabled_before_the_power_off_and_stays_so_when_held(db, sim, nova, clock):
    seen: list[tuple[str, bool]] = []

    class Watched(ScriptedBMC):
        def power_off(self) -> None:
            service = sim.service(HOST)
            seen.append((service["status"], service["forced_down"]))
            super().power_off()

    run = make_run(db, nova, clock)
    stuck = Watched(IPMI, states=(PowerState.ON,))
    with pytest.raises(Held):
        step(run, fencing_for([stuck]))
    # Nova's scheduler sent nothing more to the host while it was fenced; not forced down
    # (no proof), and still disabled now that it is held.
    assert seen == [("disabled", False)]
    service = sim.service(HOST)
    assert (service["status"], service["forced_down"]) == ("disabled", False)
    assert service["disabled_reason"] == run.conf.host_failure.service_disable_reason
    puts = [c.body for c in sim.calls if c.method == "PUT"]
    assert puts == [
        {"status": "disabled", "disabled_reason": run.conf.host_failure.service_disable_reason}
    ]


def test_the_second_driver_is_tried_when_the_first_fails(db, nova, clock):
    run = make_run(db, nova, clock)
    first = ScriptedBMC(IPMI, off_error=Unreachable("ipmi 192.0.2.1:623: no answer in 10 s"))
    second = ScriptedBMC(REDFISH, states=(PowerState.ON, PowerState.OFF))
    assert step(run, fencing_for([first, second])).host_fenced
    assert first.calls == ["off"]
    assert second.calls == ["off", "status", "status"]
    assert attempts(db, run.notification_uuid) == [
        (0, "off", "unreachable"),
        (1, "off", "done"),
        (1, "status", "off"),
    ]


def test_a_host_that_never_reads_off_is_held_and_the_claim_given_up(db, nova, clock):
    run = make_run(db, nova, clock)
    stuck = ScriptedBMC(IPMI, states=(PowerState.ON,))
    refused = ScriptedBMC(REDFISH, off_error=Refused("redfish: 401 Unauthorized"))
    with pytest.raises(Held) as held:
        step(run, fencing_for([stuck, refused]))
    nid = run.notification_uuid
    assert held.value.reason == (
        "power fencing failed: ipmi 192.0.2.1:623: not off within 5 s; "
        "redfish https://192.0.2.2: power off: redfish: 401 Unauthorized"
    )
    # status read every second, at 0 s to 5 s of confirm_timeout
    assert stuck.calls == ["off"] + ["status"] * 6
    assert attempts(db, nid) == [
        (0, "off", "done"),
        (0, "status", "timeout"),
        (1, "off", "refused"),
    ]
    with db.reader() as s:
        assert s.get(Notification, 1).status == "new"
        assert s.get(NotificationClaim, nid) is None
        assert holds.reasons(s, [nid]) == {nid: held.value.reason}
    [(_, _, state, _, details)] = task_rows(db, nid)
    assert state == "FAILURE"
    assert details[-1] == ("1.0", "Held for an operator: " + held.value.reason)
    # nothing more is done under the given-up claim
    with pytest.raises(LeaseLost):
        run.effects.record_failure("late")


def test_the_hold_reason_names_each_driver_once(db, nova, clock):
    run = make_run(db, nova, clock)
    # The real drivers: their errors say which entry failed, as the reason does already.
    failing_agent = DriverSpec("agent", address="192.0.2.3", options={"agent": "/bin/false"})
    no_address = DriverSpec("ipmi", name="bmc-a")
    fencing = HostFencing(
        plan=Plan({HOST: [failing_agent, no_address]}), power_driver=drivers.power_driver
    )
    with pytest.raises(Held):
        step(run, fencing)
    nid = run.notification_uuid
    with db.reader() as s:
        reason = holds.reasons(s, [nid])[nid]
    assert reason == (
        "power fencing failed: agent 192.0.2.3: power off: false off failed (exit 1); "
        "bmc-a: ipmi: no driver: no address"
    )


def kdump_at(db: Any, run: Any, *seconds: float, address: str = "192.0.2.10") -> None:
    """Messages from ``address`` received ``seconds`` after the notification reached
    masakari (its created_at; negative: before)."""
    with db.writer() as s:
        reached = evidence.created_at(s, run.notification_uuid)
        for each in seconds:
            at = reached + datetime.timedelta(seconds=each)
            evidence.record_kdump(s, address, at, "e-2")


def test_kdump_message_after_the_report_proves_the_crash_without_a_power_off(db, nova, clock):
    run = make_run(db, nova, clock)
    kdump_at(db, run, 0.5)
    bmc = ScriptedBMC(IPMI)
    fencing = fencing_for([bmc], order=[KDUMP, IPMI])
    assert step(run, fencing).host_fenced
    assert bmc.calls == []
    assert attempts(db, run.notification_uuid) == [(0, "kdump", "crashed")]


def test_a_kdump_message_before_the_disable_counts_though_the_disable_moves_updated_at(
    db, sim, nova, clock
):
    """The fence step disables nova-compute first, and Nova's updated_at is the row's: the
    disable moves it. The window is read before the disable, from the last heartbeat."""
    run = make_run(db, nova, clock)
    with db.reader() as s:
        reached = evidence.created_at(s, run.notification_uuid)
    assert reached is not None
    clock.start = reached + datetime.timedelta(seconds=2)  # the disable: 2 s after the report
    sim.stale(HOST, 60)  # the host's last heartbeat: a minute before the disable
    kdump_at(db, run, 0.5)
    bmc = ScriptedBMC(IPMI)
    assert step(run, fencing_for([bmc], order=[KDUMP, IPMI])).host_fenced
    assert sim.service(HOST)["status"] == "disabled"
    assert bmc.calls == []
    assert attempts(db, run.notification_uuid) == [(0, "kdump", "crashed")]


def test_a_kdump_message_before_the_report_is_no_proof_and_the_wait_is_bounded(db, nova, clock):
    run = make_run(db, nova, clock)
    # Sent before the report reached masakari: forged ahead of it, or an earlier crash's.
    kdump_at(db, run, -0.5, -60)
    kdump_at(db, run, 5, address="192.0.2.11")  # another host's
    bmc = ScriptedBMC(IPMI, off_error=Unreachable("no answer"))
    with pytest.raises(Held):
        step(run, fencing_for([bmc], order=[IPMI, KDUMP]))
    assert attempts(db, run.notification_uuid) == [
        (0, "off", "unreachable"),
        (1, "kdump", "no message"),
    ]
    assert clock.monotonic() == pytest.approx(3.0)  # the entry's wait, no more


def test_a_kdump_hint_is_recorded_and_the_power_driver_still_fences(db, nova, clock):
    run = make_run(db, nova, clock)
    kdump_at(db, run, 0.5)
    bmc = ScriptedBMC(IPMI)
    fencing = fencing_for([bmc], order=[KDUMP, IPMI], kdump_trust="hint")
    assert step(run, fencing).host_fenced
    assert bmc.calls == ["off", "status"]
    assert attempts(db, run.notification_uuid) == [
        (0, "kdump", "hint"),
        (1, "off", "done"),
        (1, "status", "off"),
    ]
    assert clock.monotonic() == 0.0  # a hint is not waited for: the power off is not delayed


def test_a_kdump_hint_alone_is_held(db, nova, clock):
    run = make_run(db, nova, clock)
    kdump_at(db, run, 0.5)
    with pytest.raises(Held):
        step(run, fencing_for([], order=[KDUMP], kdump_trust="hint"))
    assert attempts(db, run.notification_uuid) == [(0, "kdump", "hint")]


TWO = DriverSpec(
    "kdump", address="192.0.2.10", options={"wait": "4", "messages": "2", "interval": "2"}
)


@pytest.mark.parametrize(
    ("received", "proven"),
    [
        ((0.5,), False),  # one message of the two
        ((0.5, 0.6, 0.7, 0.8), False),  # one burst counts once (1 s apart at least)
        ((-3, 0.5), False),  # one of them before the report
        ((0.5, 1.5), True),
        ((0.5, 0.7, 2.5), True),
    ],
)
def test_an_entry_wanting_two_messages_wants_them_spaced(db, nova, clock, received, proven):
    run = make_run(db, nova, clock)
    kdump_at(db, run, *received)
    bmc = ScriptedBMC(IPMI, off_error=Unreachable("no answer"))
    if proven:
        assert step(run, fencing_for([bmc], order=[TWO, IPMI])).host_fenced
    else:
        with pytest.raises(Held):
            step(run, fencing_for([bmc], order=[TWO, IPMI]))
    first = attempts(db, run.notification_uuid)[0]
    assert first == (0, "kdump", "crashed" if proven else "no message")
    assert bmc.calls == ([] if proven else ["off"])


def test_a_takeover_after_a_confirmed_off_sends_nothing(db, nova, clock):
    first = make_run(db, nova, clock)
    bmc = ScriptedBMC(IPMI)
    step(first, fencing_for([bmc]))
    again = make_run(db, nova, clock, notification_uuid=first.notification_uuid, owner="e-2")
    assert step(again, fencing_for([bmc])).host_fenced
    assert bmc.calls == ["off", "status"]
    rows = task_rows(db, first.notification_uuid)
    assert [(r[0], r[2]) for r in rows] == [(1, "SUCCESS"), (2, "SUCCESS")]
    assert "not fenced again" in rows[1][4][-1][1]


def test_a_takeover_after_an_unconfirmed_off_reads_back_before_sending(db, nova, clock):
    first = make_run(db, nova, clock)
    with db.writer() as s:  # the lost engine recorded its power off, and died
        evidence.start(
            s,
            first.notification_uuid,
            "engine-test",
            1,
            HOST,
            0,
            IPMI.describe(),
            "off",
            clock.now(),
        )
    bmc = ScriptedBMC(IPMI, states=(PowerState.OFF,))
    again = make_run(db, nova, clock, notification_uuid=first.notification_uuid, owner="e-2")
    assert step(again, fencing_for([bmc])).host_fenced
    assert bmc.calls == ["status"]
    assert attempts(db, first.notification_uuid) == [(0, "off", "sent"), (0, "status", "off")]


def test_a_read_back_that_is_not_off_sends_the_power_off_again(db, nova, clock):
    first = make_run(db, nova, clock)
    with db.writer() as s:
        evidence.start(
            s,
            first.notification_uuid,
            "engine-test",
            1,
            HOST,
            0,
            IPMI.describe(),
            "off",
            clock.now(),
        )
    bmc = ScriptedBMC(IPMI, states=(PowerState.ON, PowerState.OFF))
    again = make_run(db, nova, clock, notification_uuid=first.notification_uuid, owner="e-2")
    assert step(again, fencing_for([bmc])).host_fenced
    assert bmc.calls == ["status", "off", "status"]


def test_a_release_of_a_fence_hold_is_the_operators_word(db, nova, clock):
    run = make_run(db, nova, clock)
    with db.writer() as s:
        holds.hold(s, run.notification_uuid, holds.REASON_FENCE_FAILED + "ipmi: no answer")
        holds.release(s, run.notification_uuid)
    bmc = ScriptedBMC(IPMI)
    assert step(run, fencing_for([bmc])).host_fenced
    assert bmc.calls == []
    assert attempts(db, run.notification_uuid) == [(-1, "release", "dead")]


def test_a_released_mass_failure_hold_is_still_fenced(db, nova, clock):
    run = make_run(db, nova, clock)
    with db.writer() as s:
        holds.hold(s, run.notification_uuid, holds.REASON_SEGMENT)
        holds.release(s, run.notification_uuid)
    bmc = ScriptedBMC(IPMI)
    assert step(run, fencing_for([bmc])).host_fenced
    assert bmc.calls == ["off", "status"]


@pytest.mark.parametrize("unfenced", ["recover", "hold"])
def test_a_host_without_drivers(db, nova, clock, unfenced):
    run = make_run(db, nova, clock)
    fencing = HostFencing(plan=Plan({}), power_driver=lambda spec: None, unfenced_hosts=unfenced)  # type: ignore[arg-type,return-value]
    if unfenced == "hold":
        with pytest.raises(Held) as held:
            step(run, fencing)
        assert held.value.reason == holds.REASON_UNFENCED
        return
    assert not step(run, fencing).host_fenced
    [(_, _, state, _, details)] = task_rows(db, run.notification_uuid)
    assert state == "SUCCESS" and "recovering on the monitor's report" in details[-1][1]


def test_a_lost_lease_sends_nothing(db, sim, nova, clock):
    run = make_run(db, nova, clock)
    bmc = ScriptedBMC(IPMI)
    run.lease.lose()
    with pytest.raises(LeaseLost):
        step(run, fencing_for([bmc]))
    assert bmc.calls == []
    assert [c for c in sim.calls if c.method == "PUT"] == []
    assert attempts(db, run.notification_uuid) == []


def test_power_on_after_recovery_once_through_the_driver_that_powered_off(db, nova, clock):
    run = make_run(db, nova, clock)
    failing = ScriptedBMC(REDFISH, off_error=Unreachable("down"))
    bmc = ScriptedBMC(IPMI)
    fencing = fencing_for([failing, bmc], power_on_after_recovery=True)
    step(run, fencing)
    fence.power_on_after(run, FENCED)
    fence.power_on_after(run, FENCED)
    assert bmc.calls == ["off", "status", "on"]
    assert failing.calls == ["off"]
    assert attempts(db, run.notification_uuid)[-1] == (1, "on", "done")


def test_a_fenced_host_is_forced_down_without_the_wait(db, sim, nova, clock):
    run = make_run(db, nova, clock, wait_period_after_service_update=180)
    store = Store(run.notification_uuid, host_name=HOST, host_status="UNKNOWN", host_fenced=True)

    class Progress:
        def update(self, message: str, progress: float = 0.0) -> None:
            pass

    host.disable_compute_service(TaskContext(run, store, Progress()))  # type: ignore[arg-type]
    service = sim.service(HOST)
    assert service["forced_down"] and service["status"] == "disabled"
    assert clock.monotonic() == 0.0  # no wait_period_after_service_update sleep


def test_an_entry_without_a_usable_driver_passes_to_the_next(db, nova, clock):
    run = make_run(db, nova, clock)
    bmc = ScriptedBMC(IPMI)

    def power_driver(spec: DriverSpec) -> Any:
        if spec is REDFISH:
            raise FenceError("redfish: the redfish driver needs sushy")
        return bmc

    fencing = HostFencing(plan=Plan({HOST: [REDFISH, IPMI]}), power_driver=power_driver)
    assert step(run, fencing).host_fenced
    assert attempts(db, run.notification_uuid) == [(1, "off", "done"), (1, "status", "off")]
    details = task_rows(db, run.notification_uuid)[0][4]
    assert any("No driver for redfish https://192.0.2.2" in m for _, m in details)
