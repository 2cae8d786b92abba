"""The verdict: the signals a host failure must have before it is recovered ([verdict] rule).

For a COMPUTE_HOST failure (event STOPPED) the engine gathers what it knows: the reports of
the failure (the monitor's, kept as evidence at intake, even one refused as a duplicate of
the detector's), Nova's view of the host's nova-compute (state, heartbeat age), and what
host fencing proved or can prove (:class:`HostFencing`). The rule decides:

- ``monitor`` (the default, masakari 22.0.0's): a monitor's report with host_status NORMAL.
  Only the detector's reports are judged under it (a monitor's report goes the reference's
  way): they wait for a monitor's report of the same failure.
- ``any_two``: two of the monitor's report with host_status NORMAL, Nova (service down, or
  heartbeat older than ``[detection] grace_period``) and host fencing (a proof, or the host
  has fencing configured) say the host failed. A report with host_status UNKNOWN is no
  signal: it and Nova both only say the host cannot be reached, which a partition also
  does; every pair that confirms holds a power-off proof or the promise of one.
- ``fence``: host fencing proves the host off (or crashed) before anything is evacuated.

A confirmation that rests on host fencing's promise (the host has drivers, nothing proved
it off yet) is kept as such (:data:`ON_FENCE`): the fence step then proves the host off or
holds. An engine that takes such a failure over and has no fencing for the host holds it
rather than evacuate unproven (every engine needs the same [fencing] and [verdict]).

A power reading On recorded by an earlier fence attempt of the same notification vetoes any
rule (the verdict reads no BMC itself), and so does a renewal of the host's shared-disk
lease seen while the verdict looks (each look reads the slot once: an expiry seen so is a
proof, recorded for the fence step; masakari.engine.host_lease). Until ``[verdict] wait``
seconds have passed the engine waits for the signals the rule lacks, then holds the
notification with the reason (masakari.db.holds): an operator's release is the
confirmation it lacked. A failure confirmed once stays confirmed (a retry or a takeover
does not judge it again). The flow is told ``host_status`` NORMAL only when the host was
proven off (a monitor's NORMAL report, a fence): only then may ``force_down_fenced_host``
skip Nova's own wait.

``[verdict] shadow_rule`` judges the same signals under a second rule, without effect
(:mod:`masakari.engine.verdict_shadow`): its decision is kept as evidence beside the
acting rule's, also for a report the engine does not judge (:func:`judge_shadow_only`).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Sequence

from oslo_config import cfg

from masakari import exception
from masakari.compute.servers import first_service
from masakari.conf import detection as detection_opts
from masakari.db import evidence as ev
from masakari.db import fencing as fence_db
from masakari.db import holds
from masakari.db.hosts import RecoveryHost
from masakari.engine import verdict_shadow
from masakari.engine.context import RunContext
from masakari.engine.errors import Held
from masakari.engine.fencing import FencedHost
from masakari.engine.host_lease import HostLeases
from masakari.engine.kdump_proof import CrashMessages
from masakari.engine.payloads import HostPayload
from masakari.fencing.base import KDUMP, DriverSpec
from masakari.metrics import detection as detection_metrics

LOG = logging.getLogger(__name__)

# Seconds between two looks at the signals while the rule waits for one.
LOOK_INTERVAL = 2.0
NORMAL = "NORMAL"
UNKNOWN = "UNKNOWN"
# The value kept with a confirmation that rests on host fencing proving the host off.
ON_FENCE = "ON_FENCE"


@dataclasses.dataclass(frozen=True)
class FenceView:
    """What host fencing ([fencing], docs/operations.md § Host fencing) knows of the host."""

    # What proved the host off or crashed (a power state read Off, a kdump message), None.
    proof: str | None = None
    # The BMC last read the host powered on: it is running, whatever else says.
    power_on: bool = False
    # The host has fencing configured: the recovery proves it off before evacuating.
    can_fence: bool = False
    # The host renews its shared-disk lease (the entry and what changed): it runs.
    alive: str | None = None
    # Crash messages that only hint at a crash ([fencing] kdump_trust = hint), None.
    hint: str | None = None


@dataclasses.dataclass(frozen=True)
class Signals:
    # host_status of the monitor's report of this failure (NORMAL preferred), None: none.
    monitor: str | None = None
    # Nova says the host failed (True), runs (False), cannot tell (None).
    nova: bool | None = None
    fence: FenceView = FenceView()
    released: bool = False

    @property
    def proven_off(self) -> bool:
        return self.monitor == NORMAL or self.fence.proof is not None


@dataclasses.dataclass(frozen=True)
class Decision:
    confirmed: bool | None  # None: not yet, the rule waits for more
    reason: str
    host_status: str = UNKNOWN
    # Confirmed on the promise that host fencing proves the host off before evacuating.
    on_fence: bool = False

    @property
    def kept_value(self) -> str:
        """What the confirmation keeps for a retry or a takeover to read back."""
        return ON_FENCE if self.on_fence else self.host_status


def decide(rule: str, s: Signals) -> Decision:
    """The rule applied to the signals: pure, the one place a verdict is made."""
    status = NORMAL if s.proven_off else UNKNOWN
    if s.fence.power_on and not s.released:
        return Decision(False, "the BMC reads the host powered on")
    if s.fence.alive and not s.released:
        return Decision(False, f"{s.fence.alive}: partitioned, not dead")
    if rule == detection_opts.RULE_ANY_TWO:
        return _any_two(s, status)
    if rule == detection_opts.RULE_FENCE:
        if s.fence.proof is not None:
            return Decision(True, s.fence.proof, NORMAL)
        if s.fence.can_fence:
            reason = "host fencing proves the host off before evacuating"
            return Decision(True, reason, status, on_fence=True)
        return _unless_released(s, status, "no host fencing is configured for the host", False)
    if s.monitor == NORMAL:
        return Decision(True, "the monitor reported the host fenced (host_status NORMAL)", NORMAL)
    if s.monitor is not None:
        reason = f"the monitor's report says host_status {s.monitor}: no power-off confirmed"
        return _unless_released(s, status, reason, False)
    return _unless_released(s, status, "no monitor's report of the failure")


def _any_two(s: Signals, status: str) -> Decision:
    fence_says = s.fence.proof is not None or s.fence.can_fence
    fence_name = s.fence.proof or s.fence.hint or "host fencing (before anything is evacuated)"
    agree = [
        name
        for name, says in (
            ("the monitor's report (host_status NORMAL)", s.monitor == NORMAL),
            ("Nova", s.nova is True),
            (fence_name, fence_says),
        )
        if says
    ]
    if len(agree) >= 2:
        proven = [s.monitor == NORMAL, s.nova is True, s.fence.proof is not None]
        # Two only with the fence's promise: the fence must then keep it.
        reason = " and ".join(agree) + " agree that the host failed"
        return Decision(True, reason, status, on_fence=sum(proven) < 2)
    lacking = f"only {agree[0]} says" if agree else "nothing says"
    notes = ""
    if s.monitor is not None and s.monitor != NORMAL:
        notes += f"; the monitor's report says host_status {s.monitor} (no power-off proof)"
    if s.nova is False:
        notes += "; Nova says its nova-compute is up"
    return _unless_released(s, status, f"{lacking} the host failed{notes}")


def _unless_released(s: Signals, status: str, reason: str, final: bool | None = None) -> Decision:
    if s.released:
        return Decision(True, f"released by an operator ({reason})", status)
    return Decision(final, reason)


def applies(conf: cfg.ConfigOpts, payload: HostPayload) -> bool:
    """Whether a host failure report is judged: the detector's always, any with a rule
    other than the monitor's."""
    return payload.detector is not None or conf.verdict.rule != detection_opts.RULE_MONITOR


