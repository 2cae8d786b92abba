"""Host fencing: prove a failed host dead before anything of it is evacuated.

``FenceHostTask`` runs once per notification, ahead of the host-failure flow(s) (an
attempt of its own in recovery_workflow_details, so that the auto_priority and rh_priority
fallbacks do not fence twice). A host with drivers has its nova-compute disabled first (no
evacuation of another failed host lands on it while it is fenced); then its drivers are
tried in the fencing file's order: a power driver powers the host off, then its state is
read every ``confirm_interval`` until it reads Off, up to ``confirm_timeout``; a kdump
entry passes when the host's crash messages came after the report and its last heartbeat
(:mod:`masakari.engine.kdump_proof`; waiting up to the entry's ``wait``), unless
``[fencing] kdump_trust = hint`` makes them evidence only; a ``lease`` entry passes when
the host's slot on shared storage stays unchanged past its expiry
(:mod:`masakari.engine.host_lease`); a ceph entry once the host's addresses read back in
the OSD map's blocklist (:mod:`masakari.engine.recovery.storage_fence`). The first success
proves the host dead. When none does, the notification is held for an operator
(:class:`~masakari.engine.errors.Held`). Before the first power driver runs, wherever the
lease entries sit in the list, each is watched until it stalls: a host that still renews
its lease runs (a partition, not a death) and is held, neither fenced nor evacuated.

What was done before is read first: an engine taking the recovery over (or the periodic
retry) does not fence a host already proven dead, and reads the state back before it sends
a power off again; an operator's release of the hold is their word that the host is dead.
"""

from __future__ import annotations

import functools
import logging
from typing import NoReturn

from masakari import metrics
from masakari.compute.servers import compute_service
from masakari.db import fencing as evidence
from masakari.db import holds
from masakari.engine import progress as states
from masakari.engine.context import Cancelled, RunContext
from masakari.engine.errors import Held
from masakari.engine.fence_effects import Attempt
from masakari.engine.fencing import FencedHost, HostFencing
from masakari.engine.host_lease import HostLeases
from masakari.engine.kdump_proof import CrashMessages
from masakari.engine.progress import FlowProgress
from masakari.engine.recovery import storage_fence
from masakari.engine.recovery.flow import Store, TaskContext
from masakari.fencing.base import CEPH, KDUMP, LEASE, DriverSpec, FenceError, why_of

LOG = logging.getLogger(__name__)

TASK_NAME = "FenceHostTask"
# The operator's release, as the evidence names it.
OPERATOR = "operator"


def fence_first(run: RunContext, store: Store, host: FencedHost) -> None:
    """The fence step of a COMPUTE_HOST failure; sets ``store.host_fenced`` when proven.

    Raises Held (the notification is held, the claim given up) when the host could not be
    proven dead; anything unexpected fails the recovery (nothing is evacuated).
    """
    fencing = run.fencing
    if fencing is None:
        return
    step = FlowProgress(run).task(0, TASK_NAME)
    run.check()
    step.set_state(states.RUNNING)
    ctx = TaskContext(run, store, step)
    try:
        _fence(ctx, fencing, host)
    except (Cancelled, Held):
        raise
    except Exception:
        step.set_state(states.FAILURE)
        raise
    step.set_state(states.SUCCESS)


