"""A drill's restore: the host back as it was, whatever the drill got to. Idempotent: each
step reads the state first, so that an engine taking a drill over restores it again.

Power on through the driver (when the drill fenced it), un-force-down, wait for
nova-compute to report up, move the canaries back if asked, then the service's status
as it was before the drill, and off maintenance. A host whose nova-compute does not come
up is never enabled: it is left disabled and on maintenance, and the drill fails saying so.
"""

from __future__ import annotations

import functools

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
        service = _service(run)
        if service.forced_down:
            run.call(lambda: run.nova.force_down_service(service.id, False))
            notes.append("forced_down unset")
        run.wait(_up(run), run.conf.drill.service_up_timeout, "nova-compute up")
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


def _up(run: DrillRun):  # type: ignore[no-untyped-def]
    def done() -> Service | None:
        service = _service(run)
        return service if service.state == "up" and not service.forced_down else None

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
