"""Nova and Placement ports for a process that may start before its clients can be built.

masakari-engine starts without usable Nova credentials, as the reference's does: each call
then fails with the NovaError of the failed build, so the recovery ends ``error`` and is
retried, and the first call after the options were fixed builds the real client (the
process's :class:`masakari.compute.clients.Clients`, built by its entry point; the API uses
the same, with its own retry policy, for its host check and 1.5 routes). Each class
implements its port (:class:`~masakari.engine.ports.Nova`,
:class:`~masakari.engine.capacity.Capacities`) method by method.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from masakari.compute.nova import NovaClient
from masakari.compute.placement import HostCapacity, PlacementClient, ProviderInventory
from masakari.engine.ports import (
    Aggregate,
    InstanceAction,
    Migration,
    Server,
    ServerGroup,
    Service,
)

C = TypeVar("C")


class _Deferred(Generic[C]):
    def __init__(self, build: Callable[[], C]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._built: C | None = None

    def _client(self) -> C:
        with self._lock:
            if self._built is None:
                self._built = self._build()  # raises until the options work
            return self._built


class LazyNova:
    """The client ``build`` returns (``functools.partial(clients.nova, policy)``), asked for
    at each call, so that one that cannot be built yet fails that call only."""

    def __init__(self, build: Callable[[], NovaClient]) -> None:
        self._build = build

    def _client(self) -> NovaClient:
        return self._build()  # raises until the options work

    def get_compute_service(self, host: str) -> Service:
        return self._client().get_compute_service(host)

    def find_compute_services(self, host: str) -> list[Service]:
        return self._client().find_compute_services(host)

    def list_servers_on_host(self, host: str) -> list[Server]:
        return self._client().list_servers_on_host(host)

    def get_server(self, server_id: str) -> Server:
        return self._client().get_server(server_id)

    def list_instance_actions(self, server_id: str) -> list[InstanceAction]:
        return self._client().list_instance_actions(server_id)

    def list_migrations(
        self, server_id: str, migration_type: str | None = "live-migration"
    ) -> list[Migration]:
        return self._client().list_migrations(server_id, migration_type)

    def list_aggregates(self) -> list[Aggregate]:
        return self._client().list_aggregates()

    def list_server_groups(self) -> list[ServerGroup]:
        return self._client().list_server_groups()

    def disable_service(self, service_id: str, reason: str | None = None) -> None:
        self._client().disable_service(service_id, reason)

    def enable_service(self, service_id: str) -> None:
        self._client().enable_service(service_id)

    def force_down_service(self, service_id: str, forced_down: bool = True) -> None:
        self._client().force_down_service(service_id, forced_down)

    def lock_server(self, server_id: str) -> None:
        self._client().lock_server(server_id)

    def unlock_server(self, server_id: str) -> None:
        self._client().unlock_server(server_id)

    def reset_state(self, server_id: str, state: str) -> None:
        self._client().reset_state(server_id, state)

    def stop_server(self, server_id: str) -> None:
        self._client().stop_server(server_id)

    def start_server(self, server_id: str) -> None:
        self._client().start_server(server_id)

    def evacuate(self, server_id: str, host: str | None = None) -> None:
        self._client().evacuate(server_id, host)

    def live_migrate(
        self, server_id: str, host: str | None = None, block_migration: bool | str = "auto"
    ) -> None:
        self._client().live_migrate(server_id, host, block_migration)

    def add_host_to_aggregate(self, aggregate_id: Any, host: str) -> None:
        self._client().add_host_to_aggregate(aggregate_id, host)


class LazyPlacement(_Deferred[PlacementClient]):
    """Placement through Nova's session (the same credentials), built at first use
    (``functools.partial(clients.placement, policy)``)."""

    def __init__(self, build: Callable[[], PlacementClient]) -> None:
        super().__init__(build)

    def host_capacity(self, name: str) -> HostCapacity | None:
        return self._client().host_capacity(name)

    def inventory(self, name: str) -> ProviderInventory | None:
        return self._client().inventory(name)

    def set_reserved(self, found: ProviderInventory, resource_class: str, reserved: int) -> int:
        return self._client().set_reserved(found, resource_class, reserved)
