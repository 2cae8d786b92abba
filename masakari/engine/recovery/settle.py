"""A takeover's first step: the evacuations a lost engine started, confirmed or failed."""

from __future__ import annotations

import datetime
from typing import Any

from masakari import exception
from masakari.compute.servers import Server
from masakari.db import statuses
from masakari.engine import nova_effects
from masakari.engine.context import PollTimeout
from masakari.engine.effects import VMoveData
from masakari.engine.recovery import moves
from masakari.engine.recovery.flow import TaskContext


def previous_evacuations(ctx: TaskContext, host_name: str) -> None:
    """Finish evacuations an earlier attempt started and never confirmed (engine lost).

    Re-evacuating an instance Nova is still rebuilding elsewhere would reset it to error
    mid-flight: wait until it moved (its host changed) or can no longer move (in error, or
    no evacuation of it under way), then restore the state the first attempt planned (stop
    it, reset it to error) and record where it went.

    Its task ending is not enough: a real Nova's destination clears the task (and sets the
    new vm_state) a moment before its resource tracker moves the host, so meanwhile the
    instance shows no task on its failed host, as one never evacuated does. Nova's instance
    actions tell them apart, as the confirmation of a move (moves._confirm) waits through
    that moment for the host to change.
    """
    conf = ctx.conf
    for vmove in ctx.effects.vmoves(statuses=[statuses.VMOVE_ONGOING]):

        def settled(vmove: VMoveData = vmove) -> Server | None:
            server = ctx.nova.get_server(vmove.instance_uuid)
            if server.compute_host != host_name:
                return server  # moved
            if server.task_state is not None:
                return None  # rebuilding
            if server.vm_state == "error" or not _evacuation_under_way(ctx, vmove):
                return server
            return None  # rebuilt, the host not moved yet

        values: dict[str, Any] = {"end_time": ctx.run.clock.now()}
        try:
            server = ctx.run.poll(settled, conf.verify_interval, conf.wait_period_after_evacuation)
            plan = ctx.effects.plan(vmove.instance_uuid)
            was_error = plan is not None and plan.vm_state == "error"
            if server.compute_host != host_name and (server.vm_state != "error" or was_error):
                if plan is not None:
                    moves.restore(ctx.run, vmove.instance_uuid, plan, resumed=True)
                    server = ctx.nova.get_server(vmove.instance_uuid)
                values.update(status=statuses.VMOVE_SUCCEEDED, dest_host=server.hypervisor_hostname)
            else:
                values.update(
                    status=statuses.VMOVE_FAILED,
                    message="Failed reason: engine lost before confirmation.",
                )
        except PollTimeout:
            values.update(status=statuses.VMOVE_FAILED, message=moves.TIMEOUT_MESSAGE)
        except exception.NovaError as exc:
            values.update(status=statuses.VMOVE_FAILED, message=str(exc))
        ctx.effects.update_vmove(vmove.id, **values)
    # Instances the lost engine locked: unlocked now, locked again if evacuated again.
    for instance_uuid in ctx.effects.locked_instances():
        moves.unlock(ctx.run, instance_uuid)


def _evacuation_under_way(ctx: TaskContext, vmove: VMoveData) -> bool:
    """Nova's newest action for the instance is an evacuation, accepted since the lost
    engine marked the move ongoing, none of whose events failed. An instance the lost engine
    never evacuated shows another action last, or an older one. A Nova that cannot list the
    actions says nothing: the instance is settled as it shows."""
    try:
        actions = ctx.nova.list_instance_actions(vmove.instance_uuid)
    except exception.NovaError:
        return False
    if not actions or actions[0].action != "evacuate" or actions[0].message == "Error":
        return False
    started = actions[0].start_time
    if vmove.start_time is None or started is None:
        return True
    return started >= vmove.start_time - datetime.timedelta(seconds=nova_effects.CLOCK_SKEW)
