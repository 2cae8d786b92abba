"""Host failure: the notification's handling, and the task that disables the failed host.

The four recovery methods that compose the flows are in :mod:`.methods`; the fence step
that runs ahead of them, when host fencing is configured, in :mod:`.fence`; which of the
host's instances move, in :mod:`.prepare`.
"""

from __future__ import annotations

import datetime
import logging

from masakari.compute.servers import Service, compute_service
from masakari.conf import host_return as host_return_opts
from masakari.db import statuses
from masakari.engine.context import RunContext
from masakari.engine.fencing import FencedHost
from masakari.engine.recovery import confirm, fence, host_return
from masakari.engine.recovery.flow import (
    FlowTasks,
    Store,
    TaskContext,
    required,
    run_flow,
    task,
)
from masakari.engine.recovery.methods import AUTO, recover
from masakari.engine.recovery.payloads import HostPayload

LOG = logging.getLogger(__name__)


def _service(ctx: TaskContext, host: str) -> Service:
    return compute_service(ctx.nova.find_compute_services(host), host)


@task("DisableComputeServiceTask")
def disable_compute_service(ctx: TaskContext) -> None:
    """Disable nova-compute on the failed host, then give Nova time to see the host down.

    With host fencing, FenceHostTask disabled it already, before the power off; disabling
    it again here is a no-op in Nova.

    A host that host fencing proved dead (FenceHostTask), or, with
    [host_failure]/force_down_fenced_host, that the monitor reported fenced (host_status
    NORMAL), is forced down first and the sleep is skipped: Nova accepts the evacuation at
    once.
    """
    host_name = required(ctx.store.host_name, "host_name")
    conf = ctx.conf
    ctx.update_details(f"Disabling compute service on host: '{host_name}'")
    service = _service(ctx, host_name)
    reported = str(ctx.store.host_status or "").upper() == "NORMAL"
    if ctx.store.host_fenced or (conf.host_failure.force_down_fenced_host and reported):
        ctx.effects.force_down_service(service)

        def forced_down() -> bool:
            return _service(ctx, host_name).forced_down

        ctx.run.poll(forced_down, conf.verify_interval, conf.wait_period_after_service_update)
        ctx.update_details(f"Forced down compute service on host: '{host_name}'", 0.5)
        ctx.effects.disable_service(service, conf.host_failure.service_disable_reason)
    else:
        ctx.effects.disable_service(service, conf.host_failure.service_disable_reason)
        LOG.info(
            "Sleeping %s sec before starting recovery thread until nova recognizes the node down.",
            conf.wait_period_after_service_update,
        )
        ctx.run.sleep(conf.wait_period_after_service_update)
    ctx.update_details(f"Disabled compute service on host: '{host_name}'", 1.0)


def handle(
    run: RunContext,
    flows: FlowTasks,
    notification_type: str,
    host_uuid: str,
    text: str | None,
    reported_at: datetime.datetime | None = None,
) -> str:
    """A COMPUTE_HOST notification: the status it ends with (Held propagates: the
    notification is held, host fencing did not prove the host dead)."""
    payload = HostPayload.parse(text)
    event = (payload.event or "").upper()
    confirmed = confirm.host_report(run, host_uuid, payload, event)
    if confirmed is None:
        return statuses.IGNORED
    if event == "STARTED":
        LOG.info(
            "Notification type '%s' received for host '%s' has been %s.",
            notification_type,
            host_uuid,
            payload.event,
        )
        if host_return_opts.enabled(run.conf) and not confirmed.released_unknown:
            return host_return.handle(run, host_uuid)
        return statuses.FINISHED
    if event != "STOPPED":
        LOG.warning(
            "Invalid event: %s received for notification type: %s",
            payload.event,
            notification_type,
        )
        return statuses.IGNORED

    host = run.effects.put_host_on_maintenance(host_uuid, unreserve_spare=True)
    LOG.info("Set host %s on maintenance.", host.name)
    reserved_hosts = (
        []
        if host.recovery_method == AUTO
        else run.effects.reserved_host_names(host.failover_segment_id)
    )
    store = Store(run.notification_uuid, host_name=host.name, host_status=confirmed.host_status)
    fenced = FencedHost(host.name, host.segment_name, host.failover_segment_id)
    fence.fence_first(run, store, fenced, reported_at)
    status = run_flow(run, lambda: recover(run, flows, host.recovery_method, store, reserved_hosts))
    if status == statuses.FINISHED and store.host_fenced:
        fence.power_on_after(run, fenced)
    return status
