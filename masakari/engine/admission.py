"""Admission of evacuations: when the next evacuate request of a host recovery may go.

One interface for the evacuation loop (masakari.engine.recovery.evacuate): the loop asks
``enter`` for each instance in order and hands the ticket to a worker, which ``wait``s for
its evacuation (prepared, and admitted) and ``release``s it once the evacuation is no longer
in flight. Two admissions:

- :class:`Threads` (the default, the reference's pool): ``host_failure_recovery_threads``
  evacuations of one ordering group at once; each is prepared (read, plan, lock) once
  admitted, in its worker.
- :class:`masakari.engine.slots.EvacuationSlots` (``max_evacuations_in_flight``): a cap
  shared by every notification of every engine; the next instance is prepared while it
  waits for its slot, and the loop waits with it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable
from typing import Protocol

from masakari.engine.effects import Effects, Plan, VMoveData
from masakari.engine.ports import Server

# Longest wait for a thread between two checks of the run's cancel flag and lease.
CHECK = 0.5
Priority = tuple[int, ...]


class Run(Protocol):
    """What admission needs of a recovery run (masakari.engine.context.Run)."""

    @property
    def effects(self) -> Effects: ...
    @property
    def notification_uuid(self) -> str: ...
    def check(self) -> None: ...


@dataclasses.dataclass
class Prepared:
    """An evacuation read and recorded, ready for its request: the instance as first found,
    its plan, and whether this run locked it."""

    vmove: VMoveData
    server: Server
    plan: Plan
    locked_by_us: bool

    @property
    def needs_reset(self) -> bool:
        # Nova evacuates only active, stopped and error instances without a task.
        return self.server.vm_state not in ("active", "error", "stopped") or (
            self.server.task_state is not None
        )


# Reads the instance, records its plan and locks it (recovery.moves.prepare, bound).
Prepare = Callable[[], Prepared | None]


@dataclasses.dataclass(frozen=True)
class Slot:
    """A slot held: its number, and whether the evacuation's vmove was marked ongoing with it."""

    number: int
    started: bool


class Ticket(Protocol):
    @property
    def started(self) -> bool:
        """Whether the vmove was marked ongoing at admission."""

    def wait(self) -> Prepared | None:
        """Block until admitted; the prepared evacuation, or None when it could not start."""

    def release(self) -> None:
        """The evacuation is no longer in flight (idempotent)."""


class Admission(Protocol):
    def enter(
        self,
        run: Run,
        priority: Priority,
        vmove: VMoveData,
        prepare: Prepare,
        preparer: concurrent.futures.Executor,
    ) -> Ticket: ...


class Threads:
    """At most ``count`` evacuations admitted at once (one group of one notification)."""

    def __init__(self, count: int) -> None:
        self._free = threading.BoundedSemaphore(max(1, count))

    def enter(
        self,
        run: Run,
        priority: Priority,
        vmove: VMoveData,
        prepare: Prepare,
        preparer: concurrent.futures.Executor,
    ) -> Ticket:
        return _ThreadTicket(self._free, run, prepare)


class _ThreadTicket:
    def __init__(self, free: threading.BoundedSemaphore, run: Run, prepare: Prepare) -> None:
        self._free = free
        self._run = run
        self._prepare = prepare
        self._held = False
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return False

    def wait(self) -> Prepared | None:
        self._run.check()
        while not self._free.acquire(timeout=CHECK):
            self._run.check()
        with self._lock:
            self._held = True
        return self._prepare()

    def release(self) -> None:
        with self._lock:
            held, self._held = self._held, False
        if held:
            self._free.release()


def ready(prepared: concurrent.futures.Future[Prepared | None]) -> Callable[[], int | None]:
    """The vmove to mark ongoing with a slot: only once prepared, and not when a reset must
    come first (the vmove turns ongoing after the reset, as without the cap)."""

    def vmove_id() -> int | None:
        if not prepared.done() or prepared.exception() is not None:
            return None
        result = prepared.result()
        if result is None or result.needs_reset:
            return None
        return result.vmove.id

    return vmove_id
