"""Recovery plans: what host recovery would do if a host failed now, and the ordering and
target choice the engine itself uses, so that a plan predicts the recovery it describes.

The engine calls :func:`order` (always), :func:`rank_reserved_hosts` and :func:`fit` (with
``[host_failure]/capacity_aware_targets``); :func:`build` runs the same functions on live Nova
and Placement data for ``GET .../recovery_plan`` and ``masakari-manage host plan``, changing
nothing.

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
        )


def priority_of(metadata: Mapping[str, str], key: str) -> int | None:
    """The integer under ``key``; anything else (absent, "high", "1.5") is no priority."""
    try:
        return int(str(metadata[key]).strip())
    except (KeyError, ValueError):
        return None


def order(
    items: Sequence[T],
    instance_id: Callable[[T], str],
    ha_ids: Iterable[str] | None,
    priorities: Mapping[str, int | None] | None,
) -> list[T]:
    """``items`` (in the reference's order) reordered: HA-enabled first; with ``priorities``,
    inside each group those with a priority, higher first, then those without. Stable, so
    without priorities this is the order the engine always used."""
    ha = set(ha_ids or ())

    def key(item: T) -> tuple[int, int, int]:
        iid = instance_id(item)
        group = 0 if iid in ha else 1
        if priorities is None:
            return group, 0, 0
        prio = priorities.get(iid)
        return (group, 1, 0) if prio is None else (group, 0, -prio)

    return sorted(items, key=key)


def priorities(instances: Iterable[Instance], conf: cfg.ConfigOpts) -> dict[str, int | None] | None:
    """The priorities :func:`order` takes: None unless ``order_by_priority`` is on."""
    if not conf.host_failure.order_by_priority:
        return None
    return {i.id: i.priority for i in instances}


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
    ordered = order(selected, lambda i: i.id, {i.id for i in ha}, priorities(selected, conf))
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

    def view(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance.id,
            "name": self.instance.name,
            "ha_enabled": self.instance.ha,
            "priority": self.instance.priority,
            "resources": dict(self.instance.resources),
            "target": self.target,
            "fits": self.fits,
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

    def view(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "recovery_method": self.recovery_method,
            "options": dict(self.options),
            "verdict": self.verdict,
            "instances": [s.view() for s in self.steps],
            "left_behind": self.left_behind,
            "not_evacuated": [
                {"instance_id": i.id, "name": i.name, "reason": reason}
                for i, reason in self.not_evacuated
            ],
            "reserved_hosts": list(self.reserved_hosts),
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
    if recovery_method in (RESERVED_HOST, RH_PRIORITY) and aware:
        reserved = rank_reserved_hosts(reserved, instances, placement)
    first_reserved = recovery_method in (RESERVED_HOST, RH_PRIORITY)
    if first_reserved and not reserved:
        messages.append("No usable reserved host in the segment: the reserved-host flow fails.")
    if first_reserved and not reserved:
        steps = [Step(i, None, False, "no reserved host") for i in instances]
    else:
        target = reserved[0] if first_reserved else SCHEDULER
        names = (
            reserved[:1] if first_reserved else usable_peers(nova, [p for p in peers if p != host])
        )
        if not first_reserved and not names:
            messages.append("No other host of the segment has nova-compute enabled and up.")
        try:
            steps = _steps(fit(instances, copies(placement, names)), aware, target)
        except UnknownCapacity as exc:
            # As the engine: without capacity data everything is sent.
            messages.append(f"{exc.message} Capacity not checked.")
            steps = [Step(i, target, None, "capacity unknown") for i in instances]
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
        },
        steps=steps,
        not_evacuated=skipped,
        reserved_hosts=reserved if recovery_method != AUTO else [],
        then=then,
        messages=messages,
    )


def _steps(placed: Sequence[tuple[Instance, str | None]], aware: bool, target: str) -> list[Step]:
    """``target``: where the engine sends each evacuation (a reserved host, or SCHEDULER)."""
    steps = []
    for inst, where in placed:
        if where is not None:
            steps.append(Step(inst, target, True))
        elif aware:
            steps.append(Step(inst, None, False, no_room(inst)))
        else:
            # Sent anyway, as the reference does; Nova's scheduler then refuses it.
            reason = no_room(inst) + " Sent anyway (capacity_aware_targets is off): Nova fails it."
            steps.append(Step(inst, target, False, reason))
    return steps


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
