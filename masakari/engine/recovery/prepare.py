"""Which instances of the failed host move: the selection's decision (masakari.engine.
selection, the one a recovery plan shows), said in the progress and recorded as this attempt's
vmoves; those that cannot move safely end failed with the reason before any evacuation."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from masakari import exception
from masakari.compute.servers import Server
from masakari.db import statuses
from masakari.engine import selection
from masakari.engine.effects import VMoveData
from masakari.engine.recovery import settle
from masakari.engine.recovery.flow import TaskContext, required, task

LOG = logging.getLogger(__name__)


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
        LOG.info("%s", msg)  # an argument, so made inert (logvalues)
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
