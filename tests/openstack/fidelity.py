"""Worlds for the fidelity test: the real Nova and the project's simulator behind one adapter,
both reached through masakari's own NovaClient, and the normalised observations the scenarios
compare (tests/openstack/test_fidelity.py).

A world does the set-up steps a scenario needs in its own way (booting a server on a host is
a POST /servers in the real cloud, ``add_server`` in the simulator; a host's death is a kill -9
of its nova-compute there, ``power_off`` here), and everything a scenario observes goes through
``world.nova``, masakari's client, so that what is compared is what masakari sees: its typed
servers and services, its exceptions with their status and ``str()``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from keystoneauth1 import adapter, session
from keystoneauth1.identity import v3

from masakari.compute.nova import NovaClient
from masakari.compute.placement import PlacementClient
from masakari.compute.retry import Policy
from masakari.compute.servers import Migration, Server, Service
from tests.fakes.nova import FakeClock, NovaSimulator
from tests.fakes.placement import Flavor
from tests.support.openstack import bootstrap
from tests.support.openstack.cloud import Cloud, wait_for
from tests.support.openstack.config import MEMORY_MB, REGION, VCPUS

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Each answer as Nova gave it: a client retry would hide the first one.
FAST = Policy(connect_retries=0, retries=0)
COMPUTES = ("compute-1", "compute-2", "compute-3")
# The simulator's heartbeat window, as the real cloud's (tests/support/openstack/config.py).
SERVICE_DOWN_TIME = 10.0
# The simulator's rpc_response_timeout for a service update to a dead compute: short, since
# what is compared is the order of effects and that the answer waited.
SIM_RPC_RESPONSE_TIMEOUT = 3.0
# How long a live migration takes in the simulator (its fake clock, moved by ``migrated``):
# long enough that a request sent right after the first finds it in progress, as in the real
# Nova, whose fake driver takes 2-4 s.
SIM_LIVE_MIGRATION_DELAY = 4.0
# Steps whose set-up differs by nature: a server the simulator is given was never created
# through its API, so it has no "create" action.
SETUP_ACTIONS = {"create"}


class World(Protocol):
    """What a scenario needs from a Nova: masakari's client and the set-up steps."""

    name: str
    nova: NovaClient
    rpc_response_timeout: float

    def boot(self, name: str, host: str, flavor: str = "m1.small") -> str:
        """An ACTIVE server on ``host``; its id."""

    def settle(self, server_id: str, source: str | None = None, timeout: float = 120) -> Server:
        """The server once Nova no longer works on it (task_state None); with ``source``,
        once an evacuation from there ended: moved, or in error."""

    def migrated(self, server_id: str, timeout: float = 120) -> Server:
        """The server once its newest live migration is over (completed, error, failed) and
        its task cleared."""

    def kill(self, host: str) -> None:
        """``host``'s nova-compute dies; Nova still counts it up for a while."""

    def wait_down(self, host: str) -> None:
        """Until Nova counts ``host``'s nova-compute down."""

    def events(self, server_id: str) -> list[dict[str, Any]] | str:
        """The server's instance actions, oldest first, with their events' results (read
        directly from Nova's API at 2.84: masakari's client does not read events); a string
        when the API does not show them."""


def _settle(nova: NovaClient, server_id: str, source: str | None, timeout: float) -> Server:
    """The real Nova clears an evacuated server's task_state when the destination has
    rebuilt it, and moves its host a moment later (nova/compute/manager.py
    _do_rebuild_instance_with_claim, rt.finish_evacuation): task_state None alone is not
    the end of an evacuation. Its migration record is marked done after that again (seen
    still ``pre-migrating`` on a loaded machine): with ``source``, it is waited for too."""

    def settled() -> Server | None:
        server = nova.get_server(server_id)
        if server.task_state is not None:
            return None
        if source is not None and server.host == source and server.vm_state != "error":
            return None
        if source is not None:
            newest = nova.list_migrations(server_id, "evacuation")
            if newest and not newest[0].finished:
                return None
        return server

    return wait_for(f"server {server_id} settled", settled, timeout)


def _migrated(nova: NovaClient, server_id: str, timeout: float) -> Server:
    """The real Nova moves the server's host before it marks the migration completed
    (nova/compute/manager.py _post_live_migration): both are waited for."""

    def over() -> Server | None:
        server = nova.get_server(server_id)
        migrations = nova.list_migrations(server_id)
        if server.task_state is not None or not migrations or not migrations[0].finished:
            return None
        return server

    return wait_for(f"server {server_id} migrated", over, timeout)


# --- the real Nova -----------------------------------------------------------------------


