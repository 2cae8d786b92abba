"""One drill's run: its fenced writes, Nova and BMC calls under its lease, waits, phases."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from oslo_config import cfg
from sqlalchemy import orm

from masakari.db import drills as drills_db
from masakari.db.database import Database, read, transaction
from masakari.engine.capacity import Capacities
from masakari.engine.errors import Cancelled
from masakari.engine.fencing import HostFencing
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.ports import Clock, Nova
from masakari.metrics import drills as drill_metrics

T = TypeVar("T")


class DrillFailed(Exception):
    """An unexpected result: the drill stops here and restores the host."""


@dataclasses.dataclass
class State:
    """What the drill found and did, saved as its report after each step: an engine that
    takes it over reads it to restore the host."""

    checked: bool = False
    service_was: str | None = None  # the nova-compute status before the drill
    disabled_reason: str | None = None
    fence_driver: str | None = None  # the power driver used, as DriverSpec.describe()
    recovery_method: str | None = None
    verdict: str | None = None
    canaries: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    findings: list[str] = dataclasses.field(default_factory=list)
    phase: str | None = None  # the phase under way
    restored: bool = False

    @classmethod
    def of(cls, report: dict[str, Any]) -> State:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in report.items() if k in names})

    def report(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class DrillRun:
    conf: cfg.ConfigOpts
    db: Database
    nova: Nova
    placement: Capacities
    fencing: HostFencing | None
    clock: Clock
    lease: Lease
    cancel: threading.Event
    uuid: str
    segment_uuid: str
    host_uuid: str
    host: str
    no_fence: bool
    allow_untagged: bool
    move_back: bool
    state: State = dataclasses.field(default_factory=State)

    def write(self, fn: Callable[[orm.Session], T]) -> T:
        """``fn`` in a transaction fenced by our claim; LeaseLost once it is not ours."""

        def fenced(session: orm.Session) -> T:
            if not drills_db.fence(
                session, self.uuid, self.lease.owner, self.lease.token, self.clock.now()
            ):
                self.lease.lose()
                raise LeaseLost()
            return fn(session)

        self.lease.check()
        return transaction(self.db, fenced, retry_while=self.lease.check)

    def read(self, fn: Callable[[orm.Session], T]) -> T:
        return read(self.db, fn, retry_while=self.lease.check)

    def call(self, fn: Callable[[], T]) -> T:
        """A Nova or BMC call, sent only while the lease still runs."""
        if self.cancel.is_set():
            raise Cancelled()
        self.lease.check()
        return fn()

    def save(self) -> None:
        report = self.state.report()
        self.write(lambda s: drills_db.save_report(s, self.uuid, report))

    def wait(self, done: Callable[[], T | None], timeout: float, what: str) -> T:
        """Poll ``done`` every [drill] poll_interval until it returns a value; DrillFailed
        after ``timeout`` seconds."""
        deadline = self.clock.monotonic() + timeout
        while True:
            found = done()
            if found is not None:
                return found
            if self.clock.monotonic() >= deadline:
                raise DrillFailed(f"{what}: not within {timeout:g} s")
            self.lease.check()
            self.clock.sleep(self.conf.drill.poll_interval, self.cancel)

    @contextlib.contextmanager
    def phase(self, name: str, predicted: float | None = None) -> Iterator[list[str]]:
        """A timed phase: its row written when it starts and when it ends. The block adds
        detail lines to the list it gets; an error ends the phase failed and is raised as
        DrillFailed naming the phase."""
        self.state.phase = name
        started = self.clock.now()
        began = self.clock.monotonic()
        phase_id = self.write(
            lambda s: drills_db.begin_phase(
                s, self.uuid, self.lease.token, name, started, predicted
            )
        )
        notes: list[str] = []
        try:
            yield notes
        except Cancelled:
            raise  # LeaseLost too: the engine that takes it over restores
        except Exception as exc:
            why = str(exc) or type(exc).__name__
            self._end(phase_id, name, drills_db.PHASE_FAILED, began, [*notes, why])
            if isinstance(exc, DrillFailed):
                raise DrillFailed(f"{name}: {why}") from exc
            raise DrillFailed(f"{name}: {type(exc).__name__}: {why}") from exc
        late = predicted is not None and self.clock.monotonic() - began > predicted
        self._end(
            phase_id, name, drills_db.PHASE_LATE if late else drills_db.PHASE_OK, began, notes
        )
        if late:
            self.state.findings.append(f"{name} took longer than predicted ({predicted:g} s)")

    def _end(self, phase_id: int, name: str, result: str, began: float, notes: list[str]) -> None:
        seconds = self.clock.monotonic() - began
        ended = self.clock.now()
        self.write(lambda s: drills_db.end_phase(s, phase_id, result, ended, "\n".join(notes)))
        drill_metrics.phase_ended(name, result, seconds)
