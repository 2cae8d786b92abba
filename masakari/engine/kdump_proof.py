"""When fence_kdump messages prove a failed host crashed: the one judgement of the fence step
and of the verdict.

A message is known only by its source address (masakari.fencing.kdump), so what makes it a
proof of *this* failure is when it came. It counts only when it arrived (an engine's clock,
``received_at``) after both

- the failure's report reached masakari (the notification's ``created_at``: masakari's own
  clock, never the reporter's ``generated_time``): a message sent before the report, forged
  or left over from an earlier crash, proves nothing of this one;
- the host's last heartbeat masakari can see (Nova's nova-compute ``updated_at``): a host
  that heartbeated after a message was running after it. Nova's API shows the service
  row's ``updated_at``, which a heartbeat moves, and so does any change of the row (a
  disable, a forced down): the fence step reads it before its own disable, and after it
  takes only a later write than the disable's for a heartbeat; a later run of the same
  failure (a retry, a takeover) reads a later bound, which only makes it wait for the
  host's next message. The failure detector's view of the heartbeat
  is Nova's too, read before its report was created, so the two bounds hold it. When Nova
  cannot be read the report's time alone bounds the window.

Then a kdump entry wants ``messages`` of them (:class:`~masakari.fencing.kdump.KdumpRule`),
each at least half the sender's interval after the one counted before it: one burst counts
once. ``[fencing] kdump_trust = hint`` makes what they prove a hint (recorded, a signal of
the verdict) rather than a proof of death.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Iterable

from masakari import exception
from masakari.compute.servers import first_service
from masakari.engine.context import RunContext
from masakari.fencing import kdump
from masakari.fencing.base import DriverSpec

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Window:
    """Messages count when they arrived strictly after ``after``; ``why`` says what bounds it."""

    after: datetime.datetime
    why: str


def counts_after(reported: datetime.datetime, last_heartbeat: datetime.datetime | None) -> Window:
    """Since when a crash message counts: after the report reached masakari and after the
    host's last heartbeat, whichever is later (both naive UTC)."""
    if last_heartbeat is not None and last_heartbeat > reported:
        return Window(last_heartbeat, f"the host's last heartbeat in Nova ({last_heartbeat})")
    return Window(reported, f"the report reached masakari ({reported})")


def proven_at(
    received: Iterable[datetime.datetime],
    window: Window,
    rule: kdump.KdumpRule,
) -> tuple[datetime.datetime | None, int]:
    """When ``rule.messages`` messages received in ``window``, each ``rule.spacing``
    seconds after the one counted before it, had come (None: not yet), and how many count."""
    spacing = datetime.timedelta(seconds=rule.spacing)
    counted: list[datetime.datetime] = []
    for at in sorted(t for t in received if t > window.after):
        if not counted or at - counted[-1] >= spacing:
            counted.append(at)
            if len(counted) == rule.messages:
                return at, len(counted)
    return None, len(counted)


@dataclasses.dataclass(frozen=True)
class Finding:
    """What a kdump entry's messages say of the host."""

    address: str
    window: Window
    rule: kdump.KdumpRule
    counted: int
    # When the last message the rule wants came; None: they have not all come.
    crashed_at: datetime.datetime | None
    # [fencing] kdump_trust = proof.
    trusted: bool

    @property
    def proves(self) -> bool:
        return self.crashed_at is not None and self.trusted

    @property
    def hints(self) -> bool:
        return self.crashed_at is not None and not self.trusted

    def describe(self) -> str:
        wanted = f"{self.counted} of {self.rule.messages} crash message(s) from {self.address}"
        spaced = f" ({self.rule.spacing:g} s apart)" if self.rule.messages > 1 else ""
        said = f"{wanted}{spaced} after {self.window.why}"
        if self.crashed_at is not None:
            said += f", the last at {self.crashed_at}"
        return said


class CrashMessages:
    """One host's kdump messages as a run sees them: the window and the messages are read
    at each :meth:`look`.

    Nova's ``updated_at`` is the service row's: a run's own change of the row (the fence
    step's disable) moves it as a heartbeat does. The fence step says when it changes the
    row (:meth:`before_own_change`, :meth:`after_own_change`): the heartbeat read before it
    stands until Nova shows a later write than the run's own, which only a heartbeat (or
    another change) makes.
    """

    def __init__(self, run: RunContext, host_name: str) -> None:
        self.run = run
        self.host_name = host_name
        self._reported: datetime.datetime | None = None
        self._before: datetime.datetime | None = None
        self._own: datetime.datetime | None = None
        self._marked = False

    def before_own_change(self) -> None:
        self._before = self._last_heartbeat()

    def after_own_change(self) -> None:
        self._own, self._marked = self._last_heartbeat(), True

    def window(self) -> Window:
        if self._reported is None:
            self._reported = self.run.effects.fencing.reported_to_masakari() or self.run.clock.now()
        seen = self._last_heartbeat()
        if self._marked and self._own is not None and (seen is None or seen <= self._own):
            seen = self._before  # nothing written after the run's own change
        return counts_after(self._reported, seen)

    def look(self, spec: DriverSpec) -> Finding:
        address = spec.address or self.host_name
        try:
            sources = kdump.resolve(address)
        except (OSError, UnicodeError) as exc:
            # A name that no longer resolves: no message can be told to be the host's.
            sources = set()
            LOG.warning("kdump entry of %s: %s does not resolve: %s", self.host_name, address, exc)
        window = self.window()
        rule = kdump.KdumpRule.of(spec)
        received = self.run.effects.fencing.kdump_messages(sources, window.after)
        crashed_at, counted = proven_at(received, window, rule)
        fencing = self.run.fencing
        trusted = fencing is not None and fencing.kdump_proves
        return Finding(address, window, rule, counted, crashed_at, trusted)

    def _last_heartbeat(self) -> datetime.datetime | None:
        try:
            service = first_service(self.run.nova.find_compute_services(self.host_name))
        except exception.NovaError as exc:
            LOG.warning(
                "kdump: Nova's heartbeat of %s not read (%s): messages count from the report",
                self.host_name,
                exc,
            )
            return None
        return None if service is None else service.updated_at