class RealWorld:
    name = "real Nova"

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        creds = cloud.masakari_credentials()
        auth = v3.Password(
            auth_url=creds["auth_url"],
            username=creds["username"],
            password=creds["password"],
            project_name=creds["project_name"],
            user_domain_name="Default",
            project_domain_name="Default",
        )
        # By name: the catalog's second compute entry, nova-drill, is a drill's proxy that
        # nothing serves here, and keystoneauth picks either entry of a type.
        self.nova = NovaClient(
            session.Session(auth=auth, timeout=120),
            service_name="nova",
            region_name=REGION,
            policy=FAST,
            timeout=120,
        )
        self.rpc_response_timeout = float(cloud.layout.rpc_response_timeout)

    def boot(self, name: str, host: str, flavor: str = "m1.small") -> str:
        return self.cloud.boot(name, host, flavor)

    def settle(self, server_id: str, source: str | None = None, timeout: float = 120) -> Server:
        return _settle(self.nova, server_id, source, timeout)

    def migrated(self, server_id: str, timeout: float = 120) -> Server:
        return _migrated(self.nova, server_id, timeout)

    def kill(self, host: str) -> None:
        self.cloud.kill_compute(host)

    def wait_down(self, host: str) -> None:
        self.cloud.wait_computes([host], "down", timeout=60)

    def events(self, server_id: str) -> list[dict[str, Any]] | str:
        return [_action_events(a) for a in self.cloud.actions(server_id)]


# --- the simulator -----------------------------------------------------------------------


class SimWorld:
    """The simulator on a socket (as masakari reaches a Nova), on a fake clock; each compute
    sized as the real cloud's."""

    name = "simulator"

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.sim = NovaSimulator(
            clock=self.clock,
            service_down_time=SERVICE_DOWN_TIME,
            live_migration_delay=SIM_LIVE_MIGRATION_DELAY,
        )
        self.rpc_response_timeout = SIM_RPC_RESPONSE_TIMEOUT
        self.sim.rpc_response_timeout = SIM_RPC_RESPONSE_TIMEOUT  # a slow disable
        for host in COMPUTES:
            self.sim.add_service(host, vcpus=VCPUS, memory_mb=MEMORY_MB)
        self.nova = NovaClient(self.sim.session(timeout=120), policy=FAST, timeout=120)

    def __enter__(self) -> SimWorld:
        self.sim.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sim.stop()

    def boot(self, name: str, host: str, flavor: str = "m1.small") -> str:
        vcpus, ram = bootstrap.FLAVORS[flavor]
        return self.sim.add_server(
            host=host,
            name=name,
            flavor=Flavor(name=flavor, vcpus=vcpus, ram=ram, disk=0),
            image="fake-raw",
        )

    def settle(self, server_id: str, source: str | None = None, timeout: float = 120) -> Server:
        # Its actions take no time (evacuate_delay 0, its clock stands still): what it shows
        # now is where it ends, and waiting for anything else would only time out.
        return self.nova.get_server(server_id)

    def migrated(self, server_id: str, timeout: float = 120) -> Server:
        self.clock.advance(SIM_LIVE_MIGRATION_DELAY + 1)
        return _migrated(self.nova, server_id, timeout)

    def kill(self, host: str) -> None:
        self.sim.power_off(host)

    def wait_down(self, host: str) -> None:
        self.clock.advance(SERVICE_DOWN_TIME + 1)
        assert self.sim.service(host)["state"] == "down"

    def events(self, server_id: str) -> list[dict[str, Any]] | str:
        api = adapter.Adapter(
            self.sim.session(),
            service_type="compute",
            interface="public",
            additional_headers={"OpenStack-API-Version": "compute 2.84"},
        )
        listed = api.get(f"/servers/{server_id}/os-instance-actions").json()["instanceActions"]
        found: list[dict[str, Any]] = []
        for action in reversed(listed):
            answer = api.get(
                f"/servers/{server_id}/os-instance-actions/{action['request_id']}",
                raise_exc=False,
            )
            if answer.status_code != 200:
                return f"GET of an instance action answered {answer.status_code}"
            found.append(_action_events(answer.json()["instanceAction"]))
        return found


# --- observations ------------------------------------------------------------------------


def _action_events(action: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": action["action"],
        "message": action.get("message"),
        "events": sorted((e["event"], e["result"]) for e in action.get("events") or []),
    }


