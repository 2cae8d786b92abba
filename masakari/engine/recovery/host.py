"""Host failure: the four recovery methods, and the task that disables the failed host
(which of its instances move is masakari.engine.recovery.prepare's)."""

from __future__ import annotations

import logging

from masakari import exception
from masakari.compute.servers import Service, compute_service
from masakari.conf import host_return as host_return_opts
from masakari.db import statuses
from masakari.engine import capacity, selection
from masakari.engine.context import Cancelled, RunContext
from masakari.engine.recovery import host_return
from masakari.engine.recovery.flow import (
    Flow,
    FlowTasks,
    Stages,
    Store,
    TaskContext,
    required,
    run_flow,
    task,
)
from masakari.engine.recovery.payloads import HostPayload

LOG = logging.getLogger(__name__)

AUTO = "auto"
RESERVED_HOST = "reserved_host"
AUTO_PRIORITY = "auto_priority"
RH_PRIORITY = "rh_priority"


def _service(ctx: TaskContext, host: str) -> Service:
    return compute_service(ctx.nova.find_compute_services(host), host)


@task("DisableComputeServiceTask")
def disable_compute_service(ctx: TaskContext) -> None:
    """Disable nova-compute on the failed host, then give Nova time to see the host down.

    With [host_failure]/force_down_fenced_host the host, reported fenced by the monitor
    (host_status NORMAL), is forced down first and the sleep is skipped: Nova accepts the
    evacuation at once.
    """
    host_name = required(ctx.store.host_name, "host_name")
    conf = ctx.conf
    ctx.update_details(f"Disabling compute service on host: '{host_name}'")
    service = _service(ctx, host_name)
    fenced = str(ctx.store.host_status or "").upper() == "NORMAL"
    if conf.host_failure.force_down_fenced_host and fenced:
        ctx.effects.force_down_service(service.id)

        def forced_down() -> bool:
            return _service(ctx, host_name).forced_down

        ctx.run.poll(forced_down, conf.verify_interval, conf.wait_period_after_service_update)
        ctx.update_details(f"Forced down compute service on host: '{host_name}'", 0.5)
        ctx.effects.disable_service(service.id, conf.host_failure.service_disable_reason)
    else:
        ctx.effects.disable_service(service.id, conf.host_failure.service_disable_reason)
        LOG.info(
            "Sleeping %s sec before starting recovery thread until nova recognizes the node down.",
            conf.wait_period_after_service_update,
        )
        ctx.run.sleep(conf.wait_period_after_service_update)
    ctx.update_details(f"Disabled compute service on host: '{host_name}'", 1.0)


def _auto(run: RunContext, flows: FlowTasks, store: Store) -> None:
    tasks = flows.host_auto
    Flow(run, tasks["pre"], tasks["main"], tasks["post"]).run_linear(store)


def _reserved(run: RunContext, flows: FlowTasks, store: Store, reserved_hosts: list[str]) -> None:
    if not reserved_hosts:
        raise exception.ReservedHostsUnavailable()
    if run.conf.host_failure.capacity_aware_targets and len(reserved_hosts) > 1:
        reserved_hosts = _fitting_first(run, required(store.host_name, "host_name"), reserved_hosts)
    tasks: Stages = flows.host_rh
    try:
        Flow(run, tasks["pre"], tasks["main"], tasks["post"]).run_per_candidate(
            store, reserved_hosts
        )
    except exception.LockAlreadyAcquired as exc:
        raise exception.HostRecoveryFailure(message=exc.message) from exc


def _fitting_first(run: RunContext, host_name: str, reserved_hosts: list[str]) -> list[str]:
    """The reserved hosts that can hold the failed host's instances first (Placement); on a
    Nova or Placement failure, the usual order, with a warning."""
    try:
        servers = run.nova.list_servers_on_host(host_name)
        moving = selection.select(run.conf, run.nova, host_name, servers, None).moving()
        return capacity.rank_reserved_hosts(reserved_hosts, moving, run.placement)
    except exception.NovaError as exc:
        LOG.warning("Capacity check of reserved hosts failed, trying them in order: %s", exc)
        return reserved_hosts


