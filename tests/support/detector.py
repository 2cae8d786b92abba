"""A failure detector driven one poll at a time: its lease as the test says, on the test's
clock (the Nova simulator answering in process on the same clock)."""

from __future__ import annotations

import datetime
from typing import Any

from masakari.engine.lease import Lease, LeaseLost
from tests.support.clock import FakeClock


class GivenLease:
    """The detector's lease as the test says: held, lost, and whether the database failed."""

    owner = "engine-a"
    renew_interval = 1.0

    def __init__(self, clock: FakeClock) -> None:
        self.held: Lease | None = Lease("engine-a", 1, clock, 100.0, 0.0)
        self.database_failed = False
        # A takeover the lease's row shows and this detector does not know of yet.
        self.taken_over = False
        self.storm_until: datetime.datetime | None = None

    def current(self) -> Lease | None:
        return self.held

    def fence(self, session: Any) -> None:
        """A report's transaction holds the lease, unless the test says it was taken over."""
        if self.taken_over:
            raise LeaseLost()

    def keep_storm(self, until: datetime.datetime) -> None:
        self.storm_until = until
