"""Evacuating the instances of a failed host: the per-instance state machine and the pool.

The per-instance sequence is the reference's (masakari/engine/drivers/taskflow/
host_failure.py:193): lock unless already locked, reset states Nova cannot evacuate from,
evacuate, confirm, stop again what was not running, restore ``error``, unlock. What differs
is what the task counts: only the vmoves of this attempt (rewrite-pack § 3.6), and an
instance whose evacuation could not even start counts as failed instead of being forgotten.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from masakari import exception, metrics
from masakari.compute.servers import compute_service
from masakari.db import spares
from masakari.db.statuses import VMOVE_FAILED, VMOVE_ONGOING, VMOVE_PENDING, VMOVE_SUCCEEDED
from masakari.engine import capacity, selection
from masakari.engine.context import Cancelled, PollTimeout, RunContext, nova_message
from masakari.engine.effects import Plan, VMoveData
from masakari.engine.ports import Server
from masakari.engine.recovery import groups
from masakari.engine.recovery.flow import TaskContext, required, task
from masakari.engine.selection import Selection
from masakari.engine.slots import Slot

LOG = logging.getLogger(__name__)

# Nova's power_state for a shut-down instance.
SHUTDOWN = 4
TIMEOUT_MESSAGE = "Failed reason: timeout."


def _plan(server: Server) -> Plan:
    """What to restore once the instance runs elsewhere, from how it was found.

    Nova's reset-state changes vm_state only, so the power state read here is the one the
    reference reads after its reset.
    """
    vm_state = server.vm_state
    task_state = server.task_state
    if vm_state not in ("active", "error", "stopped"):
        stop_after = not (vm_state == "resized" and server.power_state != SHUTDOWN)
    elif vm_state == "stopped" and task_state is None:
        stop_after = False  # evacuated as stopped: nothing to stop afterwards
    elif task_state is not None:
        stop_after = vm_state != "active"
    else:
        stop_after = True
    return Plan(vm_state, stop_after)


def restore(run: RunContext, instance_uuid: str, plan: Plan, resumed: bool = False) -> None:
    """Leave an evacuated instance as the plan says: stopped again, in error again.

    ``resumed``: finishing what another attempt started, which may have restored it already.
    """
    if plan.vm_state == "active" or not plan.stop_after:
        return
    conf = run.conf
    if resumed:
        state = run.nova.get_server(instance_uuid).vm_state
        if state == "error" and plan.vm_state == "error":
            return
        must_stop = state != "stopped"
    else:
        must_stop = True
    if must_stop:
        run.effects.stop_server(instance_uuid)

        def stopped() -> bool:
            return run.nova.get_server(instance_uuid).vm_state == "stopped"

        try:
            run.poll(stopped, conf.verify_interval, conf.wait_period_after_power_off)
        except PollTimeout:
            LOG.warning(
                "Instance '%s' is successfully evacuated but timeout to stop.", instance_uuid
            )
            raise
    if plan.vm_state == "error":
        # An instance in error before the failure is left in error after it.
        run.effects.reset_state(instance_uuid, "error")


def _confirm(run: RunContext, instance_uuid: str, source: str | None, expected: Any) -> None:
    """Wait until Nova shows the instance moved in the state it had; raise PollTimeout, or
    InstanceEvacuateFailed when it went to error instead."""
    conf = run.conf
    nova = run.nova

    def done(current: Server) -> bool:
        state = current.vm_state
        if state == "error" and state != expected:
            raise exception.InstanceEvacuateFailed(instance_uuid=instance_uuid)
        if current.compute_host != source:
            return bool((expected == "error" and state == "active") or expected == state)
        return False

    poller = run.host_poller
    if poller is None or source is None:
        run.poll(
            lambda: done(nova.get_server(instance_uuid)),
            conf.verify_interval,
            conf.wait_period_after_evacuation,
        )
        return

    def judge(listed: Server | None) -> bool:
        # Still listed on the failed host: its state says enough. Gone: read it once there.
        return done(listed if listed is not None else nova.get_server(instance_uuid))

    # Under the cap, an evacuation waiting for a slot waits for one of these to end.
    hurry = run.slots.has_waiters if run.slots is not None else None
    poller.wait(
        source, instance_uuid, judge, run.check, conf.wait_period_after_evacuation, hurry=hurry
    )


@dataclasses.dataclass
class Prepared:
    """An evacuation read and recorded, ready for its request: the instance as first found,
    its plan, and whether this run locked it."""

    vmove: VMoveData
    server: Server
    plan: Plan
    locked_by_us: bool

    @property
    def needs_reset(self) -> bool:
        # Nova evacuates only active, stopped and error instances without a task.
        return self.server.vm_state not in ("active", "error", "stopped") or (
            self.server.task_state is not None
        )


def prepare(run: RunContext, vmove: VMoveData) -> Prepared | None:
    """Read the instance, record its plan and lock it: all that comes before the evacuate
    request and needs no slot. None when that failed (recorded on the vmove).

    The plan (the instance as first found) is recorded before the first change, so that an
    engine taking the notification over restores the same state, not the one this attempt
    left behind (a reset to error, for one).
    """
    effects = run.effects
    locked_by_us = False
    try:
        server = run.nova.get_server(vmove.instance_uuid)
        plan = effects.plan(vmove.instance_uuid) or effects.put_plan(
            vmove.instance_uuid, _plan(server)
        )
        # The reference reads the server a second time just for "locked"; one read says both.
        if not server.locked:
            # Keep users away from the instance until its evacuation is confirmed.
            locked_by_us = True
            effects.lock_server(vmove.instance_uuid)
    except Cancelled:
        raise
    except Exception as exc:
        LOG.warning("Evacuation of %s could not start: %s", vmove.instance_uuid, exc)
        effects.update_vmove(
            vmove.id, status=VMOVE_FAILED, message=nova_message(exc), end_time=run.clock.now()
        )
        return None
    return Prepared(vmove, server, plan, locked_by_us)


def evacuate_and_confirm(
    run: RunContext,
    vmove: VMoveData,
    reserved_host: str | None,
    confirmed: Callable[[], None] | None = None,
) -> None:
    """Evacuate one instance and confirm it; the vmove row tells how it went.

    ``confirmed`` is called once the evacuation is no longer in flight in Nova as far as
    this run knows (seen done, failed or given up).
    """
    prepared = prepare(run, vmove)
    if prepared is not None:
        evacuate_prepared(run, prepared, reserved_host, confirmed)


def evacuate_prepared(
    run: RunContext,
    prepared: Prepared,
    reserved_host: str | None,
    confirmed: Callable[[], None] | None = None,
    started: bool = False,
) -> None:
    """The evacuation of a prepared instance, from its reset (if needed) to its unlock.

    ``started``: its vmove is already ongoing (marked with the slot it was given).
    """
    nova = run.nova
    effects = run.effects
    vmove = prepared.vmove
    server = prepared.server
    cancelled = False
    try:
        if prepared.needs_reset:
            effects.reset_state(vmove.instance_uuid, "error")
            server = nova.get_server(vmove.instance_uuid)
        expected = server.vm_state

        if not started:
            effects.update_vmove(vmove.id, status=VMOVE_ONGOING, start_time=run.clock.now())
        effects.evacuate(vmove.instance_uuid, reserved_host)
        try:
            _confirm(run, vmove.instance_uuid, vmove.source_host, expected)
        finally:
            if confirmed is not None:
                confirmed()
        restore(run, vmove.instance_uuid, prepared.plan)
        dest = nova.get_server(vmove.instance_uuid).hypervisor_hostname
        effects.update_vmove(vmove.id, status=VMOVE_SUCCEEDED, dest_host=dest)
    except Cancelled:
        # Left pending/ongoing on purpose: the next attempt settles it from Nova's state.
        cancelled = True
        raise
    except PollTimeout:
        LOG.warning("Timeout for instance '%s' evacuation.", vmove.instance_uuid)
        effects.update_vmove(vmove.id, status=VMOVE_FAILED, message=TIMEOUT_MESSAGE)
    except Exception as exc:
        LOG.warning("Evacuation of %s failed: %s", vmove.instance_uuid, exc)
        effects.update_vmove(vmove.id, status=VMOVE_FAILED, message=nova_message(exc))
    finally:
        if not cancelled:
            effects.update_vmove(vmove.id, end_time=run.clock.now())
        if prepared.locked_by_us:
            try:
                unlock(run, vmove.instance_uuid)
            except Cancelled:
                pass  # still recorded: whoever finishes the notification unlocks it


def unlock(run: RunContext, instance_uuid: str) -> None:
    """Unlock an instance this service locked; a failure leaves it recorded for the next try."""
    try:
        run.effects.unlock_server(instance_uuid)
    except exception.NovaError as exc:
        LOG.error("Unlocking instance %s failed, left for the next attempt: %s", instance_uuid, exc)


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
            peers=[] if reserved_host else ctx.effects.peer_host_names(host_name),
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


def _add_to_aggregates(ctx: TaskContext, host_name: str, reserved_host: str) -> None:
    for aggregate in ctx.nova.list_aggregates():
        if host_name not in (aggregate.get("hosts") or []):
            continue
        name = aggregate.get("name")
        ctx.update_details(
            f"Add host {reserved_host} to aggregate {name}",
            0.2,
        )
        try:
            ctx.effects.add_host_to_aggregate(aggregate["id"], reserved_host)
        except exception.NovaError as exc:
            if exc.status != 409:
                raise
            msg = f"Host '{reserved_host}' already has been added to aggregate '{name}'."
            ctx.update_details(msg, 1.0)
            continue
        ctx.update_details(
            f"Added host {reserved_host} to aggregate {name}",
            0.3,
        )


def _enable_reserved_host(ctx: TaskContext, host_name: str, reserved_host: str) -> None:
    # Taking the spare in the database is the lock: one recovery per reserved host across
    # every engine (the reference locks per process).
    taken = ctx.progress.update_with(
        spares.TAKEN_MESSAGE % reserved_host,
        0.1,
        lambda note: ctx.effects.take_reserved_host(reserved_host, note),
    )
    if not taken:
        raise exception.LockAlreadyAcquired(resource=reserved_host)
    try:
        if ctx.conf.host_failure.add_reserved_host_to_aggregate:
            _add_to_aggregates(ctx, host_name, reserved_host)
        service = compute_service(ctx.nova.find_compute_services(reserved_host), reserved_host)
        ctx.effects.enable_service(service.id)
    except Cancelled:
        raise  # whoever takes over decides; this engine may write nothing more
    except BaseException:
        # Not enabled: it is still a spare, as the reference leaves it.
        ctx.effects.give_back_reserved_host(reserved_host)
        raise


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


def _evacuate_threads(
    ctx: TaskContext, cut: list[groups.Batch], reserved_host: str | None, grouped: bool
) -> None:
    """The reference's way: host_failure_recovery_threads evacuations of this host at once.

    Each ordering group gets its own threads: a group that timed out keeps its evacuations
    going without holding back the next one.
    """
    threads = max(1, int(ctx.conf.host_failure_recovery_threads))
    pools: list[concurrent.futures.ThreadPoolExecutor] = []
    futures: list[concurrent.futures.Future[None]] = []
    try:
        for batch, pending in groups.in_turn(ctx, cut, grouped):
            pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix="evacuate"
            )
            pools.append(pool)
            for vmove in batch:
                ctx.update_details(f"Evacuation of instance started: '{vmove.instance_uuid}'", 0.5)
                futures.append(
                    pool.submit(_evacuate_settling, ctx.run, vmove, reserved_host, pending)
                )
    except Cancelled:
        pass  # the evacuations already started end first; run.check() then stops the run
    finally:
        _wait_all(futures)
        for pool in pools:
            pool.shutdown()


def _evacuate_settling(
    run: RunContext, vmove: VMoveData, reserved_host: str | None, pending: groups.Pending
) -> None:
    def settled() -> None:
        pending.done(vmove.instance_uuid)

    try:
        evacuate_and_confirm(run, vmove, reserved_host, confirmed=settled)
    finally:
        settled()


def _evacuate_capped(
    ctx: TaskContext,
    cut: list[groups.Batch],
    reserved_host: str | None,
    ha_ids: set[str],
    grouped: bool,
) -> None:
    """Under max_evacuations_in_flight: each evacuation starts once it holds a slot.

    Slots go to the best priority among every running notification's next evacuation:
    HA-enabled instances first, then notifications in the order this engine took them
    (their claim tokens grow), then this notification's own order. A thread runs per slot
    held, not per instance: the pool starts threads only as evacuations are submitted.
    An ordering group asks for slots only once the previous one has settled.

    The next evacuation is prepared (:func:`prepare`) while it waits for its slot, so that
    once the slot comes (its vmove marked ongoing in the same write) only the evacuate
    request is left. One evacuation per notification is prepared ahead, no more.
    """
    run = ctx.run
    slots = run.slots
    assert slots is not None
    total = sum(len(batch) for _, batch in cut)
    # Evacuations past their confirmation (restoring, unlocking) keep their thread while
    # the next ones start: room for both.
    workers = max(1, min(total, 2 * slots.cap))
    with (
        concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="evacuate"
        ) as pool,
        concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(total, slots.cap)), thread_name_prefix="evacuate-prepare"
        ) as preparer,
    ):
        futures: list[concurrent.futures.Future[None]] = []
        position = 0
        try:
            for batch, pending in groups.in_turn(ctx, cut, grouped):
                for vmove in batch:
                    rank = 0 if vmove.instance_uuid in ha_ids else 1
                    prepared = preparer.submit(prepare, run, vmove)
                    # Cancelled while waiting: prepared, never started, the vmove stays
                    # pending (and its lock recorded) for the next attempt.
                    slot = slots.acquire(
                        run,
                        (rank, run.lease.token, position),
                        vmove.instance_uuid,
                        ready=_ready(prepared),
                    )
                    position += 1
                    futures.append(
                        pool.submit(
                            _evacuate_in_slot, run, vmove, prepared, reserved_host, slot, pending
                        )
                    )
                    ctx.update_details(
                        f"Evacuation of instance started: '{vmove.instance_uuid}'", 0.5
                    )
        except Cancelled:
            pass  # the evacuations already started end first; run.check() then stops the run
        finally:
            _wait_all(futures)


def _ready(prepared: concurrent.futures.Future[Prepared | None]) -> Callable[[], int | None]:
    """The vmove to mark ongoing with the slot: only once prepared, and not when a reset
    must come first (the vmove turns ongoing after the reset, as without the cap)."""

    def vmove_id() -> int | None:
        if not prepared.done() or prepared.exception() is not None:
            return None
        result = prepared.result()
        if result is None or result.needs_reset:
            return None
        return result.vmove.id

    return vmove_id


def _evacuate_in_slot(
    run: RunContext,
    vmove: VMoveData,
    prepared: concurrent.futures.Future[Prepared | None],
    reserved_host: str | None,
    slot: Slot,
    pending: groups.Pending,
) -> None:
    slots = run.slots
    assert slots is not None
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            slots.release(run, slot.number)
        pending.done(vmove.instance_uuid)

    try:
        ready = prepared.result()
        if ready is None:
            return  # could not start (recorded): the slot goes on at once
        evacuate_prepared(run, ready, reserved_host, confirmed=release, started=slot.started)
    finally:
        release()


@task("EvacuateInstancesTask")
def evacuate_instances(ctx: TaskContext) -> None:
    """Evacuate this attempt's instances, host_failure_recovery_threads at a time."""
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
        _enable_reserved_host(ctx, host_name, reserved_host)

    cut = groups.batches(vmoves, grouping)
    grouped = grouping is not None
    if ctx.run.slots is None:
        _evacuate_threads(ctx, cut, reserved_host, grouped)
    else:
        _evacuate_capped(ctx, cut, reserved_host, ctx.store.ha_instance_ids or set(), grouped)
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
