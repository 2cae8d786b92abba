"""One fire drill: check, maintenance, fence, disable, evacuate; then restore, always.

Each phase is timed and recorded (:meth:`DrillRun.phase`); the first unexpected result
stops the drill there (:class:`DrillFailed`) and the host is restored
(:mod:`masakari.engine.drills.restore`). Nothing is changed before the check phase has
passed. What was found and done is saved as the drill's report after each step, so that an
engine taking the drill over knows what to undo.
"""

from __future__ import annotations

import functools

from sqlalchemy import orm

from masakari.compute.servers import Server, Service, compute_service
from masakari.db import drills as drills_db
from masakari.db import hosts as hosts_db
from masakari.db import segments as segments_db
from masakari.db.models import Host
from masakari.engine import plan
from masakari.engine.drills.seam import DrillFailed, DrillRun
from masakari.engine.fencing import FencedHost
from masakari.fencing.base import AGENT, IPMI, REDFISH, DriverSpec, PowerDriver, PowerState

POWER_TYPES = (IPMI, REDFISH, AGENT)
# Nova's disabled_reason while a drill holds the host.
DISABLED_REASON = "masakari fire drill {uuid}"


def power_driver(run: DrillRun) -> tuple[DriverSpec, PowerDriver] | None:
    """The first power driver of the host's escalation list, built; None without one."""
    if run.fencing is None:
        return None
    host = FencedHost(run.host, segment_uuid=run.segment_uuid)
    for spec in run.fencing.drivers_for(host):
        if spec.type in POWER_TYPES:
            return spec, run.fencing.power_driver(spec)
    return None


def drill(run: DrillRun) -> None:
    """The drill's changes, up to its first unexpected result (DrillFailed)."""
    check(run)
    maintenance(run)
    fence(run)
    disable(run)
    evacuate(run)


def check(run: DrillRun) -> None:
    """Nothing changes here: the host, its servers, the plan and its power driver."""
    conf = run.conf
    with run.phase("check") as notes:
        host, method, reserved, peers = run.read(lambda s: _segment_view(s, run))
        if host.on_maintenance:
            raise DrillFailed(f"host {run.host} is on maintenance")
        if run.read(lambda s: drills_db.notification_active(s, run.host_uuid)):
            raise DrillFailed(f"a notification of host {run.host} is being recovered")
        service = compute_service(
            run.call(lambda: run.nova.find_compute_services(run.host)), run.host
        )
        if service.state != "up" or service.forced_down:
            raise DrillFailed(
                f"nova-compute of {run.host} is {service.state}"
                + (" (forced down)" if service.forced_down else "")
                + ": a host that would not come back is not drilled"
            )
        servers = run.call(lambda: run.nova.list_servers_on_host(run.host))
        tag = conf.drill.canary_tag
        untagged = [s for s in servers if tag not in s.tags]
        if untagged and not run.allow_untagged:
            raise DrillFailed(
                f"{len(untagged)} server(s) without the tag {tag!r}: "
                + ", ".join(s.id for s in untagged[:5])
            )
        found = plan.build(
            conf,
            run.nova,
            run.placement,
            host=run.host,
            recovery_method=method,
            reserved_hosts=[r for r in reserved if r != run.host],
            peers=peers,
        )
        targets = {step.instance.id: step.target for step in found.steps if step.fits}
        homeless = [s.id for s in servers if targets.get(s.id) is None]
        if homeless:
            raise DrillFailed(
                "the recovery plan leaves behind "
                + ", ".join(homeless)
                + (f" ({'; '.join(found.messages)})" if found.messages else "")
            )
        state = run.state
        if not run.no_fence:
            chosen = power_driver(run)
            if chosen is None:
                raise DrillFailed(
                    f"the fencing file gives {run.host} no power driver (or drill with no_fence)"
                )
            spec, driver = chosen
            power = run.call(driver.power_status)
            if power is not PowerState.ON:
                raise DrillFailed(f"{spec.describe()} reads {power.value}, not on")
            state.fence_driver = spec.describe()
        state.service_was = service.status
        state.disabled_reason = service.disabled_reason
        state.recovery_method = method
        state.verdict = found.verdict
        state.canaries = [
            {"id": s.id, "name": s.name, "predicted": targets[s.id], "landed": None}
            for s in servers
        ]
        state.checked = True
        notes.append(
            f"{len(servers)} canary server(s); plan {found.verdict} ({method}); nova-compute "
            f"{service.status}; power {'not fenced' if run.no_fence else state.fence_driver}"
        )
        run.save()


