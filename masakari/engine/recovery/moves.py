"""One instance's evacuation: the per-instance state machine.

The sequence is the reference's (masakari/engine/drivers/taskflow/host_failure.py:193): lock
unless already locked, reset states Nova cannot evacuate from, evacuate, confirm, stop again
what was not running, restore ``error``, unlock. What differs: an instance whose evacuation
could not even start counts as failed instead of being forgotten, and the plan (the instance
as first found) is recorded before the first change, for an engine that takes over.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from masakari import exception
from masakari.db.statuses import VMOVE_FAILED, VMOVE_ONGOING, VMOVE_SUCCEEDED
from masakari.engine.admission import Prepared
from masakari.engine.context import Cancelled, PollTimeout, RunContext, nova_message
from masakari.engine.effects import Plan, VMoveData
from masakari.engine.ports import Server

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
        run.effects.nova.stop_server(instance_uuid)

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
        run.effects.nova.reset_state(instance_uuid, "error")


def _confirm(run: RunContext, instance_uuid: str, source: str | None, expected: Any) -> None:
    """Wait until Nova shows the instance moved in the state it had; raise PollTimeout, or
    InstanceEvacuateFailed when it went to error instead.

    An instance that was in error already (or reset to error for the evacuation) shows no
    change when its evacuation fails: Nova leaves it in error where it was, with no task,
    as if nothing had been asked. Only then are its instance actions read: Nova's record of
    this evacuation ending in error tells the failure at once, instead of after
    wait_period_after_evacuation.
    """
    conf = run.conf
    nova = run.nova

    def done(current: Server) -> bool:
        state = current.vm_state
        if state == "error" and state != expected:
            raise exception.InstanceEvacuateFailed(instance_uuid=instance_uuid)
        if current.compute_host != source:
            return bool((expected == "error" and state == "active") or expected == state)
        if (
            state == "error"
            and current.task_state is None
            and run.effects.nova.evacuation_failed(instance_uuid)
        ):
            raise exception.InstanceEvacuateFailed(instance_uuid=instance_uuid)
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
            effects.nova.lock_server(vmove.instance_uuid)
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
            effects.nova.reset_state(vmove.instance_uuid, "error")
            server = nova.get_server(vmove.instance_uuid)
        expected = server.vm_state

        if not started:
            effects.update_vmove(vmove.id, status=VMOVE_ONGOING, start_time=run.clock.now())
        effects.nova.evacuate(vmove.instance_uuid, reserved_host)
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
    """Unlock an instance this service locked; a failure leaves it recorded, and the lock
    reconciler (masakari.engine.locks) unlocks it once the recovery has ended."""
    try:
        run.effects.nova.unlock_server(instance_uuid)
    except exception.NovaError as exc:
        LOG.error(
            "Unlocking instance %s failed, left to the lock reconciler: %s", instance_uuid, exc
        )
