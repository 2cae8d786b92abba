"""Leases and heartbeats: this engine's claims renewed or released, and its liveness row.

A claim lives ``engine_claim_timeout`` after its last renewal in the database; the engine's
lease of it (:mod:`masakari.engine.lease`) ends ``engine_claim_margin`` earlier, counted from
when the renewal was sent. The schedule (every ``engine_claim_renew_interval``) is
:mod:`masakari.engine.periodic`'s.
"""

from __future__ import annotations

import datetime
import logging

from oslo_config import cfg

from masakari import exception
from masakari.db import claims, database, engines, sqlite
from masakari.db.database import Database, transaction
from masakari.engine.ports import Clock
from masakari.engine.workers import Workers

LOG = logging.getLogger(__name__)


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


class Heartbeat:
    """The claims of one engine (``owner``) and its row in the engines table."""

    def __init__(
        self, conf: cfg.ConfigOpts, db: Database, clock: Clock, owner: str, workers: Workers
    ) -> None:
        self.conf = conf
        self.db = db
        self.clock = clock
        self.owner = owner
        self.workers = workers
        self.renew_interval, self.lease_term = lease_timing(conf)

    def expires_at(self) -> datetime.datetime:
        """The database expiry of a claim taken or renewed now."""
        return self.clock.now() + datetime.timedelta(seconds=self.conf.engine_claim_timeout)

    def renew_claims(self) -> None:
        """Push our claims' expiry back; a claim found lost stops its recovery at once.

        The lease of a renewed claim counts from when the renewal was sent, not answered: a
        slow database shortens the lease, never lengthens it.
        """
        items = self.workers.renewable()  # candidates still being claimed have nothing yet
        if not items:
            return
        tokens = {w.notification_uuid: w.token for w, _ in items}
        sent_at = self.clock.monotonic()
        now = self.clock.now()
        expires_at = self.expires_at()
        # On SQLite, before the engine's other writers: a late renewal ends leases.
        with sqlite.first_in_line():
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

    def release(self, tokens: dict[str, int]) -> None:
        """Give claims up without an outcome: another engine may take them over at once."""
        try:
            now = self.clock.now()
            transaction(self.db, lambda s: claims.release(s, self.owner, tokens, now))
        except database.DB_ERRORS as exc:
            LOG.warning("Could not release claims %s: %s", sorted(tokens), exc)

    def beat(self) -> None:
        """Say this engine is alive (masakari-manage engine list, the heartbeat metric)."""
        now = self.clock.now()
        transaction(self.db, lambda s: engines.beat(s, self.owner, self.conf.host, now))

    def forget(self) -> None:
        """A stopped engine leaves the engines table."""
        try:
            transaction(self.db, lambda s: engines.forget(s, self.owner))
        except database.DB_ERRORS as exc:
            LOG.warning("Could not remove this engine's heartbeat: %s", exc)
