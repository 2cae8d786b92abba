"""Instances a host recovery must not evacuate blindly ([host_failure] check_server_groups,
no_shared_storage): each gets the reason it is left, and no Nova request is made for a
check that is off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from masakari.compute.servers import Server, ServerGroup
from masakari.engine.ports import NovaReads

AFFINITY = "affinity"
ANTI_AFFINITY = "anti-affinity"


def local_root_disk(server: Server) -> bool:
    """Booted from an image: its root disk lives on the host. Nova shows an instance booted
    from a volume with an empty ``image``."""
    return bool(server.image_id)


def group_conflicts(
    groups: Sequence[ServerGroup],
    moving: Sequence[str],
    on_target: set[str],
    target: str,
) -> dict[str, str]:
    """Instance id -> why evacuating it to ``target`` would break its server group's policy.

    ``moving``: the instances this recovery evacuates to ``target``, in order; ``on_target``:
    the instances already there. Anti-affinity: a member already on the target, or one
    evacuated there earlier in the order, rules the others out. Affinity: a member that
    stays elsewhere (on another host, or left on the failed one) rules every mover out.
    Soft policies are preferences: never a reason.
    """
    moving_set = set(moving)
    found: dict[str, str] = {}
    for group in groups:
        members = list(group.members)
        movers = [m for m in moving if m in members]
        if not movers:
            continue
        kind = group.policy
        name = f"server group '{group.id}' ({kind})"
        if kind == ANTI_AFFINITY:
            there = sorted(set(members) & on_target)
            for position, mover in enumerate(movers):
                if there:
                    found[mover] = f"{name}: member(s) {','.join(there)} already on '{target}'"
                elif position > 0:
                    found[mover] = f"{name}: member {movers[0]} is evacuated to '{target}' too"
        elif kind == AFFINITY:
            elsewhere = sorted(set(members) - moving_set - on_target)
            if elsewhere:
                for mover in movers:
                    found[mover] = f"{name}: member(s) {','.join(elsewhere)} stay off '{target}'"
    return found


def unsafe(
    options: Any,
    nova: NovaReads,
    servers: Sequence[Server],
    target: str | None,
) -> dict[str, str]:
    """Instance id -> why it is not evacuated, for the instances a recovery selected."""
    found: dict[str, str] = {}
    if options.no_shared_storage:
        for server in servers:
            if local_root_disk(server):
                found[server.id] = (
                    "its root disk is local (booted from an image) and [host_failure] "
                    "no_shared_storage is set: evacuating would rebuild it from its image"
                )
    if options.check_server_groups and target is not None:
        moving = [s.id for s in servers if s.id not in found]
        if moving:
            on_target = {s.id for s in nova.list_servers_on_host(target)}
            conflicts = group_conflicts(nova.list_server_groups(), moving, on_target, target)
            found.update(conflicts)
    return found
