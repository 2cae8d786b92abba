"""A real OpenStack control plane on loopback: upstream Keystone, Placement, Glance and Nova
(API, conductor, scheduler, one nova-compute per fake host with Nova's own fake virt driver).

    cloud = Cloud(Layout(state=Path("os-state"), venv=Path(".venv-openstack")))
    cloud.up()                      # about a minute; cloud.json written into the state
    cloud = Cloud.load(Path("os-state"))   # in another process (a test), the same cloud
    cloud.kill_compute("compute-1")        # kill -9 of that host's nova-compute
    cloud.reset()                          # every compute up and enabled, no server left
    cloud.nova.get("/os-services?binary=nova-compute")
    cloud.down()

The facts behind the settings: ../shared/notes/real-openstack-on-loopback.md and
docs/real-openstack.md.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keystoneauth1 import adapter, session
from keystoneauth1.identity import v3

from tests.support.openstack import bootstrap, processes
from tests.support.openstack.config import PASSWORD, REGION, Layout

# Nova's microversion for the drills' own reads and boots: 2.74 boots on a named host,
# 2.53 addresses services by id (what masakari uses), 2.84 shows instance action event details.
NOVA_VERSION = "2.84"
STATE_FILE = "cloud.json"


class NotReady(RuntimeError):
    pass


def wait_for(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.5) -> Any:
    """``check()``'s first truthy value; NotReady after ``timeout`` (the last error said). An
    AssertionError of ``check`` ends the wait at once."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except AssertionError:
            raise  # the check's own verdict: waiting longer cannot change it
        except Exception as exc:  # a service still starting answers anything
            last = exc
        if time.monotonic() > deadline:
            raise NotReady(f"{what}: not ready after {timeout:.0f} s (last error: {last!r})")
        time.sleep(interval)


