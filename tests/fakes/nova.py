"""A Keystone v3 and Nova v2.1 simulator on loopback, for functional tests and benchmarks; not
started, it answers its own sessions in process, without a socket (tests/fakes/nova_wire.py),
for tests/unit.

Usage::

    with NovaSimulator(clock=FakeClock()) as sim:
        sim.add_service("compute-1")
        sim.add_service("compute-2")
        sim.add_server(host="compute-1", metadata={"HA_Enabled": "True"})
        nova = sim.client()                  # a NovaClient with a keystone session
        sim.power_off("compute-1")
        sim.clock.advance(61)                # past service_down_time: state "down"
        sim.tie_power("compute-2", bmc)      # a fake BMC's power off powers the host off
        sim.fail(500, method="POST", action="evacuate", times=1)
        sim.rpc_response_timeout = 60        # a disable of a dead compute still up: answered late
        sim.nova_calls()                     # what the client sent, golden-shaped

URL space: ``/identity`` (Keystone: versions, ``/v3``, ``/v3/auth/tokens``) and
``/compute/v2.1`` (Nova). The Nova rules are those of the conformance fake
(/work/shared/conformance/FORMAT.md) plus a heartbeat per service, evacuations
that take time, slow answers and a clock that tests can move, and what a real Nova 34 was
seen to do beyond them: a service update waiting for its RPC to a dead compute Nova still
counts up, and an evacuation with no valid host putting the instance in error with a failed
``rebuild_server`` event. Live migrations and the migration rows: tests/fakes/nova_migrations.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import itertools
import json
import random
import socket
import struct
import sys
import threading
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from masakari.engine.ports import Clock
from tests.fakes import nova_wire
from tests.fakes.placement import PREFIX as PLACEMENT_PREFIX
from tests.fakes.placement import Flavor, Placement
from tests.support.clock import FakeClock as FakeClock  # re-exported

if TYPE_CHECKING:
    from masakari.compute.nova import NovaClient

ADMIN_TOKEN = "admin-token"
MEMBER_TOKEN = "member-token"
# Hex, like Keystone's ids: the API checks /v1/{project_id} against [osapi_v1]/project_id_regex.
ADMIN_PROJECT_ID = uuid.uuid5(uuid.NAMESPACE_URL, "nova-sim:project:admin").hex
MEMBER_PROJECT_ID = uuid.uuid5(uuid.NAMESPACE_URL, "nova-sim:project:demo").hex
SERVICE_PROJECT_ID = uuid.uuid5(uuid.NAMESPACE_URL, "nova-sim:project:service").hex

IDENTITY_PREFIX = "/identity"
COMPUTE_PREFIX = "/compute/v2.1"
MAX_MICROVERSION = (2, 96)

_POWER = {"active": 1, "stopped": 4, "paused": 3, "suspended": 7, "shelved": 4, "error": 0}
_STATUS = {
    "active": "ACTIVE",
    "stopped": "SHUTOFF",
    "paused": "PAUSED",
    "suspended": "SUSPENDED",
    "resized": "VERIFY_RESIZE",
    "rescued": "RESCUE",
    "shelved": "SHELVED",
    "shelved_offloaded": "SHELVED_OFFLOADED",
    "building": "BUILD",
    "error": "ERROR",
}
# A task in progress that changes the status Nova shows (nova/api/openstack/common.py
# _STATE_MAP), per vm_state; any other task leaves the vm_state's status.
_TASK_STATUS = {
    ("active", "migrating"): "MIGRATING",
    ("paused", "migrating"): "MIGRATING",
    ("active", "rebuilding"): "REBUILD",
    ("stopped", "rebuilding"): "REBUILD",
    ("error", "rebuilding"): "REBUILD",
}
_FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    500: "computeFault",
    501: "notImplemented",
    503: "serviceUnavailable",
}
_DEFAULT_MESSAGES = {
    400: "Bad request.",
    403: "Policy does not allow this action.",
    404: "The resource could not be found.",
    409: "Conflict.",
    500: "Unexpected API Error.",
    503: "Service Unavailable.",
}


# --- clocks -------------------------------------------------------------------------------

# The simulator keeps time on the engine's clock (wall time by default); tests share the one
# fake clock of tests/support/clock.py with it (re-exported here for the older imports).


class PowerSource(Protocol):
    """A fake BMC (tests.fakes.ipmi_bmc.FakeBMC, tests.fakes.redfish_bmc.RedfishBMC)."""

    def on_power_change(self, callback: Callable[[str], None]) -> None: ...


def _epoch(moment: datetime.datetime) -> float:
    """Seconds since 1970 of a naive UTC time, as the engine's clocks answer now()."""
    return moment.replace(tzinfo=datetime.UTC).timestamp()


class EpochClock:
    """The simulator's view of its clock (an engine clock: wall time, or the tests' fake clock
    shared with the code under test): now() in seconds since 1970; advance() moves the fake."""

    def __init__(self, source: Clock) -> None:
        self.source = source

    def now(self) -> float:
        return _epoch(self.source.now())

    def advance(self, seconds: float) -> None:
        self.source.advance(seconds)  # type: ignore[attr-defined]  # the fake clock's


def _iso(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


# --- the model ----------------------------------------------------------------------------


@dataclasses.dataclass
class Service:
    id: str
    host: str
    binary: str = "nova-compute"
    status: str = "enabled"
    disabled_reason: str | None = None
    forced_down: bool = False
    zone: str = "nova"
    hypervisor_hostname: str = ""
    # A running host heartbeats all the time; a powered-off one keeps its last heartbeat.
    alive: bool = True
    last_heartbeat: float = 0.0
    # When an admin last changed the row (disabled, enabled, forced down): Nova's API shows
    # the row's updated_at, which a heartbeat and such a change both move.
    changed_at: float = 0.0


@dataclasses.dataclass
class Server:
    id: str
    name: str
    host: str | None
    vm_state: str = "active"
    task_state: str | None = None
    power_state: int = 1
    locked: bool = False
    metadata: dict[str, str] = dataclasses.field(default_factory=dict)
    tenant_id: str = MEMBER_PROJECT_ID
    user_id: str = "user-demo"
    flavor: Flavor = dataclasses.field(default_factory=Flavor)
    # Booted from this image (its root disk on the host); None: booted from a volume.
    image: str | None = None
    # What Nova recorded of the requests it accepted (GET /servers/{id}/os-instance-actions).
    actions: list[InstanceAction] = dataclasses.field(default_factory=list)
    # Server tags (shown from 2.26): fire drills' canaries carry one.
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ActionEvent:
    """One step of an instance action as Nova records it (nova/compute/utils.py
    EventReporter): the API's ``api_lock`` and ``api_unlock``, the compute's
    ``compute_stop_instance`` and ``compute_start_instance``, and for an evacuation the
    conductor's ``rebuild_server`` and the destination's ``compute_rebuild_instance`` (then
    its ``compute_stop_instance`` for a stopped server). A reset-state records none.
    ``result`` is "Success" or "Error"."""

    event: str
    start: float  # the simulator's clock
    finish: float
    result: str
    traceback: str | None = None
    host: str | None = None

    def view(self, microversion: tuple[int, int], admin: bool) -> dict[str, Any]:
        """As GET /servers/{id}/os-instance-actions/{request_id} shows it: the traceback to
        admins only, the host (to admins) and hostId from 2.62, details from 2.84."""
        out: dict[str, Any] = {
            "event": self.event,
            "start_time": _iso(self.start),
            "finish_time": _iso(self.finish),
            "result": self.result,
        }
        if admin:
            out["traceback"] = self.traceback
            if microversion >= (2, 62):
                out["host"] = self.host or ""
        if microversion >= (2, 62):
            out["hostId"] = ""
        if microversion >= (2, 84):
            out["details"] = "No valid host was found." if self.result == "Error" else None
        return out


@dataclasses.dataclass
class InstanceAction:
    """A request Nova accepted for a server (evacuate, stop, start, lock, unlock), recorded
    when accepted, before it is carried out, as Nova's API does; its events are what the
    conductor and the compute then did."""

    action: str
    request_id: str
    start: float  # the simulator's clock
    user_id: str
    project_id: str
    events: list[ActionEvent] = dataclasses.field(default_factory=list)

    @property
    def message(self) -> str | None:
        """Nova's database sets the action's message to "Error" when one of its events
        finishes with an error (nova/db/main/api.py action_event_finish), else leaves it
        null."""
        return "Error" if any(e.result == "Error" for e in self.events) else None

    @property
    def updated(self) -> float:
        return max([self.start] + [e.finish for e in self.events])

    def view(self, microversion: tuple[int, int]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": self.action,
            "instance_uuid": "",
            "message": self.message,
            "project_id": self.project_id,
            "request_id": self.request_id,
            "start_time": _iso(self.start),
            "user_id": self.user_id,
        }
        if microversion >= (2, 58):
            out["updated_at"] = _iso(self.updated)
        return out


@dataclasses.dataclass
class ServerGroup:
    id: str
    name: str
    policy: str
    members: list[str] = dataclasses.field(default_factory=list)
    project_id: str = MEMBER_PROJECT_ID


@dataclasses.dataclass
class Aggregate:
    id: int
    name: str
    hosts: list[str] = dataclasses.field(default_factory=list)
    availability_zone: str | None = None
    metadata: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Fault:
    """An injected misbehaviour; ``kind`` is status, delay, never_move, ignore_action or
    evacuate_error."""

    kind: str
    method: str | None = None
    path: str | None = None
    action: str | None = None
    server: str | None = None
    status: int = 500
    message: str | None = None
    apply: bool = False
    seconds: float = 0.0
    times: int | None = None
    used: int = 0

    def matches(self, method: str, path: str, action: str | None, server: str | None) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.method and self.method.upper() != method:
            return False
        if self.path and not _path_matches(self.path, path):
            return False
        if self.action and self.action != action:
            return False
        return not (self.server and self.server != server)


@dataclasses.dataclass
class Evacuation:
    """An accepted evacuation: ``due`` is None while it waits for one of Nova's slots."""

    due: float | None
    server: str
    dest: str | None
    duration: float = 0.0
    # The evacuate action Nova recorded when it accepted it: its compute event is added on
    # arrival.
    action: InstanceAction | None = None
    # Its row in /os-migrations, "done" on arrival.
    migration: nova_migrations.MigrationRecord | None = None


@dataclasses.dataclass
class Call:
    seq: int
    time: float
    method: str
    path: str
    query: list[list[str]]
    body: Any
    microversion: str | None
    status: int = 0
    # The Keystone user whose token made the call: tells engines apart in failure drills.
    caller: str | None = None
    # What the flaky mode did to it: "reset", "unavailable" or "late" (None: nothing).
    fault: str | None = None

    def shape(self) -> dict[str, Any]:
        """The call as the conformance goldens record it."""
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "body": self.body,
            "microversion": self.microversion,
            "status": self.status,
        }


