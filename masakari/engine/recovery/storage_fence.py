"""Storage fencing in a recovery: a ``ceph`` entry of the host's escalation list.

In the fence step (masakari.engine.recovery.fence) a ``ceph`` entry blocklists the host's
client addresses and reads the OSD map's blocklist back: every address there proves the host
cut off its RBD disks, in the entry's place in the list (``[ipmi, ceph]``: storage when the
BMC does not answer; ``[ceph, ipmi]``: storage first). An entry with ``after_power: true``
also runs after an entry before it proved the host off (belt and braces: a host that powers
on again by itself still cannot write to the disks its instances now use elsewhere).

On the host's return (masakari.engine.recovery.host_return) the blocklist is lifted, once the
host's nova-compute is up again: its start destroyed what was left of the instances moved
elsewhere (Nova's init_host), so nothing of them can write any more.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from masakari.compute.servers import Service
from masakari.db import fencing as evidence
from masakari.engine.fence_effects import failure_result
from masakari.engine.fencing import FencedHost
from masakari.engine.recovery.flow import TaskContext
from masakari.fencing.base import CEPH, DriverSpec, FenceError
from masakari.fencing.ceph import CephBlocklist, entity

LOG = logging.getLogger(__name__)


def blocklist(ctx: TaskContext, host: str, position: int, spec: DriverSpec) -> str | None:
    """Blocklist the host through one ``ceph`` entry, confirmed in the OSD map, recorded as
    one attempt; None once confirmed, else why not."""
    name = spec.describe()
    ctx.update_details(f"Blocklisting host '{host}' on Ceph via {name}", 0.2)
    started_at = ctx.run.clock.now()
    started = ctx.run.clock.monotonic()
    why: str | None = None
    try:
        fence = CephBlocklist(spec)
        ips = fence.ips()
        ctx.run.check()
        fence.add(ips)
        missing = fence.missing(ips)
    except FenceError as exc:
        result, message = failure_result(exc), exc.why
        why = f"blocklist: {exc.why}"
    else:
        shown = ", ".join(entity(ip) for ip in ips)
        if missing:
            result = evidence.NOT_LISTED
            message = f"added, not in the OSD map's blocklist: {', '.join(missing)}"
            why = message
        else:
            result = evidence.BLOCKLISTED
            message = f"{shown} in the OSD map's blocklist (for {fence.expire} s)"
    ctx.effects.fencing.record_fence(
        host,
        position,
        name,
        evidence.BLOCKLIST,
        result,
        message,
        started_at,
        ctx.run.clock.monotonic() - started,
        CEPH,
    )
    if why is not None:
        ctx.update_details(f"Blocklist of '{host}' via {name} failed: {why}", 0.3)
        return why
    ctx.update_details(f"Host '{host}' is cut off its Ceph storage: {message}", 1.0)
    return None


def after_proof(
    ctx: TaskContext,
    host: str,
    specs: Sequence[DriverSpec],
    proven: int,
    blocklisted: Collection[int] = (),
) -> None:
    """Once the entry at ``proven`` proved the host off: the later ``ceph`` entries marked
    ``after_power`` blocklist it too, but those at a position in ``blocklisted`` (done by
    an earlier run of the same failure). A failure is recorded and logged, the proof
    stands."""
    for position in range(proven + 1, len(specs)):
        spec = specs[position]
        if position in blocklisted:
            continue
        if spec.type == CEPH and spec.options.get("after_power") == "1":
            why = blocklist(ctx, host, position, spec)
            if why is not None:
                LOG.error("Host %s proven off, its blocklist failed: %s", host, why)


def lift(ctx: TaskContext, host: FencedHost, service: Service | None) -> None:
    """Host return: remove the host's addresses from the OSD map's blocklist (those of its
    ``ceph`` entries listed now), each entry's removal recorded; only once ``service``, its
    nova-compute, is up."""
    fencing = ctx.run.fencing
    specs = [
        (position, spec)
        for position, spec in enumerate(fencing.drivers_for(host) if fencing else [])
        if spec.type == CEPH
    ]
    if not specs:
        return
    if service is None or service.state != "up":
        state = "missing" if service is None else f"{service.state}"
        ctx.update_details(
            f"Host '{host.name}' stays blocklisted on Ceph: its nova-compute is {state}, and "
            "only its start destroys what is left there of the instances moved elsewhere",
            0.95,
        )
        return
    for position, spec in specs:
        name = spec.describe()
        started_at = ctx.run.clock.now()
        started = ctx.run.clock.monotonic()
        try:
            fence = CephBlocklist(spec)
            removed = fence.remove(fence.ips())
        except FenceError as exc:
            result, message = failure_result(exc), exc.why
        else:
            if not removed:
                ctx.update_details(f"Host '{host.name}' is not blocklisted ({name})", 0.95)
                continue
            result = evidence.LIFTED
            message = f"{', '.join(entity(ip) for ip in removed)} removed from the blocklist"
        ctx.effects.fencing.record_fence(
            host.name,
            position,
            name,
            evidence.UNBLOCKLIST,
            result,
            message,
            started_at,
            ctx.run.clock.monotonic() - started,
            CEPH,
        )
        ctx.update_details(f"Ceph blocklist of host '{host.name}' ({name}): {message}", 0.95)