def recover(
    run: RunContext,
    flows: FlowTasks,
    method: str,
    store: Store,
    reserved_hosts: list[str],
) -> None:
    """Run the flow(s) of a recovery method; raise Skip, or anything else for a failure.

    Methods are compared as stored (lower case): the reference's upper-case comparison
    (driver.py:319) only ever chose task lists for the progress view, which this project
    records as they run. Each flow gets its own copy of the store.
    """

    def fresh() -> Store:
        return Store(
            store.notification_uuid, host_name=store.host_name, host_status=store.host_status
        )

    if method == AUTO:
        _auto(run, flows, fresh())
    elif method == RESERVED_HOST:
        _reserved(run, flows, fresh(), reserved_hosts)
    elif method == AUTO_PRIORITY:
        try:
            _auto(run, flows, fresh())
        except (exception.SkipHostRecovery, Cancelled):
            raise
        except Exception:
            LOG.warning(
                "Failed to evacuate all instances from failed_host: '%s' using 'auto' "
                "workflow, retrying using 'reserved_host' workflow.",
                store.host_name,
            )
            _reserved(run, flows, fresh(), reserved_hosts)
    else:
        try:
            _reserved(run, flows, fresh(), reserved_hosts)
        except (exception.SkipHostRecovery, Cancelled):
            raise
        except Exception:
            LOG.warning(
                "Failed to evacuate all instances from failed_host '%s' using "
                "'reserved_host' workflow, retrying using 'auto' workflow",
                store.host_name,
            )
            _auto(run, flows, fresh())


def handle(
    run: RunContext, flows: FlowTasks, notification_type: str, host_uuid: str, text: str | None
) -> str:
    """A COMPUTE_HOST notification: the status it ends with."""
    payload = HostPayload.parse(text)
    event = (payload.event or "").upper()
    if payload.host_status is None:
        LOG.warning(
            "Notification '%s' ignored as host_status is not provided.", run.notification_uuid
        )
        return statuses.IGNORED
    released_unknown = (
        payload.host_status.upper() == "UNKNOWN" and run.conf.guards.hold_unknown_host_reports
    )
    if released_unknown:
        # Held at intake (masakari.db.holds) and taken by the engine only once an operator
        # released it: the release is the confirmation the report lacked.
        LOG.warning(
            "Notification '%s' with host_status UNKNOWN was released by an operator: "
            "recovering the host.",
            run.notification_uuid,
        )
    elif payload.host_status.upper() != "NORMAL":
        # Evacuating from a host whose power-off is not confirmed could run an instance twice.
        LOG.warning(
            "Notification '%s' ignored as host_status is '%s'",
            run.notification_uuid,
            payload.host_status.upper(),
        )
        return statuses.IGNORED
    if event == "STARTED":
        LOG.info(
            "Notification type '%s' received for host '%s' has been %s.",
            notification_type,
            host_uuid,
            payload.event,
        )
        if host_return_opts.enabled(run.conf) and not released_unknown:
            return host_return.handle(run, host_uuid)
        return statuses.FINISHED
    if event != "STOPPED":
        LOG.warning(
            "Invalid event: %s received for notification type: %s",
            payload.event,
            notification_type,
        )
        return statuses.IGNORED

    host = run.effects.put_host_on_maintenance(host_uuid, unreserve_spare=True)
    LOG.info("Set host %s on maintenance.", host.name)
    reserved_hosts = (
        []
        if host.recovery_method == AUTO
        else run.effects.reserved_host_names(host.failover_segment_id)
    )
    store = Store(run.notification_uuid, host_name=host.name, host_status=payload.host_status)
    return run_flow(run, lambda: recover(run, flows, host.recovery_method, store, reserved_hosts))