class NovaFault(Exception):
    """An error answer: Nova's body is {faultName: {code, message}}."""

    def __init__(self, status: int, message: str | None = None) -> None:
        self.status = status
        self.message = message or _DEFAULT_MESSAGES.get(status, "Injected fault.")
        super().__init__(self.message)


def _path_matches(pattern: str, path: str) -> bool:
    want, got = pattern.strip("/").split("/"), path.strip("/").split("/")
    return len(want) == len(got) and all(
        w == g or (w.startswith("{") and w.endswith("}")) for w, g in zip(want, got, strict=True)
    )


@dataclasses.dataclass
class Request:
    method: str
    path: str  # without the /compute/v2.1 prefix
    parts: list[str]
    query: list[tuple[str, str]]
    body: Any
    microversion: tuple[int, int]
    is_admin: bool
    request_id: str = ""
    user_id: str = ""
    project_id: str = ""
    # Seconds the answer waits after the request took effect (a blocking RPC of Nova's API).
    hold: float = 0.0

    @property
    def params(self) -> dict[str, str]:
        return dict(self.query)

    @property
    def action(self) -> str | None:
        if isinstance(self.body, dict) and len(self.body) == 1:
            return str(next(iter(self.body)))
        return None


# --- the simulator ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Flaky:
    """An unreliable Nova API in front of the simulator (``NovaSimulator.flaky``): each Nova
    request is, with these probabilities, reset before the simulator acts, answered 503 by
    a balancer before it acts, or acted on and answered ``late_seconds`` late."""

    reset: float = 0.0
    unavailable: float = 0.0
    late: float = 0.0
    late_seconds: float = 4.0

    def roll(self, rng: random.Random) -> str | None:
        r = rng.random()
        for kind, p in (("reset", self.reset), ("unavailable", self.unavailable)):
            if r < p:
                return kind
            r -= p
        return "late" if r < self.late else None


BALANCER_503 = (
    b"<html><body><h1>503 Service Unavailable</h1>\n"
    b"No server is available to handle this request.\n</body></html>\n"
)


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset, as a proxy that drops a connection does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass


IDLE_TIMEOUT = 2.0


class _Server(ThreadingHTTPServer):
    # A listen backlog like a real API server's: the standard library's 5 refuses
    # connections when a rack's recoveries call at once.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], handler: Any, sim: NovaSimulator) -> None:
        self.sim = sim
        if sim.backlog is not None:
            self.request_queue_size = sim.backlog
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a late answer, a reset) is no simulator error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """With ``max_connections`` open ones, the next is not served until one closes; the
        accept loop waits meanwhile, so that new connections queue in the listen backlog,
        and beyond it the kernel drops them (the client's connect times out)."""
        sim = self.sim
        with sim.connection_slots:
            if sim.max_connections is not None and not sim._slot_free():
                sim.queued_connections += 1
                while not sim._slot_free() and not sim._stopping.is_set():
                    sim.connection_slots.wait(0.05)
            sim.open_connections += 1
        return True

    def shutdown_request(self, request: Any) -> None:
        with self.sim.connection_slots:
            self.sim.open_connections -= 1
            self.sim.connection_slots.notify()
        super().shutdown_request(request)


Delay = float | tuple[float, float]

# Names the URL of each simulator that answers in process (never resolved: no socket).
_SIMULATORS = itertools.count(1)
# How the connection answering this thread's request holds a late answer (handle_nova).
_answering = threading.local()