def _segment_view(session: orm.Session, run: DrillRun) -> tuple[Host, str, list[str], list[str]]:
    host = hosts_db.get_in_segment(session, run.host_uuid, run.segment_uuid)
    segment = segments_db.get(session, run.segment_uuid)
    reserved = hosts_db.reserved_host_names(session, run.segment_uuid)
    peers = hosts_db.peer_names(session, run.host)
    return host, segment.recovery_method, reserved, peers


def maintenance(run: DrillRun) -> None:
    """On maintenance in masakari: no monitor's report of the host starts a recovery."""
    with run.phase("maintenance"):
        run.write(lambda s: hosts_db.put_on_maintenance(s, run.host_uuid, unreserve=False))


def fence(run: DrillRun) -> None:
    """Power off through the host's driver and confirm it; then (or, with no_fence, only)
    force its nova-compute down, as the engine does to a fenced host: Nova accepts
    evacuations from a host it counts down."""
    fencing = run.fencing
    predicted = None
    if not run.no_fence and fencing is not None:
        predicted = fencing.confirm_timeout + _spec_timeout(run)
    with run.phase("fence", predicted) as notes:
        if not run.no_fence:
            chosen = power_driver(run)
            if chosen is None or fencing is None:
                raise DrillFailed("the host's power driver is gone from the fencing file")
            spec, driver = chosen
            run.call(driver.power_off)
            run.wait(
                lambda: True if run.call(driver.power_status) is PowerState.OFF else None,
                fencing.confirm_timeout,
                f"{spec.describe()}: power off",
            )
            notes.append(f"powered off via {spec.describe()}")
        service = _service(run)
        run.call(lambda: run.nova.force_down_service(service.id, True))
        notes.append("nova-compute forced down")


def _spec_timeout(run: DrillRun) -> float:
    chosen = power_driver(run)
    return chosen[0].timeout if chosen else 0.0


def disable(run: DrillRun) -> None:
    with run.phase("disable"):
        service = _service(run)
        reason = DISABLED_REASON.format(uuid=run.uuid)
        run.call(lambda: run.nova.disable_service(service.id, reason))


def evacuate(run: DrillRun) -> None:
    """Evacuate every canary where Nova's scheduler puts it; each must land, active or
    stopped, within wait_period_after_evacuation. A reserved host the plan names is not
    taken from the pool for a drill (it would have to be given back): where a canary lands
    is compared with the plan's target instead, a finding when they differ."""
    budget = float(run.conf.wait_period_after_evacuation)
    state = run.state
    with run.phase("evacuate", budget if state.canaries else None) as notes:
        for canary in state.canaries:
            run.call(functools.partial(run.nova.evacuate, canary["id"], None))
        began = run.clock.monotonic()
        for canary in state.canaries:
            server = run.wait(
                functools.partial(_landed, run, canary["id"]),
                budget - (run.clock.monotonic() - began),
                f"canary {canary['id']} evacuated",
            )
            canary["landed"] = server.compute_host
            canary["seconds"] = round(run.clock.monotonic() - began, 3)
            if canary["predicted"] not in (plan.SCHEDULER, server.compute_host):
                state.findings.append(
                    f"canary {canary['id']} landed on {server.compute_host}, "
                    f"the plan said {canary['predicted']}"
                )
            notes.append(f"{canary['id']} -> {server.compute_host} ({canary['seconds']:g} s)")
        run.save()


def _landed(run: DrillRun, server_id: str) -> Server | None:
    server = run.call(lambda: run.nova.get_server(server_id))
    if server.vm_state == "error":
        raise DrillFailed(f"canary {server_id} is in error after its evacuation")
    if server.compute_host == run.host or server.task_state:
        return None
    return server if server.vm_state in ("active", "stopped") else None


def _service(run: DrillRun) -> Service:
    return compute_service(run.call(lambda: run.nova.find_compute_services(run.host)), run.host)
