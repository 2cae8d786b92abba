"""What a recovery run is given: conf, Nova reads, its effects, a clock, and a way to stop it."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TypeVar

from oslo_config import cfg

from masakari import exception
from masakari.db.queue import NotificationData
from masakari.engine.capacity import Capacities, NoPlacement
from masakari.engine.effects import Effects
from masakari.engine.errors import Cancelled, PollTimeout
from masakari.engine.fencing import HostFencing
from masakari.engine.hostpoll import HostPoller
from masakari.engine.judges import Judged
from masakari.engine.lease import Lease
from masakari.engine.ports import Clock, NovaReads, RoomRelease
from masakari.engine.slots import EvacuationSlots

__all__ = ["Cancelled", "Clock", "InstanceJudge", "NovaReads", "PollTimeout", "RunContext"]

T = TypeVar("T")


@dataclasses.dataclass
class RunContext:
    """One run of one notification: everything a flow and its tasks may touch.

    ``nova`` answers reads; every change, in Nova or in the database, goes through
    ``effects``; both only while the effects' ``lease`` runs. ``placement`` answers the
    capacity checks (the engine's client, built in cmd/).
    """

    conf: cfg.ConfigOpts
    effects: Effects
    clock: Clock
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event)
    # Why the flow failed, when it did: for the versioned process.error notification.
    failure: BaseException | None = None
    # Shared by the engine's runs: the evacuation cap and the batched poll (None: off).
    slots: EvacuationSlots | None = None
    host_poller: HostPoller | None = None
    placement: Capacities = dataclasses.field(default_factory=NoPlacement)
    # The engine's host fencing ([fencing] config_file), None when not configured.
    fencing: HostFencing | None = None
    # Gives held failover room back ([capacity] hold_room); None when Placement is read-only.
    room: RoomRelease | None = None
    # The periodic retry of an attempt that ended in error (the claim took an error row).
    after_error: bool = False
    # Judges a VM report before its instance is restarted (masakari.signals); None: none.
    judge_instance: InstanceJudge | None = None

    @property
    def notification_uuid(self) -> str:
        return self.effects.notification_uuid

    @property
    def lease(self) -> Lease:
        return self.effects.lease

    @property
    def nova(self) -> NovaReads:
        return self.effects.reads

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


# (the run, its VM notification) -> a judgement, or None when there is none to make.
InstanceJudge = Callable[[RunContext, NotificationData], Judged | None]


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