class NovaSimulator:
    """Nova's state and rules, Keystone's tokens, faults and the record of calls."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        service_down_time: float = 60.0,
        evacuate_delay: Delay = 0.0,
        seed: int = 0,
        max_limit: int = 1000,
        users: Mapping[str, str] | None = None,
        evacuation_limit: int | None = None,
        backlog: int | None = None,
        max_connections: int | None = None,
        report_interval: float = 0.0,
        rpc_response_timeout: float = 0.0,
        live_migration_delay: Delay = 0.0,
    ) -> None:
        self.clock = EpochClock(clock or Clock())
        # Nova's [DEFAULT] rpc_response_timeout (60 s in a real Nova): how long its API waits
        # for a compute that does not answer an RPC call, here the set_host_enabled of a
        # service update to a dead compute Nova still counts up. 0 (the tests' default):
        # answered at once. Wall clock on a socket; in process a read timeout when at least
        # the client's timeout (tests/fakes/nova_wire.py).
        self.rpc_response_timeout = rpc_response_timeout
        # Nova's [DEFAULT] report_interval: a running nova-compute writes its heartbeat
        # (the service's updated_at) every this many seconds, each service at its own phase.
        # 0: continuously (updated_at is always now).
        self.report_interval = report_interval
        # The listen backlog, and how many connections are served at once (more wait in the
        # backlog, and beyond it are dropped by the kernel); an idle keep-alive connection is
        # then closed after IDLE_TIMEOUT, as a real API server does. None: no limit.
        self.backlog = backlog
        self.max_connections = max_connections
        self.open_connections = 0
        self.queued_connections = 0  # connections that had to wait for a free one
        self.slots_held = False  # every slot taken, as by other clients (occupy_slots)
        self.connection_slots = threading.Condition()
        # The flaky mode (see flaky()); its draws come from a generator of their own.
        self.flakiness: Flaky | None = None
        self._flaky_rng = random.Random(0)
        # Evacuations the simulator acted on (accepted), per server: what drills count.
        self.evacuations_accepted: dict[str, int] = {}
        # Nova (2023.2 on) refuses to unset forced_down on a host with evacuations "done"
        # from it, until its nova-compute restarts (init_host moves them to "completed").
        # Off by default: the older drills unforce hosts that never restarted.
        self.force_up_checks_evacuations = False
        self.done_evacuations: dict[str, int] = {}
        # Rebuilds Nova runs at once (its computes' max_concurrent_builds, the storage): more
        # are accepted and wait for a slot, as Nova queues them. None: no limit.
        self.evacuation_limit = evacuation_limit
        # Most evacuations accepted and not yet finished at one time (queued ones included),
        # and when each one finished (the simulator's clock).
        self.max_evacuations_in_flight = 0
        self.evacuation_ends: list[float] = []
        # When each server last arrived on an evacuation's destination (simulator clock).
        self.arrivals: dict[str, float] = {}
        # Seconds between the moment an evacuation's destination clears the server's task
        # (and sets its new vm_state) and the moment the server's host changes: a real Nova's
        # resource tracker moves it a moment after the rebuild ends, so meanwhile the server
        # shows no task on its failed host. 0 (the default): both at once.
        self.host_move_lag = 0.0
        self._host_moves: list[tuple[float, str, str]] = []  # (due, server, destination)
        self.service_down_time = service_down_time
        self.max_limit = max_limit
        # None: any password authenticates, like the conformance fake.
        self.users = dict(users) if users is not None else None
        self.lock = threading.RLock()
        self.services: list[Service] = []
        self.servers: list[Server] = []
        self.aggregates: list[Aggregate] = []
        self.server_groups: list[ServerGroup] = []
        self.faults: list[Fault] = []
        self.evacuations: list[Evacuation] = []
        self.calls: list[Call] = []
        self.placement = Placement()  # tests/fakes/placement.py: what evacuations consume
        self.keystone_calls: list[tuple[str, str]] = []
        # More services of the token's catalog, {service type: URL}: for example masakari's
        # own "instance-ha" endpoint, which the openstack clients look up there.
        self.catalog_extra: dict[str, str] = {}
        # Catalog URLs to announce instead of the simulator's own, {service type: URL}: a
        # test puts a proxy in front of Nova (``{"compute": proxy + COMPUTE_PREFIX}``).
        self.catalog_overrides: dict[str, str] = {}
        self.tokens: dict[str, dict[str, Any]] = {
            ADMIN_TOKEN: _token_info("admin", "admin", ADMIN_PROJECT_ID, ["admin", "member"]),
            MEMBER_TOKEN: _token_info("demo", "demo", MEMBER_PROJECT_ID, ["member", "reader"]),
        }
        self._issued = 0
        self.set_evacuate_delay(evacuate_delay, seed)
        # Live migrations (tests/fakes/nova_migrations.py): every migration record (its
        # /os-migrations), the live migrations under way, and the failures injected per server.
        self.migrations: list[nova_migrations.MigrationRecord] = []
        self.live_migrations: list[nova_migrations.LiveMigration] = []
        self.live_migration_failures: dict[str, str] = {}
        self.set_live_migration_delay(live_migration_delay, seed)
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        # Not started, the simulator answers in process at a host name of its own.
        self._in_process_host = f"nova-sim-{next(_SIMULATORS)}.invalid"
        self._in_process_handler: type | None = None
        nova_wire.serve(self._in_process_host, self)
        self._thread: threading.Thread | None = None

    def now(self) -> float:
        """The simulator's time, in seconds since 1970 (that of Call.time, arrivals …)."""
        return self.clock.now()

    def in_process_handler(self) -> type:
        """The handler class that answers in process (tests/fakes/nova_wire.py)."""
        if self._in_process_handler is None:
            self._in_process_handler = nova_wire.in_process(_handler_for(self))
        return self._in_process_handler

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> NovaSimulator:
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self), self)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes the handlers that sleep in a delay fault
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> NovaSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """Its loopback URL once started, else the URL it answers in process at."""
        if self._httpd is None:
            return "http://" + self._in_process_host
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def auth_url(self) -> str:
        return self.base_url + IDENTITY_PREFIX + "/v3"

    @property
    def compute_url(self) -> str:
        return self.base_url + COMPUTE_PREFIX

    @property
    def placement_url(self) -> str:
        return self.base_url + PLACEMENT_PREFIX

    def session(
        self, *, username: str = "masakari", password: str = "secret", timeout: float = 10.0
    ) -> ks_session.Session:
        """A keystone session authenticating as a service user of the 'service' project
        (answered in process, without a socket, while the simulator is not started)."""
        auth = v3.Password(
            auth_url=self.auth_url,
            username=username,
            password=password,
            project_name="service",
            user_domain_name="Default",
            project_domain_name="Default",
        )
        session = ks_session.Session(auth=auth, timeout=timeout)
        session.simulator = self  # type: ignore[attr-defined]  # answers it while it lives
        return session

    def client(self, **kwargs: Any) -> NovaClient:
        """A NovaClient with its own session; keyword arguments go to NovaClient."""
        from masakari.compute.nova import NovaClient

        return NovaClient(self.session(), **kwargs)

    def conf_overrides(self, password: str = "secret") -> dict[str, Any]:
        """Registered options that point masakari at the simulator, for
        ``masakari.conf.for_tests(**sim.conf_overrides())``."""
        return {
            "os_privileged_user_name": "masakari",
            "os_privileged_user_password": password,
            "os_privileged_user_tenant": "service",
            "os_privileged_user_auth_url": self.auth_url,
            "nova_catalog_admin_info": "compute:nova:publicURL",
            "keystone_authtoken.auth_type": "password",
            "keystone_authtoken.www_authenticate_uri": self.auth_url,
        }

    def authtoken_plugin_options(self, password: str = "secret") -> dict[str, str]:
        """[keystone_authtoken] options of the password plugin, which keystonemiddleware
        registers only when it loads the plugin: set them after that (or write them in a
        masakari.conf) for the middleware to validate tokens here."""
        return {
            "auth_url": self.auth_url,
            "username": "masakari",
            "password": password,
            "project_name": "service",
            "user_domain_name": "Default",
            "project_domain_name": "Default",
        }

    # --- state -----------------------------------------------------------------------------

    def add_service(
        self,
        host: str,
        *,
        binary: str = "nova-compute",
        status: str = "enabled",
        state: str = "up",
        disabled_reason: str | None = None,
        forced_down: bool = False,
        zone: str = "nova",
        id: str | None = None,
        hypervisor_hostname: str | None = None,
        vcpus: int | None = None,
        memory_mb: int | None = None,
        disk_gb: int | None = None,
    ) -> str:
        """Adds a service; ``state='down'`` means a host that stopped heartbeating long ago.

        A nova-compute service gets a Placement resource provider sized ``vcpus``,
        ``memory_mb`` and ``disk_gb`` (unlimited where not given).
        """
        now = self.clock.now()
        alive = state == "up"
        svc = Service(
            id=id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"nova-sim:service:{host}:{binary}")),
            host=host,
            binary=binary,
            status=status,
            disabled_reason=disabled_reason,
            forced_down=forced_down,
            zone=zone,
            hypervisor_hostname=hypervisor_hostname or host,
            alive=alive,
            last_heartbeat=now if alive else now - self.service_down_time - 1,
        )
        with self.lock:
            self.services.append(svc)
            if binary == "nova-compute":
                self.placement.add_provider(
                    svc.hypervisor_hostname, vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb
                )
        return svc.id

    def add_server(
        self,
        id: str | None = None,
        *,
        host: str | None,
        name: str | None = None,
        vm_state: str = "active",
        task_state: str | None = None,
        power_state: int | None = None,
        locked: bool = False,
        metadata: Mapping[str, str] | None = None,
        tenant_id: str = MEMBER_PROJECT_ID,
        flavor: Flavor | None = None,
        image: str | None = None,
        tags: Sequence[str] = (),
    ) -> str:
        """Adds a server; servers added later are newer (listed first, as Nova does). Its
        flavor's resources are allocated in Placement on its host."""
        sid = id or str(uuid.uuid4())
        srv = Server(
            id=sid,
            name=name or "vm-" + sid[:8],
            host=host,
            vm_state=vm_state,
            task_state=task_state,
            power_state=_POWER.get(vm_state, 0) if power_state is None else power_state,
            locked=locked,
            metadata=dict(metadata or {}),
            tenant_id=tenant_id,
            flavor=flavor or Flavor(),
            image=image,
            tags=list(tags),
        )
        with self.lock:
            self.servers.append(srv)
            self.placement.allocate(
                sid, self._hypervisor_of(host), srv.flavor.resources(), tenant_id, srv.user_id
            )
        return sid

    def update_server(self, server_id: str, **fields: Any) -> None:
        """Change a server behind the API's back (``locked=True``, ``vm_state="stopped"`` …):
        what another client, or Nova itself, did meanwhile."""
        with self.lock:
            srv = self._server(server_id)
            for name, value in fields.items():
                if not hasattr(srv, name):
                    raise AttributeError(f"a simulated server has no {name}")
                setattr(srv, name, value)

    def update_service(self, host: str, binary: str = "nova-compute", **fields: Any) -> None:
        """Change a service behind the API's back (``status="disabled"`` …)."""
        with self.lock:
            svc = self._service_on(host, binary) or _missing(host)
            for name, value in fields.items():
                if not hasattr(svc, name):
                    raise AttributeError(f"a simulated service has no {name}")
                setattr(svc, name, value)

    def delete_server(self, server_id: str) -> None:
        """A tenant deletes the server: it is gone, its allocation too."""
        with self.lock:
            srv = self._server(server_id)
            self.servers.remove(srv)
            self.placement.free(srv.id, self._hypervisor_of(srv.host))

    def add_aggregate(
        self, id: int, name: str | None = None, hosts: list[str] | None = None, **kw: Any
    ) -> int:
        with self.lock:
            self.aggregates.append(Aggregate(id, name or f"agg{id}", list(hosts or []), **kw))
        return id

    def add_server_group(
        self, policy: str, members: list[str], name: str | None = None, id: str | None = None
    ) -> str:
        """A server group (policy affinity, anti-affinity, soft-...) of existing servers."""
        gid = id or str(uuid.uuid4())
        with self.lock:
            self.server_groups.append(
                ServerGroup(gid, name or "group-" + gid[:8], policy, list(members))
            )
        return gid

    def load(self, spec: Mapping[str, Any]) -> None:
        """Adds the ``nova:`` section of a conformance scenario (services, servers,
        aggregates, faults, evacuate_delay, evacuation_limit)."""
        for s in spec.get("services") or []:
            self.add_service(**s)
        for s in spec.get("servers") or []:
            kw = {k: v for k, v in s.items() if k not in ("user_id",)}
            self.add_server(kw.pop("id", None), **kw)
        for a in spec.get("aggregates") or []:
            self.add_aggregate(
                int(a["id"]),
                a.get("name"),
                a.get("hosts"),
                availability_zone=a.get("availability_zone"),
                metadata=dict(a.get("metadata") or {}),
            )
        for f in spec.get("faults") or []:
            f = dict(f)
            kind = f.pop("kind", "status")
            if kind == "status":
                self.fail(int(f.pop("status", 500)), **f)
            else:
                self.state_fault(kind, f.pop("server"), **f)
        delay = spec.get("evacuate_delay")
        if isinstance(delay, Mapping):
            lo = float(delay.get("min", 0))
            self.set_evacuate_delay((lo, float(delay.get("max", lo))), int(delay.get("seed", 0)))
        elif isinstance(delay, list | tuple):
            self.set_evacuate_delay((float(delay[0]), float(delay[-1])))
        elif delay is not None:
            self.set_evacuate_delay(float(delay))
        if spec.get("evacuation_limit") is not None:
            self.evacuation_limit = int(spec["evacuation_limit"])

    def set_evacuate_delay(self, delay: Delay, seed: int = 0) -> None:
        """Seconds (of the simulator's clock) an accepted evacuation takes: fixed or a
        uniform (min, max) drawn from a generator seeded with ``seed``."""
        with self.lock:
            self._delay = delay if isinstance(delay, tuple) else (float(delay), float(delay))
            self._rng = random.Random(seed)

    def set_live_migration_delay(self, delay: Delay, seed: int = 0) -> None:
        """Seconds (of the simulator's clock) a scheduled live migration takes, from the
        conductor's acceptance to completed: fixed or a uniform (min, max) seeded with
        ``seed``. A fifth of it the migration is ``accepted`` (scheduling), then ``preparing``
        (its destination set) until half, then ``running``. 0: over within the request."""
        with self.lock:
            self._lm_delay = delay if isinstance(delay, tuple) else (float(delay), float(delay))
            self._lm_rng = random.Random(seed)

    def live_migration_time(self) -> float:
        """The next live migration's duration (lock held)."""
        return self._lm_rng.uniform(*self._lm_delay)

    def fail_live_migrations(self, server_ids: Iterable[str], status: str = "error") -> None:
        """The live migrations of these servers, once scheduled, fail on the computes, the
        server rolled back ACTIVE on its source with its allocation: ``error`` when the
        destination's pre_live_migration fails (halfway; ``compute_pre_live_migration`` and
        ``compute_live_migration`` events in Error), ``failed`` when the hypervisor's job fails
        at the end (no event in Error). ``status=None`` lifts it."""
        if status is not None and status not in nova_migrations.FAILURES:
            raise ValueError(f"a live migration fails with one of {nova_migrations.FAILURES}")
        with self.lock:
            for sid in server_ids:
                if status is None:
                    self.live_migration_failures.pop(sid, None)
                else:
                    self.live_migration_failures[sid] = status

    def power_off(self, host: str) -> None:
        """The host stops heartbeating; Nova notices after service_down_time."""
        with self.lock:
            for s in self.services:
                if s.host == host and s.alive:
                    s.alive, s.last_heartbeat = False, self._last_beat(s)

    def stale(self, host: str, age: float) -> None:
        """The host's services stopped heartbeating ``age`` seconds ago (a dead host seen
        ``age`` seconds late): updated_at is that old, and the state is down once it is
        older than service_down_time."""
        with self.lock:
            for s in self.services:
                if s.host == host:
                    s.alive, s.last_heartbeat = False, self.clock.now() - age

    def heartbeat_age(self, host: str) -> float:
        """Seconds since the host's nova-compute last wrote its heartbeat."""
        with self.lock:
            svc = self._service_on(host) or _missing(host)
            seen = self._last_beat(svc) if svc.alive else svc.last_heartbeat
            return self.clock.now() - seen

    def _last_beat(self, s: Service) -> float:
        """When a running service last wrote its heartbeat (lock held)."""
        now = self.clock.now()
        if self.report_interval <= 0:
            return now
        # A phase per service, so that the hosts do not all beat at the same instant.
        phase = (zlib.crc32(s.id.encode()) % 1000) / 1000 * self.report_interval
        return now - ((now - phase) % self.report_interval)

    def power_on(self, host: str) -> None:
        """The host's nova-compute starts: it heartbeats, and marks the evacuations that
        left it ``completed`` (nova/compute/manager.py _destroy_evacuated_instances)."""
        with self.lock:
            # nova-compute starts again: its init_host completes the evacuations from it.
            self.done_evacuations.pop(host, None)
            for s in self.services:
                if s.host == host:
                    s.alive, s.last_heartbeat = True, self.clock.now()
            self._tick()
            for m in self.migrations:
                if (m.migration_type, m.source_compute, m.status) == ("evacuation", host, "done"):
                    m.set(self.clock.now(), status="completed")

    def tie_power(self, host: str, bmc: PowerSource) -> None:
        """From now on ``host`` follows its BMC's power: powered off (by a fence or by the
        test), it stops heartbeating and its nova-compute goes down after
        service_down_time, as Nova sees a dead host; powered on, it heartbeats again (up)."""

        def follow(state: str) -> None:
            (self.power_on if state == "on" else self.power_off)(host)

        bmc.on_power_change(follow)

    def service_state(self, s: Service) -> str:
        """Nova's servicegroup rule: down when forced, or when the last heartbeat is older
        than service_down_time."""
        if s.forced_down:
            return "down"
        if s.alive:
            return "up"
        return "down" if self.clock.now() - s.last_heartbeat > self.service_down_time else "up"

    def service(self, host: str, binary: str = "nova-compute") -> dict[str, Any]:
        with self.lock:
            return self._service_view(self._service_on(host, binary) or _missing(host))

    def server(self, server_id: str) -> dict[str, Any]:
        with self.lock:
            self._tick()
            return self._server_view(self._server(server_id))

    def aggregate(self, aggregate_id: int) -> dict[str, Any]:
        with self.lock:
            return self._aggregate_view(self._aggregate(str(aggregate_id)))

    def snapshot(self) -> dict[str, Any]:
        """The state the conformance goldens keep as ``final``."""
        with self.lock:
            self._tick()
            return {
                "servers": {
                    s.id: {"host": s.host, "vm_state": s.vm_state, "locked": s.locked}
                    for s in self.servers
                },
                "services": {
                    f"{s.host}/{s.binary}": {
                        "status": s.status,
                        "disabled_reason": s.disabled_reason,
                    }
                    for s in self.services
                },
                "aggregates": {str(a.id): list(a.hosts) for a in self.aggregates},
            }

    # --- faults ----------------------------------------------------------------------------

    def fail(
        self,
        status: int,
        *,
        method: str | None = None,
        path: str | None = None,
        action: str | None = None,
        server: str | None = None,
        times: int | None = None,
        message: str | None = None,
        apply: bool = False,
    ) -> None:
        """Answer ``status`` to the matching requests (``path`` without /compute/v2.1,
        ``{...}`` segments match anything); ``apply`` performs the request first."""
        with self.lock:
            self.faults.append(
                Fault("status", method, path, action, server, status, message, apply, times=times)
            )

    def slow(
        self,
        seconds: float,
        *,
        method: str | None = None,
        path: str | None = None,
        action: str | None = None,
        server: str | None = None,
        times: int | None = None,
    ) -> None:
        """Answer the matching requests ``seconds`` (wall clock) late; the request still takes
        effect afterwards, as with a slow Nova whose client gave up."""
        with self.lock:
            self.faults.append(
                Fault("delay", method, path, action, server, seconds=seconds, times=times)
            )

    def state_fault(
        self, kind: str, server: str, *, action: str | None = None, times: int | None = None
    ) -> None:
        """never_move (evacuation accepted, no move), ignore_action (the action is accepted
        and does nothing) or evacuate_error (the instance goes to error on its host)."""
        if kind == "never_move":
            kind, action = "ignore_action", "evacuate"
        if kind not in ("ignore_action", "evacuate_error"):
            raise ValueError(f"unknown fault kind {kind}")
        with self.lock:
            self.faults.append(Fault(kind, "POST", None, action, server, times=times))

    def clear_faults(self) -> None:
        with self.lock:
            self.faults.clear()
            self.flakiness = None

    def flaky(
        self,
        *,
        reset: float = 0.0,
        unavailable: float = 0.0,
        late: float = 0.0,
        late_seconds: float = 4.0,
        seed: int = 0,
    ) -> None:
        """Make the Nova API unreliable (Keystone and Placement stay reliable): a fraction
        ``reset`` of the requests is cut before the simulator acts (recorded with status 599),
        ``unavailable`` is answered 503 by a balancer before it acts, and ``late`` is acted on
        and answered ``late_seconds`` (wall clock) later, after a shorter client timeout.
        The draws follow ``seed`` in the order requests arrive. All zero: reliable again."""
        with self.lock:
            on = reset or unavailable or late
            self.flakiness = Flaky(reset, unavailable, late, late_seconds) if on else None
            self._flaky_rng = random.Random(seed)

    def limit_connections(self, max_connections: int | None, backlog: int | None = None) -> None:
        """Serve at most ``max_connections`` at once, with a listen backlog of ``backlog``
        (a running simulator listens again with it)."""
        with self.connection_slots:
            self.max_connections = max_connections
            self.connection_slots.notify_all()
        if backlog is not None:
            self.backlog = backlog
            if self._httpd is not None:
                self._httpd.socket.listen(backlog)

    def _slot_free(self) -> bool:
        """Under connection_slots."""
        limit = self.max_connections
        if limit is None:
            return True
        return not self.slots_held and self.open_connections < limit

    @contextlib.contextmanager
    def occupy_slots(self) -> Iterator[None]:
        """Every connection slot taken meanwhile, as by other clients of a busy Nova: a
        connection made now waits in the listen backlog (or is dropped beyond it), whatever
        the machine's speed."""
        with self.connection_slots:
            self.slots_held = True
        try:
            yield
        finally:
            with self.connection_slots:
                self.slots_held = False
                self.connection_slots.notify_all()

    def roll_flaky(self) -> str | None:
        with self.lock:
            return None if self.flakiness is None else self.flakiness.roll(self._flaky_rng)

    def revoke_tokens(self) -> None:
        """Forgets every issued token: the next Nova call answers 401."""
        with self.lock:
            for token in [t for t in self.tokens if t not in (ADMIN_TOKEN, MEMBER_TOKEN)]:
                del self.tokens[token]

    # --- records ---------------------------------------------------------------------------

    def nova_calls(self) -> list[dict[str, Any]]:
        """Nova requests in arrival order, shaped like the goldens' calls."""
        with self.lock:
            return [c.shape() for c in self.calls]

    def actions(self, server_id: str | None = None) -> list[str]:
        """The server actions requested (``lock``, ``os-stop``, ``evacuate`` …, answered or
        not), in arrival order: of one server, or of all."""
        with self.lock:
            return [
                str(next(iter(c.body)))
                for c in self.calls
                if c.method == "POST"
                and isinstance(c.body, dict)
                and len(c.body) == 1
                and _path_matches("/servers/{id}/action", c.path)
                and (server_id is None or c.path.split("/")[2] == server_id)
            ]

    def calls_by(self, caller: str) -> list[Call]:
        """The Nova requests made with tokens of one Keystone user, in arrival order."""
        with self.lock:
            return [dataclasses.replace(c) for c in self.calls if c.caller == caller]

    def token_requests(self) -> int:
        """How many tokens were issued (POST /v3/auth/tokens)."""
        with self.lock:
            return sum(1 for m, p in self.keystone_calls if m == "POST" and p.endswith("/tokens"))

    def clear_calls(self) -> None:
        with self.lock:
            self.calls.clear()
            self.keystone_calls.clear()

    # --- Nova: one request -----------------------------------------------------------------

    def handle_nova(self, req: Request) -> tuple[int, Any]:
        """One Nova request; a ``slow`` fault first holds it as the connection answering it
        holds a late answer (on a socket: the wall clock)."""
        server_id = req.parts[1] if req.parts[:1] == ["servers"] and len(req.parts) > 1 else None
        if server_id == "detail":
            server_id = None
        with self.lock:
            delay = self._take_fault(("delay",), req.method, req.path, req.action, server_id)
        late = getattr(_answering, "late", None) or self._stopping.wait
        if delay is not None and late(delay.seconds):
            raise NovaFault(503, "The simulator is stopping.")
        with self.lock:
            self._tick()
            fault = self._take_fault(("status",), req.method, req.path, req.action, server_id)
            if fault is not None and not fault.apply:
                raise NovaFault(fault.status, fault.message)
            try:
                result = self._route(req)
            except NovaFault:
                if fault is None:
                    raise
            if fault is not None:
                raise NovaFault(fault.status, fault.message)
        # The change is made and visible to other requests while this one still waits.
        if req.hold > 0 and late(req.hold):
            raise NovaFault(503, "The simulator is stopping.")
        return result

    def _route(self, req: Request) -> tuple[int, Any]:
        known_path = False
        for method, pattern, handler in ROUTES:
            if len(pattern) == len(req.parts) and all(
                p == "*" or p == got for p, got in zip(pattern, req.parts, strict=True)
            ):
                if method == req.method:
                    return handler(self, req)
                known_path = True
        raise NovaFault(405, "Method not allowed.") if known_path else NovaFault(404)

    def _take_fault(
        self, kinds: tuple[str, ...], method: str, path: str, action: str | None, sid: str | None
    ) -> Fault | None:
        for f in self.faults:
            if f.kind in kinds and f.matches(method, path, action, sid):
                f.used += 1
                return f
        return None

    def _tick(self) -> None:
        """Completes the evacuations that are due and whose destination runs, in the order of
        their ends, starting queued ones as Nova slots free up (lock held). Runs on every
        request: the times are the exact ones whenever it runs."""
        now = self.clock.now()
        nova_migrations.advance(self, now)
        self._move_hosts(now)
        done: set[int] = set()
        while True:
            self._start_queued(now)
            due = [
                ev
                for ev in self.evacuations
                if ev.due is not None and ev.due <= now and id(ev) not in done
            ]
            if not due:
                break
            ev = min(due, key=lambda e: e.due or 0.0)
            done.add(id(ev))
            dest = self._service_on(ev.dest) if ev.dest else None
            if dest is not None and not dest.alive:
                continue  # a destination that died meanwhile never rebuilds the instance
            self.evacuations.remove(ev)
            self.evacuation_ends.append(ev.due or now)
            srv = self._server(ev.server)
            srv.task_state = None
            if ev.migration is not None and ev.dest is not None:
                ev.migration.set(ev.due or now, status="done")
            if ev.dest is not None and srv.host is not None:
                self.done_evacuations[srv.host] = self.done_evacuations.get(srv.host, 0) + 1
            if ev.dest is not None:
                self._host_moves.append((ev.due or now, srv.id, ev.dest))
                srv.vm_state = "active" if srv.vm_state == "error" else srv.vm_state
                srv.power_state = 4 if srv.vm_state == "stopped" else 1
                if ev.action is not None:
                    finished = ev.due or now
                    ev.action.events.append(
                        ActionEvent(
                            "compute_rebuild_instance",
                            finished - ev.duration,
                            finished,
                            "Success",
                            host=ev.dest,
                        )
                    )
                    if srv.vm_state == "stopped":
                        # The rebuild powers a stopped server off again on its new host
                        # (nova/compute/manager.py _do_rebuild_instance: stop_instance),
                        # an event of the evacuate action.
                        ev.action.events.append(
                            ActionEvent(
                                "compute_stop_instance", finished, finished, "Success", host=ev.dest
                            )
                        )
            self._start_queued(ev.due or now)
        self._move_hosts(now)

    def _move_hosts(self, now: float) -> None:
        """The servers whose rebuild ended host_move_lag ago or more take their destination
        as host, their source's allocation freed."""
        for move in [m for m in self._host_moves if m[0] + self.host_move_lag <= now]:
            self._host_moves.remove(move)
            rebuilt, sid, dest = move
            srv = self._server(sid)
            self.placement.free(srv.id, self._hypervisor_of(srv.host))
            srv.host = dest
            self.arrivals[srv.id] = rebuilt + self.host_move_lag

    def _start_queued(self, at: float) -> None:
        """Queued evacuations take the free Nova slots, oldest first, starting at ``at``."""
        running = sum(1 for ev in self.evacuations if ev.due is not None)
        for ev in self.evacuations:
            if self.evacuation_limit is not None and running >= self.evacuation_limit:
                return
            if ev.due is None:
                ev.due = at + ev.duration
                running += 1

    def _accept_evacuation(
        self,
        server: str,
        dest: str | None,
        action: InstanceAction | None = None,
        migration: nova_migrations.MigrationRecord | None = None,
    ) -> None:
        duration = self._rng.uniform(*self._delay)
        self.evacuations_accepted[server] = self.evacuations_accepted.get(server, 0) + 1
        self.evacuations.append(Evacuation(None, server, dest, duration, action, migration))
        self._start_queued(self.clock.now())
        self.max_evacuations_in_flight = max(self.max_evacuations_in_flight, len(self.evacuations))

    # --- lookups and views (lock held) -----------------------------------------------------

    def _service_on(self, host: str | None, binary: str = "nova-compute") -> Service | None:
        return next((s for s in self.services if s.host == host and s.binary == binary), None)

    def _hypervisor_of(self, host: str | None) -> str | None:
        svc = self._service_on(host)
        return svc.hypervisor_hostname if svc else None

    def _server(self, sid: str) -> Server:
        for s in self.servers:
            if s.id == sid:
                return s
        raise NovaFault(404, f"Instance {sid} could not be found.")

    def _aggregate(self, aid: str) -> Aggregate:
        for a in self.aggregates:
            if str(a.id) == aid:
                return a
        raise NovaFault(404, f"Aggregate {aid} could not be found.")

    def _service_view(self, s: Service) -> dict[str, Any]:
        seen = max(self._last_beat(s) if s.alive else s.last_heartbeat, s.changed_at)
        return {
            "id": s.id,
            "binary": s.binary,
            "host": s.host,
            "zone": s.zone,
            "status": s.status,
            "state": self.service_state(s),
            "disabled_reason": s.disabled_reason,
            "forced_down": s.forced_down,
            "updated_at": _iso(seen),
        }

    def _server_view(self, s: Server) -> dict[str, Any]:
        svc = self._service_on(s.host)
        return {
            "id": s.id,
            "name": s.name,
            "status": _TASK_STATUS.get(
                (s.vm_state, s.task_state or ""), _STATUS.get(s.vm_state, "UNKNOWN")
            ),
            "tenant_id": s.tenant_id,
            "user_id": s.user_id,
            "metadata": dict(s.metadata),
            "locked": s.locked,
            "hostId": "",
            "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-01T00:00:00Z",
            "links": [],
            "image": {"id": s.image, "links": []} if s.image else "",
            "addresses": {},
            "flavor": s.flavor.view(),
            "key_name": None,
            "config_drive": "",
            "progress": 0,
            "security_groups": [],
            "OS-EXT-STS:vm_state": s.vm_state,
            "OS-EXT-STS:task_state": s.task_state,
            "OS-EXT-STS:power_state": s.power_state,
            "OS-EXT-SRV-ATTR:host": s.host,
            "OS-EXT-SRV-ATTR:hypervisor_hostname": svc.hypervisor_hostname if svc else s.host,
            "OS-EXT-SRV-ATTR:instance_name": "instance-" + s.id[:8],
            "OS-EXT-AZ:availability_zone": svc.zone if svc else "nova",
            "os-extended-volumes:volumes_attached": [],
            "tags": list(s.tags),
        }

    @staticmethod
    def _aggregate_view(a: Aggregate) -> dict[str, Any]:
        return {
            "id": a.id,
            "name": a.name,
            "availability_zone": a.availability_zone,
            "hosts": list(a.hosts),
            "metadata": dict(a.metadata),
            "deleted": False,
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"nova-sim:aggregate:{a.id}")),
            "created_at": "2026-01-01T00:00:00.000000",
            "updated_at": None,
            "deleted_at": None,
        }

    # --- Keystone --------------------------------------------------------------------------

    def issue_token(self, body: Any) -> tuple[str, dict[str, Any]]:
        try:
            user = body["auth"]["identity"]["password"]["user"]
            username, password = user.get("name") or user["id"], user.get("password")
            scope = body["auth"].get("scope") or {}
            project = (scope.get("project") or {}).get("name") or "service"
        except (KeyError, TypeError) as exc:
            raise NovaFault(400, "Expecting password authentication.") from exc
        with self.lock:
            if self.users is not None and self.users.get(username) != password:
                raise NovaFault(401, "The request you have made requires authentication.")
            self._issued += 1
            token = f"sim-token-{self._issued}"
            self.tokens[token] = _token_info(
                username, project, SERVICE_PROJECT_ID, ["admin", "member", "reader"]
            )
            return token, self.tokens[token]

    def token_body(self, info: dict[str, Any]) -> dict[str, Any]:
        now = datetime.datetime.now(datetime.UTC)
        domain = {"id": "default", "name": "Default"}

        def endpoints(url: str) -> list[dict[str, str]]:
            return [
                {
                    "id": f"{url}#{i}",
                    "interface": i,
                    "region": "RegionOne",
                    "region_id": "RegionOne",
                    "url": url,
                }
                for i in ("public", "internal", "admin")
            ]

        return {
            "token": {
                "methods": ["password"],
                "audit_ids": ["sim-audit"],
                "is_domain": False,
                "user": {"id": info["user_id"], "name": info["user"], "domain": domain},
                "project": {"id": info["project_id"], "name": info["project"], "domain": domain},
                "roles": [{"id": f"role-{r}", "name": r} for r in info["roles"]],
                "catalog": [
                    {
                        "id": "compute",
                        "type": "compute",
                        "name": "nova",
                        "endpoints": endpoints(
                            self.catalog_overrides.get("compute", self.compute_url)
                        ),
                    },
                    {
                        "id": "placement",
                        "type": "placement",
                        "name": "placement",
                        "endpoints": endpoints(self.placement_url),
                    },
                    {
                        "id": "identity",
                        "type": "identity",
                        "name": "keystone",
                        "endpoints": endpoints(self.auth_url),
                    },
                    *(
                        {"id": kind, "type": kind, "name": kind, "endpoints": endpoints(url)}
                        for kind, url in self.catalog_extra.items()
                    ),
                ],
                # token expiry is wall-clock time: keystoneauth checks it against time.time()
                "issued_at": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "expires_at": (now + datetime.timedelta(hours=12)).strftime(
                    "%Y-%m-%dT%H:%M:%S.%fZ"
                ),
            }
        }


