"""A failure detector driven one poll at a time: its lease as the test says, on the test's
clock (the Nova simulator answering in process on the same clock); and one running in an
engine beside a deployment (:func:`detecting`)."""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from typing import Any

from masakari import coordination, detection
from masakari.compute import retry
from masakari.compute.nova import NovaClient
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.service import EngineService
from tests.support.clock import FakeClock
from tests.support.deployment import Deployment


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


@contextlib.contextmanager
def detecting(dep: Deployment) -> Iterator[EngineService]:
    """An engine whose only work is the failure detector (under [detection] of ``dep``'s
    conf), on the deployment's database and simulator; stopped at the end."""
    session = dep.sim.session(timeout=2)
    nova = NovaClient(session, timeout=2, policy=retry.DETECTION)
    probe = detection.keystone_probe(session, dep.sim.auth_url, 2)
    owner, leadership = "ctl-1:detector", coordination.Everyone()
    found = detection.build(dep.conf, dep.db, nova, probe, owner, leadership)
    assert found is not None
    service = EngineService(
        dep.conf,
        dep.db,
        dep.sim.client(timeout=5),
        owner=owner,
        leadership=leadership,
        addons=[found],
    )
    service.start()
    try:
        yield service
    finally:
        service.stop(grace=2)
