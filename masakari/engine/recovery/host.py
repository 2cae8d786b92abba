"""Host failure: the notification's handling, and the tasks that disable and list the host.

The four recovery methods that compose the flows are in :mod:`.methods`; the fence step
that runs ahead of them, when host fencing is configured, in :mod:`.fence`.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping

from masakari import exception
from masakari.compute.servers import Server, Service, compute_service
from masakari.conf import host_return as host_return_opts
from masakari.db import statuses
from masakari.engine import selection
from masakari.engine.context import RunContext
from masakari.engine.effects import VMoveData
from masakari.engine.fencing import FencedHost
from masakari.engine.recovery import confirm, fence, host_return, settle
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
        ctx.effects.force_down_service(service.id)

        def forced_down() -> bool:
            return _service(ctx, host_name).forced_down

        ctx.run.poll(forced_down, conf.verify_interval, conf.wait_period_after_service_update)
        ctx.update_details(f"Forced down compute service on host: '{host_name}'", 0.5)
        ctx.effects.disable_service(service.id, conf.host_failure.service_disable_reason)
    else:
        ctx.effects.disable_service(service.id, conf.host_failure.service_disable_reason)
        LOG.info(
            "Sleeping %s sec before starting recovery thread until nova recognizes the node down.",
            conf.wait_period_after_service_update,
        )
        ctx.run.sleep(conf.wait_period_after_service_update)
    ctx.update_details(f"Disabled compute service on host: '{host_name}'", 1.0)


@task("PrepareHAEnabledInstancesTask")
def prepare_ha_enabled_instances(ctx: TaskContext) -> None:
    """List the failed host's instances, keep those to evacuate, and record their vmoves.

    Which ones, and in which order, is masakari.engine.selection's decision: the one a
    recovery plan shows.
    """
    host_name = required(ctx.store.host_name, "host_name")
    options = ctx.conf.host_failure
    ctx.update_details("Preparing instances for evacuation")
    settle.previous_evacuations(ctx, host_name)

    servers = ctx.nova.list_servers_on_host(host_name)
    ctx.update_details(
        f"Total instances running on failed host '{host_name}' is {len(servers)}", 0.3
    )
    chosen = selection.select(
        ctx.conf,
        ctx.nova,
        host_name,
        servers,
        ctx.store.reserved_host,
        in_error=lambda server: _error_before_recovery(ctx, server),
    )
    for inst, why in chosen.ignored:
        if inst.ha and why == selection.ERROR_STATE:
            ctx.update_details(
                f"Ignoring recovery of HA_Enabled instance '{inst.id}' as it is in 'error' state.",
                0.4,
            )
    ctx.update_details(f"Total HA Enabled instances count: '{len(chosen.ha)}'", 0.6)
    if options.evacuate_all_instances:
        ctx.update_details(f"Total Non-HA Enabled instances count: '{len(chosen.others)}'", 0.7)
        ctx.update_details(
            "All instances (HA Enabled/Non-HA Enabled) should be considered for evacuation. "
            f"Total count is: '{len(chosen.ha) + len(chosen.others)}'",
            0.8,
        )
    _say_out_of_scope(ctx, chosen)
    if not chosen.chosen:
        msg = f"Skipped host '{host_name}' recovery as no instances needs to be evacuated"
        ctx.update_details(msg, 1.0)
        LOG.info(msg)
        raise exception.SkipHostRecovery(message=msg)

    created = ctx.effects.record_moves(chosen.chosen, host_name, ctx.run.clock.now())
    _leave_unsafe(ctx, chosen.unsafe, created)
    # The evacuation task works on exactly these rows: this attempt's, not earlier ones.
    ctx.store.vmove_ids = [v.id for v in created]
    ctx.store.ha_instance_ids = chosen.ha_ids
    ctx.store.selection = chosen
    ctx.update_details(
        "Instances to be evacuated are: '{}'".format(",".join(s.id for s in chosen.chosen)),
        1.0,
    )


def _say_out_of_scope(ctx: TaskContext, chosen: selection.Selection) -> None:
    """The instances the [host_failure] scope rules leave where they are, said."""
    if chosen.host_rule is not None:
        ctx.update_details(
            f"Instances of host '{ctx.store.host_name}' are out of scope ([host_failure] "
            f"{chosen.host_rule}): not evacuated",
            0.85,
        )
    for server, rule in chosen.out_of_scope:
        ctx.update_details(
            f"Instance '{server.id}' is out of scope ([host_failure] {rule}): not evacuated",
            0.85,
        )


def _leave_unsafe(ctx: TaskContext, reasons: Mapping[str, str], created: list[VMoveData]) -> None:
    """Instances that cannot be evacuated safely: their vmoves end failed with the reason
    before any evacuation (the evacuation task moves only pending ones)."""
    for vmove in created:
        reason = reasons.get(vmove.instance_uuid)
        if reason is None:
            continue
        ctx.update_details(
            f"Instance '{vmove.instance_uuid}' cannot be evacuated safely: {reason}", 0.9
        )
        ctx.effects.update_vmove(
            vmove.id,
            status=statuses.VMOVE_FAILED,
            message="Failed reason: " + reason,
            end_time=ctx.run.clock.now(),
        )


def _error_before_recovery(ctx: TaskContext, server: Server) -> bool:
    """In error before the failure: an earlier attempt's reset to error does not count."""
    plan = ctx.effects.plan(server.id)
    state = plan.vm_state if plan is not None else server.vm_state
    return state == "error"


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
