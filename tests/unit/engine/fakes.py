"""Test doubles for the engine's unit tests: a Nova object, a clock that never waits."""

from __future__ import annotations

import dataclasses
import datetime
import threading
from typing import Any

from masakari import exception
from masakari.compute.servers import Server, Service
from masakari.engine.errors import Cancelled
from masakari.engine.ports import Clock


class FakeClock(Clock):
    """Time moves only when the code sleeps: a 180 s timeout costs nothing."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.lock = threading.Lock()

    def now(self) -> datetime.datetime:
        return datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=self.offset)

    def monotonic(self) -> float:
        return self.offset

    def sleep(self, seconds: float, cancel: threading.Event) -> None:
        if cancel.is_set():
            raise Cancelled()
        with self.lock:
            self.offset += seconds


def nova_error(status: int, text: str = "Unexpected API Error.") -> exception.NovaError:
    return exception.NovaError(f"{text} (HTTP {status})", status=status)


@dataclasses.dataclass
class FakeNova:
    """Nova's state machine as the conformance fake describes it, in memory.

    ``services``: host -> service dict; ``servers``: id -> server dict (Nova keys);
    ``fail``: (method name, server id or None) -> exception raised once;
    ``sticky``: server ids whose evacuation is accepted but never happens.
    """

    services: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    servers: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    aggregates: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    server_groups: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    fail: dict[tuple[str, str | None], Exception] = dataclasses.field(default_factory=dict)
    sticky: set[str] = dataclasses.field(default_factory=set)
    ignore: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    calls: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)

    def add_service(self, host: str, status: str = "enabled", state: str = "up") -> None:
        self.services[host] = {
            "id": f"svc-{host}",
            "host": host,
            "binary": "nova-compute",
            "status": status,
            "state": state,
            "forced_down": False,
            "disabled_reason": None,
        }

    def add_server(self, sid: str, host: str, vm_state: str = "active", **kw: Any) -> str:
        self.servers[sid] = {
            "id": sid,
            "name": kw.pop("name", "vm-" + sid),
            "metadata": kw.pop("metadata", {}),
            "locked": kw.pop("locked", False),
            "OS-EXT-STS:vm_state": vm_state,
            "OS-EXT-STS:task_state": kw.pop("task_state", None),
            "OS-EXT-STS:power_state": kw.pop("power_state", 4 if vm_state == "stopped" else 1),
            "OS-EXT-SRV-ATTR:host": host,
            "OS-EXT-SRV-ATTR:hypervisor_hostname": host,
        }
        return sid

    def _call(self, name: str, server: str | None = None, *args: Any) -> None:
        self.calls.append((name, server, *args))
        for key in ((name, server), (name, None)):
            if key in self.fail:
                raise self.fail.pop(key)

    def _server(self, sid: str) -> dict[str, Any]:
        if sid not in self.servers:
            raise nova_error(404, "Not found")
        return self.servers[sid]

    # --- the Nova protocol -----------------------------------------------------------------

    def find_compute_services(self, host: str) -> list[Service]:
        self._call("find_compute_services", None, host)
        return [Service.of(self.services[host])] if host in self.services else []

    def _service(self, service_id: str) -> dict[str, Any]:
        return next(s for s in self.services.values() if s["id"] == service_id)

    def disable_service(self, service_id: str, reason: str | None = None) -> None:
        self._call("disable_service", None, service_id, reason)
        self._service(service_id).update(status="disabled", disabled_reason=reason)

    def enable_service(self, service_id: str) -> None:
        self._call("enable_service", None, service_id)
        self._service(service_id).update(status="enabled", disabled_reason=None)

    def force_down_service(self, service_id: str, forced_down: bool = True) -> None:
        self._call("force_down_service", None, service_id, forced_down)
        self._service(service_id).update(forced_down=forced_down)

    def list_servers_on_host(self, host: str) -> list[Server]:
        self._call("list_servers_on_host", None, host)
        on_host = [s for s in self.servers.values() if s["OS-EXT-SRV-ATTR:host"] == host]
        return [Server.of(s) for s in reversed(on_host)]

    def get_server(self, server_id: str) -> Server:
        self._call("get_server", server_id)
        return Server.of(self._server(server_id))

    def lock_server(self, server_id: str) -> None:
        self._call("lock", server_id)
        self._server(server_id)["locked"] = True

    def unlock_server(self, server_id: str) -> None:
        self._call("unlock", server_id)
        self._server(server_id)["locked"] = False

    def reset_state(self, server_id: str, state: str) -> None:
        self._call("reset_state", server_id, state)
        self._server(server_id).update(
            {"OS-EXT-STS:vm_state": state, "OS-EXT-STS:task_state": None}
        )

    def stop_server(self, server_id: str) -> None:
        self._call("stop", server_id)
        server = self._server(server_id)
        if server["OS-EXT-STS:vm_state"] not in ("active", "error"):
            raise nova_error(409, "Conflict")
        if ("stop", server_id) not in self.ignore:
            server.update({"OS-EXT-STS:vm_state": "stopped", "OS-EXT-STS:power_state": 4})

    def start_server(self, server_id: str) -> None:
        self._call("start", server_id)
        server = self._server(server_id)
        if server["OS-EXT-STS:vm_state"] != "stopped":
            raise nova_error(409, "Conflict")
        if ("start", server_id) not in self.ignore:
            server.update({"OS-EXT-STS:vm_state": "active", "OS-EXT-STS:power_state": 1})

    def evacuate(self, server_id: str, host: str | None = None) -> None:
        self._call("evacuate", server_id, host)
        server = self._server(server_id)
        if server["OS-EXT-STS:vm_state"] not in ("active", "stopped", "error"):
            raise nova_error(409, "Conflict")
        if server_id in self.sticky:
            return
        source = server["OS-EXT-SRV-ATTR:host"]
        dest = host or next(
            h for h, s in self.services.items() if h != source and s["status"] == "enabled"
        )
        server.update(
            {
                "OS-EXT-SRV-ATTR:host": dest,
                "OS-EXT-SRV-ATTR:hypervisor_hostname": dest,
                "OS-EXT-STS:task_state": None,
            }
        )
        if server["OS-EXT-STS:vm_state"] == "error":
            server["OS-EXT-STS:vm_state"] = "active"

    def list_aggregates(self) -> list[dict[str, Any]]:
        self._call("list_aggregates")
        return [dict(a, hosts=list(a["hosts"])) for a in self.aggregates]

    def list_server_groups(self) -> list[dict[str, Any]]:
        self._call("list_server_groups")
        return [dict(g, members=list(g["members"])) for g in self.server_groups]

    def add_host_to_aggregate(self, aggregate_id: Any, host: str) -> None:
        self._call("add_host_to_aggregate", None, aggregate_id, host)
        aggregate = next(a for a in self.aggregates if a["id"] == aggregate_id)
        if host in aggregate["hosts"]:
            raise nova_error(409, "Conflict")
        aggregate["hosts"].append(host)

    def actions(self, server_id: str) -> list[str]:
        return [c[0] for c in self.calls if c[1] == server_id and c[0] != "get_server"]