def judge(run: RunContext, host_uuid: str, payload: HostPayload) -> str:
    """The host_status the flow is given; raises Held when the rule does not confirm."""
    host = run.effects.hosts.host(host_uuid)
    if host is None:
        raise exception.HostNotFound(id=host_uuid)
    rule = run.conf.verdict.rule
    verdicts = [e for e in run.effects.evidence.recorded() if e.kind == ev.VERDICT]
    if verdicts and verdicts[-1].failed:
        return _confirmed_before(run, host, verdicts[-1])
    released = run.effects.fencing.released_hold() is not None
    deadline = run.clock.monotonic() + (0.0 if released else float(run.conf.verdict.wait))
    leases = HostLeases(run, host.name, _drivers(run, host))
    while True:
        fence = _fence_view(run, host, leases)
        nova, seen = _nova(run, host.name)
        known = run.effects.evidence.recorded()
        signals = Signals(_monitor(payload, known), nova, fence, released)
        decision = decide(rule, signals)
        if decision.confirmed is not None or run.clock.monotonic() >= deadline:
            break
        run.sleep(min(LOOK_INTERVAL, max(deadline - run.clock.monotonic(), 0.0)))
    confirmed = bool(decision.confirmed)
    reason = decision.reason
    if decision.confirmed is None:
        reason += f" within {run.conf.verdict.wait:g} s"
    now = run.clock.now()
    # The decided host_status is kept with a confirmation: a retry or a takeover reads it.
    status = decision.kept_value if confirmed else None
    verdict = ev.Evidence(ev.VERDICT, f"rule {rule}", confirmed, reason, now, status)
    shadow = _shadow(run, host, signals, confirmed, now)
    gathered = [seen, *_fence_evidence(fence, now), verdict, *shadow]
    detection_metrics.verdict(rule, confirmed)
    if not confirmed:
        LOG.warning("Host %s failure not confirmed (rule %s): %s", host.name, rule, reason)
        held = f"{holds.VERDICT_PREFIX}{rule}: {reason}"
        reports = sum(1 for e in known if e.kind == ev.REPORT)
        run.effects.evidence.hold_unconfirmed(held, gathered, reports_seen=reports)
        raise Held(held)
    run.effects.evidence.record_evidence(gathered)
    LOG.info("Host %s failure confirmed (rule %s): %s", host.name, rule, reason)
    return decision.host_status


