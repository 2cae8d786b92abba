"""The verdict (masakari/engine/verdict.py): its rules (decide). Judge's reads and writes:
tests/functional/engine/runs/test_verdict.py."""

from __future__ import annotations

import pytest

from masakari.engine.verdict import NORMAL, ON_FENCE, UNKNOWN, FenceView, Signals, decide

OFF_PROVEN = FenceView(proof="IPMI bmc-1: power off confirmed")
BMC_ON = FenceView(power_on=True)
FENCEABLE = FenceView(can_fence=True)


@pytest.mark.parametrize(
    ("signals", "confirmed", "host_status", "reason"),
    [
        (Signals(monitor="NORMAL"), True, NORMAL, "the monitor reported the host fenced"),
        # The detector's report alone: wait for the monitor's.
        (Signals(nova=True), None, UNKNOWN, "no monitor's report of the failure"),
        (Signals(monitor="UNKNOWN", nova=True), False, UNKNOWN, "says host_status UNKNOWN"),
        (Signals(nova=True, released=True), True, UNKNOWN, "released by an operator"),
    ],
)
def test_monitor_rule(signals, confirmed, host_status, reason) -> None:
    decision = decide("monitor", signals)
    assert decision.confirmed is confirmed
    assert reason in decision.reason
    if confirmed:
        assert decision.host_status == host_status


@pytest.mark.parametrize(
    ("signals", "confirmed", "kept", "reason"),
    [
        (Signals(monitor="NORMAL", nova=True), True, NORMAL, "agree"),
        (Signals(nova=True, fence=OFF_PROVEN), True, NORMAL, "Nova and IPMI bmc-1"),
        # An UNKNOWN report and a silent nova-compute both only say "unreachable", which a
        # partition says too: no pair without a power-off proof, or fencing's promise of one.
        (Signals(monitor="UNKNOWN", nova=True), None, UNKNOWN, "only Nova says the host failed"),
        (Signals(monitor="UNKNOWN", nova=True), None, UNKNOWN, "host_status UNKNOWN (no power"),
        (Signals(nova=True, fence=FENCEABLE), True, ON_FENCE, "Nova and host fencing"),
        (Signals(monitor="NORMAL", fence=FENCEABLE), True, ON_FENCE, "agree"),
        (Signals(monitor="NORMAL", nova=True, fence=FENCEABLE), True, NORMAL, "agree"),
        (Signals(monitor="NORMAL", nova=False), None, UNKNOWN, "Nova says its nova-compute is up"),
        (Signals(nova=True), None, UNKNOWN, "only Nova says the host failed"),
        (Signals(), None, UNKNOWN, "nothing says the host failed"),
        (Signals(monitor="NORMAL", nova=True, fence=BMC_ON), False, UNKNOWN, "powered on"),
        (Signals(monitor="UNKNOWN", nova=True, released=True), True, UNKNOWN, "released"),
    ],
)
def test_any_two_rule(signals, confirmed, kept, reason) -> None:
    decision = decide("any_two", signals)
    assert decision.confirmed is confirmed
    assert reason in decision.reason
    if confirmed:
        assert decision.kept_value == kept


@pytest.mark.parametrize(
    ("signals", "confirmed", "host_status", "reason"),
    [
        (Signals(nova=True, fence=OFF_PROVEN), True, NORMAL, "power off confirmed"),
        (Signals(nova=True, fence=FENCEABLE), True, ON_FENCE, "proves the host off before"),
        # The monitor's word is not the project's own fence.
        (Signals(monitor="NORMAL"), False, UNKNOWN, "no host fencing is configured"),
        (Signals(monitor="NORMAL", released=True), True, NORMAL, "released by an operator"),
        (Signals(fence=BMC_ON, released=True), True, UNKNOWN, "released by an operator"),
    ],
)
def test_fence_rule(signals, confirmed, host_status, reason) -> None:
    decision = decide("fence", signals)
    assert decision.confirmed is confirmed
    assert reason in decision.reason
    if confirmed:
        assert decision.kept_value == host_status


@pytest.mark.parametrize("rule", ["monitor", "any_two", "fence"])
def test_a_renewing_lease_vetoes_every_rule_but_a_release(rule) -> None:
    alive = FenceView(can_fence=True, alive="the host renews its lease (lease /dev/x: ...)")
    decision = decide(rule, Signals(monitor="NORMAL", nova=True, fence=alive))
    assert decision.confirmed is False
    assert decision.reason == "the host renews its lease (lease /dev/x: ...): partitioned, not dead"
    assert decide(rule, Signals(monitor="NORMAL", nova=True, fence=alive, released=True)).confirmed
