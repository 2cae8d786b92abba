"""Host failure's four recovery methods: which flow(s) run, in which order, with what.

``auto`` and ``reserved_host`` run one flow; ``auto_priority`` and ``rh_priority`` run the
other when the first fails. Each flow gets a fresh copy of the store.
"""

from __future__ import annotations

import logging

from masakari import exception
from masakari.db.statuses import RecoveryMethod
from masakari.engine import capacity, selection
from masakari.engine.context import Cancelled, RunContext
from masakari.engine.recovery.flow import Flow, FlowTasks, Stages, Store, required

LOG = logging.getLogger(__name__)


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
            store.notification_uuid,
            host_name=store.host_name,
            host_status=store.host_status,
            host_fenced=store.host_fenced,
        )

    if method == RecoveryMethod.AUTO:
        _auto(run, flows, fresh())
    elif method == RecoveryMethod.RESERVED_HOST:
        _reserved(run, flows, fresh(), reserved_hosts)
    elif method == RecoveryMethod.AUTO_PRIORITY:
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
