"""The verdict (masakari/engine/verdict.py): judge's reads and writes, on SQLite and the
simulator (its rules: tests/unit/engine/test_verdict.py)."""

from __future__ import annotations

import datetime
import json

import pytest
import sqlalchemy as sa

from masakari import metrics
from masakari.db import evidence as ev
from masakari.db import fencing as fence_db
from masakari.db import holds
from masakari.db.models import FailureEvidence, Notification, NotificationClaim
from masakari.engine import verdict
from masakari.engine.errors import Held
from masakari.engine.fencing import HostFencing
from masakari.engine.payloads import HostPayload
from masakari.fencing.base import DriverSpec
from tests.support import rows
from tests.support.clock import EPOCH
from tests.support.fencing import IPMI, Plan
from tests.support.runs import make_run

# --- judge(): the signals read, the verdict kept, the hold written ---------------------------

DETECTED = {"event": "STOPPED", "host_status": "UNKNOWN", "detector": "nova-services"}


def _run(db, sim, nova, clock, **conf):
    _, hosts = rows.segment_with_hosts(db, "compute-1")
    host = hosts["compute-1"]
    nid = rows.notification(db, host, "COMPUTE_HOST", DETECTED, "running", EPOCH)
    sim.add_service("compute-1", state="down")
    return make_run(db, nova, clock, notification_uuid=nid, **conf), host, nid


def test_a_confirmed_failure_is_not_judged_again(db, sim, nova, clock) -> None:
    run, host, nid = _run(db, sim, nova, clock)
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
    db, sim, nova, clock
) -> None:
    run, host, nid = _run(db, sim, nova, clock, **{"verdict.wait": 0})
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


def test_a_report_that_comes_between_the_last_look_and_the_hold_ends_the_hold(
    db, sim, nova, clock
) -> None:
    """Its intake found no hold to end yet: the hold's own transaction sees the report."""
    run, host, nid = _run(db, sim, nova, clock, **{"verdict.wait": 0})
    looks = []
    read = run.effects.evidence.recorded

    def evidence_then_a_report():  # type: ignore[no-untyped-def]
        known = read()
        looks.append(known)
        if len(looks) == 2:  # the verdict's last look at the signals
            with db.writer() as s:
                ev.add(s, nid, [ev.Evidence("report", "monitor", True, "", clock.now(), "NORMAL")])
        return known

    run.effects.evidence.recorded = evidence_then_a_report  # type: ignore[method-assign]
    payload = HostPayload.parse(json.dumps(DETECTED))
    with pytest.raises(Held):
        verdict.judge(run, host, payload)
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {}, "the hold ended at once"
        assert holds.released_hold(s, nid) is None, "no operator's release"
        assert s.scalar(sa.select(Notification.status)) == "new"
    with db.writer() as s:
        s.execute(sa.update(Notification).values(status="running"))
    again = make_run(db, nova, clock, notification_uuid=nid, **{"verdict.wait": 0})
    assert verdict.judge(again, host, payload) == "NORMAL", "judged again with the report"


# --- a confirmation on host fencing's promise, read back by an engine without fencing ---------


def _confirmed_on_fence(db, clock, nid: str) -> None:
    with db.writer() as s:
        ev.add(
            s,
            nid,
            [ev.Evidence("verdict", "rule fence", True, "fencing proves", clock.now(), "ON_FENCE")],
        )


