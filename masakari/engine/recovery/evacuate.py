"""Evacuating the instances of a failed host: the task, its order, and the one loop.

The task counts only the vmoves of this attempt (rewrite-pack § 3.6). The loop sends the
evacuations in order, ordering group after ordering group (masakari.engine.recovery.groups),
each as its admission lets it (masakari.engine.admission: the reference's threads per group,
or the slots of ``max_evacuations_in_flight``); one instance's evacuation is
masakari.engine.recovery.moves.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
from collections.abc import Sequence

from masakari import exception, metrics
from masakari.db.statuses import VMOVE_FAILED, VMOVE_PENDING, VMOVE_SUCCEEDED
from masakari.engine import capacity, selection
from masakari.engine.admission import Admission, Threads, Ticket
from masakari.engine.context import Cancelled, RunContext
from masakari.engine.effects import VMoveData
from masakari.engine.recovery import groups, moves, reserved
from masakari.engine.recovery.flow import TaskContext, required, task
from masakari.engine.selection import Selection

LOG = logging.getLogger(__name__)


def _order(vmoves: Sequence[VMoveData], chosen: Selection | None) -> list[VMoveData]:
    """The vmoves in the selection's evacuation order (masakari.engine.selection). Without a
    prepare task in the flow, the reference's: HA-enabled first... of which nothing is known,
    so its rows newest first."""
    if chosen is None:
        return sorted(vmoves, key=lambda v: v.id, reverse=True)
    rank = {inst.id: n for n, inst in enumerate(chosen.ordered())}
    return sorted(vmoves, key=lambda v: (rank.get(v.instance_uuid, len(rank)), -v.id))


def _leave_what_cannot_fit(
    ctx: TaskContext, host_name: str, vmoves: list[VMoveData], reserved_host: str | None
) -> list[VMoveData]:
    """With capacity_aware_targets: the vmoves to evacuate; those no target has room for
    (Placement) end failed with the reason, announced before the first evacuation."""
    chosen = ctx.store.selection
    if not ctx.conf.host_failure.capacity_aware_targets or chosen is None:
        return vmoves
    known = chosen.instances
    instances = [known[v.instance_uuid] for v in vmoves if v.instance_uuid in known]
    try:
        left = capacity.split_by_capacity(
            instances,
            ctx.nova,
            ctx.run.placement,
            reserved_host=reserved_host,
            peers=[] if reserved_host else ctx.effects.hosts.peer_host_names(host_name),
        )
    except exception.NovaError as exc:
        ctx.update_details(f"Capacity check failed, evacuating without it: {exc}")
        return vmoves
    if not left:
        return vmoves
    metrics.capacity_shortfall("reserved_host" if reserved_host else "scheduler", len(left))
    ctx.update_details(
        "Not enough capacity for the instances of failed host '{host}': {count} left behind: "
        "'{ids}'".format(host=host_name, count=len(left), ids=",".join(i.id for i in left))
    )
    left_ids = {i.id: i for i in left}
    for vmove in vmoves:
        if vmove.instance_uuid in left_ids:
            ctx.effects.update_vmove(
                vmove.id,
                status=VMOVE_FAILED,
                message="Failed reason: " + capacity.no_room(left_ids[vmove.instance_uuid]),
                end_time=ctx.run.clock.now(),
            )
    return [v for v in vmoves if v.instance_uuid not in left_ids]


def _current_vmoves(ctx: TaskContext) -> list[VMoveData]:
    ids = ctx.store.vmove_ids
    if ids is None:
        # No prepare task in this flow: take what is pending, as the reference does.
        return ctx.effects.vmoves(statuses=[VMOVE_PENDING])
    return ctx.effects.vmoves(ids=ids)


def _wait_all(futures: list[concurrent.futures.Future[None]]) -> None:
    for future in futures:
        try:
            future.result()
        except Cancelled:
            pass
        except Exception:  # evacuate_and_confirm records its own failures
            LOG.exception("Evacuation worker failed")


def _evacuate_all(
    ctx: TaskContext, cut: list[groups.Batch], reserved_host: str | None, grouped: bool
) -> None:
    """Each evacuation, in order, once its admission lets it; then wait for all of them.

    Slots go to the best priority among every running notification's next evacuation:
    HA-enabled instances first, then notifications in the order this engine took them
    (their claim tokens grow), then this notification's own order. Without slots, each
    ordering group gets host_failure_recovery_threads of its own: a group that timed out
    keeps its evacuations going without holding back the next one.
    """
    run = ctx.run
    ha_ids = ctx.store.ha_instance_ids or set()
    total = sum(len(batch) for _, batch in cut)
    threads = max(1, int(ctx.conf.host_failure_recovery_threads))
    if run.slots is not None:
        # Evacuations past their confirmation (restoring, unlocking) keep their thread while
        # the next ones start: room for both.
        workers, ahead = 2 * run.slots.cap, run.slots.cap
    else:
        workers, ahead = threads * max(1, len(cut)), 1
    futures: list[concurrent.futures.Future[None]] = []
    position = 0
    with (
        concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(total, workers)), thread_name_prefix="evacuate"
        ) as pool,
        concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(total, ahead)), thread_name_prefix="evacuate-prepare"
        ) as preparer,
    ):
        try:
            for batch, pending in groups.in_turn(ctx, cut, grouped):
                gate: Admission = run.slots if run.slots is not None else Threads(threads)
                for vmove in batch:
                    rank = 0 if vmove.instance_uuid in ha_ids else 1
                    # Cancelled while waiting: never started, the vmove stays pending (and
                    # its lock recorded) for the next attempt.
                    prepare = functools.partial(moves.prepare, run, vmove)
                    priority = (rank, run.lease.token, position)
                    ticket = gate.enter(run, priority, vmove, prepare, preparer)
                    position += 1
                    futures.append(
                        pool.submit(_evacuate_admitted, run, ticket, reserved_host, pending, vmove)
                    )
                    ctx.update_details(
                        f"Evacuation of instance started: '{vmove.instance_uuid}'", 0.5
                    )
        except Cancelled:
            pass  # the evacuations already started end first; run.check() then stops the run
        finally:
            _wait_all(futures)


def _evacuate_admitted(
    run: RunContext,
    ticket: Ticket,
    reserved_host: str | None,
    pending: groups.Pending,
    vmove: VMoveData,
) -> None:
    def settled() -> None:
        ticket.release()
        pending.done(vmove.instance_uuid)

    try:
        ready = ticket.wait()
        if ready is None:
            return  # could not start (recorded): the admission goes on at once
        moves.evacuate_prepared(
            run, ready, reserved_host, confirmed=settled, started=ticket.started
        )
    finally:
        settled()


@task("EvacuateInstancesTask")
def evacuate_instances(ctx: TaskContext) -> None:
    """Evacuate this attempt's instances, in the selection's order, as admitted."""
    host_name = required(ctx.store.host_name, "host_name")
    reserved_host = ctx.store.reserved_host
    chosen = ctx.store.selection
    grouping = selection.groups(chosen.instances.values(), ctx.conf) if chosen else None
    vmoves = _order(_current_vmoves(ctx), chosen)
    everything = vmoves
    # Only pending ones: the prepare task already ended those it found unsafe to move.
    vmoves = [v for v in vmoves if v.status == VMOVE_PENDING]
    vmoves = _leave_what_cannot_fit(ctx, host_name, vmoves, reserved_host)
    ctx.update_details(
        "Start evacuation of instances from failed host '{host_name}', instance uuids are: "
        "'{instance_list}'".format(
            host_name=host_name, instance_list=",".join(v.instance_uuid for v in vmoves)
        )
    )
    if reserved_host:
        reserved.enable(ctx, host_name, reserved_host)

    _evacuate_all(ctx, groups.batches(vmoves, grouping), reserved_host, grouping is not None)
    ctx.run.check()

    final = ctx.effects.vmoves(ids=[v.id for v in everything])
    succeeded = sorted(v.instance_uuid for v in final if v.status == VMOVE_SUCCEEDED)
    if succeeded:
        ctx.update_details(
            "Successfully evacuate instances '{instance_list}' from host '{host_name}'".format(
                instance_list=",".join(succeeded), host_name=host_name
            ),
            0.7,
        )
    failed = [v.instance_uuid for v in final if v.status != VMOVE_SUCCEEDED]
    if failed:
        msg = "Failed to evacuate instances '{instance_list}' from host '{host_name}'".format(
            instance_list=",".join(failed),
            host_name=host_name,
        )
        ctx.update_details(msg, 0.7)
        raise exception.HostRecoveryFailure(message=msg)
    ctx.update_details("Evacuation process completed!", 1.0)