def judge_shadow_only(run: RunContext, host_uuid: str, payload: HostPayload) -> None:
    """A report the engine does not judge, judged under ``[verdict] shadow_rule`` alone: one
    look at the signals (no shared-disk lease is watched, nothing waits), recorded as
    evidence with what the shadow rule would have decided. Once per notification."""
    host = run.effects.hosts.host(host_uuid)
    known = run.effects.evidence.recorded()
    if host is None or any(e.kind == ev.SHADOW for e in known):
        return
    fence = _fence_view(run, host, None)
    nova, seen = _nova(run, host.name)
    released = run.effects.fencing.released_hold() is not None
    signals = Signals(_monitor(payload, known), nova, fence, released)
    now = run.clock.now()
    acted = decide(run.conf.verdict.rule, signals).confirmed is True
    shadow = _shadow(run, host, signals, acted, now)
    run.effects.evidence.record_evidence([seen, *_fence_evidence(fence, now), *shadow])


def _shadow(
    run: RunContext, host: RecoveryHost, signals: Signals, acted: bool, now: datetime.datetime
) -> list[ev.Evidence]:
    """What ``[verdict] shadow_rule`` decides of the signals the acting rule judged (``acted``:
    it confirmed), none when unset: the same :func:`decide`, its decision only recorded."""
    shadow_rule = run.conf.verdict.shadow_rule
    if shadow_rule is None:
        return []
    would = decide(shadow_rule, signals)
    rule = run.conf.verdict.rule
    return [
        verdict_shadow.evidence(
            host.name, rule, acted, shadow_rule, would.confirmed, would.reason, now
        )
    ]


def _confirmed_before(run: RunContext, host: RecoveryHost, verdict: ev.Evidence) -> str:
    """The host_status of an earlier confirmation; one that rested on host fencing is held
    when this engine cannot fence the host and nothing proved it off yet."""
    if verdict.value != ON_FENCE:
        return verdict.value or UNKNOWN
    if _drivers(run, host) or any(a.proves_dead for a in run.effects.fencing.fence_attempts()):
        return UNKNOWN
    reason = (
        f"{verdict.source}: confirmed on condition of host fencing, which engine "
        f"{run.lease.owner} cannot do for the host: give every engine the same [fencing] "
        "and [verdict]"
    )
    LOG.warning("Host %s failure not recovered: %s", host.name, reason)
    held = f"{holds.VERDICT_PREFIX}{reason}"
    unfenced = ev.Evidence(ev.VERDICT, verdict.source, False, reason, run.clock.now())
    run.effects.evidence.hold_unconfirmed(held, [unfenced])
    raise Held(held)


