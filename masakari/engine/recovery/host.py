"""Host failure: the notification's handling, the task that disables the failed host, and
the check that keeps the periodic retry off a host that is back.

The four recovery methods that compose the flows are in :mod:`.methods`; the fence step
that runs ahead of them, when host fencing is configured, in :mod:`.fence`; which of the
host's instances move, in :mod:`.prepare`.
"""

from __future__ import annotations

import datetime
import logging

from masakari import exception, metrics
from masakari.compute.servers import Service, compute_service
from masakari.conf import host_return as host_return_opts
from masakari.db import statuses
from masakari.db.statuses import RecoveryMethod
from masakari.engine import progress as states
from masakari.engine.context import RunContext
from masakari.engine.fencing import FencedHost
from masakari.engine.payloads import HostPayload
from masakari.engine.progress import FlowProgress
from masakari.engine.recovery import confirm, fence, host_return
from masakari.engine.recovery.flow import (
    FlowTasks,
    Store,
    TaskContext,
    required,
    run_flow,
    task,
)
from masakari.engine.recovery.methods import recover

LOG = logging.getLogger(__name__)

CHECK_TASK_NAME = "CheckHostDownTask"
# Progress rows and failure reasons are stored in whole seconds, truncated: a Nova change
# made in the second an attempt ended would otherwise read as made after it.
_STORED_PRECISION = datetime.timedelta(seconds=1)


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
        ctx.effects.nova.force_down_service(service)

        def forced_down() -> bool:
            return _service(ctx, host_name).forced_down

        ctx.run.poll(forced_down, conf.verify_interval, conf.wait_period_after_service_update)
        ctx.update_details(f"Forced down compute service on host: '{host_name}'", 0.5)
        ctx.effects.nova.disable_service(service, conf.host_failure.service_disable_reason)
    else:
        ctx.effects.nova.disable_service(service, conf.host_failure.service_disable_reason)
        LOG.info(
            "Sleeping %s sec before starting recovery thread until nova recognizes the node down.",
            conf.wait_period_after_service_update,
        )
        ctx.run.sleep(conf.wait_period_after_service_update)
    ctx.update_details(f"Disabled compute service on host: '{host_name}'", 1.0)


def is_back(service: Service, since: datetime.datetime) -> bool:
    """Whether a host's nova-compute runs again: it wrote its service row after ``since``,
    and Nova counts it up, or it is forced down (Nova then says down whatever the host
    does).

    Nova moves the row's ``updated_at`` on each heartbeat and on every change of the row,
    masakari's disable and force down included: ``since`` must follow the last of those, or
    the earlier attempt's own force down would read as a heartbeat.
    """
    heartbeat = service.updated_at
    if heartbeat is None or heartbeat <= since:
        return False
    return service.state == "up" or service.forced_down


def _state(service: Service) -> str:
    state = "forced down" if service.forced_down else (service.state or "in no known state")
    return f"{state}, last heartbeat {service.updated_at}"


def check_still_down(
    run: RunContext, host_uuid: str, reported_at: datetime.datetime | None
) -> None:
    """[host_failure] retry_only_while_host_down, ahead of fencing and of the flow: the
    retry goes on only while the host is down. An attempt of its own in
    recovery_workflow_details, as the fence step.

    Raises HostRecoveryFailure when the host is back, having changed nothing in Nova or in
    masakari: the host stays as the earlier attempt left it.
    """
    host = run.effects.hosts.host(host_uuid)
    if host is None:
        raise exception.HostNotFound(id=host_uuid)
    ended = run.effects.last_attempt_end()
    marks = [ended + _STORED_PRECISION if ended is not None else None, reported_at]
    # Nothing to go by (no report time, no attempt wrote): only a heartbeat from now on.
    since = max((m for m in marks if m is not None), default=run.clock.now())
    step = FlowProgress(run).task(0, CHECK_TASK_NAME)
    run.check()
    step.set_state(states.RUNNING)
    ctx = TaskContext(run, Store(run.notification_uuid, host_name=host.name), step)
    try:
        service = _service(ctx, host.name)
        if not is_back(service, since):
            ctx.update_details(
                f"Host '{host.name}' is not back: its nova-compute is {_state(service)} (the "
                f"previous attempt ended {since}): the recovery is retried",
                1.0,
            )
            step.set_state(states.SUCCESS)
            return
        left = f"its nova-compute {service.status}" + (
            ", forced down" if service.forced_down else ""
        )
        left += ", the host on maintenance" if host.on_maintenance else ""
        reason = (
            f"Host '{host.name}' is back: its nova-compute is {_state(service)}, after the "
            f"previous attempt ended ({since}); the recovery is not retried. Left as the "
            f"previous attempt left them ({left}): return the host to service once checked "
            "([host_return] does on its STARTED report)"
        )
        ctx.update_details(reason, 1.0)
    except Exception:
        step.set_state(states.FAILURE)
        raise
    step.set_state(states.FAILURE)
    metrics.retry_host_back()
    raise exception.HostRecoveryFailure(message=reason)


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

    if run.after_error and run.conf.host_failure.retry_only_while_host_down:
        # An error here is the retry's end: the runner makes it final (failed).
        status = run_flow(run, lambda: check_still_down(run, host_uuid, reported_at))
        if status != statuses.FINISHED:
            return status
    host = run.effects.hosts.put_host_on_maintenance(host_uuid, unreserve_spare=True)
    LOG.info("Set host %s on maintenance.", host.name)
    if run.room is not None:
        # Before anything else: the evacuations must find the room that was kept for them.
        run.room.release(host.failover_segment_id, run.notification_uuid, run.lease.check)
    reserved_hosts = (
        []
        if host.recovery_method == RecoveryMethod.AUTO
        else run.effects.hosts.reserved_host_names(host.failover_segment_id)
    )
    store = Store(run.notification_uuid, host_name=host.name, host_status=confirmed.host_status)
    fenced = FencedHost(host.name, host.segment_name, host.failover_segment_id)
    fence.fence_first(run, store, fenced)
    status = run_flow(run, lambda: recover(run, flows, host.recovery_method, store, reserved_hosts))
    if status == statuses.FINISHED and store.host_fenced:
        fence.power_on_after(run, fenced)
    return status
