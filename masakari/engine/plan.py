"""Recovery plans: what host recovery would do if a host failed now, changing nothing.

:func:`build` runs the engine's own selection (masakari.engine.selection: rules, scope,
safety, order) and capacity judgement (masakari.engine.capacity) on live Nova and Placement
data for ``GET .../recovery_plan`` and ``masakari-manage host plan``. With
``[host_failure]/order_in_groups`` the engine starts a group once the previous one has
settled (masakari.engine.recovery.groups); the plan lists the groups in that order. The
plan's shape is masakari.engine.plan_view.
"""

from __future__ import annotations

from collections.abc import Sequence

from oslo_config import cfg

from masakari.compute.placement import Resources, add, describe
from masakari.compute.servers import Server
from masakari.db import hosts as hosts_db
from masakari.db import segments as segments_db
from masakari.db.database import Database
from masakari.db.statuses import RecoveryMethod
from masakari.engine import selection
from masakari.engine.capacity import (
    Capacities,
    UnknownCapacity,
    copies,
    fit,
    no_room,
    rank_reserved_hosts,
    usable_peers,
)
from masakari.engine.plan_view import Candidate, Plan, Step
from masakari.engine.ports import NovaReads
from masakari.engine.selection import Instance

SCHEDULER = "scheduler"
SENT_ANYWAY = " Sent anyway (capacity_aware_targets is off): Nova fails it."


def build(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    placement: Capacities,
    *,
    host: str,
    recovery_method: str,
    reserved_hosts: Sequence[str],
    peers: Sequence[str],
) -> Plan:
    """The plan for ``host`` failing now. ``reserved_hosts``: the segment's usable spares in
    the engine's order; ``peers``: the segment's other hosts."""
    options = conf.host_failure
    aware = bool(options.capacity_aware_targets)
    listed = nova.list_servers_on_host(host)
    # What the scheduler flow evacuates, and what the reserved-host flow ranks spares by.
    base = selection.select(conf, nova, host, listed, None)
    instances = base.moving()
    messages: list[str] = []
    reserved = list(reserved_hosts)
    candidates: list[Candidate] = []
    skipped = base.left()
    if recovery_method in (RecoveryMethod.RESERVED_HOST, RecoveryMethod.RH_PRIORITY):
        if aware and len(reserved) > 1:
            reserved = rank_reserved_hosts(reserved, instances, placement)
        if not reserved:
            messages.append("No usable reserved host in the segment: the reserved-host flow fails.")
        steps, candidates, unsafe = _reserved_steps(
            conf, nova, placement, host, listed, base, reserved, messages
        )
        skipped = [(i, why) for i, why in skipped if i.id not in base.unsafe] + unsafe
    else:
        names = usable_peers(nova, [p for p in peers if p != host])
        if not names:
            messages.append("No other host of the segment has nova-compute enabled and up.")
        try:
            steps = _steps(fit(instances, copies(placement, names)), aware, SCHEDULER)
        except UnknownCapacity as exc:
            # As the engine: without capacity data everything is sent.
            messages.append(f"{exc.message} Capacity not checked.")
            steps = [Step(i, SCHEDULER, None, "capacity unknown", [SCHEDULER]) for i in instances]
    need: Resources = {}
    for inst in instances:
        need = add(need, inst.resources)
    if instances:
        messages.append(f"{len(instances)} instance(s) to evacuate, needing {describe(need)}.")
    fallbacks: dict[str, str] = {
        RecoveryMethod.AUTO_PRIORITY: RecoveryMethod.RESERVED_HOST,
        RecoveryMethod.RH_PRIORITY: RecoveryMethod.AUTO,
    }
    then = fallbacks.get(recovery_method)
    return Plan(
        host=host,
        recovery_method=recovery_method,
        options={
            "order_by_priority": bool(options.order_by_priority),
            "priority_instance_metadata_key": options.priority_instance_metadata_key,
            "capacity_aware_targets": aware,
            "order_in_groups": bool(options.order_in_groups),
            "group_instance_metadata_key": options.group_instance_metadata_key,
            "group_start_timeout": options.group_start_timeout,
        },
        steps=steps,
        not_evacuated=skipped,
        reserved_hosts=reserved if recovery_method != RecoveryMethod.AUTO else [],
        then=then,
        messages=messages,
        candidates=candidates,
        grouped=bool(options.order_in_groups),
    )


def for_host(
    conf: cfg.ConfigOpts,
    db: Database,
    nova: NovaReads,
    placement: Capacities,
    host_name: str,
    segment_uuid: str,
) -> Plan:
    """:func:`build` for a host of the database: its segment's recovery method, usable spares
    and other hosts, as the engine would read them at the host's failure. ``placement``
    should count the room masakari holds as free (masakari.engine.capacity.unheld): a
    recovery releases it first."""
    with db.reader() as session:
        segment = segments_db.get(session, segment_uuid)
        method = segment.recovery_method
        # The engine unreserves the failed host before it lists the spares.
        reserved = [
            name
            for name in hosts_db.reserved_host_names(session, segment.uuid)
            if name != host_name
        ]
        peers = hosts_db.peer_names(session, host_name)
    return build(
        conf,
        nova,
        placement,
        host=host_name,
        recovery_method=method,
        reserved_hosts=reserved,
        peers=peers,
    )


