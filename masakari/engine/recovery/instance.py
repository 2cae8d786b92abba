"""Instance failure: stop the instance, start it, confirm it is active."""

from __future__ import annotations

import logging

from oslo_utils import strutils

from masakari import exception
from masakari.db import statuses
from masakari.engine.context import PollTimeout, RunContext, is_conflict
from masakari.engine.payloads import InstancePayload
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

# The libvirt events worth a recovery, and their details (masakari/engine/instance_events.py).
INSTANCE_EVENTS: dict[str, tuple[str, ...]] = {
    "QEMU_GUEST_AGENT_ERROR": ("STOPPED_FAILED",),
    "LIFECYCLE": ("STOPPED_FAILED",),
    "IO_ERROR": ("IO_ERROR_REPORT",),
}


def is_handled_event(payload: InstancePayload) -> bool:
    return payload.vir_domain_event in INSTANCE_EVENTS.get(payload.event or "", ())


def _started_by_earlier_attempt(ctx: TaskContext, instance_uuid: str) -> bool:
    """An attempt that never ended (its engine was lost) already asked Nova to start the
    instance: stopping and starting it once more would restart a VM that is recovered or
    recovering. An attempt that ended (in error, retried later) leaves no such mark."""
    plan = ctx.effects.plan(instance_uuid)
    return plan is not None and plan.last_action == "start"


@task("StopInstanceTask")
def stop_instance(ctx: TaskContext) -> None:
    instance_uuid = required(ctx.store.instance_uuid, "instance_uuid")
    conf = ctx.conf
    server = ctx.nova.get_server(instance_uuid)
    key = conf.instance_failure.ha_enabled_instance_metadata_key
    is_ha = strutils.bool_from_string(server.metadata.get(key, False))
    if not conf.instance_failure.process_all_instances and not is_ha:
        msg = f"Skipping recovery for instance: {instance_uuid} as it is not Ha_Enabled"
        LOG.info("%s", msg)  # an argument, so made inert (logvalues)
        ctx.update_details(msg, 1.0)
        raise exception.SkipInstanceRecovery()

    if _started_by_earlier_attempt(ctx, instance_uuid):
        msg = f"Instance '{instance_uuid}' was started by an earlier attempt: not stopped again"
        LOG.info("%s", msg)  # an argument, so made inert (logvalues)
        ctx.update_details(msg, 1.0)
        return

    vm_state = server.vm_state
    if vm_state in ("paused", "rescued"):
        msg = f"Recovery of instance '{instance_uuid}' is ignored as it is in '{vm_state}' state."
        LOG.warning("%s", msg)  # an argument, so made inert (logvalues)
        ctx.update_details(msg, 1.0)
        raise exception.IgnoreInstanceRecovery(msg)

    if vm_state != "stopped":
        if vm_state == "resized":
            ctx.effects.nova.reset_state(instance_uuid, "active")
        ctx.update_details(f"Stopping instance: {instance_uuid}")
        try:
            ctx.effects.nova.stop_server(instance_uuid)
        except exception.NovaError as exc:
            if not is_conflict(exc):
                raise
            # Stopped meanwhile (by its own crash, or by someone else): that is fine.
            ctx.update_details(f"Conflict when stopping instance: {instance_uuid}")
            if ctx.nova.get_server(instance_uuid).vm_state != "stopped":
                raise

    def stopped() -> bool:
        return ctx.nova.get_server(instance_uuid).vm_state == "stopped"

    try:
        ctx.run.poll(stopped, conf.verify_interval, conf.wait_period_after_power_off)
    except PollTimeout:
        msg = f"Failed to stop instance {instance_uuid}"
        ctx.update_details(msg, 1.0)
        raise exception.InstanceRecoveryFailure(message=msg) from None
    ctx.update_details(f"Stopped instance: '{instance_uuid}'", 1.0)


@task("StartInstanceTask")
def start_instance(ctx: TaskContext) -> None:
    instance_uuid = required(ctx.store.instance_uuid, "instance_uuid")
    ctx.update_details(f"Starting instance: '{instance_uuid}'")
    vm_state = ctx.nova.get_server(instance_uuid).vm_state
    if vm_state != "stopped" and _started_by_earlier_attempt(ctx, instance_uuid):
        ctx.update_details(f"Instance '{instance_uuid}' was started by an earlier attempt", 1.0)
        return
    if vm_state != "stopped":
        msg = (
            f"Invalid state for Instance {instance_uuid}. Expected state: 'STOPPED', Actual state: "
            f"'{vm_state}'"
        )
        ctx.update_details(msg, 1.0)
        raise exception.InstanceRecoveryFailure(message=msg)
    ctx.effects.nova.start_server(instance_uuid)
    ctx.update_details(f"Instance started: '{instance_uuid}'", 1.0)


@task("ConfirmInstanceActiveTask")
def confirm_instance_active(ctx: TaskContext) -> None:
    instance_uuid = required(ctx.store.instance_uuid, "instance_uuid")
    conf = ctx.conf
    ctx.update_details(f"Confirming instance '{instance_uuid}' vm_state is ACTIVE")

    def active() -> bool:
        return ctx.nova.get_server(instance_uuid).vm_state == "active"

    try:
        ctx.run.poll(active, conf.verify_interval, conf.wait_period_after_power_on)
    except PollTimeout:
        msg = f"Failed to start instance {instance_uuid}"
        ctx.update_details(msg, 1.0)
        raise exception.InstanceRecoveryFailure(message=msg) from None
    ctx.update_details(f"Confirmed instance '{instance_uuid}' vm_state is ACTIVE", 1.0)


def handle(run: RunContext, flows: FlowTasks, text: str | None) -> str:
    """A VM notification: the status it ends with."""
    payload = InstancePayload.parse(text)
    if not is_handled_event(payload):
        LOG.info(
            "Notification '%s' received with payload %s is ignored.",
            run.notification_uuid,
            payload.raw,
        )
        return statuses.IGNORED
    tasks = flows.instance
    store = Store(run.notification_uuid, instance_uuid=payload.instance_uuid)
    flow = Flow(run, tasks["pre"], tasks["main"], tasks["post"])
    return run_flow(run, lambda: flow.run_linear(store))
