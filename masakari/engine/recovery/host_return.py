"""Host return: a recovered host reports that it is back; undo what its recovery changed.

Each step is its own [host_return] option, and each is recorded in the notification's
recovery_workflow_details like a recovery step (task ReturnHostTask). A host with ``ceph``
fencing entries also has its Ceph blocklist lifted there (storage_fence.lift).
"""

from __future__ import annotations

import logging

from masakari.compute.servers import compute_service, first_service
from masakari.db import statuses
from masakari.engine.context import RunContext
from masakari.engine.fencing import FencedHost
from masakari.engine.recovery import storage_fence
from masakari.engine.recovery.flow import Flow, Store, TaskContext, required, run_flow, task
from masakari.fencing.base import CEPH

LOG = logging.getLogger(__name__)

# The disabled_reason of a spare's nova-compute once it is back in the reserved pool.
SPARE_DISABLE_REASON = "Masakari reserved host: back in the reserved pool."


@task("ReturnHostTask")
def return_host(ctx: TaskContext) -> None:
    host_name = required(ctx.store.host_name, "host_name")
    host_uuid = required(ctx.store.extra.get("host_uuid"), "host_uuid")
    options = ctx.conf.host_return
    ctx.update_details(f"Returning host '{host_name}' to service")
    service = None
    if options.unset_forced_down or options.enable_compute_service:
        service = compute_service(ctx.nova.find_compute_services(host_name), host_name)
    if options.unset_forced_down and service is not None:
        if service.forced_down:
            ctx.effects.nova.unset_forced_down(service)
            ctx.update_details(f"Unset forced_down of compute service on host '{host_name}'", 0.3)
        else:
            ctx.update_details(f"Compute service on host '{host_name}' is not forced down", 0.3)
    if options.enable_compute_service and service is not None:
        reason = service.disabled_reason
        if service.status != "disabled":
            ctx.update_details(f"Compute service on host '{host_name}' is enabled", 0.6)
        elif reason != ctx.conf.host_failure.service_disable_reason:
            # Someone else disabled it, for their own reason: theirs to enable.
            ctx.update_details(
                f"Compute service on host '{host_name}' was disabled by someone else "
                f"({reason!r}): left disabled",
                0.6,
            )
        else:
            ctx.effects.nova.enable_service(service)
            ctx.update_details(f"Enabled compute service on host '{host_name}'", 0.6)
    if options.return_reserved_hosts:
        _return_spares(ctx, host_uuid, host_name)
    if options.clear_on_maintenance:
        if ctx.effects.hosts.clear_maintenance(host_uuid):
            ctx.update_details(f"Host '{host_name}' is no longer on maintenance", 0.9)
        else:
            ctx.update_details(f"Host '{host_name}' was not on maintenance", 0.9)
    _lift_blocklist(ctx, host_uuid, host_name)
    ctx.update_details(f"Host '{host_name}' returned", 1.0)


def _lift_blocklist(ctx: TaskContext, host_uuid: str, host_name: str) -> None:
    """Storage fencing's blocklist lifted, when the host has ceph entries (its
    nova-compute read now: up once its forced_down is unset)."""
    fencing = ctx.run.fencing
    host = ctx.effects.hosts.host(host_uuid)
    if fencing is None or host is None:
        return
    fenced = FencedHost(host.name, host.segment_name, host.failover_segment_id)
    if not any(spec.type == CEPH for spec in fencing.drivers_for(fenced)):
        return
    service = first_service(ctx.nova.find_compute_services(host_name))
    storage_fence.lift(ctx, fenced, service)


def _return_spares(ctx: TaskContext, host_uuid: str, host_name: str) -> None:
    """Give back the spares the host's recovery took, each once it holds no instance.

    Its nova-compute is disabled before masakari marks it reserved, and Nova is asked
    again after the disable: an instance Nova placed there in between keeps it in service.
    """
    host = ctx.effects.hosts.host(host_uuid)
    taken = ctx.effects.hosts.spares_taken(host) if host is not None else []
    if not taken:
        ctx.update_details(f"No reserved host to return for host '{host_name}'", 0.8)
        return
    for spare in taken:
        count = len(ctx.nova.list_servers_on_host(spare))
        if count:
            ctx.update_details(
                f"Reserved host '{spare}' still hosts {count} instances: not returned to the "
                "reserved pool",
                0.8,
            )
            continue
        found = first_service(ctx.nova.find_compute_services(spare))
        if found is None:
            ctx.update_details(
                f"Reserved host '{spare}' has no nova-compute service: not returned", 0.8
            )
            continue
        disabled_here = found.status != "disabled"
        if disabled_here:
            ctx.effects.nova.disable_service(found, SPARE_DISABLE_REASON)
        count = len(ctx.nova.list_servers_on_host(spare))
        if count:
            if disabled_here:
                ctx.effects.nova.enable_service(found)
            ctx.update_details(
                f"Reserved host '{spare}' still hosts {count} instances: not returned to the "
                "reserved pool",
                0.8,
            )
            continue
        if ctx.effects.hosts.return_spare(spare):
            ctx.update_details(f"Returned reserved host '{spare}' to the reserved pool", 0.8)
        else:
            ctx.update_details(
                f"Reserved host '{spare}' changed in masakari meanwhile: not returned", 0.8
            )


def handle(run: RunContext, host_uuid: str) -> str:
    """Run the return steps for a host that reported STARTED; the status it ends with."""
    host = run.effects.hosts.host(host_uuid)
    if host is None or not host.on_maintenance:
        # Only a host a recovery put on maintenance (or an operator did) is returned: a
        # STARTED report of a host in service changes nothing, as in the reference.
        return statuses.FINISHED
    LOG.info("Host %s reported back: returning it to service.", host.name)
    store = Store(run.notification_uuid, host_name=host.name, host_status="NORMAL")
    store.extra["host_uuid"] = host_uuid
    return run_flow(run, lambda: Flow(run, [return_host], [], []).run_linear(store))
