"""Host failure: the four recovery methods, and the tasks that disable and list the host."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

from oslo_utils import strutils
from sqlalchemy import orm

from masakari import exception
from masakari.db import work
from masakari.engine.context import Cancelled, PollTimeout, RunContext
from masakari.engine.recovery import evacuate
from masakari.engine.recovery.evacuate import HYPERVISOR, TASK_STATE, VM_STATE, compute_host
from masakari.engine.recovery.flow import Flow, Task, TaskContext, task

if TYPE_CHECKING:
    from masakari.engine.tasks import FlowTasks

LOG = logging.getLogger(__name__)

AUTO = "auto"
RESERVED_HOST = "reserved_host"
AUTO_PRIORITY = "auto_priority"
RH_PRIORITY = "rh_priority"


def compute_service(ctx: TaskContext, host: str) -> dict[str, Any]:
    services = ctx.nova.find_compute_services(host)
    if not services:
        raise exception.ComputeNotFoundByName(compute_name=host)
    return services[0]


@task("DisableComputeServiceTask")
def disable_compute_service(ctx: TaskContext) -> None:
    """Disable nova-compute on the failed host, then give Nova time to see the host down.

    With [host_failure]/force_down_fenced_host the host, reported fenced by the monitor
    (host_status NORMAL), is forced down first and the sleep is skipped: Nova accepts the
    evacuation at once.
    """
    host_name: str = ctx.store["host_name"]
    conf = ctx.conf
    ctx.update_details(f"Disabling compute service on host: '{host_name}'")
    service = compute_service(ctx, host_name)
    fenced = str(ctx.store.get("host_status", "")).upper() == "NORMAL"
    if conf.host_failure.force_down_fenced_host and fenced:
        ctx.nova.force_down_service(service["id"], True)

        def forced_down() -> bool:
            return bool(compute_service(ctx, host_name).get("forced_down"))

        ctx.run.poll(forced_down, conf.verify_interval, conf.wait_period_after_service_update)
        ctx.update_details(f"Forced down compute service on host: '{host_name}'", 0.5)
        ctx.nova.disable_service(service["id"], conf.host_failure.service_disable_reason)
    else:
        ctx.nova.disable_service(service["id"], conf.host_failure.service_disable_reason)
        LOG.info(
            "Sleeping %s sec before starting recovery thread until nova recognizes the node down.",
            conf.wait_period_after_service_update,
        )
        ctx.run.sleep(conf.wait_period_after_service_update)
    ctx.update_details(f"Disabled compute service on host: '{host_name}'", 1.0)


def _settle_previous_evacuations(ctx: TaskContext, host_name: str) -> None:
    """Wait for evacuations an earlier attempt started and never confirmed (engine lost).

    Re-evacuating an instance Nova is still rebuilding elsewhere would reset it to error
    mid-flight; wait for its task to end, then record where it went.
    """
    notification_uuid: str = ctx.store["notification_uuid"]
    with ctx.db.reader() as session:
        unsettled = work.vmoves(session, notification_uuid, statuses=[work.VMOVE_ONGOING])
    conf = ctx.conf
    for vmove in unsettled:

        def settled(vmove: work.VMoveData = vmove) -> dict[str, Any] | None:
            server = ctx.nova.get_server(vmove.instance_uuid)
            if server.get(TASK_STATE) is None or compute_host(server) != host_name:
                return server
            return None

        values: dict[str, Any] = {"end_time": ctx.run.clock.now()}
        try:
            server = ctx.run.poll(settled, conf.verify_interval, conf.wait_period_after_evacuation)
        except PollTimeout:
            values.update(status=work.VMOVE_FAILED, message="Failed reason: timeout.")
        except exception.NovaError as exc:
            values.update(status=work.VMOVE_FAILED, message=str(exc))
        else:
            if compute_host(server) != host_name and server.get(VM_STATE) != "error":
                values.update(status=work.VMOVE_SUCCEEDED, dest_host=server.get(HYPERVISOR))
            else:
                values.update(
                    status=work.VMOVE_FAILED,
                    message="Failed reason: engine lost before confirmation.",
                )
        work.transaction(ctx.db, functools.partial(work.update_vmove, vmove_id=vmove.id, **values))
    # Instances the lost engine locked: unlocked now, locked again if evacuated again.
    with ctx.db.reader() as session:
        locked = work.locked_instances(session, notification_uuid)
    for instance_uuid in locked:
        evacuate.unlock(ctx.run, instance_uuid)


@task("PrepareHAEnabledInstancesTask")
def prepare_ha_enabled_instances(ctx: TaskContext) -> None:
    """List the failed host's instances, keep those to evacuate, and record their vmoves."""
    host_name: str = ctx.store["host_name"]
    notification_uuid: str = ctx.store["notification_uuid"]
    options = ctx.conf.host_failure
    ctx.update_details("Preparing instances for evacuation")
    _settle_previous_evacuations(ctx, host_name)

    servers = ctx.nova.list_servers_on_host(host_name)
    ctx.update_details(
        f"Total instances running on failed host '{host_name}' is {len(servers)}", 0.3
    )
    key = options.ha_enabled_instance_metadata_key
    ha: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for server in servers:
        is_ha = strutils.bool_from_string((server.get("metadata") or {}).get(key, False))
        if options.ignore_instances_in_error_state and server.get(VM_STATE) == "error":
            if is_ha:
                ctx.update_details(
                    f"Ignoring recovery of HA_Enabled instance '{server['id']}' as it is in "
                    "'error' state.",
                    0.4,
                )
            continue
        (ha if is_ha else others).append(server)
    ctx.update_details(f"Total HA Enabled instances count: '{len(ha)}'", 0.6)
    selected = list(ha)
    if options.evacuate_all_instances:
        ctx.update_details(f"Total Non-HA Enabled instances count: '{len(others)}'", 0.7)
        selected.extend(others)
        ctx.update_details(
            "All instances (HA Enabled/Non-HA Enabled) should be considered for evacuation. "
            f"Total count is: '{len(selected)}'",
            0.8,
        )
    if not selected:
        msg = f"Skipped host '{host_name}' recovery as no instances needs to be evacuated"
        ctx.update_details(msg, 1.0)
        LOG.info(msg)
        raise exception.SkipHostRecovery(message=msg)

    now = ctx.run.clock.now()

    def record_moves(session: orm.Session) -> list[work.VMoveData]:
        # Rows an earlier try left pending (its evacuation never started) are reused, so
        # that one instance never has two pending moves.
        pending = {
            v.instance_uuid: v
            for v in work.vmoves(session, notification_uuid, statuses=[work.VMOVE_PENDING])
        }
        created = [
            pending.pop(server["id"])
            if server["id"] in pending
            else work.create_vmove(
                session, notification_uuid, server["id"], server.get("name") or "", host_name
            )
            for server in selected
        ]
        for stale in pending.values():
            work.update_vmove(
                session,
                stale.id,
                status=work.VMOVE_FAILED,
                message="Failed reason: evacuation not started.",
                end_time=now,
            )
        return created

    created = work.transaction(ctx.db, record_moves)
    # The evacuation task works on exactly these rows: this attempt's, not earlier ones.
    ctx.store["vmove_ids"] = [v.id for v in created]
    ctx.store["ha_instance_ids"] = {server["id"] for server in ha}
    ctx.update_details(
        "Instances to be evacuated are: '{}'".format(",".join(server["id"] for server in selected)),
        1.0,
    )