def _steps(placed: Sequence[tuple[Instance, str | None]], aware: bool, target: str) -> list[Step]:
    """The auto flow's steps: ``target`` (SCHEDULER) is where each evacuation is sent."""
    steps = []
    for inst, where in placed:
        if where is not None:
            steps.append(Step(inst, target, True, None, [target]))
        elif aware:
            steps.append(Step(inst, None, False, no_room(inst)))
        else:
            # Sent anyway, as the reference does; Nova's scheduler then refuses it.
            steps.append(Step(inst, target, False, no_room(inst) + SENT_ANYWAY, [target]))
    return steps


def _reserved_steps(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    placement: Capacities,
    host: str,
    listed: Sequence[Server],
    base: selection.Selection,
    reserved: Sequence[str],
    messages: list[str],
) -> tuple[list[Step], list[Candidate], list[tuple[Instance, str]]]:
    """The reserved-host flow, one reserved host after the other as the engine tries them:
    each attempt selects what is still on the failed host (the safety checks judge each
    spare) and evacuates it, in order, to that spare; an attempt that leaves an instance
    behind (no room, not safe there) makes the flow try the next spare.

    Also returns the instances never sent because no spare tried was safe for them."""
    on_host = {s.id for s in listed}
    attempts: dict[str, list[str]] = {i.id: [] for i in base.ordered()}
    landed: dict[str, str] = {}
    unknown: set[str] = set()
    unsafe: dict[str, str] = {}
    candidates: list[Candidate] = []
    tried = False  # a reserved host was tried for room
    done = False
    for name in reserved:
        if done:
            candidates.append(Candidate(name, [], [], "not needed"))
            continue
        chosen = selection.select(conf, nova, host, [s for s in listed if s.id in on_host], name)
        if not chosen.chosen:
            # The engine skips the recovery: nothing is left to evacuate.
            done = True
            candidates.append(Candidate(name, [], [], "not needed"))
            continue
        unsafe.update(chosen.unsafe)
        moving = chosen.moving()
        for inst in moving:
            attempts.setdefault(inst.id, [])
            unsafe.pop(inst.id, None)
        if not nova.find_compute_services(name):
            reason = "no nova-compute service in Nova: enabling it fails, the next one is tried"
            candidates.append(Candidate(name, [], [], reason))
            continue
        cap = placement.host_capacity(name)
        if cap is None:
            # As the engine: with unknown capacity everything is sent, and assumed to land.
            messages.append(f"Placement has no resource provider named '{name}': capacity unknown.")
            room, rest, sent = moving, [], moving
            unknown.update(i.id for i in moving)
            full = "capacity unknown"
        else:
            tried = True
            fitted = fit(moving, [cap])
            room = [i for i, where in fitted if where is not None]
            rest = [i for i, where in fitted if where is None]
            sent = room if conf.host_failure.capacity_aware_targets else moving
            full = None
        for inst in sent:
            attempts[inst.id].append(name)
        for inst in room:
            landed[inst.id] = name
            on_host.discard(inst.id)
        if rest:
            full = (
                f"room for {len(room)} of {len(moving)}: "
                + ("the others are not sent" if sent is room else "Nova fails the others")
                + ", then the next reserved host is tried"
            )
        elif chosen.unsafe:
            full = (
                f"{len(chosen.unsafe)} instance(s) not safe to evacuate there, "
                "then the next reserved host is tried"
            )
        done = not rest and not chosen.unsafe
        candidates.append(Candidate(name, [i.id for i in sent], [i.id for i in room], full))
    known = {i.id: i for i in base.ordered()}
    left = [(known[i], "unsafe: " + why) for i, why in unsafe.items() if not attempts.get(i)]
    steps = []
    for inst in base.ordered():
        hosts = attempts.get(inst.id, [])
        if inst.id in unsafe and not hosts:
            continue
        if inst.id in unknown:
            steps.append(Step(inst, landed[inst.id], None, "capacity unknown", hosts))
        elif inst.id in landed:
            earlier = hosts[:-1]
            why = f"No room on {', '.join(earlier)} first." if earlier else None
            steps.append(Step(inst, landed[inst.id], True, why, hosts))
        elif not hosts:
            why = no_room(inst) + " No reserved host has room." if tried else "no reserved host"
            steps.append(Step(inst, None, False, why))
        else:
            steps.append(Step(inst, hosts[-1], False, no_room(inst) + SENT_ANYWAY, hosts))
    return steps, candidates, left


__all__ = ["Candidate", "Plan", "Step", "build"]