def _token_info(user: str, project: str, project_id: str, roles: list[str]) -> dict[str, Any]:
    return {
        "user": user,
        "user_id": f"user-{user}",
        "project": project,
        "project_id": project_id,
        "roles": roles,
    }


def _missing(host: str) -> Service:
    raise KeyError(f"no nova-compute service on {host}")


# --- Nova handlers: (simulator, request) -> (status, body) --------------------------------


def _require_admin(req: Request, rule: str) -> None:
    if not req.is_admin:
        raise NovaFault(403, f"Policy does not allow {rule} to be performed.")


def list_services(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    _require_admin(req, "os_compute_api:os-services:list")
    q = req.params
    found = [
        s
        for s in sim.services
        if q.get("host", s.host) == s.host and q.get("binary", s.binary) == s.binary
    ]
    return 200, {"services": [sim._service_view(s) for s in found]}


def update_service(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    """PUT /os-services/{uuid} exists from 2.53; before, the last segment was an action."""
    _require_admin(req, "os_compute_api:os-services:update")
    if req.microversion < (2, 53):
        raise NovaFault(404, "Unknown action")
    if not _uuid_like(req.parts[1]):
        # nova/api/openstack/compute/services.py update: the id is checked before the lookup.
        raise NovaFault(400, f"Invalid uuid {req.parts[1]}")
    svc = next((s for s in sim.services if s.id == req.parts[1]), None)
    if svc is None:
        raise NovaFault(404, f"Service {req.parts[1]} could not be found.")
    body = req.body if isinstance(req.body, dict) else {}
    status, forced = body.get("status"), body.get("forced_down")
    if (
        set(body) - {"status", "disabled_reason", "forced_down"}
        or status not in (None, "enabled", "disabled")
        or (forced is not None and not isinstance(forced, bool))
    ):
        raise NovaFault(400, "Invalid input for field/attribute service.")
    if status is None and forced is None:
        raise NovaFault(400, "At least one of 'status' or 'forced_down' must be specified.")
    if "disabled_reason" in body and status != "disabled":
        raise NovaFault(
            400, "Specifying 'disabled_reason' with status other than 'disabled' is invalid."
        )
    if forced is False and sim.force_up_checks_evacuations and sim.done_evacuations.get(svc.host):
        raise NovaFault(
            400,
            f"Invalid input received: Unable to force up host {svc.host} as `done` evacuation "
            "migration records remain associated with the host. Ensure the compute service "
            "has been restarted, allowing these records to move to `completed` before "
            "retrying this request.",
        )
    before = (svc.status, svc.disabled_reason, svc.forced_down)
    if status == "enabled":
        svc.status, svc.disabled_reason = "enabled", None
    elif status == "disabled":
        svc.status, svc.disabled_reason = "disabled", body.get("disabled_reason")
    if forced is not None:
        svc.forced_down = forced
    if (svc.status, svc.disabled_reason, svc.forced_down) != before:
        # The row's updated_at moves with any change, not only a heartbeat (Nova's
        # servicegroup db driver shows updated_at; only its is_up reads last_seen_up).
        svc.changed_at = sim.clock.now()
    # Saved first; then, when "disabled" was set (even to its value) and Nova counts the
    # service up (forced_down just set counts it down), the API calls set_host_enabled on the
    # compute and waits for it: a dead compute never answers, so the answer comes after
    # rpc_response_timeout, a 200 still (nova/compute/api.py service_update).
    if status is not None and sim.service_state(svc) == "up" and not svc.alive:
        req.hold = sim.rpc_response_timeout
    return 200, {"service": sim._service_view(svc)}


def _uuid_like(value: str) -> bool:
    """oslo_utils.uuidutils.is_uuid_like: a uuid in any of the forms uuid.UUID reads, given
    back as its canonical form once lower-cased and stripped of dashes."""
    try:
        return str(uuid.UUID(value)).replace("-", "") == value.lower().replace("-", "")
    except (TypeError, ValueError, AttributeError):
        return False


def list_servers(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    """Newest first; a full page carries a servers_links "next" link, as Nova's does."""
    q = req.params
    if "all_tenants" in q or "host" in q:
        _require_admin(req, "os_compute_api:servers:detail:get_all_tenants")
    found = [s for s in reversed(sim.servers) if q.get("host", s.host) == s.host]
    if "marker" in q:
        ids = [s.id for s in found]
        if q["marker"] not in ids:
            raise NovaFault(400, f"marker [{q['marker']}] not found")
        found = found[ids.index(q["marker"]) + 1 :]
    try:
        limit = min(int(q.get("limit", sim.max_limit)), sim.max_limit)
    except ValueError as exc:
        raise NovaFault(400, "Invalid input for query parameters limit.") from exc
    page = found[:limit]
    body: dict[str, Any] = {"servers": [sim._server_view(s) for s in page]}
    if page and len(page) == limit:
        params = [(k, v) for k, v in req.query if k != "marker"] + [("marker", page[-1].id)]
        href = f"{sim.compute_url}/servers/detail?{urlencode(params)}"
        body["servers_links"] = [{"rel": "next", "href": href}]
    return 200, body


def show_server(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    return 200, {"server": sim._server_view(sim._server(req.parts[1]))}


def server_action(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    srv = sim._server(req.parts[1])
    action = req.action
    handler = ACTIONS.get(action or "")
    if handler is None:
        raise NovaFault(400, f"There is no such action: {action}")
    arg = req.body[action] if action else None
    return handler(sim, req, srv, arg)


def _record(sim: NovaSimulator, req: Request, srv: Server, action: str) -> InstanceAction:
    """Nova records an accepted request as an instance action before carrying it out."""
    recorded = InstanceAction(action, req.request_id, sim.clock.now(), req.user_id, req.project_id)
    srv.actions.append(recorded)
    return recorded


def list_instance_actions(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    """GET /servers/{id}/os-instance-actions: newest first; from 2.58 with ``updated_at`` and
    paged by ``limit`` and ``marker`` (a request id), as Nova pages them."""
    srv = sim._server(req.parts[1])
    if not req.is_admin and req.project_id != srv.tenant_id:
        raise NovaFault(404, f"Instance {srv.id} could not be found.")
    # Nova orders by created_at, then by id (the order recorded): of two actions recorded
    # at the same time, the later one comes first.
    order = {id(a): n for n, a in enumerate(srv.actions)}
    actions = sorted(srv.actions, key=lambda a: (a.start, order[id(a)]), reverse=True)
    if req.microversion >= (2, 58):
        q = req.params
        if "marker" in q:
            ids = [a.request_id for a in actions]
            if q["marker"] not in ids:
                raise NovaFault(404, f"Marker {q['marker']} could not be found.")
            actions = actions[ids.index(q["marker"]) + 1 :]
        if "limit" in q:
            actions = actions[: min(int(q["limit"]), sim.max_limit)]
    views = [dict(a.view(req.microversion), instance_uuid=srv.id) for a in actions]
    return 200, {"instanceActions": views}


def show_instance_action(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    """GET /servers/{id}/os-instance-actions/{request_id}: the action with its events, which
    an admin always sees (with their tracebacks) and its owner from 2.51 (without)."""
    srv = sim._server(req.parts[1])
    if not req.is_admin and req.project_id != srv.tenant_id:
        raise NovaFault(404, f"Instance {srv.id} could not be found.")
    found = next((a for a in srv.actions if a.request_id == req.parts[3]), None)
    if found is None:
        raise NovaFault(404, f"Action {req.parts[3]} not found")
    view = dict(found.view(req.microversion), instance_uuid=srv.id)
    if req.is_admin or req.microversion >= (2, 51):
        view["events"] = [e.view(req.microversion, req.is_admin) for e in found.events]
    return 200, {"instanceAction": view}


def _ignored(sim: NovaSimulator, srv: Server, action: str) -> bool:
    return sim._take_fault(("ignore_action",), "POST", "", action, srv.id) is not None


def _event(sim: NovaSimulator, recorded: InstanceAction, event: str, host: str | None) -> None:
    """An event that succeeded at once, as the simulator carries out lock, unlock, stop and
    start when it accepts them."""
    now = sim.clock.now()
    recorded.events.append(ActionEvent(event, now, now, "Success", host=host))


def lock(sim: NovaSimulator, req: Request, srv: Server, arg: Any) -> tuple[int, Any]:
    # The API locks the instance itself, inside an EventReporter (nova/compute/api.py lock).
    _event(sim, _record(sim, req, srv, "lock"), "api_lock", "api")
    srv.locked = True
    return 202, None


def unlock(sim: NovaSimulator, req: Request, srv: Server, arg: Any) -> tuple[int, Any]:
    _event(sim, _record(sim, req, srv, "unlock"), "api_unlock", "api")
    srv.locked = False
    return 202, None


def reset_state(sim: NovaSimulator, req: Request, srv: Server, arg: Any) -> tuple[int, Any]:
    _require_admin(req, "os_compute_api:os-admin-actions:reset_state")
    state = arg.get("state") if isinstance(arg, dict) else None
    if state not in ("active", "error"):
        raise NovaFault(400, "Invalid input for field/attribute state.")
    # Nova's API records it too (nova/api/openstack/compute/admin_actions.py), once valid.
    _record(sim, req, srv, "resetState")
    if not _ignored(sim, srv, "os-resetState"):
        srv.vm_state, srv.task_state = state, None
    return 202, None


def _check_state(srv: Server, action: str, vm_states: tuple[str, ...]) -> None:
    """nova/compute/api.py check_instance_state: the vm_state, then a task in progress; the
    409 names the one that failed (nova/api/openstack/common.py)."""
    for attr, state, allowed in (
        ("vm_state", srv.vm_state, vm_states),
        ("task_state", srv.task_state, (None,)),
    ):
        if state not in allowed:
            raise NovaFault(
                409, f"Cannot '{action}' instance {srv.id} while it is in {attr} {state}"
            )


def stop(sim: NovaSimulator, req: Request, srv: Server, arg: Any) -> tuple[int, Any]:
    _check_state(srv, "stop", ("active", "error"))
    recorded = _record(sim, req, srv, "stop")
    if not _ignored(sim, srv, "os-stop"):
        srv.vm_state, srv.power_state, srv.task_state = "stopped", 4, None
        _event(sim, recorded, "compute_stop_instance", srv.host)
    return 202, None


def start(sim: NovaSimulator, req: Request, srv: Server, arg: Any) -> tuple[int, Any]:
    _check_state(srv, "start", ("stopped",))
    recorded = _record(sim, req, srv, "start")
    if not _ignored(sim, srv, "os-start"):
        srv.vm_state, srv.power_state = "active", 1
        _event(sim, recorded, "compute_start_instance", srv.host)
    return 202, None


def evacuate(sim: NovaSimulator, req: Request, srv: Server, arg: Any) -> tuple[int, Any]:
    """The checks in Nova's order (the target, the server's state, the source: the
    conformance fake checks the state first); the move itself is an Evacuation that _tick
    completes when it is due and its destination runs."""
    _require_admin(req, "os_compute_api:os-evacuate")
    arg = arg if isinstance(arg, dict) else {}
    if set(arg) - {"host", "force", "adminPass"}:
        raise NovaFault(400, "Invalid input for field/attribute evacuate.")
    target = arg.get("host")
    # The evacuate API checks the target first (nova/api/openstack/compute/evacuate.py), then
    # compute API's evacuate the server's state (check_instance_state), then the source.
    if target is not None:
        if sim._service_on(target) is None:
            raise NovaFault(404, f"Compute host {target} not found.")
        if target == srv.host:
            raise NovaFault(400, "The target host can't be the same one.")
    _check_state(srv, "evacuate", ("active", "stopped", "error"))
    source = sim._service_on(srv.host)
    if source is not None and sim.service_state(source) == "up":
        raise NovaFault(400, f"Compute service of {srv.host} is still in use.")
    recorded = _record(sim, req, srv, "evacuate")
    # The API's migration row, "accepted" (nova/compute/api.py evacuate): pre-migrating once
    # scheduled, then done on arrival, error if the conductor found no host, failed if the
    # destination's rebuild failed; completed when the source's nova-compute starts again.
    migration = nova_migrations.new_record(sim, srv, "evacuation", req)
    migration.dest_compute = target
    if _ignored(sim, srv, "evacuate"):
        return 200, None
    now = sim.clock.now()
    if sim._take_fault(("evacuate_error",), "POST", "", "evacuate", srv.id):
        # the rebuild failed on the destination's compute
        migration.set(now, status="failed")
        srv.vm_state, srv.task_state = "error", None
        recorded.events += [
            ActionEvent("rebuild_server", now, now, "Success", host="conductor"),
            ActionEvent("compute_rebuild_instance", now, now, "Error", "BuildAbortException"),
        ]
        return 200, None

    def usable(s: Service) -> bool:
        return (
            s.binary == "nova-compute"
            and s.status == "enabled"
            and (sim.service_state(s) == "up")
            # the scheduler's Placement query: no room, no host (NoValidHost)
            and sim.placement.fits(s.hypervisor_hostname, srv.flavor.resources())
        )

    if target is not None:
        dest = target if usable(sim._service_on(target) or _missing(target)) else None
    else:
        dest = next((s.host for s in sim.services if usable(s) and s.host != srv.host), None)
    if dest is None:
        # The conductor's scheduling fails (NoValidHost): the instance is put in error where
        # it is, its task cleared, and the action's rebuild_server event ends in Error
        # (nova/conductor/manager.py rebuild_instance), as a real Nova 34 was seen to do.
        sim.evacuations_accepted[srv.id] = sim.evacuations_accepted.get(srv.id, 0) + 1
        migration.set(now, status="error")
        srv.vm_state, srv.task_state = "error", None
        recorded.events.append(
            ActionEvent(
                "rebuild_server",
                now,
                now,
                "Error",
                "nova.exception.NoValidHost: No valid host was found.",
                host="conductor",
            )
        )
        return 200, None
    # Nova claims on the destination when it schedules; the source is freed on arrival.
    sim.placement.allocate(
        srv.id, sim._hypervisor_of(dest), srv.flavor.resources(), srv.tenant_id, srv.user_id
    )
    recorded.events.append(ActionEvent("rebuild_server", now, now, "Success", host="conductor"))
    srv.task_state = "rebuilding"
    migration.set(now, status="pre-migrating", dest_compute=dest)
    sim._accept_evacuation(srv.id, dest, recorded, migration)
    sim._tick()
    return 200, None


def list_aggregates(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    _require_admin(req, "os_compute_api:os-aggregates:index")
    return 200, {"aggregates": [sim._aggregate_view(a) for a in sim.aggregates]}


def list_server_groups(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    """Nova's index: the token's project's groups, every project's with all_projects (admin);
    limit (at most max_limit) and offset page it. Before 2.64 the policy is a list."""
    q = req.params
    everyone = q.get("all_projects", "").lower() in ("1", "true", "yes")
    if everyone:
        _require_admin(req, "os_compute_api:os-server-groups:index:all_projects")
    project = ADMIN_PROJECT_ID if req.is_admin else MEMBER_PROJECT_ID
    found = [g for g in sim.server_groups if everyone or g.project_id == project]
    try:
        offset = int(q.get("offset", 0))
        limit = min(int(q.get("limit", sim.max_limit)), sim.max_limit)
    except ValueError as exc:
        raise NovaFault(400, "Invalid input for query parameters limit or offset.") from exc
    new_style = req.microversion >= (2, 64)

    def view(g: ServerGroup) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": g.id,
            "name": g.name,
            "members": list(g.members),
            "metadata": {},
            "project_id": g.project_id,
            "user_id": "user-demo",
        }
        if new_style:
            body.update(policy=g.policy, rules={})
        else:
            body["policies"] = [g.policy]
        return body

    return 200, {"server_groups": [view(g) for g in found[offset : offset + limit]]}


def aggregate_action(sim: NovaSimulator, req: Request) -> tuple[int, Any]:
    agg = sim._aggregate(req.parts[1])
    arg = (req.body or {}).get(req.action) or {}
    host: str | None = arg.get("host") if isinstance(arg, dict) else None
    if req.action == "add_host":
        _require_admin(req, "os_compute_api:os-aggregates:add_host")
        if host is None or sim._service_on(host) is None:
            raise NovaFault(404, f"Compute host {host} could not be found.")
        if host in agg.hosts:
            raise NovaFault(409, f"Aggregate {agg.id} already has host {host}.")
        agg.hosts.append(host)
    elif req.action == "remove_host":
        _require_admin(req, "os_compute_api:os-aggregates:remove_host")
        if host is None or host not in agg.hosts:
            raise NovaFault(404, f"Cannot remove host {host} in aggregate {agg.id}")
        agg.hosts.remove(host)
    else:
        raise NovaFault(400, f"Invalid action {req.action}")
    return 200, {"aggregate": sim._aggregate_view(agg)}


Handler = Callable[[NovaSimulator, Request], tuple[int, Any]]
ROUTES: list[tuple[str, tuple[str, ...], Handler]] = [
    ("GET", ("os-services",), list_services),
    ("PUT", ("os-services", "*"), update_service),
    ("GET", ("servers", "detail"), list_servers),
    ("GET", ("servers", "*"), show_server),
    ("GET", ("servers", "*", "os-instance-actions"), list_instance_actions),
    ("GET", ("servers", "*", "os-instance-actions", "*"), show_instance_action),
    ("POST", ("servers", "*", "action"), server_action),
    ("GET", ("os-aggregates",), list_aggregates),
    ("GET", ("os-server-groups",), list_server_groups),
    ("POST", ("os-aggregates", "*", "action"), aggregate_action),
]


ACTIONS: dict[str, Callable[[NovaSimulator, Request, Server, Any], tuple[int, Any]]] = {
    "lock": lock,
    "unlock": unlock,
    "os-resetState": reset_state,
    "os-stop": stop,
    "os-start": start,
    "evacuate": evacuate,
}


# Live migrations and the migration records: a module of their own, imported last since it
# builds on the model above (it imports this module).
from tests.fakes import nova_migrations  # noqa: E402

ROUTES += nova_migrations.ROUTES
ACTIONS.update(nova_migrations.ACTIONS)


# --- HTTP ---------------------------------------------------------------------------------


def _microversion(headers: Mapping[str, str]) -> str | None:
    """The compute microversion asked for, from either of Nova's two headers (the legacy one
    first, as the conformance fake reads them); ``headers`` has lower-case names."""
    legacy = headers.get("x-openstack-nova-api-version")
    if legacy:
        return legacy.strip()
    words = (headers.get("openstack-api-version") or "").split()
    return words[1] if len(words) == 2 and words[0].lower() == "compute" else None


def _handler_for(sim: NovaSimulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as keystoneauth's pool expects
        # headers and body go out in two writes: without this, Nagle's algorithm and the
        # client's delayed ACK add 40 ms to every call
        disable_nagle_algorithm = True

        def setup(self) -> None:
            if sim.max_connections is not None:
                self.timeout = IDLE_TIMEOUT  # frees the connection of an idle client
            super().setup()

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def answer_late(self, seconds: float) -> bool:
            """Hold the answer ``seconds`` (wall clock); True if the simulator stopped."""
            return sim._stopping.wait(seconds)

        def send(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
            raw = isinstance(body, bytes)
            data = body if raw else b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if data and not raw:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def dispatch(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:
                # The client went away mid-body: as any HTTP server, drop the incomplete
                # request (nothing recorded, nothing done, no answer).
                self.close_connection = True
                return
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            query = parse_qsl(url.query, keep_blank_values=True)
            if url.path.startswith(IDENTITY_PREFIX):
                self.keystone(url.path[len(IDENTITY_PREFIX) :], body)
            elif url.path.startswith("/compute"):
                self.nova(url.path[len("/compute") :], query, body)
            elif url.path.startswith(PLACEMENT_PREFIX):
                self.placement(url.path[len(PLACEMENT_PREFIX) :], query, body)
            else:
                self.send(404, {"error": {"code": 404, "message": "Not Found"}})

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = dispatch  # noqa: N815

        def keystone(self, path: str, body: Any) -> None:
            with sim.lock:
                sim.keystone_calls.append((self.command, path))
            version = {
                "id": "v3.14",
                "status": "stable",
                "updated": "2020-04-07T00:00:00Z",
                "links": [{"rel": "self", "href": sim.auth_url + "/"}],
                "media-types": [
                    {
                        "base": "application/json",
                        "type": "application/vnd.openstack.identity-v3+json",
                    }
                ],
            }
            if path in ("", "/"):
                return self.send(300, {"versions": {"values": [version]}})
            if path in ("/v3", "/v3/"):
                return self.send(200, {"version": version})
            if path != "/v3/auth/tokens":
                return self.send(404, {"error": {"code": 404, "message": "Not Found"}})
            if self.command == "POST":
                try:
                    token, info = sim.issue_token(body)
                except NovaFault as err:
                    return self.send(
                        err.status, {"error": {"code": err.status, "message": err.message}}
                    )
                return self.send(201, sim.token_body(info), {"X-Subject-Token": token})
            if self.command == "DELETE":
                return self.send(204, None)
            with sim.lock:
                caller = sim.tokens.get(self.headers.get("X-Auth-Token", ""))
                subject = self.headers.get("X-Subject-Token", "")
                subject_info = sim.tokens.get(subject)
            if caller is None:
                return self.send(
                    401,
                    {
                        "error": {
                            "code": 401,
                            "title": "Unauthorized",
                            "message": "The request you have made requires authentication.",
                        }
                    },
                )
            if subject_info is None:
                return self.send(
                    404,
                    {
                        "error": {
                            "code": 404,
                            "title": "Not Found",
                            "message": f"Could not find token: {subject}",
                        }
                    },
                )
            return self.send(200, sim.token_body(subject_info), {"X-Subject-Token": subject})

        def placement(self, path: str, query: list[tuple[str, str]], body: Any) -> None:
            with sim.lock:
                token = sim.tokens.get(self.headers.get("X-Auth-Token", ""))
                if token is None:
                    return self.send(401, {"errors": [{"status": 401, "title": "Unauthorized"}]})
                sim._tick()
                status, out, headers = sim.placement.handle(
                    self.command, path, query, self.headers.get("OpenStack-API-Version"), body
                )
            self.send(status, out, headers)

        def nova(self, path: str, query: list[tuple[str, str]], body: Any) -> None:
            mv = _microversion({k.lower(): v for k, v in self.headers.items()})
            rid = "req-" + str(uuid.uuid4())
            headers = {"x-openstack-request-id": rid, "X-Compute-Request-Id": rid}
            if mv:
                headers["OpenStack-API-Version"] = "compute " + mv
                headers["X-OpenStack-Nova-API-Version"] = mv
            if path in ("", "/", "/v2.1", "/v2.1/"):  # version discovery: not recorded
                return self.send(
                    200,
                    {
                        "version": {
                            "id": "v2.1",
                            "status": "CURRENT",
                            "version": "{}.{}".format(*MAX_MICROVERSION),
                            "min_version": "2.1",
                        }
                    },
                    headers,
                )
            rel = path[len("/v2.1") :] if path.startswith("/v2.1/") else path
            with sim.lock:
                call = Call(
                    len(sim.calls) + 1,
                    sim.clock.now(),
                    self.command,
                    rel,
                    sorted([k, v] for k, v in query),
                    body,
                    mv,
                )
                sim.calls.append(call)
                token = sim.tokens.get(self.headers.get("X-Auth-Token", ""))
                call.caller = token["user"] if token is not None else None
            flaw = sim.roll_flaky() if token is not None else None
            call.fault = flaw
            if flaw == "reset":
                call.status = 599
                _reset(self.connection)
                self.close_connection = True
                return None
            if flaw == "unavailable":
                call.status = 503
                return self.send(
                    503, BALANCER_503, {"Connection": "close", "Content-Type": "text/html"}
                )
            try:
                if token is None:
                    raise NovaFault(401, "The request you have made requires authentication.")
                major, _, minor = (mv or "2.1").partition(".")
                req = Request(
                    self.command,
                    rel,
                    [p for p in rel.split("/") if p],
                    query,
                    body,
                    (int(major), int(minor or 0)),
                    "admin" in token["roles"],
                    rid,
                    token["user_id"],
                    token["project_id"],
                )
                _answering.late = self.answer_late
                try:
                    status, out = sim.handle_nova(req)
                finally:
                    _answering.late = None
            except NovaFault as err:
                status = err.status
                out = {
                    _FAULT_NAMES.get(status, "computeFault"): {
                        "code": status,
                        "message": err.message,
                    }
                }
            except Exception as exc:  # a simulator bug must still answer, and visibly
                status, out = 500, {"computeFault": {"code": 500, "message": f"sim: {exc!r}"}}
            call.status = status
            if flaw == "late" and self.answer_late(
                sim.flakiness.late_seconds if sim.flakiness else 0
            ):
                return None
            self.send(status, out, headers)

    return Handler
