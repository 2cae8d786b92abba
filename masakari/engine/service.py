"""masakari-engine: takes notifications from the database, recovers, and writes the outcome.

One loop thread polls the queue (a primary-key range above a high-water mark every
``engine_poll_interval``, a bounded sweep every few seconds), finds notifications whose
claim expired, and runs the periodic retry and expiry tasks; it only picks candidates. A
bounded pool of worker threads claims each candidate (the conditional write that makes one
engine win) and runs its recovery, with slots of its own for the periodic retries so that a
slow retry never delays a new notification; a heartbeat thread renews the claims taken.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import functools
import itertools
import logging
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

from oslo_config import cfg

from masakari import coordination, exception, metrics, notifier
from masakari.db import claims, database, engines, queue, statuses
from masakari.db.database import Database, transaction
from masakari.db.queue import Candidate
from masakari.engine import logtag, tasks, wakeup
from masakari.engine.capacity import Capacities, DeferredPlacement
from masakari.engine.context import RunContext
from masakari.engine.effects import Effects
from masakari.engine.errors import Cancelled
from masakari.engine.hostpoll import HostPoller
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.ports import Clock, Nova
from masakari.engine.recovery import dispatch
from masakari.engine.recovery.flow import FlowTasks
from masakari.engine.slots import EvacuationSlots

LOG = logging.getLogger(__name__)

# Retries recovered at once on top of [DEFAULT] executor_thread_pool_size new notifications.
DEFAULT_RETRY_WORKERS = 2
# Rows read by one poll; the sweep catches what a poll left behind.
BATCH = 50
# Seconds between two sweeps of the queue (new rows the range scan missed, expired claims).
SWEEP_INTERVAL = 5.0
# Ids below the high-water mark a sweep still looks at: rows whose insert committed late.
SWEEP_SLACK = 1000
# Seconds a stopping engine waits for its cancelled recoveries to unwind.
STOP_GRACE = 5.0
# Claim transactions one engine sends at once. A sweep hands out up to a worker per idle
# host in one go: unbounded, every one of those claims would hold a database connection at
# the same moment (the whole pool, 55 at oslo.db's defaults), while a few claims at a time
# already take them far faster than recoveries end.
CLAIMS_AT_ONCE = 8


# Takes the claim of one candidate with the given fencing token; whether it was taken.
Claim = Callable[[int], bool]


@dataclasses.dataclass
class _Work:
    """A candidate handed to a worker: unclaimed until ``lease`` is set, then a recovery."""

    notification_uuid: str
    token: int
    retry: bool
    cancel: threading.Event
    host_uuid: str | None = None  # None for a takeover: its host is busy in the database
    lease: Lease | None = None
    future: concurrent.futures.Future[None] | None = None
    finishing: bool = False


def lease_timing(conf: cfg.ConfigOpts) -> tuple[float, float]:
    """(renewal interval, lease term): the term is the claim's lifetime less the margin.

    Refused unless a renewal can fail once and be tried again before the term ends.
    """
    term = conf.engine_claim_timeout - conf.engine_claim_margin
    interval = conf.engine_claim_renew_interval
    if term <= interval:
        raise exception.InvalidConfiguration(
            message="engine_claim_renew_interval must be shorter than engine_claim_timeout "
            f"less engine_claim_margin ({conf.engine_claim_timeout} - "
            f"{conf.engine_claim_margin} = {term:g} s)"
        )
    return interval, term


class EngineService:
    """Everything one masakari-engine process runs. ``start()``, then ``stop()``."""

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        nova: Nova,
        *,
        clock: Clock | None = None,
        owner: str | None = None,
        workers: int | None = None,
        retry_workers: int = DEFAULT_RETRY_WORKERS,
        sweep_interval: float = SWEEP_INTERVAL,
        flows: FlowTasks | None = None,
        leadership: coordination.Leadership | None = None,
        placement: Capacities | None = None,
    ) -> None:
        self.conf = conf
        self.db = db
        self.nova = nova
        self.placement = placement or DeferredPlacement(conf, nova)
        self.clock = clock or Clock()
        # A fresh id per process: a restarted engine does not inherit its old claims, it
        # takes them over once they expire like any other engine would.
        self.owner = owner or f"{conf.host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.flows = flows or tasks.load_flows(conf)
        self.notifier = notifier.Notifier(conf, "masakari-engine")
        self.renew_interval, self.lease_term = lease_timing(conf)
        # The reference's engine runs as many notifications at once as oslo.messaging's
        # executor has threads: the same option, with its meaning, bounds this engine.
        self.workers = workers or conf.executor_thread_pool_size
        self.retry_workers = retry_workers
        self.sweep_interval = sweep_interval
        self._tokens = itertools.count(1)
        self._lock = threading.Lock()
        self._active: dict[str, _Work] = {}
        self._wake = threading.Event()
        self._db_down = threading.Event()
        self._stopping = threading.Event()
        self._sweep_due = True
        self._hwm = 0
        self._lwm = 0
        self._claiming = threading.BoundedSemaphore(CLAIMS_AT_ONCE)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.workers + retry_workers, thread_name_prefix="recovery"
        )
        cap = conf.max_evacuations_in_flight
        self.slots = EvacuationSlots(cap, self.clock) if cap > 0 else None
        self.host_poller = (
            HostPoller(nova, conf.verify_interval, self.clock)
            if conf.evacuation_batched_polling
            else None
        )
        self._threads: list[threading.Thread] = []
        # Optional backends: a cast that ends the poll's wait early, and the election of the
        # engine that runs the periodic tasks. Neither is needed for correctness.
        self._listener = wakeup.listener(conf, self.wake)
        self.leadership = leadership or coordination.leadership(conf, self.owner)

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        LOG.info("masakari-engine %s starting", self.owner)
        if self.host_poller is not None:
            self.host_poller.start()
        for target, name in (
            (self._loop, "engine-loop"),
            (self._heartbeat, "engine-claims"),
            (self._liveness, "engine-heartbeat"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self.leadership.start()
        if self._listener is not None:
            self._listener.start()

    def wake(self) -> None:
        """Look in the database now rather than at the end of the poll interval."""
        self._wake.set()

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop taking work, cancel the recoveries, release what did not finish."""
        LOG.info("masakari-engine %s stopping", self.owner)
        self._stopping.set()
        self._wake.set()
        if self._listener is not None:
            self._listener.stop()
        self.leadership.stop()
        for thread in self._threads:
            thread.join(timeout=grace)
        with self._lock:
            running = list(self._active.values())
        for item in running:
            item.cancel.set()
        futures = [w.future for w in running if w.future is not None]
        concurrent.futures.wait(futures, timeout=grace)
        with self._lock:
            left = {w.notification_uuid: w.token for w in self._active.values() if w.lease}
        if left:
            self._release(left)
        if self.host_poller is not None:
            self.host_poller.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)
        try:
            transaction(self.db, lambda s: engines.forget(s, self.owner))
        except database.DB_ERRORS as exc:
            LOG.warning("Could not remove this engine's heartbeat: %s", exc)
        LOG.info("masakari-engine %s stopped", self.owner)

    # --- the loop --------------------------------------------------------------------------

    def _loop(self) -> None:
        conf = self.conf
        started = self.clock.monotonic()
        periodic = conf.periodic_enable
        next_sweep = started
        # As the reference's periodic tasks: the first run is one interval after start.
        next_retry = started + conf.process_unfinished_notifications_interval
        next_expiry = started + conf.check_expired_notifications_interval
        self._guard(self._start_marks)
        self._guard(self._take_over_orphans)
        while not self._stopping.is_set():
            now = self.clock.monotonic()
            self._guard(self.poll)
            if self._sweep_due or now >= next_sweep:
                self._sweep_due = False
                next_sweep = now + self.sweep_interval
                self._guard(self.sweep)
            leads = periodic and self.leadership.runs_periodic_tasks()
            if periodic and now >= next_retry:
                next_retry = now + conf.process_unfinished_notifications_interval
                if leads:
                    self._guard(self.process_unfinished_notifications)
            if periodic and now >= next_expiry:
                next_expiry = now + conf.check_expired_notifications_interval
                if leads:
                    self._guard(self.check_expired_notifications)
            self._wake.wait(conf.engine_poll_interval)
            self._wake.clear()

    def _start_marks(self) -> None:
        """Polls start at the newest row; the first sweep, at once, looks at older ones."""
        with self.db.reader() as session:
            self._hwm = queue.max_id(session)
        self._lwm = 0

    def _guard(self, step: Callable[[], Any], proves_db_up: bool = True) -> None:
        """A database failure must not kill the loop: say so once per outage, go on.

        Steps run again next round; claims whose renewals keep failing end with their leases.
        """
        name = getattr(step, "__name__", step)
        try:
            step()
        except database.DB_ERRORS as exc:
            if not database.unreachable(exc):
                LOG.warning("Engine step %s failed: %s", name, exc)
            elif not self._db_down.is_set():
                self._db_down.set()
                LOG.error("Database unreachable (engine step %s): %s", name, exc)
            return
        except Exception:
            LOG.exception("Engine step %s failed", name)
            return
        if proves_db_up and self._db_down.is_set():
            self._db_down.clear()
            LOG.warning("Database reachable again")

    def _free(self, retry: bool) -> int:
        with self._lock:
            used = sum(1 for w in self._active.values() if w.retry == retry)
        return (self.retry_workers if retry else self.workers) - used

    def _expiry(self) -> datetime.datetime:
        return self.clock.now() + datetime.timedelta(seconds=self.conf.engine_claim_timeout)

    def poll(self) -> None:
        """Rows above the high-water mark: one primary-key range, usually empty.

        Every row moves the mark, whatever its status, so that the range stays short even
        when other engines take the work.
        """
        with self.db.reader() as session:
            rows = queue.after(session, self._hwm, BATCH)
        for row in rows:
            if row.status == statuses.NEW:
                if self._stopping.is_set() or self._free(retry=False) <= 0:
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
        self._take_over_expired()

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
                if self._stopping.is_set() or self._free(retry=False) <= 0:
                    return after, False
                self._submit_row(row, retry=False)
                after = max(after, row.id)
            if len(rows) < BATCH:
                return after, True
            first_page = False

    def _submit_row(self, row: Candidate, retry: bool) -> None:
        self._submit(
            row.notification_uuid,
            row.source_host_uuid,
            retry,
            functools.partial(self._claim_row, row, retry),
        )

    def _submit(
        self, notification_uuid: str, host_uuid: str | None, retry: bool, claim: Claim
    ) -> bool:
        """Hand a candidate to a worker, which claims it, then recovers it.

        Not while this engine already holds or is claiming the same notification, or one
        of the same host: a host's second row would only find it busy, and its recoveries
        run in order. Every submitted candidate counts against the free workers (``_free``)
        until its worker is done, so candidates never queue up behind the pool.
        """
        token = next(self._tokens)
        item = _Work(notification_uuid, token, retry, threading.Event(), host_uuid)
        with self._lock:
            if notification_uuid in self._active or (
                host_uuid is not None
                and any(w.host_uuid == host_uuid for w in self._active.values())
            ):
                return False
            self._active[notification_uuid] = item
        try:
            item.future = self._pool.submit(self._run, item, claim)
        except RuntimeError:  # the pool shut down: the engine is stopping
            with self._lock:
                self._active.pop(notification_uuid, None)
            return False
        return True

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
                expires_at=self._expiry(),
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
                expires_at=self._expiry(),
            ),
        )
        if taken:
            LOG.warning(
                "Took over notification %s: its engine stopped renewing its claim",
                notification_uuid,
            )
            metrics.takeover()
        return bool(taken)

    def _claim(self, item: _Work, claim: Claim) -> Lease | None:
        """In the worker: take the claim; its lease counts from before the claim was sent.

        None when another engine won the race, the notification moved on, or the engine is
        stopping: the worker has nothing to do.
        """
        with self._claiming:
            if self._stopping.is_set() or item.cancel.is_set():
                return None
            started = self.clock.monotonic()
            try:
                if not claim(item.token):
                    return None
            except database.DUPLICATE_ERRORS:  # a concurrent claim row insert won
                return None
        lease = Lease(self.owner, item.token, self.clock, self.lease_term, started)
        with self._lock:
            # From now on the heartbeat renews it, and a stopping engine releases it.
            item.lease = lease
        return lease

    # --- one recovery ----------------------------------------------------------------------

    def process(self, item: _Work, lease: Lease) -> str | None:
        """Recover a notification we hold a claim on; write the outcome. Returns the status."""
        notification_uuid = item.notification_uuid
        with self.db.reader() as session:
            notification = queue.get_notification(session, notification_uuid)
        if notification is None or notification.status != statuses.RUNNING:
            self._release({notification_uuid: item.token})
            return None
        fields = notifier.notification_fields(notification)
        self.notifier.emit("notification.process.start", notifier.notification_payload(fields))
        effects = Effects(self.db, self.nova, self.clock, lease, notification_uuid)
        effects.reported_at = notification.generated_time
        run = RunContext(
            conf=self.conf,
            effects=effects,
            clock=self.clock,
            cancel=item.cancel,
            slots=self.slots,
            host_poller=self.host_poller,
            placement=self.placement,
        )
        started = self.clock.monotonic()
        try:
            outcome = dispatch.recover(run, self.flows, notification)
        except LeaseLost:
            LOG.warning(
                "Notification %s: claim not renewed in time or taken over; this engine stops "
                "acting on it",
                notification_uuid,
            )
            return None
        except Cancelled:
            LOG.warning("Recovery of notification %s stopped before its end", notification_uuid)
            self._release({notification_uuid: item.token})
            return None
        except Exception as exc:
            LOG.exception("Recovery of notification %s failed", notification_uuid)
            outcome = dispatch.Outcome(statuses.ERROR)
            run.failure = exc
        status = outcome.status
        if item.retry and status == statuses.ERROR:
            # The retry loop gives a notification one more chance, then gives up on it.
            status = statuses.FAILED
        _log_outcome(notification_uuid, status, item.retry)
        # From here the claim ends with the status write: no renewal must see it half-way.
        item.finishing = True
        try:
            written = effects.finish(status, outcome.message)
        except LeaseLost:
            LOG.warning(
                "Notification %s: the database stayed away past the claim; its outcome %s is "
                "left to the engine that takes it over",
                notification_uuid,
                status,
            )
            return None
        if not written:
            LOG.warning(
                "Notification %s was taken from this engine; its outcome %s is dropped",
                notification_uuid,
                status,
            )
            return None
        self._notify_outcome(fields, status, run.failure)
        metrics.recovery_finished(
            notification.type,
            outcome.recovery_method or "none",
            status,
            self.clock.monotonic() - started,
        )
        return status

    def _notify_outcome(
        self, fields: dict[str, Any], status: str, failure: BaseException | None
    ) -> None:
        # As the reference: a failed recovery sends process.error (with why) instead of end.
        if failure is None:
            payload = notifier.notification_payload({**fields, "status": status})
            self.notifier.emit("notification.process.end", payload)
            return
        fault = notifier.exception_payload(failure)
        payload = notifier.notification_payload({**fields, "status": status}, fault)
        self.notifier.emit("notification.process.error", payload, error=True)

    def _run(self, item: _Work, claim: Claim) -> None:
        looked = False
        try:
            with logtag.recovery(item.notification_uuid, self.owner):
                lease = self._claim(item, claim)
                looked = True
                if lease is not None:
                    self.process(item, lease)
        except Exception:
            LOG.exception("Engine failed to finish notification %s", item.notification_uuid)
        finally:
            with self._lock:
                self._active.pop(item.notification_uuid, None)
            if looked:
                # A worker is free again, and another notification of the same host may be
                # waiting for this one. Not when the claim raised: a database that is down
                # would make the loop sweep at every poll.
                self._sweep_due = True
                self._wake.set()

    # --- claims ----------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        while not self._stopping.wait(self.renew_interval):
            # A round with nothing to renew does not reach the database: it proves nothing.
            self._guard(self.renew_claims, proves_db_up=False)

    def _liveness(self) -> None:
        # A thread of its own: a slow or locked heartbeat write must never delay a renewal.
        self._guard(self.beat, proves_db_up=False)
        while not self._stopping.wait(self.renew_interval):
            self._guard(self.beat, proves_db_up=False)

    def beat(self) -> None:
        """Say this engine is alive (masakari-manage engine list, the heartbeat metric)."""
        now = self.clock.now()
        transaction(self.db, lambda s: engines.beat(s, self.owner, self.conf.host, now))

    def renew_claims(self) -> None:
        """Push our claims' expiry back; a claim found lost stops its recovery at once.

        The lease of a renewed claim counts from when the renewal was sent, not answered: a
        slow database shortens the lease, never lengthens it.
        """
        with self._lock:
            # Candidates still being claimed have nothing to renew yet.
            items = [(w, w.lease) for w in self._active.values() if w.lease and not w.finishing]
        if not items:
            return
        tokens = {w.notification_uuid: w.token for w, _ in items}
        sent_at = self.clock.monotonic()
        now = self.clock.now()
        expires_at = self._expiry()
        mine = transaction(
            self.db, lambda session: claims.renew(session, self.owner, tokens, now, expires_at)
        )
        for item, lease in items:
            if item.notification_uuid in mine:
                lease.renewed(sent_at)
                continue
            LOG.warning(
                "Notification %s is no longer ours (taken over or expired): stopping it",
                item.notification_uuid,
            )
            lease.lose()
            item.cancel.set()

    def _release(self, tokens: dict[str, int]) -> None:
        try:
            now = self.clock.now()
            transaction(self.db, lambda s: claims.release(s, self.owner, tokens, now))
        except database.DB_ERRORS as exc:
            LOG.warning("Could not release claims %s: %s", sorted(tokens), exc)

    def _take_over(self, notification_uuids: list[str]) -> None:
        for notification_uuid in notification_uuids:
            if self._stopping.is_set() or self._free(retry=False) <= 0:
                return
            claim = functools.partial(self._claim_orphan, notification_uuid)
            self._submit(notification_uuid, None, False, claim)

    def _take_over_expired(self) -> None:
        with self.db.reader() as session:
            expired = queue.takeover_candidates(session, self.clock.now(), BATCH)
        self._take_over(expired)

    def _take_over_orphans(self) -> None:
        with self.db.reader() as session:
            orphans = queue.orphan_candidates(session, BATCH)
        self._take_over(orphans)

    # --- periodic tasks --------------------------------------------------------------------

    def _retry_new_before(self) -> datetime.datetime:
        return self.clock.now() - datetime.timedelta(
            seconds=self.conf.retry_notification_new_status_interval
        )

    def process_unfinished_notifications(self) -> None:
        """Retry ``error`` notifications, and ``new`` ones nobody took in time, once each.

        Every engine runs it; the claim makes each retry happen in exactly one engine.
        """
        self._take_over_orphans()
        free = self._free(retry=True)
        if free <= 0:
            return
        with self.db.reader() as session:
            rows = queue.retry_candidates(session, self._retry_new_before(), BATCH)
        for row in rows:
            if self._stopping.is_set() or self._free(retry=True) <= 0:
                return
            if not row.host_busy:
                self._submit_row(row, retry=True)

    def check_expired_notifications(self) -> None:
        """Fail unfinished notifications older than notifications_expired_interval."""
        before = self.clock.now() - datetime.timedelta(
            seconds=self.conf.notifications_expired_interval
        )
        while not self._stopping.is_set():
            expired = transaction(self.db, lambda session: claims.expire(session, before, BATCH))
            for notification_uuid in expired:
                LOG.error(
                    "Periodic task 'check_expired_notifications': Notification %s is expired.",
                    notification_uuid,
                )
            with self._lock:
                for notification_uuid in expired:
                    if notification_uuid in self._active:
                        self._active[notification_uuid].cancel.set()
            if len(expired) < BATCH:
                return


def _log_outcome(notification_uuid: str, status: str, retry: bool) -> None:
    """One line per attempt, saying whether another attempt follows, so that an attempt's
    error and the final failure of the same notification do not read as a contradiction."""
    attempt = "retry" if retry else "attempt"
    if status == statuses.FAILED:
        LOG.error(
            "Notification %s: recovery %s failed; final status: failed (no further retry).",
            notification_uuid,
            attempt,
        )
    elif status == statuses.ERROR:
        LOG.warning(
            "Notification %s: recovery %s failed; status: error (process_unfinished_notifications "
            "retries it once).",
            notification_uuid,
            attempt,
        )
    else:
        LOG.info(
            "Notification %s: recovery %s ended; status: %s.", notification_uuid, attempt, status
        )