def _auto(run: RunContext, flows: FlowTasks, store: dict[str, Any]) -> None:
    tasks = flows.host_auto
    Flow(run, tasks["pre"], tasks["main"], tasks["post"]).run_linear(dict(store))


def _reserved(
    run: RunContext, flows: FlowTasks, store: dict[str, Any], reserved_hosts: list[str]
) -> None:
    if not reserved_hosts:
        raise exception.ReservedHostsUnavailable()
    tasks: dict[str, list[Task]] = flows.host_rh
    try:
        Flow(run, tasks["pre"], tasks["main"], tasks["post"]).run_per_candidate(
            dict(store), reserved_hosts
        )
    except exception.LockAlreadyAcquired as exc:
        raise exception.HostRecoveryFailure(message=exc.message) from exc


def recover(
    run: RunContext,
    flows: FlowTasks,
    method: str,
    store: dict[str, Any],
    reserved_hosts: list[str],
) -> None:
    """Run the flow(s) of a recovery method; raise Skip, or anything else for a failure.

    Methods are compared as stored (lower case): the reference's upper-case comparison
    (driver.py:319) only ever chose task lists for the progress view, which this project
    records as they run.
    """
    if method == AUTO:
        _auto(run, flows, store)
    elif method == RESERVED_HOST:
        _reserved(run, flows, store, reserved_hosts)
    elif method == AUTO_PRIORITY:
        try:
            _auto(run, flows, store)
        except (exception.SkipHostRecovery, Cancelled):
            raise
        except Exception:
            LOG.warning(
                "Failed to evacuate all instances from failed_host: '%s' using 'auto' "
                "workflow, retrying using 'reserved_host' workflow.",
                store["host_name"],
            )
            _reserved(run, flows, store, reserved_hosts)
    else:
        try:
            _reserved(run, flows, store, reserved_hosts)
        except (exception.SkipHostRecovery, Cancelled):
            raise
        except Exception:
            LOG.warning(
                "Failed to evacuate all instances from failed_host '%s' using "
                "'reserved_host' workflow, retrying using 'auto' workflow",
                store["host_name"],
            )
            _auto(run, flows, store)


