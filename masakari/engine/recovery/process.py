"""Process failure: a stopped nova-compute gets its service disabled, and that is confirmed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy import orm

from masakari import exception
from masakari.db import work
from masakari.engine.context import Cancelled, PollTimeout, RunContext
from masakari.engine.recovery.flow import Flow, TaskContext, task
from masakari.engine.recovery.host import compute_service

if TYPE_CHECKING:
    from masakari.engine.tasks import FlowTasks

LOG = logging.getLogger(__name__)

NOVA_COMPUTE = "nova-compute"


def _disabled(ctx: TaskContext, host_name: str) -> bool:
    return compute_service(ctx, host_name).get("status") == "disabled"


@task("DisableComputeNodeTask")
def disable_compute_node(ctx: TaskContext) -> None:
    host_name: str = ctx.store["host_name"]
    process_name: str = ctx.store["process_name"]
    ctx.update_details(f"Disabling compute service on host: '{host_name}'")
    if _disabled(ctx, host_name):
        msg = f"Skipping recovery for process {process_name} as it is already disabled"
        LOG.info(msg)
        ctx.update_details(msg, 1.0)
        return
    service = compute_service(ctx, host_name)
    ctx.nova.disable_service(service["id"], ctx.conf.process_failure.service_disable_reason)
    ctx.update_details(f"Disabled compute service on host: '{host_name}'", 1.0)


@task("ConfirmComputeNodeDisabledTask")
def confirm_compute_node_disabled(ctx: TaskContext) -> None:
    host_name: str = ctx.store["host_name"]
    process_name: str = ctx.store["process_name"]
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
    run: RunContext, flows: FlowTasks, notification: work.NotificationData, payload: dict[str, Any]
) -> str:
    """A PROCESS notification: the status it ends with."""
    event = str(payload.get("event") or "").upper()
    process_name = payload.get("process_name")
    if event == "STARTED":
        LOG.info(
            "Notification type '%s' received for host '%s': '%s' has been %s.",
            notification.type,
            notification.source_host_uuid,
            process_name,
            payload.get("event"),
        )
        return work.FINISHED
    if event != "STOPPED":
        LOG.warning(
            "Invalid event: %s received for notification type: %s",
            payload.get("event"),
            notification.type,
        )
        return work.IGNORED

    def maintain(session: orm.Session) -> work.HostData:
        host = work.get_host(session, notification.source_host_uuid)
        if host is None:
            raise exception.HostNotFound(id=notification.source_host_uuid)
        # Kept from the reference (rewrite-pack § 3.6): any stopped process, even one this
        # engine does not recover, puts the host on maintenance.
        work.put_on_maintenance(session, host.uuid, unreserve=False)
        return host

    host = work.transaction(run.db, maintain)

    if process_name != NOVA_COMPUTE:
        LOG.warning("Skipping recovery for process: %s.", process_name)
        return work.FINISHED
    tasks = flows.process
    store = {
        "process_name": process_name,
        "host_name": host.name,
        "notification_uuid": notification.notification_uuid,
    }
    try:
        Flow(run, tasks["pre"], tasks["main"], tasks["post"]).run_linear(store)
    except exception.SkipProcessRecovery:
        return work.FINISHED
    except Cancelled:
        raise
    except Exception as exc:
        LOG.error(
            "Failed to process notification '%s'. Reason: %s", notification.notification_uuid, exc
        )
        return work.ERROR
    return work.FINISHED
