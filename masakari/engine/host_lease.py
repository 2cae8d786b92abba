"""A failed host's shared-disk leases as an engine reads them: the fence step's veto and
proof, and the verdict's evidence (docs/operations.md § The shared-disk lease).

Not the engine's own lease on a notification (:mod:`masakari.engine.lease`): this one is a
compute host's slot on shared storage, judged by :mod:`masakari.fencing.lease` on the run's
monotonic clock from masakari's first read of it. Each judgement that ends a watch (the
host renews, its lease expired, the slot proves nothing, the watch timed out) and the
fence step's stall are recorded once as a fence attempt (action ``lease``): an expiry is a
proof like a power off, which a later look (a retry, a takeover, the fence step after the
verdict) reads rather than watching again.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import NoReturn

from masakari.db import fencing as fence_db
from masakari.db import holds
from masakari.engine.context import RunContext
from masakari.fencing.base import LEASE, DriverSpec
from masakari.fencing.lease import Judgement, Lease, LeaseWatch, Word

FINAL = (Word.RENEWING, Word.EXPIRED, Word.FAILED)
_RESULTS = {
    Word.RENEWING: fence_db.RENEWING,
    Word.EXPIRED: fence_db.EXPIRED,
    Word.STALLED: fence_db.STALLED,
    Word.FAILED: fence_db.FAILED,
    Word.WATCHING: fence_db.TIMEOUT,
}


class HostLeases:
    """The ``lease`` entries of one host's escalation list, each watched from its first look
    on the run's clock, for one verdict or one fence step."""

    def __init__(
        self,
        run: RunContext,
        host: str,
        specs: Sequence[DriverSpec],
    ) -> None:
        self._run = run
        self._host = host
        self._specs = {i: spec for i, spec in enumerate(specs) if spec.type == LEASE}
        self._watches = {
            i: LeaseWatch(Lease.of(spec), run.clock.monotonic) for i, spec in self._specs.items()
        }
        self._first_look: dict[int, tuple[float, datetime.datetime]] = {}
        self._recorded: set[tuple[int, Word]] = set()
        self._vetted = False

    def _look(self, position: int) -> Judgement:
        if position not in self._first_look:
            self._first_look[position] = (self._run.clock.monotonic(), self._run.clock.now())
        return self._watches[position].look()

    def _record(self, position: int, judgement: Judgement, timed_out: bool = False) -> None:
        word = Word.WATCHING if timed_out else judgement.word
        if (position, word) in self._recorded:
            return
        self._recorded.add((position, word))
        self._run.effects.fencing.record_fence(
            self._host,
            position,
            self._specs[position].describe(),
            fence_db.LEASE,
            _RESULTS[word],
            judgement.message,
            self._first_look[position][1],
            judgement.watched,
            LEASE,
        )

    # --- the verdict ---------------------------------------------------------------------------

    def evidence(self) -> tuple[str | None, str | None]:
        """One look at each lease, without waiting: why the host is known to run (a renewal
        seen), and what proved it dead (an expiry, recorded as a fence attempt)."""
        for position, spec in self._specs.items():
            judgement = self._look(position)
            if judgement.word is Word.RENEWING:
                return f"the host renews its lease ({spec.describe()}: {judgement.message})", None
            if judgement.word is Word.EXPIRED:
                self._record(position, judgement)
                return None, f"{spec.describe()}: lease expired: {judgement.message}"
        return None, None

    # --- the fence step ----------------------------------------------------------------------

    def veto(self, note: Callable[[str, float], None], hold: Callable[[str], NoReturn]) -> None:
        """Before the host's first power driver, wherever its leases sit in the list: each
        watched until it renews (``hold`` is called: the host runs, partitioned), stalls
        (the power drivers may go on), expires or proves nothing. Once per fence step."""
        if self._vetted:
            return
        self._vetted = True
        for position, spec in self._specs.items():
            note(f"Watching {spec.describe()} before any power driver", 0.1)
            judgement = self._watch(position, enough=(Word.STALLED,))
            if judgement.word is Word.RENEWING:
                self._renewing(position, judgement, hold)
            self._record(position, judgement)
            note(f"{spec.describe()}: {judgement.message}", 0.2)

    def prove(
        self,
        position: int,
        note: Callable[[str, float], None],
        hold: Callable[[str], NoReturn],
    ) -> str | None:
        """The lease entry at ``position`` in its place: None once expired (the proof),
        else why not; ``hold`` is called when the host renews."""
        spec = self._specs[position]
        lease = self._watches[position].lease
        note(f"Watching {spec.describe()} for up to {lease.timeout:g} s", 0.2)
        judgement = self._watch(position)
        if judgement.word is Word.RENEWING:
            self._renewing(position, judgement, hold)
        timed_out = judgement.word not in FINAL
        self._record(position, judgement, timed_out)
        if judgement.word is Word.EXPIRED:
            note(f"Host '{self._host}' proven dead by its lease: {judgement.message}", 1.0)
            return None
        why = f"not expired within {lease.timeout:g} s" if timed_out else judgement.message
        note(f"{spec.describe()}: {why}", 0.3)
        return why

    def _renewing(
        self, position: int, judgement: Judgement, hold: Callable[[str], NoReturn]
    ) -> NoReturn:
        self._record(position, judgement)
        hold(f"{holds.REASON_LEASE_RENEWED}{self._specs[position].describe()}: {judgement.message}")

    def _watch(self, position: int, enough: tuple[Word, ...] = ()) -> Judgement:
        """Look until a final word, one of ``enough``, or the entry's timeout (from the first
        valid read; the last look comes at or after it, so a timeout equal to the expiry
        can still see it)."""
        watch = self._watches[position]
        step = min(max(watch.lease.interval / 4, 0.05), 1.0)
        while True:
            self._run.check()
            begun = watch.started
            if begun is None:
                begun = self._first_look.get(position, (self._run.clock.monotonic(),))[0]
            out_of_time = self._run.clock.monotonic() - begun >= watch.lease.timeout
            judgement = self._look(position)
            if judgement.word in FINAL or judgement.word in enough or out_of_time:
                return judgement
            self._run.sleep(step)