class Recorder:
    """A scenario's observations in order, with the ids of its servers and services named,
    so that two worlds' records compare equal when they behaved alike."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.names: dict[str, str] = {}
        self.steps: list[tuple[str, Any]] = []

    def name(self, identifier: str, label: str) -> str:
        self.names[identifier] = label
        return identifier

    def note(self, step: str, observed: Any) -> None:
        self.steps.append((step, self.normalise(observed)))

    def call(self, step: str, call: Callable[[], Any]) -> Any:
        """Run one client call; record its answer or its error."""
        try:
            answer = call()
        except Exception as exc:  # the error is the observation
            self.note(step, error(exc))
            return None
        self.note(step, "ok" if answer is None else answer)
        return answer

    def server(self, step: str, server_id: str, source: str | None = None) -> None:
        self.note(step, server_view(self.world.nova.get_server(server_id), source))

    def service(self, step: str, host: str) -> None:
        self.note(step, service_view(self.world.nova.get_compute_service(host)))

    def actions(self, step: str, server_id: str) -> None:
        """The instance actions masakari lists (newest first, as Nova answers them)."""
        listed = self.world.nova.list_instance_actions(server_id)
        self.note(step, [a.action for a in listed if a.action not in SETUP_ACTIONS])

    def migrations(
        self,
        step: str,
        server_id: str,
        kind: str | None = "live-migration",
        source: str | None = None,
    ) -> None:
        """The server's migrations of ``kind`` (None: all) as masakari lists them, newest
        first; with ``source``, a destination the scheduler picked is "another compute"."""
        listed = self.world.nova.list_migrations(server_id, kind)
        self.note(step, [migration_view(m, source) for m in listed])

    def usage(self, step: str, hosts: tuple[str, ...]) -> None:
        """The VCPUs Placement counts in use on each host, read as masakari reads them."""
        placement = PlacementClient(self.world.nova.session, region_name=REGION)
        used = {}
        for host in hosts:
            capacity = placement.host_capacity(host)
            used[host] = None if capacity is None else capacity.used.get("VCPU", 0)
        self.note(step, used)

    def events(self, step: str, server_id: str) -> None:
        found = self.world.events(server_id)
        if not isinstance(found, str):
            found = [a for a in found if a["action"] not in SETUP_ACTIONS]
        self.note(step, found)

    def normalise(self, value: Any) -> Any:
        if isinstance(value, Server):
            return server_view(value)
        if isinstance(value, Service):
            return service_view(value)
        if isinstance(value, list | tuple):
            return [self.normalise(v) for v in value]
        if isinstance(value, dict):
            return {k: self.normalise(v) for k, v in value.items()}
        if isinstance(value, str):
            return self.text(value)
        return value

    def text(self, text: str) -> str:
        for identifier, label in self.names.items():
            text = text.replace(identifier, f"<{label}>")
        text = re.sub(r"\(Request-ID: [^)]*\)", "(Request-ID: <request>)", text)
        return UUID.sub("<uuid>", text)


def error(exc: BaseException) -> dict[str, Any]:
    """An error as masakari sees it: its class, HTTP status, str() (what the engine stores
    and the API shows) and the Nova text behind it."""
    return {
        "error": type(exc).__name__,
        "status": getattr(exc, "status", None),
        "str": str(exc),
        "nova said": getattr(exc, "detail", None),
    }


def server_view(server: Server, source: str | None = None) -> dict[str, Any]:
    """A server's state; its host as ``source`` or "another compute" once it moved (which
    other one is the scheduler's choice, not compared)."""
    host = server.host
    if source is not None and host not in (None, source):
        host = "<another compute>"
    return {
        "status": server.status,
        "vm_state": server.vm_state,
        "task_state": server.task_state,
        "power_state": server.power_state,
        "locked": server.locked,
        "host": host,
    }


def migration_view(migration: Migration, source: str | None = None) -> dict[str, Any]:
    dest = migration.dest_compute
    if source is not None and dest not in (None, source):
        dest = "<another compute>"
    return {
        "status": migration.status,
        "outcome": migration.outcome,
        "type": migration.migration_type,
        "source": migration.source_compute,
        "dest": dest,
    }


def service_view(service: Service) -> dict[str, Any]:
    return {
        "host": service.host,
        "status": service.status,
        "state": service.state,
        "forced_down": service.forced_down,
        "disabled_reason": service.disabled_reason,
    }


def compare(real: Recorder, simulated: Recorder) -> None:
    """One comparison: the two records equal, else a unified diff of them, step by step."""
    if real.steps == simulated.steps:
        return

    def lines(record: Recorder) -> list[str]:
        out = []
        for step, observed in record.steps:
            out.append(f"{step}:")
            out.extend("    " + line for line in json.dumps(observed, indent=2).splitlines())
        return out

    diff = difflib.unified_diff(
        lines(real), lines(simulated), "real Nova", "simulator", n=4, lineterm=""
    )
    raise AssertionError("the simulator differs from the real Nova:\n" + "\n".join(diff))
