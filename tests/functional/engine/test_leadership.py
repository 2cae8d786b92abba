"""An engine that does not lead leaves the periodic tasks to the one that does."""

from __future__ import annotations

import datetime
import time

from masakari import coordination
from masakari.db import statuses
from masakari.engine.service import EngineService
from tests.support.engine import HOST_DOWN, add_host, add_segment, make_conf, notify
from tests.support.engine import status_of as _status


class _Follower:
    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def runs_periodic_tasks(self) -> bool:
        return False


def test_a_follower_engine_leaves_expiry_to_the_leader(db, sim) -> None:
    conf = make_conf(
        sim,
        check_expired_notifications_interval=1,
        notifications_expired_interval=60,
        process_unfinished_notifications_interval=1,
    )
    seg = add_segment(db)
    host = add_host(db, seg, "compute-1")
    # Too old to be processed: the expiry task fails it, when it runs.
    generated = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(
        hours=1
    )
    old = notify(db, host, "COMPUTE_HOST", HOST_DOWN, statuses.ERROR, generated)
    follower = EngineService(conf, db, sim.client(timeout=5), leadership=_Follower())
    follower.start()
    try:
        time.sleep(2.5)
        assert _status(db, old) == statuses.ERROR
    finally:
        follower.stop(grace=2)
    leader = EngineService(conf, db, sim.client(timeout=5), leadership=coordination.Everyone())
    leader.start()
    try:
        deadline = time.monotonic() + 10
        while _status(db, old) != statuses.FAILED:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        leader.stop(grace=2)
