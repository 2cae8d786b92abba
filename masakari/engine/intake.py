"""Intake: the queue scan that finds candidates, and the claims that make one engine win.

One thread (:meth:`Intake.run`) polls the queue: a primary-key range above a high-water
mark every ``engine_poll_interval``, and a bounded *sweep* when one is due (every few
seconds, and as soon as a recovery ends). It only picks candidates; each is handed to a
worker (:mod:`masakari.engine.workers`), which takes the claim, the conditional write that
makes one engine win, and, if it won, runs the recovery.
"""

from __future__ import annotations

import datetime
import functools
import logging
import threading
from collections.abc import Callable

from oslo_config import cfg

from masakari import metrics
from masakari.db import claims, database, queue, statuses
from masakari.db.database import Database, transaction
from masakari.db.queue import Candidate
from masakari.engine import logtag
from masakari.engine.heartbeat import Heartbeat
from masakari.engine.lease import Lease
from masakari.engine.outage import Outage
from masakari.engine.ports import Clock
from masakari.engine.workers import Work, Workers

LOG = logging.getLogger(__name__)

# Rows read by one poll; the sweep catches what a poll left behind.
BATCH = 50
# Ids below the high-water mark a sweep still looks at: rows whose insert committed late.
SWEEP_SLACK = 1000
# Claim transactions one engine sends at once. A sweep hands out up to a worker per idle
# host in one go: unbounded, every one of those claims would hold a database connection at
# the same moment (the whole pool, 55 at oslo.db's defaults), while a few claims at a time
# already take them far faster than recoveries end.
CLAIMS_AT_ONCE = 8

# Takes the claim of one candidate with the given fencing token; whether it was taken.
Claim = Callable[[int], bool]
# Recovers a claimed notification (the runner's ``process``).
Recover = Callable[[Work, Lease], object]