@dataclasses.dataclass
class Cloud:
    layout: Layout
    image: str = ""
    flavors: dict[str, str] = dataclasses.field(default_factory=dict)

    # --- life -------------------------------------------------------------------------------

    @classmethod
    def load(cls, state: Path) -> Cloud:
        data = json.loads((state / STATE_FILE).read_text())
        layout = Layout(
            **{
                **data["layout"],
                "state": Path(data["layout"]["state"]),
                "venv": Path(data["layout"]["venv"]),
                "computes": tuple(data["layout"]["computes"]),
            }
        )
        return cls(layout, data["image"], data["flavors"])

    def save(self) -> None:
        layout = {f.name: getattr(self.layout, f.name) for f in dataclasses.fields(self.layout)}
        layout.update(state=str(self.layout.state), venv=str(self.layout.venv))
        data = {"layout": layout, "image": self.image, "flavors": self.flavors}
        (self.layout.state / STATE_FILE).write_text(json.dumps(data, indent=2))

    def up(self, log: Callable[[str], None] = print) -> None:
        """Bring the whole control plane up from empty databases; times printed by ``log``."""
        layout = self.layout
        started = time.monotonic()

        def step(text: str) -> None:
            log(f"[{time.monotonic() - started:5.1f} s] {text}")

        self.down(quiet=True)
        bootstrap.wipe_state(layout.state)
        bootstrap.write_configs(layout)
        bootstrap.create_databases(layout)
        bootstrap.fresh_vhost(layout)
        step("databases and vhost created")
        bootstrap.sync_schemas(layout)
        step("schemas synced, keystone bootstrapped")
        processes.start(layout, "keystone")
        wait_for("keystone", lambda: self.admin_session().get_token(), 60)
        bootstrap.register(layout, self.admin_session())
        step("keystone up, users and catalog registered")
        for name in (
            "placement",
            "glance",
            "nova-api",
            "neutron",
            "nova-conductor",
            "nova-scheduler",
        ):
            processes.start(layout, name)
        for host in layout.computes:
            processes.start(layout, processes.compute_name(host))
        wait_for("nova-api", lambda: self.nova.get("/").ok, 90)
        self.wait_computes(layout.computes, "up", timeout=120)
        step(f"{len(layout.computes)} computes up")
        bootstrap.run(
            [
                str(layout.venv / "bin" / "nova-manage"),
                "--config-file",
                str(layout.dir("nova") / "nova.conf"),
                "cell_v2",
                "discover_hosts",
            ]
        )
        wait_for(
            "resource providers", lambda: len(self.resource_providers()) == len(layout.computes), 60
        )
        made = bootstrap.image_and_flavors(self.admin_session())
        self.image, self.flavors = made["image"], made["flavors"]
        self.save()
        step("hosts discovered, image and flavors made: ready")

    def down(self, quiet: bool = False, purge: bool = False) -> None:
        """Stop every process (SIGTERM, then SIGKILL); ``purge`` drops the databases too."""
        for name in reversed(processes.names(self.layout)):
            processes.stop(self.layout, name, timeout=10)
        if purge:
            bootstrap.create_databases(self.layout, create=False)
        if not quiet:
            print("stopped")

    def reset(self) -> None:
        """Every compute running, enabled and up; no server and no aggregate left."""
        # Enabled before its nova-compute starts: the compute then clears the
        # COMPUTE_STATUS_DISABLED trait of its resource provider at start (the scheduler skips
        # a provider with it).
        for service in self.services().values():
            if service["status"] != "enabled":
                self.nova.put(f"/os-services/{service['id']}", json={"status": "enabled"})
        restarted = [h for h in self.layout.computes if not self.compute_running(h)]
        for host in self.layout.computes:
            self.start_compute(host)
        for service in self.services().values():
            if service["forced_down"]:
                # Refused (400) while the host has evacuations its restarted nova-compute has
                # not completed yet (it does at start).
                path = f"/os-services/{service['id']}"
                wait_for(
                    f"{service['host']} no longer forced down",
                    lambda path=path: (
                        self.nova.put(path, json={"forced_down": False}, raise_exc=False).ok
                    ),
                    90,
                    interval=2,
                )
        self.wait_computes(self.layout.computes, "up", timeout=90)
        if restarted:
            self._wait_heartbeats(restarted)
        wait_for("no provider disabled", lambda: not self.disabled_providers(), 90, interval=1)
        self.delete_all_servers()
        for aggregate in self.nova.get("/os-aggregates").json()["aggregates"]:
            for host in aggregate["hosts"]:
                self.nova.post(
                    f"/os-aggregates/{aggregate['id']}/action", json={"remove_host": {"host": host}}
                )
            self.nova.delete(f"/os-aggregates/{aggregate['id']}")

    def status(self) -> dict[str, int | None]:
        return {name: processes.pid(self.layout, name) for name in processes.names(self.layout)}

    # --- hosts ------------------------------------------------------------------------------

    def kill_compute(self, host: str, sig: int = signal.SIGKILL) -> None:
        """Stop ``host``'s nova-compute with ``sig`` (kill -9 by default): the host's death as
        Nova sees it, its heartbeats stop."""
        processes.stop(self.layout, processes.compute_name(host), sig=sig)

    def start_compute(self, host: str) -> None:
        processes.start(self.layout, processes.compute_name(host))

    def compute_running(self, host: str) -> bool:
        return processes.pid(self.layout, processes.compute_name(host)) is not None

    def services(self) -> dict[str, dict[str, Any]]:
        """nova-compute services by host, as Nova's API shows them."""
        listed = self.nova.get("/os-services?binary=nova-compute").json()["services"]
        return {s["host"]: s for s in listed}

    def wait_computes(
        self, hosts: tuple[str, ...] | list[str], state: str, timeout: float = 60
    ) -> None:
        def reached() -> bool:
            services = self.services()
            return all(services.get(h, {}).get("state") == state for h in hosts)

        wait_for(f"computes {', '.join(hosts)} {state}", reached, timeout)

    def _wait_heartbeats(self, hosts: list[str], count: int = 2) -> None:
        """Wait for ``count`` writes of each host's service row after this moment. Nova counts
        a compute up on its last heartbeat (``last_seen_up``, which its API does not show) for
        service_down_time: one killed moments ago still counts up. Its row's ``updated_at``
        moves on each heartbeat and on admin changes; once those are made, only the running
        nova-compute writes it, and the second write is a heartbeat."""
        seen = {h: [_written(s)] for h, s in self.services().items() if h in hosts}

        def written() -> bool:
            for host, service in self.services().items():
                if host in seen and _written(service) != seen[host][-1]:
                    seen[host].append(_written(service))
            return all(len(times) > count for times in seen.values())

        wait_for(f"{', '.join(hosts)} heartbeating", written, 90, interval=0.5)

    def resource_providers(self) -> list[dict[str, Any]]:
        return list(self.placement.get("/resource_providers").json()["resource_providers"])

    def disabled_providers(self) -> list[str]:
        """The compute providers Nova's scheduler skips (trait COMPUTE_STATUS_DISABLED)."""
        found = []
        for provider in self.resource_providers():
            traits = self.placement.get(f"/resource_providers/{provider['uuid']}/traits")
            if "COMPUTE_STATUS_DISABLED" in traits.json()["traits"]:
                found.append(str(provider["name"]))
        return found

    # --- servers ----------------------------------------------------------------------------

    def wait_active(self, servers: list[str]) -> list[str]:
        """``servers`` (booted with wait=False, side by side), once all are ACTIVE."""
        for server in servers:
            self.wait_server(server, lambda s: s["status"] == "ACTIVE", 120)
        return servers

    def boot(
        self,
        name: str,
        host: str,
        flavor: str = "m1.small",
        wait: bool = True,
        metadata: dict[str, str] | None = None,
    ) -> str:
        """A server on ``host`` (no network); its id, ACTIVE when ``wait``."""
        body: dict[str, Any] = {
            "name": name,
            "imageRef": self.image,
            "flavorRef": self.flavors[flavor],
            "networks": "none",
            "host": host,
        }
        if metadata:
            body["metadata"] = metadata
        server = self.nova.post("/servers", json={"server": body}).json()["server"]["id"]
        if wait:
            self.wait_server(server, lambda s: s["status"] == "ACTIVE", 120)
        return str(server)

    def server(self, server_id: str) -> dict[str, Any]:
        return dict(self.nova.get(f"/servers/{server_id}").json()["server"])

    def wait_server(
        self, server_id: str, check: Callable[[dict[str, Any]], bool], timeout: float
    ) -> dict[str, Any]:
        def seen() -> dict[str, Any] | None:
            server = self.server(server_id)
            if server["status"] == "ERROR" and not check(server):
                raise AssertionError(f"server {server_id} in ERROR: {server.get('fault')}")
            return server if check(server) else None

        return dict(wait_for(f"server {server_id}", seen, timeout))

    def actions(self, server_id: str) -> list[dict[str, Any]]:
        """The server's instance actions, oldest first, each with its events."""
        listed = self.nova.get(f"/servers/{server_id}/os-instance-actions").json()
        found = []
        # Nova lists the newest first, in the order it recorded them (start times tie).
        for action in reversed(listed["instanceActions"]):
            detail = self.nova.get(
                f"/servers/{server_id}/os-instance-actions/{action['request_id']}"
            ).json()["instanceAction"]
            found.append(detail)
        return found

    def delete_all_servers(self, timeout: float = 120) -> None:
        listed = self.nova.get("/servers?all_tenants=1").json()["servers"]
        for server in listed:
            self.nova.delete(f"/servers/{server['id']}")
        wait_for(
            "servers deleted",
            lambda: not self.nova.get("/servers?all_tenants=1").json()["servers"],
            timeout,
        )

    # --- clients ----------------------------------------------------------------------------

    def admin_session(self, user: str = "admin", project: str = "admin") -> session.Session:
        auth = v3.Password(
            auth_url=self.layout.url("keystone"),
            username=user,
            password=PASSWORD,
            project_name=project,
            user_domain_name="Default",
            project_domain_name="Default",
        )
        return session.Session(auth=auth, timeout=120)

    @property
    def nova(self) -> adapter.Adapter:
        return self._adapter("compute", {"compute": NOVA_VERSION})

    @property
    def placement(self) -> adapter.Adapter:
        return self._adapter("placement", {"placement": "1.39"})

    def _adapter(self, kind: str, version: dict[str, str]) -> adapter.Adapter:
        cached = self.__dict__.setdefault("_adapters", {})
        if kind not in cached:
            headers = {"OpenStack-API-Version": " ".join(f"{k} {v}" for k, v in version.items())}
            if kind == "compute":
                headers["X-OpenStack-Nova-API-Version"] = NOVA_VERSION
            cached[kind] = adapter.Adapter(
                self.admin_session(),
                service_type=kind,
                # The catalog has a second compute entry, nova-drill (a drill's proxy).
                service_name="nova" if kind == "compute" else None,
                interface="public",
                region_name=REGION,
                additional_headers=headers,
                raise_exc=True,
            )
        return cached[kind]

    def masakari_credentials(self) -> dict[str, str]:
        """masakari.conf's [DEFAULT] os_privileged_user_* and [keystone_authtoken] values."""
        return {
            "auth_url": self.layout.url("keystone"),
            "username": "masakari",
            "password": PASSWORD,
            "project_name": "service",
        }


def _written(service: dict[str, Any]) -> str:
    """When the service's row was last written (``updated_at``, as Nova's API shows it)."""
    return str(service.get("updated_at") or "")