def test_a_takeover_that_cannot_fence_holds_a_failure_confirmed_on_fencing(
    db, sim, nova, clock
) -> None:
    run, host, nid = _run(db, sim, nova, clock, **{"verdict.rule": "fence"})
    _confirmed_on_fence(db, clock, nid)
    with pytest.raises(Held) as held:
        verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED)))
    assert "confirmed on condition of host fencing" in str(held.value)
    assert "give every engine the same [fencing] and [verdict]" in str(held.value)
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {nid: str(held.value)}
        assert s.scalar(sa.select(Notification.status)) == "new"
        verdicts = [(e.failed, e.value) for e in ev.of(s, nid) if e.kind == "verdict"]
    assert verdicts == [(True, "ON_FENCE"), (False, None)]
    assert run.lease.lost

    # The operator's release is the confirmation: judged again, not held a second time.
    with db.writer() as s:
        holds.release(s, nid)
    again = make_run(db, nova, clock, notification_uuid=nid, **{"verdict.rule": "fence"})
    with db.writer() as s:
        s.execute(sa.update(Notification).values(status="running"))
    assert verdict.judge(again, host, HostPayload.parse(json.dumps(DETECTED))) == "UNKNOWN"
    with db.reader() as s:
        last = [e for e in ev.of(s, nid) if e.kind == "verdict"][-1]
    assert (last.failed, last.detail.startswith("released by an operator")) == (True, True)


def test_an_engine_that_can_fence_goes_on_from_a_confirmation_on_fencing(
    db, sim, nova, clock
) -> None:
    run, host, nid = _run(db, sim, nova, clock, **{"verdict.rule": "fence"})
    run.fencing = HostFencing(plan=Plan({"compute-1": [IPMI]}), power_driver=lambda spec: None)  # type: ignore[arg-type,return-value]
    _confirmed_on_fence(db, clock, nid)
    assert verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED))) == "UNKNOWN"
    with db.reader() as s:
        assert holds.reasons(s, [nid]) == {}
        assert [e.kind for e in ev.of(s, nid)] == ["verdict"], "not judged again"


# --- kdump messages: the fence step's own judgement (masakari.engine.kdump_proof) ------------

KDUMP = DriverSpec("kdump", address="192.0.2.10")


def _kdump_after_report(db, nid, seconds: float) -> None:
    with db.writer() as s:
        reached = fence_db.created_at(s, nid)
        at = reached + datetime.timedelta(seconds=seconds)
        fence_db.record_kdump(s, "192.0.2.10", at, "e-2")


def _with_kdump(run, trust: str = "proof") -> None:
    run.fencing = HostFencing(
        plan=Plan({"compute-1": [KDUMP, IPMI]}),
        power_driver=lambda spec: None,  # type: ignore[arg-type,return-value]
        kdump_trust=trust,
    )


@pytest.mark.parametrize(("seconds", "proven"), [(1.0, True), (-1.0, False)])
def test_a_kdump_message_after_the_report_proves_the_host_off(
    db, sim, nova, clock, seconds, proven
) -> None:
    run, host, nid = _run(db, sim, nova, clock, **{"verdict.rule": "fence"})
    _with_kdump(run)
    _kdump_after_report(db, nid, seconds)
    status = verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED)))
    with db.reader() as s:
        kept = [(e.kind, e.failed, e.value) for e in ev.of(s, nid) if e.kind != "nova"]
    if proven:
        assert status == "NORMAL"
        assert kept == [("fence", True, "off"), ("verdict", True, "NORMAL")]
    else:  # before the report: only the promise that the fence proves it
        assert status == "UNKNOWN"
        assert kept == [("verdict", True, "ON_FENCE")]


def test_a_kdump_hint_is_evidence_and_a_signal_but_no_proof(db, sim, nova, clock) -> None:
    run, host, nid = _run(db, sim, nova, clock, **{"verdict.rule": "any_two"})
    _with_kdump(run, trust="hint")
    _kdump_after_report(db, nid, 1.0)
    status = verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED)))
    assert status == "UNKNOWN"  # not proven off: the fence step must power it off
    with db.reader() as s:
        kept = [(e.kind, e.failed, e.value, e.detail) for e in ev.of(s, nid) if e.kind != "nova"]
    (hint, judged) = kept
    assert hint[:3] == ("fence", True, "kdump hint")
    assert "1 of 1 crash message(s) from 192.0.2.10" in hint[3]
    assert judged[:3] == ("verdict", True, "ON_FENCE")
    assert "kdump_trust = hint" in judged[3]  # named as the fence's signal


