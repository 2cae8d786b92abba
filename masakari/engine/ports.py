"""What the engine needs from outside: Nova (its reads, and its changes), and a clock."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from masakari.compute.servers import (
    Aggregate,
    InstanceAction,
    Migration,
    Server,
    ServerGroup,
    Service,
)
from masakari.engine.errors import Cancelled

__all__ = [
    "Aggregate",
    "Clock",
    "InstanceAction",
    "Migration",
    "Nova",
    "NovaReads",
    "Server",
    "ServerGroup",
    "Service",
]


class NovaReads(Protocol):
    """What recovery code may ask Nova directly: reads. Changes go through ``Effects``."""

    def find_compute_services(self, host: str) -> list[Service]: ...
    def list_servers_on_host(self, host: str) -> list[Server]: ...
    def get_server(self, server_id: str) -> Server: ...
    def list_instance_actions(self, server_id: str) -> list[InstanceAction]: ...
    def list_migrations(
        self, server_id: str, migration_type: str | None = "live-migration"
    ) -> list[Migration]: ...
    def list_aggregates(self) -> list[Aggregate]: ...
    def list_server_groups(self) -> list[ServerGroup]: ...


class RoomRelease(Protocol):
    """Gives a segment's held failover room back for a host failure's recovery
    (masakari.engine.room)."""

    def release(
        self, segment_uuid: str, notification_uuid: str, retry_while: Callable[[], None]
    ) -> int: ...


class Nova(NovaReads, Protocol):
    """The part of ``masakari.compute.nova.NovaClient`` the engine uses."""

    def disable_service(self, service_id: str, reason: str | None = None) -> Any: ...
    def enable_service(self, service_id: str) -> Any: ...
    def force_down_service(self, service_id: str, forced_down: bool = True) -> Any: ...
    def lock_server(self, server_id: str) -> Any: ...
    def unlock_server(self, server_id: str) -> Any: ...
    def reset_state(self, server_id: str, state: str) -> Any: ...
    def stop_server(self, server_id: str) -> Any: ...
    def start_server(self, server_id: str) -> Any: ...
    def evacuate(self, server_id: str, host: str | None = None) -> Any: ...
    def live_migrate(
        self, server_id: str, host: str | None = None, block_migration: bool | str = "auto"
    ) -> Any: ...
    def add_host_to_aggregate(self, aggregate_id: Any, host: str) -> Any: ...


class Clock:
    """Wall time (naive UTC, as the database stores it), monotonic time and sleep."""

    def now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float, cancel: threading.Event) -> None:
        """Sleep, waking early (and raising Cancelled) when ``cancel`` is set."""
        if cancel.wait(max(seconds, 0.0)):
            raise Cancelled()

    def wait(self, condition: threading.Condition, seconds: float | None = None) -> None:
        """Wait on ``condition`` (held) until it is notified or ``seconds`` of this clock have
        passed (None: until notified). It may also return early: its callers look again."""
        condition.wait(None if seconds is None else max(seconds, 0.0))
