"""Recovery plans: what host recovery would do if a host failed now, and the ordering and
target choice the engine itself uses, so that a plan predicts the recovery it describes.

The engine calls :func:`order` (always), :func:`rank_reserved_hosts` and :func:`fit` (with
``[host_failure]/capacity_aware_targets``); :func:`build` runs the same functions on live Nova
and Placement data for ``GET .../recovery_plan`` and ``masakari-manage host plan``, changing
nothing. With ``[host_failure]/order_in_groups`` the instances are ordered by ordering group
first (integer group numbers, lower first, ungrouped last); the engine starts a group once the
previous one has settled (masakari.engine.recovery.groups).

Capacity is Placement's: a target's free room is its (total - reserved) * allocation_ratio
minus its usage, per resource class; an instance needs what its flavor allocates. Targets are
filled greedily in evacuation order, as the engine sends the evacuations, and an instance
that fits nowhere is left behind while smaller ones after it may still fit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from oslo_config import cfg
from oslo_utils import strutils

from masakari import exception
from masakari.compute.placement import HostCapacity, Resources, add, describe, flavor_resources

T = TypeVar("T")

SCHEDULER = "scheduler"
AUTO = "auto"
RESERVED_HOST = "reserved_host"
AUTO_PRIORITY = "auto_priority"
RH_PRIORITY = "rh_priority"


class Reads(Protocol):
    """The Nova reads a plan makes."""

    def find_compute_services(self, host: str) -> list[dict[str, Any]]: ...
    def list_servers_on_host(self, host: str) -> list[dict[str, Any]]: ...


class Capacities(Protocol):
    def host_capacity(self, name: str) -> HostCapacity | None: ...


@dataclasses.dataclass(frozen=True)
class Instance:
    """What ordering and fitting need of a server."""

    id: str
    name: str
    ha: bool
    priority: int | None
    resources: Resources
    vm_state: str | None = None
    group: int | None = None

    @classmethod
    def of(cls, server: Mapping[str, Any], conf: cfg.ConfigOpts) -> Instance:
        options = conf.host_failure
        metadata = server.get("metadata") or {}
        return cls(
            id=server["id"],
            name=server.get("name") or "",
            ha=strutils.bool_from_string(metadata.get(options.ha_enabled_instance_metadata_key)),
            priority=priority_of(metadata, options.priority_instance_metadata_key),
            resources=flavor_resources(server),
            vm_state=server.get("OS-EXT-STS:vm_state"),
            group=priority_of(metadata, options.group_instance_metadata_key),
        )


def priority_of(metadata: Mapping[str, str], key: str) -> int | None:
    """The integer under ``key``; anything else (absent, "high", "1.5") is none (no priority,
    no group)."""
    try:
        return int(str(metadata[key]).strip())
    except (KeyError, ValueError):
        return None


def order(
    items: Sequence[T],
    instance_id: Callable[[T], str],
    ha_ids: Iterable[str] | None,
    priorities: Mapping[str, int | None] | None,
    groups: Mapping[str, int | None] | None = None,
) -> list[T]:
    """``items`` (in the reference's order) reordered: with ``groups``, by ordering group
    (lower number first, ungrouped last); then HA-enabled first; with ``priorities``, inside
    each of these those with a priority, higher first, then those without. Stable, so without
    priorities and groups this is the order the engine always used."""
    ha = set(ha_ids or ())

    def key(item: T) -> tuple[int, int, int, int, int]:
        iid = instance_id(item)
        number = None if groups is None else groups.get(iid)
        ordering = (1, 0) if number is None else (0, number)
        rank = 0 if iid in ha else 1
        prio = None if priorities is None else priorities.get(iid)
        if priorities is None:
            return *ordering, rank, 0, 0
        return (*ordering, rank, 1, 0) if prio is None else (*ordering, rank, 0, -prio)

    return sorted(items, key=key)


def priorities(instances: Iterable[Instance], conf: cfg.ConfigOpts) -> dict[str, int | None] | None:
    """The priorities :func:`order` takes: None unless ``order_by_priority`` is on."""
    if not conf.host_failure.order_by_priority:
        return None
    return {i.id: i.priority for i in instances}


def groups(instances: Iterable[Instance], conf: cfg.ConfigOpts) -> dict[str, int | None] | None:
    """The ordering groups :func:`order` takes: None unless ``order_in_groups`` is on."""
    if not conf.host_failure.order_in_groups:
        return None
    return {i.id: i.group for i in instances}


def fit(
    instances: Sequence[Instance], targets: Sequence[HostCapacity]
) -> list[tuple[Instance, str | None]]:
    """Each instance, in order, with the first target that still has room (None: none has).

    The targets' usage grows with what they take: pass copies when the data is to be reused.
    """
    placed: list[tuple[Instance, str | None]] = []
    for inst in instances:
        target = next((t for t in targets if t.fits(inst.resources)), None)
        if target is not None:
            target.take(inst.resources)
        placed.append((inst, target.name if target else None))
    return placed


def rank_reserved_hosts(
    reserved: Sequence[str], instances: Sequence[Instance], capacities: Capacities
) -> list[str]:
    """The reserved hosts that can hold all ``instances`` first (each in the given order), then
    the others: the engine tries them in this order."""
    holding = []
    for name in reserved:
        cap = capacities.host_capacity(name)
        if cap is not None and all(t for _, t in fit(instances, [cap])):
            holding.append(name)
    return holding + [name for name in reserved if name not in holding]


def select(
    servers: Sequence[Mapping[str, Any]], conf: cfg.ConfigOpts
) -> tuple[list[Instance], list[tuple[Instance, str]]]:
    """The instances host recovery evacuates, in the engine's order, and those it leaves with
    the reason (the rules of PrepareHAEnabledInstancesTask)."""
    options = conf.host_failure
    ha: list[Instance] = []
    others: list[Instance] = []
    skipped: list[tuple[Instance, str]] = []
    for server in servers:
        inst = Instance.of(server, conf)
        if options.ignore_instances_in_error_state and inst.vm_state == "error":
            skipped.append((inst, "in error state (ignore_instances_in_error_state)"))
        elif inst.ha or options.evacuate_all_instances:
            (ha if inst.ha else others).append(inst)
        else:
            skipped.append((inst, "not HA-enabled (evacuate_all_instances is false)"))
    # The engine records ha + others in that order, then sorts its rows newest first.
    selected = list(reversed(ha + others))
    ordered = order(
        selected,
        lambda i: i.id,
        {i.id for i in ha},
        priorities(selected, conf),
        groups(selected, conf),
    )
    return ordered, skipped


def usable_peers(nova: Reads, peers: Iterable[str]) -> list[str]:
    """The hosts whose nova-compute is enabled and up: where Nova's scheduler may place."""
    usable = []
    for name in peers:
        services = nova.find_compute_services(name)
        if services and services[0].get("status") == "enabled" and services[0].get("state") == "up":
            usable.append(name)
    return usable


class UnknownCapacity(exception.NovaError):
    """A target host has no Placement resource provider of its name (a compute node named
    after an FQDN, say): its room cannot be told, so nothing is decided on capacity."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(
            "Placement has no resource provider named " + ", ".join(f"'{n}'" for n in names)
        )
        self.names = list(names)


def copies(capacities: Capacities, names: Iterable[str]) -> list[HostCapacity]:
    """Fresh capacities of ``names``; UnknownCapacity when Placement lacks any of them."""
    found, missing = [], []
    for name in names:
        cap = capacities.host_capacity(name)
        if cap is None:
            missing.append(name)
        else:
            found.append(cap)
    if missing:
        raise UnknownCapacity(missing)
    return found


# --- plans ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Step:
    instance: Instance
    target: str | None  # a reserved host, SCHEDULER, or None when it is left behind
    fits: bool | None  # None: capacity not known (no target)
    reason: str | None = None
    # Where its evacuation is sent, in order: a reserved host per reserved-host attempt.
    attempts: list[str] = dataclasses.field(default_factory=list)

    def view(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance.id,
            "name": self.instance.name,
            "ha_enabled": self.instance.ha,
            "priority": self.instance.priority,
            "group": self.instance.group,
            "resources": dict(self.instance.resources),
            "target": self.target,
            "fits": self.fits,
            "reason": self.reason,
            "attempts": list(self.attempts),
        }


@dataclasses.dataclass
class Candidate:
    """A reserved host as the reserved-host flow tries it."""

    host: str
    sent: list[str]  # the instances evacuated to it, in order
    fitting: list[str]  # those of ``sent`` it has room for
    reason: str | None  # why the flow goes on to the next one, or does not use this one

    def view(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "sent": list(self.sent),
            "fits": list(self.fitting),
            "reason": self.reason,
        }


@dataclasses.dataclass
class Plan:
    host: str
    recovery_method: str
    options: dict[str, Any]
    steps: list[Step]
    not_evacuated: list[tuple[Instance, str]]
    reserved_hosts: list[str]
    then: str | None  # what the method tries when the first flow fails
    messages: list[str]
    candidates: list[Candidate] = dataclasses.field(default_factory=list)
    grouped: bool = False

    @property
    def verdict(self) -> str:
        """fits: every evacuation has room; partial: some are left behind; none: all are;
        empty: nothing to evacuate; unknown: capacity could not be read."""
        if not self.steps:
            return "empty"
        if any(s.fits is None for s in self.steps):
            return "unknown"
        fitting = sum(1 for s in self.steps if s.fits)
        if fitting == len(self.steps):
            return "fits"
        return "partial" if fitting else "none"

    @property
    def left_behind(self) -> list[str]:
        return [s.instance.id for s in self.steps if s.fits is False]

    def groups(self) -> list[dict[str, Any]]:
        """The ordering groups in the order they start, with their instances (those sent)."""
        if not self.grouped:
            return []
        found: list[dict[str, Any]] = []
        for step in self.steps:
            if not step.attempts:
                continue
            if not found or found[-1]["group"] != step.instance.group:
                found.append({"group": step.instance.group, "instances": []})
            found[-1]["instances"].append(step.instance.id)
        return found

    def view(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "recovery_method": self.recovery_method,
            "options": dict(self.options),
            "verdict": self.verdict,
            "instances": [s.view() for s in self.steps],
            "groups": self.groups(),
            "left_behind": self.left_behind,
            "not_evacuated": [
                {"instance_id": i.id, "name": i.name, "reason": reason}
                for i, reason in self.not_evacuated
            ],
            "reserved_hosts": list(self.reserved_hosts),
            "reserved_host_attempts": [c.view() for c in self.candidates],
            "then": self.then,
            "messages": list(self.messages),
        }


def build(
    conf: cfg.ConfigOpts,
    nova: Reads,
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
    instances, skipped = select(nova.list_servers_on_host(host), conf)
    messages: list[str] = []
    reserved = list(reserved_hosts)
    candidates: list[Candidate] = []
    if recovery_method in (RESERVED_HOST, RH_PRIORITY) and aware:
        reserved = rank_reserved_hosts(reserved, instances, placement)
    if recovery_method in (RESERVED_HOST, RH_PRIORITY):
        if not reserved:
            messages.append("No usable reserved host in the segment: the reserved-host flow fails.")
        steps, candidates = _reserved_steps(nova, placement, instances, reserved, aware, messages)
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
    then = {
        AUTO_PRIORITY: RESERVED_HOST,
        RH_PRIORITY: AUTO,
    }.get(recovery_method)
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
        reserved_hosts=reserved if recovery_method != AUTO else [],
        then=then,
        messages=messages,
        candidates=candidates,
        grouped=bool(options.order_in_groups),
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
            reason = no_room(inst) + " Sent anyway (capacity_aware_targets is off): Nova fails it."
            steps.append(Step(inst, target, False, reason, [target]))
    return steps


def _reserved_steps(
    nova: Reads,
    placement: Capacities,
    instances: Sequence[Instance],
    reserved: Sequence[str],
    aware: bool,
    messages: list[str],
) -> tuple[list[Step], list[Candidate]]:
    """The reserved-host flow, one reserved host after the other as the engine tries them:
    each attempt evacuates what is still on the failed host (in order) to one spare; an
    attempt with an evacuation that fails (no room) makes the flow try the next spare."""
    remaining = list(instances)
    attempts: dict[str, list[str]] = {i.id: [] for i in instances}
    landed: dict[str, str] = {}
    unknown: set[str] = set()
    candidates: list[Candidate] = []
    usable = False  # a reserved host was tried for room
    for name in reserved:
        if not remaining:
            candidates.append(Candidate(name, [], [], "not needed"))
            continue
        if not nova.find_compute_services(name):
            reason = "no nova-compute service in Nova: enabling it fails, the next one is tried"
            candidates.append(Candidate(name, [], [], reason))
            continue
        cap = placement.host_capacity(name)
        if cap is None:
            # As the engine: with unknown capacity everything is sent, and assumed to land.
            messages.append(f"Placement has no resource provider named '{name}': capacity unknown.")
            ids = [i.id for i in remaining]
            for i in ids:
                attempts[i].append(name)
                landed[i] = name
            unknown.update(ids)
            candidates.append(Candidate(name, ids, ids, "capacity unknown"))
            remaining = []
            continue
        usable = True
        fitted = fit(remaining, [cap])
        room = [i for i, where in fitted if where is not None]
        rest = [i for i, where in fitted if where is None]
        sent = remaining if not aware else room
        for inst in sent:
            attempts[inst.id].append(name)
        for inst in room:
            landed[inst.id] = name
        full: str | None = None
        if rest:
            full = (
                f"room for {len(room)} of {len(remaining)}: "
                + ("the others are not sent" if aware else "Nova fails the others")
                + ", then the next reserved host is tried"
            )
        candidates.append(Candidate(name, [i.id for i in sent], [i.id for i in room], full))
        remaining = rest
    steps = []
    for inst in instances:
        tried = attempts[inst.id]
        if inst.id in unknown:
            steps.append(Step(inst, landed[inst.id], None, "capacity unknown", tried))
        elif inst.id in landed:
            earlier = tried[:-1]
            why = f"No room on {', '.join(earlier)} first." if earlier else None
            steps.append(Step(inst, landed[inst.id], True, why, tried))
        elif not tried:
            why = no_room(inst) + " No reserved host has room." if usable else "no reserved host"
            steps.append(Step(inst, None, False, why))
        else:
            reason = no_room(inst) + " Sent anyway (capacity_aware_targets is off): Nova fails it."
            steps.append(Step(inst, tried[-1], False, reason, tried))
    return steps, candidates


def no_room(inst: Instance) -> str:
    return f"No target has room for {describe(inst.resources)}."


# --- the engine's side ----------------------------------------------------------------------


def reserved_order(
    conf: cfg.ConfigOpts,
    nova: Reads,
    capacities: Capacities,
    host: str,
    reserved_hosts: Sequence[str],
) -> list[str]:
    """The order the reserved-host flow tries its candidates in, for ``host``'s instances."""
    instances, _ = select(nova.list_servers_on_host(host), conf)
    return rank_reserved_hosts(reserved_hosts, instances, capacities)


def split_by_capacity(
    instances: Sequence[Instance],
    nova: Reads,
    capacities: Capacities,
    *,
    reserved_host: str | None,
    peers: Iterable[str],
) -> list[Instance]:
    """The instances (in order) that no target has room for: the reserved host, or for the
    scheduler the peers whose nova-compute is enabled and up."""
    names = [reserved_host] if reserved_host else usable_peers(nova, peers)
    return [inst for inst, where in fit(instances, copies(capacities, names)) if where is None]
