"""A takeover's first step: the evacuations a lost engine started, confirmed or failed."""

from __future__ import annotations

from typing import Any

from masakari import exception
from masakari.compute.servers import Server
from masakari.db import statuses
from masakari.engine.context import PollTimeout
from masakari.engine.effects import VMoveData
from masakari.engine.recovery import moves
from masakari.engine.recovery.flow import TaskContext


def previous_evacuations(ctx: TaskContext, host_name: str) -> None:
    """Finish evacuations an earlier attempt started and never confirmed (engine lost).

    Re-evacuating an instance Nova is still rebuilding elsewhere would reset it to error
    mid-flight: wait for its task to end, then restore the state the first attempt planned
    (stop it, reset it to error) and record where it went.
    """
    conf = ctx.conf
    for vmove in ctx.effects.vmoves(statuses=[statuses.VMOVE_ONGOING]):

        def settled(vmove: VMoveData = vmove) -> Server | None:
            server = ctx.nova.get_server(vmove.instance_uuid)
            if server.task_state is None or server.compute_host != host_name:
                return server
            return None

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
