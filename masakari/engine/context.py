"""What a recovery run is given: conf, Nova reads, its effects, a clock, and a way to stop it."""

from __future__ import annotations

import dataclasses
import datetime
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from oslo_config import cfg

from masakari import exception
from masakari.engine.errors import Cancelled, PollTimeout
from masakari.engine.lease import Lease

if TYPE_CHECKING:
    from masakari.engine.effects import Effects

__all__ = ["Cancelled", "Clock", "Nova", "NovaReads", "PollTimeout", "RunContext"]

T = TypeVar("T")

Server = dict[str, Any]
Service = dict[str, Any]


class NovaReads(Protocol):
    """What recovery code may ask Nova directly: reads. Changes go through ``Effects``."""

    def find_compute_services(self, host: str) -> list[Service]: ...
    def list_servers_on_host(self, host: str) -> list[Server]: ...
    def get_server(self, server_id: str) -> Server: ...
    def list_aggregates(self) -> list[dict[str, Any]]: ...


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


@dataclasses.dataclass
class RunContext:
    """One run of one notification: everything a flow and its tasks may touch.

    ``nova`` answers reads; every change, in Nova or in the database, goes through
    ``effects``, which takes it only while ``lease`` runs.
    """

    conf: cfg.ConfigOpts
    nova: NovaReads
    effects: Effects
    clock: Clock
    lease: Lease
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event)

    @property
    def notification_uuid(self) -> str:
        return self.effects.notification_uuid

    def check(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()
        self.lease.check()

    def sleep(self, seconds: float) -> None:
        """Sleep; a lease that runs out meanwhile ends the sleep (and the run) at its end."""
        self.check()
        while seconds > 0:
            step = min(seconds, self.lease.remaining())
            if step <= 0:
                self.lease.check()
            self.clock.sleep(step, self.cancel)
            seconds -= step
            self.check()

    def poll(self, probe: Callable[[], T | None], interval: float, timeout: float) -> T:
        """Call ``probe`` now and every ``interval`` s until it answers something truthy.

        As the reference's looping calls: the probe runs before the timeout is checked, and a
        timeout of 0 (or less) means no timeout at all.
        """
        start = self.clock.monotonic()
        while True:
            self.check()
            result = probe()
            if result:
                return result
            if timeout > 0 and self.clock.monotonic() - start > timeout:
                raise PollTimeout()
            self.sleep(interval)


def nova_message(exc: BaseException) -> str:
    """The text a vmove records for a failure.

    The Nova client's errors already read as the reference's translated novaclient errors
    ("Invalid input received: ... (HTTP 400) (Request-ID: ...)", "Conflict", ...).
    """
    if isinstance(exc, exception.MasakariError):
        return exc.message
    return str(exc)


def is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, exception.NovaError) and exc.status == 409
