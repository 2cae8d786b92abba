"""The Nova simulator calibrated against the real Nova: each scenario is played against both,
through masakari's own NovaClient, and their normalised records must be equal (one comparison
per scenario; a unified diff of the two records on failure). tests/openstack/fidelity.py has
the two worlds and the normalisation: ids, timestamps and request ids are named away, the
destination an evacuation picked is "another compute".

The simulator's rules checked here are those masakari relies on: services (list, find,
disable, enable, force down), server actions (lock, stop, start, reset-state) and their 409s,
evacuations (refused while the source counts up, of active, stopped, error and locked servers,
with no valid host), the checks Nova makes first (a service id must be a uuid, an
evacuation's target before the server's state and its source), a service update to a dead
compute Nova still counts up, live migrations (to a named host and to the scheduler's
choice; refused by the API with 409 or 400, or accepted and refused by the conductor: own
host, disabled or just-killed host, no room, source down) with their migration rows and
Placement's usage, and the instance actions Nova records for all of these, with their
events.

No scenario is expected to differ. What the records cannot show: the moment between an
evacuation's destination clearing the task and the server's host changing (the simulator's
host_move_lag reproduces it; docs/real-openstack.md).

Run: MASAKARI_REAL_OPENSTACK=STATE pytest -n 0 tests/openstack/test_fidelity.py (about 5
minutes on a cloud of tools/openstack.sh up).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.openstack.fidelity import RealWorld, Recorder, SimWorld, World, compare, server_view
from tests.support.openstack.cloud import Cloud, wait_for

REASON = "Masakari detected host failed."
COMPUTE_HOSTS = ("compute-1", "compute-2", "compute-3")
Scenario = Callable[[World], Recorder]


@pytest.fixture
def sim() -> Iterator[SimWorld]:
    with SimWorld() as world:
        yield world


def play(scenario: Scenario, cloud: Cloud, sim: SimWorld) -> None:
    compare(scenario(RealWorld(cloud)), scenario(sim))


# --- 1. compute services -----------------------------------------------------------------


def services(world: World) -> Recorder:
    rec = Recorder(world)
    nova = world.nova
    rec.note("list", sorted(nova.list_compute_services(), key=lambda s: s.host))
    rec.call("find compute-1", lambda: nova.find_compute_services("compute-1"))
    rec.call("find no-such-host", lambda: nova.find_compute_services("no-such-host"))
    rec.call("get no-such-host", lambda: nova.get_compute_service("no-such-host"))
    sid = rec.name(nova.get_compute_service("compute-1").id, "service compute-1")
    rec.call("disable with a reason", lambda: nova.disable_service(sid, REASON))
    rec.service("disabled", "compute-1")
    rec.call("disable again, no reason", lambda: nova.disable_service(sid))
    rec.service("disabled again", "compute-1")
    rec.call("enable", lambda: nova.enable_service(sid))
    rec.service("enabled", "compute-1")
    rec.call("enable again", lambda: nova.enable_service(sid))
    rec.service("enabled again", "compute-1")
    rec.call("force down", lambda: nova.force_down_service(sid))
    rec.service("forced down", "compute-1")
    rec.call("force down again", lambda: nova.force_down_service(sid))
    rec.call("unset forced down", lambda: nova.force_down_service(sid, False))
    rec.service("no longer forced down", "compute-1")
    unknown = "00000000-0000-4000-8000-000000000000"
    rec.call("disable an unknown service", lambda: nova.disable_service(unknown, REASON))
    rec.note("list at the end", sorted(nova.list_compute_services(), key=lambda s: s.host))
    return rec


def test_services(cloud: Cloud, sim: SimWorld) -> None:
    play(services, cloud, sim)


# --- 2. server actions -------------------------------------------------------------------


def server_actions(world: World) -> Recorder:
    rec = Recorder(world)
    nova = world.nova
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    rec.server("booted", vm)
    rec.call("lock", lambda: nova.lock_server(vm))
    rec.server("locked", vm)
    rec.call("lock a locked server", lambda: nova.lock_server(vm))
    rec.server("locked twice", vm)
    rec.call("stop the locked server", lambda: nova.stop_server(vm))
    rec.note("stopped", world.settle(vm))
    rec.call("stop a stopped server", lambda: nova.stop_server(vm))
    rec.call("start", lambda: nova.start_server(vm))
    rec.note("started", world.settle(vm))
    rec.call("start an active server", lambda: nova.start_server(vm))
    rec.call("unlock", lambda: nova.unlock_server(vm))
    rec.call("unlock an unlocked server", lambda: nova.unlock_server(vm))
    rec.server("unlocked", vm)
    rec.call("reset-state to error", lambda: nova.reset_state(vm, "error"))
    rec.server("reset to error", vm)
    rec.call("stop a server in error", lambda: nova.stop_server(vm))
    rec.note("stopped from error", world.settle(vm))
    rec.call("reset-state to active", lambda: nova.reset_state(vm, "active"))
    rec.server("reset to active", vm)
    rec.call("get an unknown server", lambda: nova.get_server("no-such-server"))
    rec.actions("instance actions, newest first", vm)
    return rec


def test_server_actions(cloud: Cloud, sim: SimWorld) -> None:
    play(server_actions, cloud, sim)


# --- 3. evacuation refused ---------------------------------------------------------------


def evacuation_refused(world: World) -> Recorder:
    rec = Recorder(world)
    nova = world.nova
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    rec.call("evacuate while compute-1 runs", lambda: nova.evacuate(vm))
    world.kill("compute-1")
    rec.call("evacuate once compute-1 died, still counted up", lambda: nova.evacuate(vm))
    rec.server("the server", vm)
    world.wait_down("compute-1")
    rec.call("evacuate to its own host, compute-1 down", lambda: nova.evacuate(vm, "compute-1"))
    rec.call("evacuate to an unknown host, compute-1 down", lambda: nova.evacuate(vm, "nowhere"))
    rec.server("the server after", vm)
    rec.actions("instance actions, newest first", vm)
    return rec


def test_evacuation_refused_while_the_source_counts_up(cloud: Cloud, sim: SimWorld) -> None:
    play(evacuation_refused, cloud, sim)


# --- checks Nova makes first --------------------------------------------------------------


def checks_before_state(world: World) -> Recorder:
    """What Nova checks before anything else: a service id must be a uuid (400), and an
    evacuation's target host is checked before the server's state and its source's
    liveness."""
    rec = Recorder(world)
    nova = world.nova
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    rec.call("disable a service id that is no uuid", lambda: nova.disable_service("compute-1"))
    rec.call("evacuate to its own host, compute-1 up", lambda: nova.evacuate(vm, "compute-1"))
    rec.call("evacuate to an unknown host, compute-1 up", lambda: nova.evacuate(vm, "nowhere"))
    return rec


def test_checks_before_state(cloud: Cloud, sim: SimWorld) -> None:
    play(checks_before_state, cloud, sim)


# --- 4. evacuations ----------------------------------------------------------------------


def _evacuated(world: World, with_events: bool) -> Recorder:
    """Four servers of a dead host evacuated: active, stopped, in error, locked."""
    rec = Recorder(world)
    nova = world.nova
    kinds = ("active", "stopped", "error", "locked")
    vms = {kind: rec.name(world.boot(f"vm-{kind}", "compute-1"), f"vm-{kind}") for kind in kinds}
    nova.stop_server(vms["stopped"])
    world.settle(vms["stopped"])
    nova.reset_state(vms["error"], "error")
    nova.lock_server(vms["locked"])
    world.kill("compute-1")
    world.wait_down("compute-1")
    rec.service("compute-1 counted down", "compute-1")
    for kind, vm in vms.items():
        rec.call(f"evacuate vm-{kind}", functools.partial(nova.evacuate, vm))
    for kind, vm in vms.items():
        rec.note(f"vm-{kind} evacuated", _settled_view(world, vm, "compute-1"))
        rec.actions(f"vm-{kind} instance actions, newest first", vm)
        rec.migrations(f"vm-{kind} migrations", vm, None, "compute-1")
        if with_events:
            rec.events(f"vm-{kind} instance actions and their events", vm)
    return rec


def _settled_view(world: World, vm: str, source: str) -> Any:
    return server_view(world.settle(vm, source), source)


def evacuations(world: World) -> Recorder:
    return _evacuated(world, with_events=False)


def evacuation_events(world: World) -> Recorder:
    return _evacuated(world, with_events=True)


def test_evacuations(cloud: Cloud, sim: SimWorld) -> None:
    play(evacuations, cloud, sim)


def test_evacuation_events(cloud: Cloud, sim: SimWorld) -> None:
    play(evacuation_events, cloud, sim)


# --- 5. no valid host --------------------------------------------------------------------


def no_valid_host(world: World) -> Recorder:
    """compute-2 and compute-3 full (two m1.large each: 8 of 8 VCPU), compute-1 dead."""
    rec = Recorder(world)
    nova = world.nova
    for host in ("compute-2", "compute-3"):
        for n in (1, 2):
            world.boot(f"filler-{host}-{n}", host, "m1.large")
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    world.kill("compute-1")
    world.wait_down("compute-1")
    rec.call("evacuate with no room elsewhere", lambda: nova.evacuate(vm))
    rec.note("the server after", _settled_view(world, vm, "compute-1"))
    rec.migrations("its migrations", vm, None)
    rec.actions("instance actions, newest first", vm)
    rec.events("instance actions and their events", vm)
    return rec


def test_evacuation_with_no_valid_host(cloud: Cloud, sim: SimWorld) -> None:
    play(no_valid_host, cloud, sim)


# --- 6. a slow disable -------------------------------------------------------------------


def slow_disable(world: World) -> Recorder:
    """The disable of a host whose nova-compute just died, still counted up: Nova saves the
    change, then waits for the dead compute's RPC answer (rpc_response_timeout), then answers.
    Observed: a GET meanwhile shows it disabled; the PUT answers 200 only after the wait."""
    rec = Recorder(world)
    nova = world.nova
    sid = rec.name(nova.get_compute_service("compute-1").id, "service compute-1")
    world.kill("compute-1")
    answered = threading.Event()
    outcome: dict[str, Any] = {}

    def disable() -> None:
        started = time.monotonic()
        try:
            nova.disable_service(sid, REASON)
            outcome["answer"] = "ok"
        except Exception as exc:  # the error is the observation
            outcome["answer"] = f"{type(exc).__name__}: {exc}"
        outcome["seconds"] = time.monotonic() - started
        answered.set()

    thread = threading.Thread(target=disable, daemon=True)
    thread.start()
    order: list[str] = []

    def seen_disabled() -> bool:
        if nova.get_compute_service("compute-1").status != "disabled":
            return False
        order.append("GET shows it disabled" + ("" if answered.is_set() else " (PUT pending)"))
        return True

    wait_for("compute-1 disabled", seen_disabled, 3 * world.rpc_response_timeout, interval=0.1)
    thread.join(3 * world.rpc_response_timeout)
    order.append("PUT answered")
    rec.note("order of effects", order)
    rec.note("PUT answer", outcome.get("answer"))
    # The wait is the behaviour here: at least half the configured timeout (generous).
    rec.note(
        "PUT waited for the RPC to the dead compute",
        outcome.get("seconds", 0.0) >= world.rpc_response_timeout / 2,
    )
    # Read once both worlds count it down: how long the wait took is not what is compared.
    world.wait_down("compute-1")
    rec.service("compute-1 after, counted down", "compute-1")
    return rec


def test_disable_of_a_dead_host_still_counted_up(cloud: Cloud, sim: SimWorld) -> None:
    play(slow_disable, cloud, sim)


# --- 7. live migrations ------------------------------------------------------------------


def live_migrations(world: World) -> Recorder:
    """An active server live-migrated to a named host, then to the scheduler's choice (the
    one enabled host left); requests sent while the first runs are refused."""
    rec = Recorder(world)
    nova = world.nova
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    rec.call("live-migrate to compute-2", lambda: nova.live_migrate(vm, "compute-2"))
    rec.call("live-migrate again at once", lambda: nova.live_migrate(vm))
    rec.call("stop while it migrates", lambda: nova.stop_server(vm))
    rec.note("migrated to compute-2", world.migrated(vm))
    rec.migrations("its migrations", vm)
    rec.usage("VCPUs in use", COMPUTE_HOSTS)
    nova.disable_service(nova.get_compute_service("compute-3").id, REASON)
    rec.call("live-migrate, the scheduler's choice", lambda: nova.live_migrate(vm))
    rec.note("migrated back to compute-1", world.migrated(vm))
    rec.migrations("its migrations after", vm)
    rec.usage("VCPUs in use after", COMPUTE_HOSTS)
    rec.actions("instance actions, newest first", vm)
    rec.events("instance actions and their events", vm)
    return rec


def test_live_migrations(cloud: Cloud, sim: SimWorld) -> None:
    play(live_migrations, cloud, sim)


def live_migration_refused(world: World) -> Recorder:
    """What the API refuses (409 for the server's state, 400 for an unknown host) and what
    it accepts (202) for the conductor to refuse: the server's own host, a disabled one."""
    rec = Recorder(world)
    nova = world.nova
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    nova.stop_server(vm)
    world.settle(vm)
    rec.call("live-migrate a stopped server", lambda: nova.live_migrate(vm))
    nova.start_server(vm)
    world.settle(vm)
    nova.reset_state(vm, "error")
    rec.call("live-migrate a server in error", lambda: nova.live_migrate(vm))
    nova.reset_state(vm, "active")
    rec.call("live-migrate to an unknown host", lambda: nova.live_migrate(vm, "nowhere"))
    rec.call("live-migrate to its own host", lambda: nova.live_migrate(vm, "compute-1"))
    rec.note("after the own host", world.migrated(vm))
    nova.disable_service(nova.get_compute_service("compute-2").id, REASON)
    rec.call("live-migrate to disabled compute-2", lambda: nova.live_migrate(vm, "compute-2"))
    rec.note("after the disabled host", world.migrated(vm))
    rec.migrations("its migrations", vm)
    rec.actions("instance actions, newest first", vm)
    rec.events("instance actions and their events", vm)
    return rec


@pytest.mark.extended
def test_live_migration_refused(cloud: Cloud, sim: SimWorld) -> None:
    play(live_migration_refused, cloud, sim)


def live_migration_no_room(world: World) -> Recorder:
    """compute-2 and compute-3 full: the API accepts, the scheduler finds no host, the
    migration ends in error and the server stays active on compute-1 with its allocation."""
    rec = Recorder(world)
    nova = world.nova
    for host in ("compute-2", "compute-3"):
        for n in (1, 2):
            world.boot(f"filler-{host}-{n}", host, "m1.large")
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    rec.call("live-migrate with no room elsewhere", lambda: nova.live_migrate(vm))
    rec.note("after", world.migrated(vm))
    rec.call("live-migrate to full compute-2", lambda: nova.live_migrate(vm, "compute-2"))
    rec.note("after the full host", world.migrated(vm))
    rec.migrations("its migrations", vm)
    rec.usage("VCPUs in use", COMPUTE_HOSTS)
    rec.events("instance actions and their events", vm)
    return rec


@pytest.mark.extended
def test_live_migration_with_no_room(cloud: Cloud, sim: SimWorld) -> None:
    play(live_migration_no_room, cloud, sim)


def live_migration_source_down(world: World) -> Recorder:
    """The source's nova-compute counted down: accepted, then the conductor refuses."""
    rec = Recorder(world)
    nova = world.nova
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    world.kill("compute-1")
    world.wait_down("compute-1")
    rec.call("live-migrate from a dead host", lambda: nova.live_migrate(vm))
    rec.note("after", world.migrated(vm))
    rec.migrations("its migrations", vm)
    rec.events("instance actions and their events", vm)
    return rec


@pytest.mark.extended
def test_live_migration_from_a_host_counted_down(cloud: Cloud, sim: SimWorld) -> None:
    play(live_migration_source_down, cloud, sim)


def live_migration_to_a_dead_host(world: World) -> Recorder:
    """compute-2's nova-compute just killed, still counted up: accepted, the server migrating
    and the row accepted while the conductor waits for compute-2's answer
    (rpc_response_timeout), then the migration in error and the server where it was."""
    rec = Recorder(world)
    nova = world.nova
    vm = rec.name(world.boot("vm", "compute-1"), "vm")
    world.kill("compute-2")
    rec.call("live-migrate to compute-2, dead", lambda: nova.live_migrate(vm, "compute-2"))
    rec.server("while the conductor waits", vm)
    rec.migrations("its migration meanwhile", vm)
    rec.note("after", world.migrated(vm))
    rec.migrations("its migration after", vm)
    rec.events("instance actions and their events", vm)
    return rec


@pytest.mark.extended
def test_live_migration_to_a_host_that_just_died(cloud: Cloud, sim: SimWorld) -> None:
    play(live_migration_to_a_dead_host, cloud, sim)
