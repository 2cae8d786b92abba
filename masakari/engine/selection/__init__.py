"""Which instances of a failed host move, and in which order: one function for the engine's
prepare task and for recovery plans (``GET .../recovery_plan``, ``masakari-manage host plan``).

The rules, in the order they apply (PrepareHAEnabledInstancesTask's, then the project's):
``ignore_instances_in_error_state``, HA-enabled or ``evacuate_all_instances``, the scope
rules (masakari.engine.selection.scope), the safety checks (masakari.engine.selection.safety).
The order: HA-enabled first, each newest recorded first as the reference's rows come out,
then with ``order_by_priority`` by priority and with ``order_in_groups`` by ordering group
(:func:`order`). Capacity comes after (masakari.engine.capacity).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from oslo_config import cfg
from oslo_utils import strutils

from masakari.compute.placement import Resources, flavor_resources
from masakari.compute.servers import Server
from masakari.engine.ports import NovaReads
from masakari.engine.selection import safety, scope

T = TypeVar("T")

ERROR_STATE = "in error state (ignore_instances_in_error_state)"
NOT_HA = "not HA-enabled (evacuate_all_instances is false)"


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
    def of(cls, server: Server | Mapping[str, Any], conf: cfg.ConfigOpts) -> Instance:
        found = Server.of(server)
        options = conf.host_failure
        metadata = found.metadata
        # Who may set the ordering keys is the operator's choice (the instance's users, or
        # the operator through the flavor); HA_Enabled stays the instance's, as Nova has it.
        ordering = metadata
        if options.ordering_metadata_source == "flavor":
            ordering = found.flavor.get("extra_specs") or {}
        return cls(
            id=found.id,
            name=found.name,
            ha=strutils.bool_from_string(metadata.get(options.ha_enabled_instance_metadata_key)),
            priority=priority_of(ordering, options.priority_instance_metadata_key),
            resources=flavor_resources({"flavor": found.flavor}),
            vm_state=found.vm_state,
            group=priority_of(ordering, options.group_instance_metadata_key),
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


@dataclasses.dataclass(frozen=True)
class Selection:
    """What host recovery does with the instances Nova lists on a failed host."""

    conf: cfg.ConfigOpts
    # Left before the scope rules, with the reason (in Nova's order); errored HA ones are said.
    ignored: list[tuple[Instance, str]]
    ha: list[Server]  # HA-enabled, not ignored
    others: list[Server]  # not HA-enabled, with evacuate_all_instances
    host_rule: str | None  # the aggregate rule that leaves every instance, if one does
    out_of_scope: list[tuple[Server, str]]  # with the rule
    chosen: list[Server]  # recorded as vmoves, in this order (ha, then others)
    unsafe: dict[str, str]  # instance id -> why it is not evacuated (its vmove fails)

    @property
    def instances(self) -> dict[str, Instance]:
        return {s.id: Instance.of(s, self.conf) for s in self.chosen}

    @property
    def ha_ids(self) -> set[str]:
        return {s.id for s in self.ha}

    def ordered(self) -> list[Instance]:
        """The chosen instances in evacuation order (the unsafe ones included)."""
        known = self.instances
        # The engine records ha + others in that order, then sorts its rows newest first.
        newest_first = [known[s.id] for s in reversed(self.chosen)]
        return order(
            newest_first,
            lambda i: i.id,
            self.ha_ids,
            priorities(known.values(), self.conf),
            groups(known.values(), self.conf),
        )

    def moving(self) -> list[Instance]:
        """The instances whose evacuation is sent (capacity permitting), in order."""
        return [i for i in self.ordered() if i.id not in self.unsafe]

    def left(self) -> list[tuple[Instance, str]]:
        """Every listed instance that does not move, with the reason."""
        found = list(self.ignored)
        out = [(s, f"out of scope ([host_failure] {rule})") for s, rule in self.out_of_scope]
        if self.host_rule is not None:
            out = [(s, f"host out of scope ([host_failure] {self.host_rule})") for s in self.ha]
            out += [
                (s, f"host out of scope ([host_failure] {self.host_rule})") for s in self.others
            ]
        found += [(Instance.of(s, self.conf), why) for s, why in out]
        known = self.instances
        found += [(known[i], "unsafe: " + why) for i, why in self.unsafe.items()]
        return found


def select(
    conf: cfg.ConfigOpts,
    nova: NovaReads,
    host: str,
    listed: Sequence[Server | Mapping[str, Any]],
    target: str | None,
    in_error: Callable[[Server], bool] | None = None,
) -> Selection:
    """The selection of ``host``'s instances ``listed`` (as Nova lists them) for an
    evacuation to ``target`` (a reserved host, or None for Nova's scheduler).

    ``in_error``: whether an instance was in error before the failure (the engine asks its
    recorded plans; by default the listed vm_state).
    """
    options = conf.host_failure
    errored = in_error or (lambda s: s.vm_state == "error")
    key = options.ha_enabled_instance_metadata_key
    ignored: list[tuple[Instance, str]] = []
    ha: list[Server] = []
    others: list[Server] = []
    for server in (Server.of(s) for s in listed):
        is_ha = strutils.bool_from_string(server.metadata.get(key, False))
        if options.ignore_instances_in_error_state and errored(server):
            ignored.append((Instance.of(server, conf), ERROR_STATE))
        elif is_ha:
            ha.append(server)
        else:
            others.append(server)
    if not options.evacuate_all_instances:
        ignored += [(Instance.of(s, conf), NOT_HA) for s in others]
        others = []
    candidates = ha + others
    host_rule = None
    if candidates and scope.aggregates_set(options):
        host_rule = scope.host_out_of_scope(options, host, nova.list_aggregates())
    chosen: list[Server] = []
    out_of_scope: list[tuple[Server, str]] = []
    if host_rule is None:
        for server in candidates:
            rule = scope.out_of_scope(options, server)
            if rule is None:
                chosen.append(server)
            else:
                out_of_scope.append((server, rule))
    unsafe = safety.unsafe(options, nova, chosen, target) if chosen else {}
    return Selection(conf, ignored, ha, others, host_rule, out_of_scope, chosen, unsafe)
