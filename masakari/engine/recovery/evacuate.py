"""Evacuating the instances of a failed host: the per-instance state machine and the pool.

The per-instance sequence is the reference's (masakari/engine/drivers/taskflow/
host_failure.py:193): lock unless already locked, reset states Nova cannot evacuate from,
evacuate, confirm, stop again what was not running, restore ``error``, unlock. What differs
is what the task counts: only the vmoves of this attempt (rewrite-pack § 3.6), and an
instance whose evacuation could not even start counts as failed instead of being forgotten.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
from collections.abc import Sequence
from typing import Any

from masakari import exception
from masakari.db import work
from masakari.engine.context import Cancelled, PollTimeout, RunContext, Server, nova_message
from masakari.engine.recovery.flow import TaskContext, task

LOG = logging.getLogger(__name__)

# Nova's power_state for a shut-down instance.
SHUTDOWN = 4
VM_STATE = "OS-EXT-STS:vm_state"
TASK_STATE = "OS-EXT-STS:task_state"
POWER_STATE = "OS-EXT-STS:power_state"
HYPERVISOR = "OS-EXT-SRV-ATTR:hypervisor_hostname"
HOST = "OS-EXT-SRV-ATTR:host"
TIMEOUT_MESSAGE = "Failed reason: timeout."


def _hypervisor(server: Server) -> str | None:
    return server.get(HYPERVISOR)


def compute_host(server: Server) -> str | None:
    """The compute service's host, which is the Masakari host name.

    The reference compares the hypervisor hostname instead, which differs from the service
    host where hypervisors report an FQDN: then any instance looked evacuated at once.
    """
    return server.get(HOST) or server.get(HYPERVISOR)


def _update_vmove(run: RunContext, vmove_id: int, **values: Any) -> None:
    work.transaction(run.db, lambda session: work.update_vmove(session, vmove_id, **values))


def evacuate_and_confirm(run: RunContext, vmove: work.VMoveData, reserved_host: str | None) -> None:
    """Evacuate one instance and confirm it; the vmove row tells how it went."""
    conf = run.conf
    nova = run.nova
    source = vmove.source_host
    locked_by_us = False
    try:
        server = nova.get_server(vmove.instance_uuid)
        # The reference reads the server a second time just for "locked"; one read says both.
        already_locked = bool(server.get("locked"))
        if not already_locked:
            # Keep users away from the instance until its evacuation is confirmed. Recorded
            # first, so that whoever finishes this notification unlocks it if we cannot.
            work.transaction(
                run.db,
                functools.partial(
                    work.record_lock,
                    notification_uuid=run.notification_uuid,
                    instance_uuid=vmove.instance_uuid,
                ),
            )
            locked_by_us = True
            nova.lock_server(vmove.instance_uuid)
    except Cancelled:
        raise
    except Exception as exc:
        LOG.warning("Evacuation of %s could not start: %s", vmove.instance_uuid, exc)
        _update_vmove(
            run,
            vmove.id,
            status=work.VMOVE_FAILED,
            message=nova_message(exc),
            end_time=run.clock.now(),
        )
        return

    cancelled = False
    try:
        vm_state = server.get(VM_STATE)
        task_state = server.get(TASK_STATE)
        stop_after = True
        if vm_state not in ("active", "error", "stopped"):
            # Nova evacuates only active, stopped and error instances.
            nova.reset_state(vmove.instance_uuid, "error")
            server = nova.get_server(vmove.instance_uuid)
            if vm_state == "resized" and server.get(POWER_STATE) != SHUTDOWN:
                stop_after = False
        elif vm_state == "stopped" and task_state is None:
            # Evacuated as stopped: nothing to stop afterwards.
            stop_after = False
        elif task_state is not None:
            # Nova refuses to evacuate an instance with a task in progress.
            nova.reset_state(vmove.instance_uuid, "error")
            server = nova.get_server(vmove.instance_uuid)
            if vm_state == "active":
                stop_after = False
        expected = server.get(VM_STATE)

        _update_vmove(run, vmove.id, status=work.VMOVE_ONGOING, start_time=run.clock.now())
        nova.evacuate(vmove.instance_uuid, host=reserved_host)

        def evacuated() -> bool:
            current = nova.get_server(vmove.instance_uuid)
            state = current.get(VM_STATE)
            if state == "error" and state != expected:
                raise exception.InstanceEvacuateFailed(instance_uuid=vmove.instance_uuid)
            if compute_host(current) != source:
                return (expected == "error" and state == "active") or expected == state
            return False

        run.poll(evacuated, conf.verify_interval, conf.wait_period_after_evacuation)

        if vm_state != "active" and stop_after:
            nova.stop_server(vmove.instance_uuid)

            def stopped() -> bool:
                return nova.get_server(vmove.instance_uuid).get(VM_STATE) == "stopped"

            try:
                run.poll(stopped, conf.verify_interval, conf.wait_period_after_power_off)
            except PollTimeout:
                LOG.warning(
                    "Instance '%s' is successfully evacuated but timeout to stop.",
                    vmove.instance_uuid,
                )
                raise
            if vm_state == "error":
                # An instance in error before the failure is left in error after it.
                nova.reset_state(vmove.instance_uuid, "error")

        dest = _hypervisor(nova.get_server(vmove.instance_uuid))
        _update_vmove(run, vmove.id, status=work.VMOVE_SUCCEEDED, dest_host=dest)
    except Cancelled:
        # Left pending/ongoing on purpose: the next attempt settles it from Nova's state.
        cancelled = True
        raise
    except PollTimeout:
        LOG.warning("Timeout for instance '%s' evacuation.", vmove.instance_uuid)
        _update_vmove(run, vmove.id, status=work.VMOVE_FAILED, message=TIMEOUT_MESSAGE)
    except Exception as exc:
        LOG.warning("Evacuation of %s failed: %s", vmove.instance_uuid, exc)
        _update_vmove(run, vmove.id, status=work.VMOVE_FAILED, message=nova_message(exc))
    finally:
        if not cancelled:
            _update_vmove(run, vmove.id, end_time=run.clock.now())
        if locked_by_us:
            unlock(run, vmove.instance_uuid)


def unlock(run: RunContext, instance_uuid: str) -> None:
    """Unlock an instance this service locked; a failure leaves it recorded for the next try."""
    try:
        run.nova.unlock_server(instance_uuid)
    except exception.NovaError as exc:
        if exc.status != 404:  # a deleted instance has nothing left to unlock
            LOG.error(
                "Unlocking instance %s failed, left for the next attempt: %s", instance_uuid, exc
            )
            return
    work.transaction(run.db, functools.partial(work.forget_lock, instance_uuid=instance_uuid))


def _order(vmoves: Sequence[work.VMoveData], ha_ids: set[str] | None) -> list[work.VMoveData]:
    """HA-enabled instances first; inside each group, the reference's order (newest row first).

    The reference starts with the non-HA instances (rewrite-pack § 3.4/§ 3.6), the opposite
    of what [host_failure]/evacuate_all_instances documents.
    """
    ordered = sorted(vmoves, key=lambda v: v.id, reverse=True)
    if not ha_ids:
        return ordered
    return [v for v in ordered if v.instance_uuid in ha_ids] + [
        v for v in ordered if v.instance_uuid not in ha_ids
    ]


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
            ctx.nova.add_host_to_aggregate(aggregate["id"], reserved_host)
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
    if not work.transaction(ctx.db, lambda s: work.take_reserved_host(s, reserved_host)):
        raise exception.LockAlreadyAcquired(resource=reserved_host)
    try:
        ctx.update_details(f"Enabling reserved host: '{reserved_host}'", 0.1)
        if ctx.conf.host_failure.add_reserved_host_to_aggregate:
            _add_to_aggregates(ctx, host_name, reserved_host)
        services = ctx.nova.find_compute_services(reserved_host)
        if not services:
            raise exception.ComputeNotFoundByName(compute_name=reserved_host)
        ctx.nova.enable_service(services[0]["id"])
    except BaseException:
        # Not enabled: it is still a spare, as the reference leaves it.
        work.transaction(ctx.db, lambda s: work.give_back_reserved_host(s, reserved_host))
        raise


def _current_vmoves(ctx: TaskContext, notification_uuid: str) -> list[work.VMoveData]:
    ids = ctx.store.get("vmove_ids")
    with ctx.db.reader() as session:
        if ids is None:
            # No prepare task in this flow: take what is pending, as the reference does.
            return work.vmoves(session, notification_uuid, statuses=[work.VMOVE_PENDING])
        return work.vmoves(session, notification_uuid, ids=ids)


@task("EvacuateInstancesTask")
def evacuate_instances(ctx: TaskContext) -> None:
    """Evacuate this attempt's instances, host_failure_recovery_threads at a time."""
    host_name: str = ctx.store["host_name"]
    notification_uuid: str = ctx.store["notification_uuid"]
    reserved_host: str | None = ctx.store.get("reserved_host")
    vmoves = _order(_current_vmoves(ctx, notification_uuid), ctx.store.get("ha_instance_ids"))
    ctx.update_details(
        "Start evacuation of instances from failed host '{host_name}', instance uuids are: "
        "'{instance_list}'".format(
            host_name=host_name, instance_list=",".join(v.instance_uuid for v in vmoves)
        )
    )
    if reserved_host:
        _enable_reserved_host(ctx, host_name, reserved_host)

    threads = max(1, int(ctx.conf.host_failure_recovery_threads))
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=threads, thread_name_prefix="evacuate"
    ) as pool:
        futures = []
        for vmove in vmoves:
            ctx.update_details(f"Evacuation of instance started: '{vmove.instance_uuid}'", 0.5)
            futures.append(pool.submit(evacuate_and_confirm, ctx.run, vmove, reserved_host))
        for future in futures:
            try:
                future.result()
            except Cancelled:
                pass
            except Exception:  # evacuate_and_confirm records its own failures
                LOG.exception("Evacuation worker failed")
    ctx.run.check()

    with ctx.db.reader() as session:
        final = work.vmoves(session, notification_uuid, ids=[v.id for v in vmoves])
    succeeded = sorted(v.instance_uuid for v in final if v.status == work.VMOVE_SUCCEEDED)
    if succeeded:
        ctx.update_details(
            "Successfully evacuate instances '{instance_list}' from host '{host_name}'".format(
                instance_list=",".join(succeeded), host_name=host_name
            ),
            0.7,
        )
    failed = [v.instance_uuid for v in final if v.status != work.VMOVE_SUCCEEDED]
    if failed:
        msg = "Failed to evacuate instances '{instance_list}' from host '{host_name}'".format(
            instance_list=",".join(failed),
            host_name=host_name,
        )
        ctx.update_details(msg, 0.7)
        raise exception.HostRecoveryFailure(message=msg)
    ctx.update_details("Evacuation process completed!", 1.0)