# --- [verdict] shadow_rule: the same signals judged again, only recorded ----------------------

MONITOR_NORMAL = {"event": "STOPPED", "host_status": "NORMAL"}


def shadow_judgements(decision: str, agreement: str, shadow_rule: str = "fence") -> float:
    labels = {"rule": "monitor", "shadow_rule": shadow_rule}
    labels.update(decision=decision, agreement=agreement)
    found = metrics.OWN.get_sample_value("masakari_verdict_shadow_judgements_total", labels)
    return found or 0.0


def test_a_shadow_rule_judges_the_verdicts_signals_and_holds_nothing_itself(
    db, sim, nova, clock
) -> None:
    run, host, nid = _run(db, sim, nova, clock, **{"verdict.shadow_rule": "fence"})
    run.fencing = HostFencing(plan=Plan({"compute-1": [IPMI]}), power_driver=lambda spec: None)  # type: ignore[arg-type,return-value]
    with db.writer() as s:
        ev.add(s, nid, [ev.Evidence("report", "monitor", True, "", clock.now(), "NORMAL")])
    before = shadow_judgements("confirm", "agree")
    assert verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED))) == "NORMAL"
    with db.reader() as s:
        kept = [(e.kind, e.source, e.failed, e.value) for e in ev.of(s, nid)]
        shadow = ev.of(s, nid)[-1].detail
    assert kept[-2:] == [
        ("verdict", "rule monitor", True, "NORMAL"),
        ("shadow", "shadow rule fence", True, "confirm"),
    ]
    assert shadow == (
        "would confirm: host fencing proves the host off before evacuating "
        "(rule monitor confirmed: agrees)"
    )
    assert shadow_judgements("confirm", "agree") == before + 1


def test_a_shadow_rule_that_would_confirm_does_not_end_the_acting_rules_hold(
    db, sim, nova, clock
) -> None:
    run, host, nid = _run(
        db, sim, nova, clock, **{"verdict.wait": 0, "verdict.shadow_rule": "any_two"}
    )
    run.fencing = HostFencing(plan=Plan({"compute-1": [IPMI]}), power_driver=lambda spec: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(Held):
        verdict.judge(run, host, HostPayload.parse(json.dumps(DETECTED)))
    with db.reader() as s:
        assert holds.reasons(s, [nid]) != {}
        kept = [(e.kind, e.failed, e.value) for e in ev.of(s, nid)]
    assert kept == [("nova", True, "down"), ("verdict", False, None), ("shadow", True, "confirm")]


def test_a_monitors_report_the_engine_does_not_judge_is_judged_by_the_shadow_rule_once(
    db, sim, nova, clock
) -> None:
    _, hosts = rows.segment_with_hosts(db, "compute-1")
    nid = rows.notification(db, hosts["compute-1"], "COMPUTE_HOST", MONITOR_NORMAL, "running")
    sim.add_service("compute-1", state="down")
    run = make_run(db, nova, clock, notification_uuid=nid, **{"verdict.shadow_rule": "fence"})
    payload = HostPayload.parse(json.dumps(MONITOR_NORMAL))
    before = shadow_judgements("hold", "disagree")
    verdict.judge_shadow_only(run, hosts["compute-1"], payload)
    verdict.judge_shadow_only(run, hosts["compute-1"], payload)  # a retry: judged already
    with db.reader() as s:
        kept = [(e.kind, e.failed, e.value, e.detail) for e in ev.of(s, nid)]
        assert holds.reasons(s, [nid]) == {}
        assert s.scalar(sa.select(Notification.status)) == "running"
    assert kept[0][:3] == ("nova", True, "down")
    assert kept[1:] == [
        (
            "shadow",
            False,
            "hold",
            "would hold: no host fencing is configured for the host "
            "(rule monitor confirmed: disagrees)",
        )
    ]
    assert shadow_judgements("hold", "disagree") == before + 1
    assert not run.lease.lost
