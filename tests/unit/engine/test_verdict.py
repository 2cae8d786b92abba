"""The verdict (masakari/engine/verdict.py): its rules (decide), and judge's reads and writes."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from masakari.db import evidence as ev
from masakari.db import holds
from masakari.db.models import FailureEvidence, Notification, NotificationClaim
from masakari.engine import verdict
from masakari.engine.errors import Held
from masakari.engine.recovery.payloads import HostPayload
from masakari.engine.verdict import NORMAL, UNKNOWN, FenceView, Signals, decide
from tests.unit.engine.conftest import add_notification, add_rows, make_run

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
    ("signals", "confirmed", "host_status", "reason"),
    [
        (Signals(monitor="UNKNOWN", nova=True), True, UNKNOWN, "the monitor's report and Nova"),
        (Signals(monitor="NORMAL", nova=True), True, NORMAL, "agree"),
        (Signals(nova=True, fence=OFF_PROVEN), True, NORMAL, "Nova and IPMI bmc-1"),
        (Signals(monitor="NORMAL", nova=False), None, UNKNOWN, "Nova says its nova-compute is up"),
        (Signals(nova=True), None, UNKNOWN, "only Nova says the host failed"),
        (Signals(), None, UNKNOWN, "nothing says the host failed"),
        (Signals(monitor="NORMAL", nova=True, fence=BMC_ON), False, UNKNOWN, "powered on"),
    ],
)
def test_any_two_rule(signals, confirmed, host_status, reason) -> None:
    decision = decide("any_two", signals)
    assert decision.confirmed is confirmed
    assert reason in decision.reason
    if confirmed:
        assert decision.host_status == host_status


@pytest.mark.parametrize(
    ("signals", "confirmed", "host_status", "reason"),
    [
        (Signals(nova=True, fence=OFF_PROVEN), True, NORMAL, "power off confirmed"),
        (Signals(nova=True, fence=FENCEABLE), True, UNKNOWN, "proves the host off before"),
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
        assert decision.host_status == host_status


# --- judge(): the signals read, the verdict kept, the hold written ---------------------------

DETECTED = {"event": "STOPPED", "host_status": "UNKNOWN", "detector": "nova-services"}


def _run(db, nova, clock, **conf):
    host = add_rows(db, hosts=(("compute-1", False),))["compute-1"]
    nid = add_notification(db, host, "COMPUTE_HOST", DETECTED)
    with db.writer() as s:
        s.execute(sa.update(Notification).values(status="running"))
    nova.add_service("compute-1", state="down")
    return make_run(db, nova, clock, notification_uuid=nid, **conf), host, nid


def test_a_confirmed_failure_is_not_judged_again(db, nova, clock) -> None:
    run, host, nid = _run(db, nova, clock)
    with db.writer() as s:
        ev.add(s, nid, [ev.Evidence("report", "monitor", True, "", clock.now(), "NORMAL")])
    payload = HostPayload.parse(json.dumps(DETECTED))
    assert verdict.judge(run, host, payload) == "NORMAL"
    with db.writer() as s:  # the monitor's word gone: a retry still has the first verdict's
        s.execute(sa.delete(FailureEvidence).where(FailureEvidence.kind == "report"))
    assert verdict.judge(run, host, payload) == "NORMAL"
    with db.reader() as s:
        kinds = [e.kind for e in ev.of(s, nid)]
    assert kinds == ["nova", "verdict"], "judged once"


def test_an_unconfirmed_failure_is_held_with_its_evidence_and_the_claim_given_up(
    db, nova, clock
) -> None:
    run, host, nid = _run(db, nova, clock, **{"verdict.wait": 0})
    with pytest.raises(Held) as held:
        verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED)))
    assert str(held.value) == "verdict: monitor: no monitor's report of the failure within 0 s"
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {nid: str(held.value)}
        assert s.scalar(sa.select(Notification.status)) == "new"
        assert s.scalars(sa.select(NotificationClaim)).all() == []
        kept = [(e.kind, e.failed, e.value) for e in ev.of(s, nid)]
    assert kept == [("nova", True, "down"), ("verdict", False, None)]
    assert run.lease.lost
