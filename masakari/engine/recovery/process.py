"""Process failure: a stopped nova-compute gets its service disabled, and that is confirmed."""

from __future__ import annotations

import logging

from masakari import exception
from masakari.compute.servers import Service, compute_service
from masakari.db import statuses
from masakari.engine.context import PollTimeout, RunContext
from masakari.engine.payloads import ProcessPayload
from masakari.engine.recovery.flow import (
    Flow,
    FlowTasks,
    Store,
    TaskContext,
    required,
    run_flow,
    task,
)

LOG = logging.getLogger(__name__)

NOVA_COMPUTE = "nova-compute"


def _service(ctx: TaskContext, host_name: str) -> Service:
    return compute_service(ctx.nova.find_compute_services(host_name), host_name)


def _disabled(ctx: TaskContext, host_name: str) -> bool:
    return _service(ctx, host_name).status == "disabled"


@task("DisableComputeNodeTask")
def disable_compute_node(ctx: TaskContext) -> None:
    host_name = required(ctx.store.host_name, "host_name")
    process_name = required(ctx.store.process_name, "process_name")
    ctx.update_details(f"Disabling compute service on host: '{host_name}'")
    if _disabled(ctx, host_name):
        msg = f"Skipping recovery for process {process_name} as it is already disabled"
        LOG.info("%s", msg)  # an argument, so made inert (logvalues)
        ctx.update_details(msg, 1.0)
        return
    service = _service(ctx, host_name)
    ctx.effects.nova.disable_service(service, ctx.conf.process_failure.service_disable_reason)
    ctx.update_details(f"Disabled compute service on host: '{host_name}'", 1.0)


@task("ConfirmComputeNodeDisabledTask")
def confirm_compute_node_disabled(ctx: TaskContext) -> None:
    host_name = required(ctx.store.host_name, "host_name")
    process_name = required(ctx.store.process_name, "process_name")
    conf = ctx.conf
    ctx.update_details(f"Confirming compute service is disabled on host: '{host_name}'")
    try:
        # wait_period_after_service_update = 0 means no timeout, as in the reference.
        ctx.run.poll(
            lambda: _disabled(ctx, host_name),
            conf.verify_interval,
            conf.wait_period_after_service_update,
        )
    except PollTimeout:
        msg = f"Failed to disable service {process_name}"
        ctx.update_details(msg, 1.0)
        raise exception.ProcessRecoveryFailure(message=msg) from None
    ctx.update_details(f"Confirmed compute service is disabled on host: '{host_name}'", 1.0)


def handle(
    run: RunContext, flows: FlowTasks, notification_type: str, host_uuid: str, text: str | None
) -> str:
    """A PROCESS notification: the status it ends with."""
    payload = ProcessPayload.parse(text)
    event = (payload.event or "").upper()
    if event == "STARTED":
        LOG.info(
            "Notification type '%s' received for host '%s': '%s' has been %s.",
            notification_type,
            host_uuid,
            payload.process_name,
            payload.event,
        )
        return statuses.FINISHED
    if event != "STOPPED":
        LOG.warning(
            "Invalid event: %s received for notification type: %s",
            payload.event,
            notification_type,
        )
        return statuses.IGNORED

    # Kept from the reference (rewrite-pack § 3.6): any stopped process, even one this
    # engine does not recover, puts the host on maintenance.
    host = run.effects.hosts.put_host_on_maintenance(host_uuid, unreserve_spare=False)
    if payload.process_name != NOVA_COMPUTE:
        LOG.warning("Skipping recovery for process: %s.", payload.process_name)
        return statuses.FINISHED
    tasks = flows.process
    store = Store(run.notification_uuid, host_name=host.name, process_name=payload.process_name)
    flow = Flow(run, tasks["pre"], tasks["main"], tasks["post"])
    return run_flow(run, lambda: flow.run_linear(store))
