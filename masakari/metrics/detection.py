"""The failure detector's metrics (masakari.detection), and the verdicts' (masakari.engine),
their shadow modes' included.

Only masakari-engine sets them; like the other instruments they are created on first use,
as multi-process values when ``PROMETHEUS_MULTIPROC_DIR`` is set (a gauge then shows the
engines' largest value: what an alert on "any engine" wants).
"""

from __future__ import annotations

import dataclasses

from prometheus_client import Counter, Gauge

from masakari import metrics

# Why a detector's poll saw nothing it could trust (the controller self-check).
BLIND_REASONS = ("keystone", "nova", "database")
# The gates that may stop or delay what the detector reports.
GATES = ("breaker", "storm", "cliff", "cap")
HOST_STATES = ("up", "down", "unreadable")


@dataclasses.dataclass(frozen=True)
class Instruments:
    leader: Gauge
    blind: Gauge
    polls: Counter
    hosts: Gauge
    reports: Counter
    gate_trips: Counter
    gate_active: Gauge
    deferred: Gauge
    verdicts: Counter
    shadow_reports: Counter
    shadow_verdicts: Counter


def _gauge(name: str, text: str, labels: tuple[str, ...] = ()) -> Gauge:
    if metrics.multiprocess():
        return Gauge(name, text, list(labels), multiprocess_mode="max")
    return Gauge(name, text, list(labels), registry=metrics.OWN)


def _counter(name: str, text: str, labels: tuple[str, ...] = ()) -> Counter:
    registry = None if metrics.multiprocess() else metrics.OWN
    return Counter(name, text, list(labels), registry=registry)


def _create() -> Instruments:
    return Instruments(
        leader=_gauge(
            "masakari_detection_leader",
            "1 on the engine that holds the failure detector's lease, 0 on the others.",
        ),
        blind=_gauge(
            "masakari_detection_blind",
            "1 while the detector's last poll could not trust what it saw, by reason "
            "(keystone, nova, database: what it could not reach); it reports nothing then.",
            ("reason",),
        ),
        polls=_counter(
            "masakari_detection_polls",
            "Polls of the failure detector, by result (ok, blind).",
            ("result",),
        ),
        hosts=_gauge(
            "masakari_detection_hosts",
            "Hosts in service at the detector's last poll, by state (up, down, unreadable: "
            "no nova-compute service in Nova, or a disabled one); 0 after a blind poll and on "
            "an engine that is not the detector.",
            ("state",),
        ),
        reports=_counter(
            "masakari_detection_reports",
            "Host failures the detector reported, by outcome (created, held, duplicate, refused).",
            ("outcome",),
        ),
        gate_trips=_counter(
            "masakari_detection_gate_trips",
            "Polls in which a gate of the detector was active, by gate (breaker, storm, "
            "cliff, cap).",
            ("gate",),
        ),
        gate_active=_gauge(
            "masakari_detection_gate_active",
            "1 while a gate of the detector acts (breaker, storm, cliff, cap).",
            ("gate",),
        ),
        deferred=_gauge(
            "masakari_detection_deferred_hosts",
            "Hosts found down that the detector's last poll did not report (cap, cliff, or "
            "the storm with breaker_action skip).",
        ),
        verdicts=_counter(
            "masakari_verdicts",
            "Host failures judged by the engine ([verdict] rule), by rule and result "
            "(confirmed, held).",
            ("rule", "result"),
        ),
        shadow_reports=_counter(
            "masakari_detection_shadow_reports",
            "Host failures the detector in shadow mode would have reported, by segment, "
            "decision (report, hold, defer) and gate (breaker, storm, cliff, cap; none for a "
            "report); counted when a failure's decision changes, not at every poll.",
            ("segment", "decision", "gate"),
        ),
        shadow_verdicts=_counter(
            "masakari_verdict_shadow_judgements",
            "Host failures judged under [verdict] shadow_rule too, by rule (the acting one), "
            "shadow rule, what the shadow rule would have decided (confirm, wait, hold) and "
            "whether that agrees with the acting rule's decision (agree, disagree).",
            ("rule", "shadow_rule", "decision", "agreement"),
        ),
    )


instruments = metrics.Once(_create)


def leading(yes: bool) -> None:
    instruments().leader.set(1 if yes else 0)


def polled(blind_reason: str | None) -> None:
    """One poll's self-check: None when it could trust what it saw. A blind poll judged
    nothing: the counts and gates of an earlier poll are not shown as if they were now's."""
    made = instruments()
    for reason in BLIND_REASONS:
        made.blind.labels(reason).set(1 if reason == blind_reason else 0)
    if blind_reason is not None:
        _nothing_judged(made)
    made.polls.labels("ok" if blind_reason is None else "blind").inc()


def idle() -> None:
    """Not the detector (any more): nothing of this engine is blind, counted or gated."""
    made = instruments()
    made.leader.set(0)
    for reason in BLIND_REASONS:
        made.blind.labels(reason).set(0)
    _nothing_judged(made)


def _nothing_judged(made: Instruments) -> None:
    for state in HOST_STATES:
        made.hosts.labels(state).set(0)
    for gate in GATES:
        made.gate_active.labels(gate).set(0)
    made.deferred.set(0)


def hosts(up: int, down: int, unreadable: int) -> None:
    made = instruments()
    made.hosts.labels("up").set(up)
    made.hosts.labels("down").set(down)
    made.hosts.labels("unreadable").set(unreadable)


def reported(outcome: str) -> None:
    instruments().reports.labels(outcome).inc()


def gates(active: set[str], deferred: int) -> None:
    """The gates that acted in one poll, and the hosts it did not report."""
    made = instruments()
    for gate in GATES:
        made.gate_active.labels(gate).set(1 if gate in active else 0)
        if gate in active:
            made.gate_trips.labels(gate).inc()
    made.deferred.set(deferred)


def verdict(rule: str, confirmed: bool) -> None:
    instruments().verdicts.labels(rule, "confirmed" if confirmed else "held").inc()


def shadow_reported(segment: str, decision: str, gate: str | None) -> None:
    instruments().shadow_reports.labels(segment, decision, gate or "none").inc()


def shadow_verdict(rule: str, shadow_rule: str, decision: str, agree: bool) -> None:
    agreement = "agree" if agree else "disagree"
    instruments().shadow_verdicts.labels(rule, shadow_rule, decision, agreement).inc()
