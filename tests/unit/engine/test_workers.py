"""Worker admission: what a stopping engine does with the recoveries it gives up."""

from __future__ import annotations

import threading

from masakari.engine.lease import Lease
from masakari.engine.workers import Work, Workers


class Clock:
    def monotonic(self) -> float:
        return 0.0


def test_a_stopping_engine_ends_the_leases_it_releases() -> None:
    """A recovery still in a Nova call (retrying it, say) when the engine stops is released
    for another engine to take over: its lease ends first, so that the transport, which
    checks it before each send, sends nothing more for it."""
    workers = Workers(new=2, retry=0)
    claimed = threading.Event()
    stuck = threading.Event()
    leases: list[Lease] = []

    def job(item: Work) -> None:
        lease = Lease("engine", item.token, Clock(), 100.0, 0.0)
        leases.append(lease)
        workers.claimed(item, lease)
        claimed.set()
        stuck.wait(5)  # does not look at its cancel flag: a request under way
        workers.done(item)

    workers.submit("n-1", "host-1", False, job)
    assert claimed.wait(5)
    try:
        left = workers.stop(grace=0.1)
        assert list(left) == ["n-1"]
        assert leases[0].lost
    finally:
        stuck.set()
