"""A drill's restore: the host back as it was, whatever the drill got to. Idempotent: each
step reads the state first, so that an engine taking a drill over restores it again.

Power on through the driver (when the drill fenced it), un-force-down, wait for
nova-compute to report up, move the canaries back if asked, then the service's status
as it was before the drill, and off maintenance. A host whose nova-compute does not come
up is never enabled: it is left disabled and on maintenance, and the drill fails saying so.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable

from masakari.compute.nova import NovaRequestError
from masakari.compute.servers import Service, compute_service
from masakari.db import hosts as hosts_db
from masakari.engine.drills.run import power_driver
from masakari.engine.drills.seam import DrillFailed, DrillRun
from masakari.fencing.base import PowerState


def restore(run: DrillRun) -> None:
    """Raises DrillFailed when the host could not be restored (the drill fails with it)."""
    state = run.state
    if not state.checked:
        return  # the check changes nothing: there is nothing to undo
    with run.phase("restore", run.conf.drill.service_up_timeout) as notes:
        if not run.no_fence:
            _power_on(run, notes)
        timeout = run.conf.drill.service_up_timeout
        run.wait(_forced_up(run, notes), timeout, "forced_down unset")
        # Nova counts a service up while its last heartbeat is younger than
        # service_down_time: a host powered off seconds ago still reads up. Only a
        # heartbeat written after the last change proves nova-compute runs again.
        since = _service(run).updated_at
        run.wait(_up(run, since), timeout, "nova-compute up (a new heartbeat)")
        notes.append("nova-compute up")
    moved: DrillFailed | None = None
    if run.move_back and any(c.get("landed") for c in state.canaries):
        try:
            move_back(run)
        except DrillFailed as exc:
            moved = exc  # the host is up: it still gets its status back, then this is said
    with run.phase("return") as notes:
        service = _service(run)
        if service.state != "up":  # never enable a host that is not up
            raise DrillFailed("nova-compute went down again: the host is left disabled")
        if state.service_was == "enabled" and service.status != "enabled":
            run.call(lambda: run.nova.enable_service(service.id))
            notes.append("nova-compute enabled")
        elif state.service_was == "disabled":
            reason = state.disabled_reason
            run.call(lambda: run.nova.disable_service(service.id, reason))
            notes.append("nova-compute disabled again, as it was (a spare)")
        run.write(lambda s: hosts_db.clear_maintenance(s, run.host_uuid))
        notes.append("off maintenance")
    state.restored = True
    run.save()
    if moved is not None:
        raise moved


def _power_on(run: DrillRun, notes: list[str]) -> None:
    chosen = power_driver(run)
    if chosen is None or run.fencing is None:
        if run.state.fence_driver:
            raise DrillFailed("the host's power driver is gone from the fencing file")
        return
    spec, driver = chosen
    if run.call(driver.power_status) is PowerState.ON:
        return
    run.call(driver.power_on)
    run.wait(
        lambda: True if run.call(driver.power_status) is PowerState.ON else None,
        run.fencing.confirm_timeout,
        f"{spec.describe()}: power on",
    )
    notes.append(f"powered on via {spec.describe()}")


def _service(run: DrillRun) -> Service:
    return compute_service(run.call(lambda: run.nova.find_compute_services(run.host)), run.host)


def _forced_up(run: DrillRun, notes: list[str]) -> Callable[[], bool | None]:
    """Unset forced_down, again while Nova refuses it: Nova (2023.2 on) keeps a host with
    evacuations ``done`` from it forced down until its nova-compute has restarted (which
    completes them), so the restart has to come first: the power on does it, or, with
    no_fence, whoever restarts nova-compute on the host."""
    refused: list[str] = []

    def done() -> bool | None:
        service = _service(run)
        if not service.forced_down:
            return True
        try:
            run.call(lambda: run.nova.force_down_service(service.id, False))
        except NovaRequestError as exc:
            if exc.status != 400:
                raise
            if not refused:
                refused.append(str(exc))
                notes.append(f"forced_down kept by Nova until nova-compute restarts: {exc}")
            return None
        notes.append("forced_down unset")
        return True

    return done


def _up(run: DrillRun, since: datetime.datetime | None) -> Callable[[], Service | None]:
    def done() -> Service | None:
        service = _service(run)
        if service.state != "up" or service.forced_down:
            return None
        if since is not None and (service.updated_at is None or service.updated_at <= since):
            return None
        return service

    return done


def move_back(run: DrillRun) -> None:
    """Live-migrate the canaries back to the host, which takes them only while enabled:
    enabled for it (its status as it was comes next)."""
    with run.phase("move_back", run.conf.drill.migration_timeout) as notes:
        service = _service(run)
        if service.status != "enabled":
            run.call(lambda: run.nova.enable_service(service.id))
        for canary in run.state.canaries:
            server = run.call(functools.partial(run.nova.get_server, canary["id"]))
            if server.compute_host != run.host:
                run.call(functools.partial(run.nova.live_migrate, canary["id"], run.host))
            run.wait(
                functools.partial(_home, run, canary["id"]),
                run.conf.drill.migration_timeout,
                f"canary {canary['id']} back on {run.host}",
            )
            canary["moved_back"] = True
            notes.append(f"{canary['id']} back on {run.host}")
        run.save()


def _home(run: DrillRun, server_id: str) -> bool | None:
    server = run.call(lambda: run.nova.get_server(server_id))
    if server.vm_state == "error":
        raise DrillFailed(f"canary {server_id} is in error after its migration back")
    return True if server.compute_host == run.host and not server.task_state else None
