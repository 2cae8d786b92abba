"""Periodic tasks on futurist's periodic worker, and the expiry task.

What runs, and how often, is one table: ``EngineService.periodic_tasks`` builds it. Each task
runs in a thread of its own, so that a slow task (a retry round, a locked heartbeat write)
never delays another (a claim renewal); a task is never run twice at once, and a run that
overruns its period is followed by the next one as soon as it ends.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import logging
import threading
import warnings
from collections.abc import Callable, Sequence

from oslo_config import cfg

from masakari import coordination
from masakari.db import claims
from masakari.db.database import Database, transaction
from masakari.engine.outage import Outage
from masakari.engine.ports import Clock
from masakari.engine.workers import Workers

with warnings.catch_warnings():
    # futurist looks for eventlet when imported, and eventlet warns when imported; the
    # engine runs no eventlet code.
    warnings.simplefilter("ignore")
    from futurist import periodics

LOG = logging.getLogger(__name__)

# Rows the expiry marks failed per transaction; it goes on while a batch comes back full.
BATCH = 50


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    every: float
    step: Callable[[], object]
    # The first run at start; otherwise (as the reference's periodic tasks) one period after.
    at_start: bool = False
    # Run only while this engine leads ([coordination]); on time, but skipped, otherwise.
    leader_only: bool = False
    # Whether a success shows the database answered (Outage.guard).
    proves_db_up: bool = True


class Periodic:
    """Runs the tasks from ``start()`` to ``stop()``."""

    def __init__(
        self,
        tasks: Sequence[Task],
        outage: Outage,
        leadership: coordination.Leadership,
        clock: Clock,
    ) -> None:
        self.tasks = list(tasks)
        self._worker = periodics.PeriodicWorker(
            [(self._callable(task, outage, leadership), None, None) for task in self.tasks],
            # The standard pool: its threads end at shutdown (futurist's idle for up to 1 s).
            executor_factory=lambda: concurrent.futures.ThreadPoolExecutor(
                max_workers=len(self.tasks), thread_name_prefix="engine-periodic"
            ),
            schedule_strategy="last_started",
            now_func=clock.monotonic,
        )
        self._thread = threading.Thread(
            target=self._worker.start,
            kwargs={"allow_empty": True},
            name="engine-periodic",
            daemon=True,
        )

    @staticmethod
    def _callable(
        task: Task, outage: Outage, leadership: coordination.Leadership
    ) -> Callable[[], None]:
        @periodics.periodic(task.every, run_immediately=task.at_start)
        def run() -> None:
            if task.leader_only and not leadership.runs_periodic_tasks():
                return
            outage.guard(task.step, task.proves_db_up, task.name)

        run.__name__ = task.name
        return run

    def start(self) -> None:
        self._worker.reset()  # the schedule counts from now, not from construction
        self._thread.start()

    def stop(self, grace: float) -> None:
        """No new runs; wait up to ``grace`` for those under way."""
        self._worker.stop()
        if self._thread.is_alive():
            self._worker.wait(grace)


def check_expired_notifications(
    conf: cfg.ConfigOpts,
    db: Database,
    clock: Clock,
    workers: Workers,
    stopping: threading.Event,
) -> None:
    """Fail unfinished notifications older than notifications_expired_interval; a run of
    this engine on one of them stops. A released notification's age counts from its
    release (db.claims.expire)."""
    before = clock.now() - datetime.timedelta(seconds=conf.notifications_expired_interval)
    while not stopping.is_set():
        expired = transaction(db, lambda session: claims.expire(session, before, BATCH))
        for notification_uuid in expired:
            LOG.error(
                "Periodic task 'check_expired_notifications': Notification %s is expired.",
                notification_uuid,
            )
        workers.cancel(expired)
        if len(expired) < BATCH:
            return