def _fence(ctx: TaskContext, fencing: HostFencing, fenced: FencedHost) -> None:
    host = fenced.name
    effects = ctx.effects
    prior = effects.fencing.fence_attempts()
    proof = next((a for a in prior if a.proves_dead), None)
    if proof is not None:
        ctx.update_details(
            f"Host '{host}' was proven dead at {proof.started_at} ({proof.driver}: "
            f"{proof.action} {proof.result}): not fenced again",
            1.0,
        )
        if proof.position >= 0:
            # An engine that died between its proof and an after_power blocklist: done now.
            blocklisted = {
                a.position
                for a in prior
                if (a.action, a.result) == (evidence.BLOCKLIST, evidence.BLOCKLISTED)
            }
            specs = fencing.drivers_for(fenced)
            storage_fence.after_proof(ctx, host, specs, proof.position, blocklisted)
        ctx.store.host_fenced = True
        return
    released = effects.fencing.released_hold()
    if holds.is_fence_reason(released):
        _released(ctx, host, released or "")
        return
    specs = fencing.drivers_for(fenced)
    if not specs:
        if fencing.holds_unfenced:
            _hold(ctx, holds.REASON_UNFENCED, f"No power fencing configured for host '{host}'")
        ctx.update_details(
            f"No power fencing configured for host '{host}': recovering on the monitor's report",
            1.0,
        )
        return
    crash_messages = CrashMessages(ctx.run, host)
    kdump_entries = any(spec.type == KDUMP for spec in specs)
    if kdump_entries:
        crash_messages.before_own_change()  # Nova's updated_at, which the disable moves
    _disable_first(ctx, host)
    if kdump_entries:
        crash_messages.after_own_change()
    if _read_back(ctx, fencing, fenced, prior):
        return
    failures: list[str] = []
    leases = HostLeases(ctx.run, host, specs)
    held = functools.partial(_hold, ctx, what=f"Host '{host}' renews its lease")
    for position, spec in enumerate(specs):
        ctx.run.check()
        if spec.type not in (KDUMP, LEASE):
            leases.veto(ctx.update_details, held)  # a host that renews is not fenced
        if spec.type == KDUMP:
            why = _kdump(ctx, fencing, host, position, spec, crash_messages)
        elif spec.type == LEASE:
            why = leases.prove(position, ctx.update_details, held)
        elif spec.type == CEPH:
            why = storage_fence.blocklist(ctx, host, position, spec)
        else:
            why = _power_off(ctx, fencing, host, position, spec)
        if why is None:
            storage_fence.after_proof(ctx, host, specs, position)
            ctx.store.host_fenced = True
            return
        failures.append(f"{spec.describe()}: {why}")
    metrics.fence_failed()
    _hold(ctx, holds.REASON_FENCE_FAILED + "; ".join(failures), f"Host '{host}' not proven dead")


def _disable_first(ctx: TaskContext, host: str) -> None:
    """Disable the host's nova-compute before its power off: while the fence confirms
    (up to confirm_timeout per driver), Nova's scheduler would otherwise still place the
    evacuations of another failed host, fenced sooner, on this one. The same reason and
    the same leased effect as DisableComputeServiceTask, which sends it again (Nova's
    disable is idempotent); the force down still waits for the proof. A held host stays
    disabled."""
    service = compute_service(ctx.nova.find_compute_services(host), host)
    ctx.effects.nova.disable_service(service, ctx.conf.host_failure.service_disable_reason)
    ctx.update_details(f"Disabled compute service on host '{host}' before fencing it", 0.1)


def _released(ctx: TaskContext, host: str, reason: str) -> None:
    """The operator released the hold: their word that the host is dead, recorded."""
    now = ctx.run.clock.now()
    ctx.effects.fencing.record_fence(
        host,
        -1,
        OPERATOR,
        evidence.RELEASE,
        evidence.DEAD,
        f"released by an operator (held: {reason})",
        now,
        None,
        OPERATOR,
    )
    ctx.update_details(
        f"Host '{host}' released by an operator, taken as dead (held: {reason}): not fenced",
        1.0,
    )
    ctx.store.host_fenced = True


def _read_back(
    ctx: TaskContext, fencing: HostFencing, fenced: FencedHost, prior: list[Attempt]
) -> bool:
    """An earlier attempt sent a power off (or was confirming one) and no answer proved
    it: read the state back before anything is sent again. True when it reads Off."""
    sent = [
        a
        for a in prior
        if a.action in (evidence.OFF, evidence.STATUS)
        and a.result in (evidence.SENT, evidence.DONE)
    ]
    host = fenced.name
    for attempt in reversed(sent):
        spec = fencing.spec_at(fenced, attempt.position, attempt.driver)
        if spec is None:
            continue
        ctx.update_details(
            f"A power off of '{host}' by {attempt.driver} was sent by an earlier attempt: "
            "reading its state back first",
            0.1,
        )
        if ctx.effects.fencing.read_back(fencing.power_driver(spec), host, attempt.position):
            ctx.update_details(f"Host '{host}' reads off ({spec.describe()})", 1.0)
            ctx.store.host_fenced = True
            return True
        return False
    return False


