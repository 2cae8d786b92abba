"""One engine at a time runs the detector: the lease it holds in the database.

The lease follows the claims' rules and timings (docs/engine.md § Fencing): taken for
``engine_claim_timeout`` seconds and renewed every ``engine_claim_renew_interval``; the
holder's local deadline (:class:`masakari.engine.lease.Lease`) ends ``engine_claim_margin``
earlier, counted from when the renewal was sent. A frozen holder therefore finds its lease
over before any other engine can take it, and every report it would still make is refused
twice: by that deadline, and by :meth:`DetectorLease.fence` in the report's transaction.

With a coordination backend ([coordination] backend_url), only the elected engine asks for
the lease (one engine instead of N tries it); an engine that loses the election gives the
lease up at once. While the backend is unreachable every engine asks, as for the periodic
tasks: the database lease still picks one.
"""

from __future__ import annotations

import datetime
import logging
import threading

from oslo_config import cfg
from oslo_db import exception as db_exc
from sqlalchemy import orm

from masakari import coordination
from masakari.db import database
from masakari.db import detector_lease as lease_db
from masakari.db.database import Database, transaction
from masakari.engine.heartbeat import lease_timing
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.ports import Clock

LOG = logging.getLogger(__name__)

# The detector's row in masakari_detector_leases.
NAME = "nova-services"


class DetectorLease:
    def __init__(
        self,
        conf: cfg.ConfigOpts,
        db: Database,
        clock: Clock,
        owner: str,
        leadership: coordination.Leadership,
        name: str = NAME,
    ) -> None:
        self.db = db
        self.clock = clock
        self.owner = owner
        self.name = name
        self.leadership = leadership
        self.timeout = float(conf.engine_claim_timeout)
        self.renew_interval, self.term = lease_timing(conf)
        self._lock = threading.Lock()
        self._lease: Lease | None = None
        # The storm cooldown's end as the lease row had it when this engine took the lease.
        self.storm_until: datetime.datetime | None = None
        # The database failed this engine's last take or renewal (the self-check says so).
        self.database_failed = False

    def current(self) -> Lease | None:
        """Our lease while it runs, else None."""
        with self._lock:
            lease = self._lease
        return lease if lease is not None and not lease.lost else None

    def tick(self) -> None:
        """Renew our lease, or take it when it is free; give it up when another engine leads."""
        lease = self.current()
        if not self.leadership.runs_periodic_tasks():
            if lease is not None:
                self.release()
            return
        sent_at = self.clock.monotonic()
        now = self.clock.now()
        expires_at = now + datetime.timedelta(seconds=self.timeout)
        try:
            if lease is not None:
                self._renew(lease, sent_at, now, expires_at)
            else:
                self._take(sent_at, now, expires_at)
        except database.DB_ERRORS:
            self.database_failed = True
            raise
        self.database_failed = False

    def _renew(
        self, lease: Lease, sent_at: float, now: datetime.datetime, expires_at: datetime.datetime
    ) -> None:
        renewed = transaction(
            self.db,
            lambda s: lease_db.renew(s, self.name, self.owner, lease.token, now, expires_at),
        )
        if renewed:
            lease.renewed(sent_at)
        if not renewed or lease.lost:
            lease.lose()
            LOG.warning("The failure detector's lease is no longer ours: detection stops here")

    def _take(self, sent_at: float, now: datetime.datetime, expires_at: datetime.datetime) -> None:
        def take(session: orm.Session) -> tuple[int, datetime.datetime | None] | None:
            token = lease_db.take(session, self.name, self.owner, now, expires_at)
            if token is None:
                return None
            held = lease_db.holder(session, self.name)
            return token, None if held is None else held.storm_until

        try:
            taken = transaction(self.db, take)
        except database.DUPLICATE_ERRORS + (db_exc.DBDeadlock,):
            return  # another engine inserted or took it first
        if taken is None:
            return
        token, storm_until = taken
        with self._lock:
            self._lease = Lease(self.owner, token, self.clock, self.term, started=sent_at)
            self.storm_until = storm_until
        LOG.info("This engine runs the failure detector (lease token %s)", token)

    def fence(self, session: orm.Session) -> None:
        """In a report's transaction: hold our live lease, or refuse the report."""
        lease = self.current()
        if lease is None:
            raise LeaseLost()
        if not lease_db.fence(session, self.name, self.owner, lease.token, self.clock.now()):
            lease.lose()
            raise LeaseLost()

    def keep_storm(self, until: datetime.datetime) -> None:
        """Keep the storm cooldown's end with the lease: the next detector honours it."""
        lease = self.current()
        if lease is None:
            raise LeaseLost()
        now = self.clock.now()
        kept = transaction(
            self.db,
            lambda s: lease_db.set_storm(s, self.name, self.owner, lease.token, now, until),
        )
        if not kept:
            lease.lose()
            raise LeaseLost()
        self.storm_until = until

    def release(self) -> None:
        """Give the lease up (the engine stops, or another engine leads)."""
        with self._lock:
            lease, self._lease = self._lease, None
        if lease is None or lease.lost:
            return
        lease.lose()
        now = self.clock.now()
        try:
            transaction(
                self.db, lambda s: lease_db.release(s, self.name, self.owner, lease.token, now)
            )
        except database.DB_ERRORS as exc:
            LOG.warning("Could not give the failure detector's lease up: %s", exc)
        LOG.info("This engine no longer runs the failure detector")