class Intake:
    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        clock: Clock,
        workers: Workers,
        heartbeat: Heartbeat,
        recover: Recover,
        outage: Outage,
        stopping: threading.Event,
    ) -> None:
        self.conf = conf
        self.db = db
        self.clock = clock
        self.owner = heartbeat.owner
        self.workers = workers
        self.heartbeat = heartbeat
        self.recover = recover
        self.outage = outage
        self.stopping = stopping
        self._wake = threading.Event()
        self._sweep_due = True  # the first sweep, at once, looks at the rows below the mark
        self._hwm = 0
        self._lwm = 0
        self._claiming = threading.BoundedSemaphore(CLAIMS_AT_ONCE)

    # --- the loop --------------------------------------------------------------------------

    def run(self) -> None:
        """The intake thread, until the engine stops."""
        guard = self.outage.guard
        guard(self._start_marks)
        guard(self.take_over_orphans)
        while not self.stopping.is_set():
            guard(self.poll)
            if self._sweep_due:
                self._sweep_due = False
                guard(self.sweep)
            self._wake.wait(self.conf.engine_poll_interval)
            self._wake.clear()

    def wake(self) -> None:
        """Look in the database now rather than at the end of the poll interval."""
        self._wake.set()

    def request_sweep(self) -> None:
        """Sweep at the next turn of the loop (periodically, and when a worker frees up)."""
        self._sweep_due = True
        self._wake.set()

    def _start_marks(self) -> None:
        """Polls start at the newest row; the first sweep looks at older ones."""
        with self.db.reader() as session:
            self._hwm = queue.max_id(session)
        self._lwm = 0

    def _retry_new_before(self) -> datetime.datetime:
        return self.clock.now() - datetime.timedelta(
            seconds=self.conf.retry_notification_new_status_interval
        )

    def _open(self, retry: bool) -> bool:
        return not self.stopping.is_set() and self.workers.free(retry) > 0

    def poll(self) -> None:
        """Rows above the high-water mark: one primary-key range, usually empty.

        Every row moves the mark, whatever its status, so that the range stays short even
        when other engines take the work.
        """
        with self.db.reader() as session:
            rows = queue.after(session, self._hwm, BATCH)
        for row in rows:
            if row.status == statuses.NEW:
                if not self._open(retry=False):
                    return  # the rest stays above the mark for the next poll
                if not row.host_busy:
                    self._submit_row(row, retry=False)
            self._hwm = max(self._hwm, row.id)

    def sweep(self) -> None:
        """What polls left behind (busy hosts, late commits) and claims that expired."""
        watermark = self._hwm
        after, exhausted = self._start_idle_hosts()
        seen = watermark - SWEEP_SLACK if exhausted else after
        with self.db.reader() as session:
            waiting = queue.lowest_new_after(session, self._lwm)
        if waiting is not None:
            seen = min(seen, waiting - 1)
        self._lwm = max(self._lwm, seen)
        with self.db.reader() as session:
            expired = queue.takeover_candidates(session, self.clock.now(), BATCH)
        self._take_over(expired)

    def _start_idle_hosts(self) -> tuple[int, bool]:
        """Hand ``new`` rows of idle hosts above the low-water mark to workers, page after
        page while workers are free: the queued rows of busy hosts never hide those of idle
        ones.

        Returns the last id looked at, and whether every row was.
        """
        after, first_page = self._lwm, True
        while True:
            with self.db.reader() as session:
                rows = queue.new_after(
                    session, after, BATCH, idle_hosts_only=True, released=first_page
                )
            for row in rows:
                if not self._open(retry=False):
                    return after, False
                self._submit_row(row, retry=False)
                after = max(after, row.id)
            if len(rows) < BATCH:
                return after, True
            first_page = False

    def process_unfinished_notifications(self) -> None:
        """The retry task: ``error`` notifications, and ``new`` ones nobody took in time,
        once each. Every engine runs it; the claim makes each retry happen in one engine."""
        self.take_over_orphans()
        if not self._open(retry=True):
            return
        with self.db.reader() as session:
            rows = queue.retry_candidates(session, self._retry_new_before(), BATCH)
        for row in rows:
            if not self._open(retry=True):
                return
            if not row.host_busy:
                self._submit_row(row, retry=True)

    def take_over_orphans(self) -> None:
        """Running notifications without any claim row (a reference engine's, before an
        upgrade): at start and at each retry period."""
        with self.db.reader() as session:
            orphans = queue.orphan_candidates(session, BATCH)
        self._take_over(orphans)

    def _take_over(self, notification_uuids: list[str]) -> None:
        for notification_uuid in notification_uuids:
            if not self._open(retry=False):
                return
            claim = functools.partial(self._claim_orphan, notification_uuid)
            self._submit(notification_uuid, None, False, claim)

    def _submit_row(self, row: Candidate, retry: bool) -> None:
        claim = functools.partial(self._claim_row, row, retry)
        after_error = row.status == statuses.ERROR
        self._submit(row.notification_uuid, row.source_host_uuid, retry, claim, after_error)

    def _submit(
        self,
        notification_uuid: str,
        host_uuid: str | None,
        retry: bool,
        claim: Claim,
        after_error: bool = False,
    ) -> None:
        self.workers.submit(
            notification_uuid,
            host_uuid,
            retry,
            functools.partial(self._work, claim=claim),
            after_error=after_error,
        )

    # --- in the worker ---------------------------------------------------------------------

    def _work(self, item: Work, claim: Claim) -> None:
        looked = False
        try:
            with logtag.recovery(item.notification_uuid, self.owner):
                lease = self._claim(item, claim)
                looked = True
                if lease is not None:
                    self.recover(item, lease)
        except Exception:
            LOG.exception("Engine failed to finish notification %s", item.notification_uuid)
        finally:
            self.workers.done(item)
            if looked:
                # A worker is free again, and another notification of the same host may be
                # waiting for this one. Not when the claim raised: a database that is down
                # would make the loop sweep at every poll.
                self.request_sweep()

    def _claim(self, item: Work, claim: Claim) -> Lease | None:
        """Take the claim; its lease counts from before the claim was sent.

        None when another engine won the race, the notification moved on, or the engine is
        stopping: the worker has nothing to do.
        """
        with self._claiming:
            if self.stopping.is_set() or item.cancel.is_set():
                return None
            started = self.clock.monotonic()
            try:
                if not claim(item.token):
                    return None
            except database.DUPLICATE_ERRORS:  # a concurrent claim row insert won
                return None
        lease = Lease(self.owner, item.token, self.clock, self.heartbeat.lease_term, started)
        self.workers.claimed(item, lease)
        return lease

    def _claim_row(self, row: Candidate, retry: bool, token: int) -> bool:
        """A ``new`` (or, for a retry, ``error``) row: one engine wins, the others no-op."""
        generated_before = (
            self._retry_new_before() if retry and row.status == statuses.NEW else None
        )
        result = transaction(
            self.db,
            lambda session: claims.claim(
                session,
                row.notification_uuid,
                self.owner,
                token,
                from_statuses=[row.status],
                expires_at=self.heartbeat.expires_at(),
                generated_before=generated_before,
            ),
        )
        if result != claims.ClaimResult.CLAIMED:
            return False
        LOG.info("Claimed notification %s (%s)", row.notification_uuid, row.status)
        metrics.claim_taken()
        return True

    def _claim_orphan(self, notification_uuid: str, token: int) -> bool:
        """A running notification whose claim expired, or that has none."""
        taken = transaction(
            self.db,
            functools.partial(
                claims.take_over,
                notification_uuid=notification_uuid,
                owner=self.owner,
                token=token,
                now=self.clock.now(),
                expires_at=self.heartbeat.expires_at(),
            ),
        )
        if taken:
            LOG.warning(
                "Took over notification %s: its engine stopped renewing its claim",
                notification_uuid,
            )
            metrics.takeover()
        return bool(taken)