def handle(
    run: RunContext, flows: FlowTasks, notification: work.NotificationData, payload: dict[str, Any]
) -> str:
    """A COMPUTE_HOST notification: the status it ends with."""
    host_status = payload.get("host_status")
    event = str(payload.get("event") or "").upper()
    if host_status is None:
        LOG.warning(
            "Notification '%s' ignored as host_status is not provided.",
            notification.notification_uuid,
        )
        return work.IGNORED
    if str(host_status).upper() != "NORMAL":
        # Evacuating from a host whose power-off is not confirmed could run an instance twice.
        LOG.warning(
            "Notification '%s' ignored as host_status is '%s'",
            notification.notification_uuid,
            str(host_status).upper(),
        )
        return work.IGNORED
    if event == "STARTED":
        LOG.info(
            "Notification type '%s' received for host '%s' has been %s.",
            notification.type,
            notification.source_host_uuid,
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

    def maintain(session: orm.Session) -> tuple[work.HostData, list[str]]:
        host = work.get_host(session, notification.source_host_uuid)
        if host is None:
            raise exception.HostNotFound(id=notification.source_host_uuid)
        LOG.info("Set host %s on maintenance.", host.name)
        work.put_on_maintenance(session, host.uuid, unreserve=host.reserved)
        if host.recovery_method == AUTO:
            return host, []
        return host, work.reserved_host_names(session, host.failover_segment_id)

    host, reserved_hosts = work.transaction(run.db, maintain)

    store = {
        "host_name": host.name,
        "notification_uuid": notification.notification_uuid,
        "host_status": host_status,
    }
    try:
        recover(run, flows, host.recovery_method, store, reserved_hosts)
    except exception.SkipHostRecovery:
        return work.FINISHED
    except Cancelled:
        raise
    except Exception as exc:
        LOG.error(
            "Failed to process notification '%s'. Reason: %s", notification.notification_uuid, exc
        )
        return work.ERROR
    return work.FINISHED
