"""An engine's drills: claim one from the database, run it on a thread of its own under a
renewed lease, write its outcome, its metrics and its ``drill.end`` notification.

One drill at a time per engine. A drill whose engine stopped renewing (killed, cut off) is
taken over by the next engine that looks: it only restores the host, then fails the drill
saying why. An engine that stops gives its drill up at once for another to take over.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import functools
import logging
import threading

from oslo_config import cfg
from sqlalchemy import orm

from masakari import notifier
from masakari.db import drills as drills_db
from masakari.db.database import Database, transaction
from masakari.engine.capacity import Capacities
from masakari.engine.drills import restore, run
from masakari.engine.drills.seam import DrillFailed, DrillRun, State
from masakari.engine.errors import Cancelled
from masakari.engine.fencing import HostFencing
from masakari.engine.heartbeat import lease_timing
from masakari.engine.lease import Lease
from masakari.engine.ports import Clock, Nova
from masakari.metrics import drills as drill_metrics

LOG = logging.getLogger(__name__)


class DrillRunner:
    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        nova: Nova,
        placement: Capacities,
        fencing: HostFencing | None,
        clock: Clock,
        owner: str,
        notifier_: notifier.Notifier,
    ) -> None:
        self.conf = conf
        self.db = db
        self.nova = nova
        self.placement = placement
        self.fencing = fencing
        self.clock = clock
        self.owner = owner
        self.notifier = notifier_
        self.renew_interval, self._term = lease_timing(conf)
        self._lock = threading.Lock()
        self._active: tuple[str, Lease, threading.Event] | None = None
        self._future: concurrent.futures.Future[None] | None = None
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="drill")

    def _expiry(self, now: datetime.datetime) -> datetime.datetime:
        return now + datetime.timedelta(seconds=self.conf.engine_claim_timeout)

    def poll(self) -> None:
        """Claim a drill nobody runs, unless this engine already runs one."""
        with self._lock:
            if self._active is not None:
                return
        now = self.clock.now()
        for drill_uuid in transaction(self.db, lambda s: drills_db.claimable(s, now)):
            sent = self.clock.monotonic()
            claimed = transaction(
                self.db,
                functools.partial(self._claim, drill_uuid=drill_uuid),
            )
            if claimed is None:
                continue
            lease = Lease(self.owner, claimed.token, self.clock, self._term, sent)
            cancel = threading.Event()
            with self._lock:
                self._active = (claimed.uuid, lease, cancel)
            try:
                future = self._pool.submit(self._run, claimed, lease, cancel)
                with self._lock:
                    self._future = future
            except RuntimeError:  # stopping: the claim runs out, another engine takes it
                with self._lock:
                    self._active = None
            return

    def _claim(self, session: orm.Session, drill_uuid: str) -> drills_db.Claimed | None:
        now = self.clock.now()
        return drills_db.claim(session, drill_uuid, self.owner, now, self._expiry(now))

    def renew(self) -> None:
        with self._lock:
            active = self._active
        if active is None:
            return
        drill_uuid, lease, _ = active
        sent = self.clock.monotonic()
        now = self.clock.now()
        try:
            ours = transaction(
                self.db,
                lambda s: drills_db.renew(
                    s, drill_uuid, self.owner, lease.token, now, self._expiry(now)
                ),
            )
        except Exception:
            LOG.warning("Drill %s: its claim could not be renewed this time", drill_uuid)
            return
        if ours:
            lease.renewed(sent)
        else:
            lease.lose()

    def stop(self, grace: float) -> None:
        """Stop the drill under way and give it up: another engine restores the host."""
        with self._lock:
            active, future = self._active, self._future
        if active is not None:
            active[2].set()
        if future is not None:
            concurrent.futures.wait([future], timeout=grace)
        self._pool.shutdown(wait=False, cancel_futures=True)
        if active is None:
            return
        # Released whether or not its thread has unwound: a drill that ended is no longer
        # ``running``, and the release (a conditional update) then changes nothing.
        drill_uuid, lease, _ = active
        lease.lose()
        now = self.clock.now()
        try:
            transaction(
                self.db,
                lambda s: drills_db.renew(
                    s, drill_uuid, self.owner, lease.token, now, now - datetime.timedelta(seconds=1)
                ),
            )
        except Exception:
            LOG.warning("Drill %s: not given up (its claim runs out instead)", drill_uuid)

    def _run(self, claimed: drills_db.Claimed, lease: Lease, cancel: threading.Event) -> None:
        try:
            self._drill(claimed, lease, cancel)
        except Cancelled:  # LeaseLost too
            LOG.warning(
                "Drill %s: stopped on this engine; another one restores the host", claimed.uuid
            )
        except Exception:
            LOG.exception("Drill %s: failed on this engine", claimed.uuid)
        finally:
            with self._lock:
                self._active = None

    def _drill(self, claimed: drills_db.Claimed, lease: Lease, cancel: threading.Event) -> None:
        with self.db.reader() as session:
            row = drills_db.get(session, claimed.uuid)
            assert row is not None
            fields = {
                "segment_uuid": row.segment_uuid,
                "host_uuid": row.host_uuid,
                "host": row.host_name,
                "no_fence": bool(row.no_fence),
                "allow_untagged": bool(row.allow_untagged),
                "move_back": bool(row.move_back),
            }
            state = State.of(drills_db.report_of(row))
            written = drills_db.phases(session, claimed.uuid)
            # The report is saved between steps; the phase rows say where the run stopped.
            state.phase = written[-1].name if written else None
        drill = DrillRun(
            conf=self.conf,
            db=self.db,
            nova=self.nova,
            placement=self.placement,
            fencing=self.fencing,
            clock=self.clock,
            lease=lease,
            cancel=cancel,
            uuid=claimed.uuid,
            state=state,
            **fields,  # type: ignore[arg-type]
        )
        failure: str | None = None
        if claimed.takeover:
            failure = (
                f"the engine that ran it stopped during its {state.phase or 'start'} phase; "
                f"restored by {self.owner}"
            )
            LOG.warning("Drill %s: taken over: %s", claimed.uuid, failure)
        else:
            LOG.info("Drill %s of host %s: starting", claimed.uuid, drill.host)
            try:
                run.drill(drill)
            except DrillFailed as exc:
                failure = str(exc)
        try:
            restore.restore(drill)
        except DrillFailed as exc:
            failure = f"{failure}; " if failure else ""
            failure += f"restore: {exc}"
        status = drills_db.FAILED if failure else drills_db.SUCCEEDED
        ended = self.clock.now()
        drill.write(lambda s: drills_db.finish(s, claimed.uuid, status, failure, ended))
        lease.lose()  # ended: nothing more is written under this claim
        (LOG.warning if failure else LOG.info)(
            "Drill %s of host %s: %s%s",
            claimed.uuid,
            drill.host,
            status,
            f": {failure}" if failure else "",
        )
        drill_metrics.drill_ended(drill.segment_uuid, status)
        self._notify(claimed.uuid, status)

    def _notify(self, drill_uuid: str, status: str) -> None:
        if not self.notifier.enabled:
            return
        with self.db.reader() as session:
            row = drills_db.get(session, drill_uuid)
            assert row is not None
            body = drills_db.view(row, drills_db.phases(session, drill_uuid))
        payload = notifier.versioned("DrillPayload", body)
        self.notifier.emit("drill.end", payload, error=status == drills_db.FAILED)