def _power_off(
    ctx: TaskContext, fencing: HostFencing, host: str, position: int, spec: DriverSpec
) -> str | None:
    """Power off through one driver and confirm; None once Off, else why not."""
    name = spec.describe()
    ctx.update_details(f"Powering off host '{host}' via {name}", 0.2)
    try:
        driver = fencing.power_driver(spec)
    # The reasons go next to the entry's name: its error says why alone (not the name again).
    except (FenceError, ValueError) as exc:  # its library is missing, a key is unset
        ctx.update_details(f"No driver for {name}: {why_of(exc)}", 0.3)
        return f"no driver: {why_of(exc)}"
    try:
        ctx.effects.fencing.power_off(driver, host, position)
    except FenceError as exc:
        ctx.update_details(f"Power off of '{host}' via {name} failed: {exc.why}", 0.3)
        return f"power off: {exc.why}"
    ctx.update_details(f"Power off of '{host}' sent via {name}: confirming", 0.5)
    off = ctx.effects.fencing.confirm_off(
        driver,
        host,
        position,
        fencing.confirm_interval,
        fencing.confirm_timeout,
        ctx.run.sleep,
    )
    if off:
        ctx.update_details(f"Host '{host}' is powered off ({name})", 1.0)
        return None
    ctx.update_details(
        f"Host '{host}' did not read off within {fencing.confirm_timeout:g} s ({name})", 0.6
    )
    return f"not off within {fencing.confirm_timeout:g} s"


def _kdump(
    ctx: TaskContext,
    fencing: HostFencing,
    host: str,
    position: int,
    spec: DriverSpec,
    messages: CrashMessages,
) -> str | None:
    """The host's crash messages as the entry wants them, waiting up to its ``wait`` (not
    at all when they are a hint only: that would only delay the power off); None once they
    prove the crash."""
    wait = float(spec.options.get("wait", 0) or 0) if fencing.kdump_proves else 0.0
    address = spec.address or host
    ctx.update_details(f"Looking for kdump messages from '{address}' (up to {wait:g} s)", 0.2)
    started_at = ctx.run.clock.now()
    started = ctx.run.clock.monotonic()
    found = messages.look(spec)
    while found.crashed_at is None and ctx.run.clock.monotonic() - started < wait:
        ctx.run.sleep(min(fencing.confirm_interval, wait))
        found = messages.look(spec)
    seconds = ctx.run.clock.monotonic() - started
    if found.proves:
        result, why = evidence.CRASHED, None
    elif found.hints:
        result, why = evidence.HINT, "a hint only ([fencing] kdump_trust = hint)"
    else:
        result, why = evidence.NO_MESSAGE, "no kdump message"
    message = found.describe() + ("" if why is None else f" (waited {seconds:.1f} s): {why}")
    ctx.effects.fencing.record_fence(
        host,
        position,
        spec.describe(),
        evidence.KDUMP,
        result,
        message,
        started_at,
        seconds,
        KDUMP,
    )
    if why is not None:
        ctx.update_details(f"Host '{host}' not proven crashed: {message}", 0.3)
        return why
    ctx.update_details(f"Host '{host}' crashed: {message}", 1.0)
    return None


def _hold(ctx: TaskContext, reason: str, what: str) -> NoReturn:
    """Hold the notification for an operator, the task's last message in the same
    transaction; the run ends (Held)."""
    LOG.warning(
        "Notification %s: %s: held (%s); release it once the host is known dead, or cancel it.",
        ctx.run.notification_uuid,
        what,
        reason,
    )
    ctx.progress.update_with(
        f"Held for an operator: {reason}",
        1.0,
        lambda note: ctx.effects.fencing.hold(reason, note),
        state=states.FAILURE,
    )
    raise Held(reason[: holds.MAX_REASON])


def power_on_after(run: RunContext, fenced: FencedHost) -> None:
    """[fencing] power_on_after_recovery: power the host on again, through the driver whose
    power off was confirmed; once per notification. A failure is recorded and logged: the
    recovery itself succeeded."""
    fencing = run.fencing
    if fencing is None or not fencing.power_on_after_recovery:
        return
    attempts = run.effects.fencing.fence_attempts()
    if any(a.action == evidence.ON for a in attempts):
        return
    proof = next(
        (a for a in attempts if (a.action, a.result) == (evidence.STATUS, evidence.POWER_OFF)),
        None,
    )
    if proof is None:
        return  # proven by kdump, a lease or an operator: nothing of ours powered it off
    host = fenced.name
    spec = fencing.spec_at(fenced, proof.position, proof.driver)
    if spec is None:
        LOG.warning("Host %s: its fencing driver changed; not powered on again", host)
        return
    try:
        run.effects.fencing.power_on(fencing.power_driver(spec), host, proof.position)
    except FenceError as exc:
        LOG.error("Host %s: power on after recovery via %s failed: %s", host, proof.driver, exc.why)
        return
    LOG.info("Host %s powered on again via %s", host, proof.driver)