def _monitor(payload: HostPayload, known: Sequence[ev.Evidence]) -> str | None:
    """The monitor's word: its own report, or one kept as evidence of this failure."""
    statuses = [
        (e.value or "").upper() for e in known if e.kind == ev.REPORT and e.source == ev.MONITOR
    ]
    if payload.detector is None and payload.host_status:
        statuses.append(payload.host_status.upper())
    if not statuses:
        return None
    return NORMAL if NORMAL in statuses else statuses[0]


def _fence_evidence(fence: FenceView, now: datetime.datetime) -> list[ev.Evidence]:
    """What of host fencing's word the verdict used (its attempts are in its own table)."""
    found = []
    if fence.proof is not None:
        found.append(ev.Evidence(ev.FENCE, "host fencing", True, fence.proof, now, "off"))
    if fence.hint is not None:
        found.append(ev.Evidence(ev.FENCE, "host fencing", True, fence.hint, now, "kdump hint"))
    if fence.power_on:
        found.append(
            ev.Evidence(ev.FENCE, "host fencing", False, "the BMC last read the host on", now, "on")
        )
    if fence.alive:
        found.append(ev.Evidence(ev.FENCE, "host fencing", False, fence.alive, now, "renewing"))
    return found


def _fence_view(run: RunContext, host: RecoveryHost, leases: HostLeases | None) -> FenceView:
    """Host fencing's word before this recovery fences (its attempts are its own evidence,
    masakari_fence_attempts): an earlier attempt's proof or power-on reading, the host's kdump
    messages (masakari.engine.kdump_proof: a proof, or a hint), what the host's leases showed
    since the first look (a renewal, an expiry; none without ``leases``), and whether the host
    can be fenced at all."""
    if run.fencing is None:
        return FenceView()
    specs = _drivers(run, host)
    proof, power_on = None, False
    for attempt in run.effects.fencing.fence_attempts():
        if attempt.action == fence_db.RELEASE:
            continue  # an operator's word, which the verdict reads as the release itself
        if attempt.proves_dead:
            proof, power_on = f"{attempt.driver}: {attempt.action} {attempt.result}", False
        elif (attempt.action, attempt.result) == (fence_db.STATUS, fence_db.POWER_ON):
            power_on = proof is None
    hint = None
    messages = CrashMessages(run, host.name)
    for spec in specs:
        if proof is None and spec.type == KDUMP:
            found = messages.look(spec)
            if found.proves:
                proof = f"{spec.describe()}: {found.describe()}"
            elif found.hints and hint is None:
                hint = f"{spec.describe()}: {found.describe()} (a hint: kdump_trust = hint)"
    alive, expired = leases.evidence() if leases is not None else (None, None)
    return FenceView(
        proof=proof or expired, power_on=power_on, can_fence=bool(specs), alive=alive, hint=hint
    )


def _drivers(run: RunContext, host: RecoveryHost) -> list[DriverSpec]:
    """The host's fencing entries on this engine ([fencing]); none without host fencing."""
    if run.fencing is None:
        return []
    return run.fencing.drivers_for(
        FencedHost(host.name, host.segment_name, host.failover_segment_id)
    )


def _nova(run: RunContext, host_name: str) -> tuple[bool | None, ev.Evidence]:
    """Nova's word on the host's nova-compute, and the evidence it makes."""
    grace = float(run.conf.detection.grace_period)
    now = run.clock.now()
    source = f"engine {run.lease.owner}"
    try:
        service = first_service(run.nova.find_compute_services(host_name))
    except exception.NovaError as exc:
        return None, ev.Evidence(ev.NOVA, source, None, f"Nova not read: {exc}", now)
    if service is None:
        return None, ev.Evidence(ev.NOVA, source, None, "no nova-compute service in Nova", now)
    age = service.heartbeat_age(now)
    failed = service.looks_down(now, grace)
    heartbeat = "no heartbeat time" if age is None else f"heartbeat {age:.0f} s old"
    detail = f"nova-compute {service.state or 'state unknown'}, {heartbeat} (grace {grace:g} s)"
    return failed, ev.Evidence(ev.NOVA, source, failed, detail, now, service.state)
