"""The seam every change of a run goes through: fenced writes, reads that wait out an
outage, the hold, the lease and the clock. The facets of :class:`Effects
<masakari.engine.effects.Effects>` (Nova, hosts, slots, host fencing, evidence) each take it.

A change is taken only while the run's lease holds (:mod:`masakari.engine.lease`): a database
write runs in a transaction that first fences the claim (:func:`masakari.db.claims.fence`:
owner, token, expiry, notification still running, and a change of the claim row that a
concurrent takeover conflicts with); a Nova call checks the lease right before its request
is sent (:func:`masakari.engine.nova_effects.guarded`). While the database is unreachable,
reads and writes are retried until the lease runs out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import orm

from masakari.db import claims, holds, notifications, progress
from masakari.db.database import Database, read, transaction
from masakari.db.progress import TaskNote
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.ports import Clock, Nova

T = TypeVar("T")


class Seam:
    """One run of one notification: its database, Nova, clock and lease."""

    def __init__(
        self, db: Database, nova: Nova, clock: Clock, lease: Lease, notification_uuid: str
    ) -> None:
        self.db = db
        self.nova = nova
        self.clock = clock
        self.lease = lease
        self.notification_uuid = notification_uuid

    def write(self, fn: Callable[[orm.Session], T]) -> T:
        """``fn`` in a transaction that first fences the claim; LeaseLost once it is not ours."""

        def fenced(session: orm.Session) -> T:
            self.fence(session)
            return fn(session)

        # A database that is away for less than the lease is waited for; past it, LeaseLost.
        self.lease.check()
        return transaction(self.db, fenced, retry_while=self.lease.check)

    def fence(self, session: orm.Session) -> None:
        """Hold our live claim for the rest of ``session``'s transaction (also one another
        module opens: a quarantine's request, a notification's record); LeaseLost when it is
        not ours."""
        if not claims.fence(
            session,
            self.notification_uuid,
            self.lease.owner,
            self.lease.token,
            now=self.clock.now(),
        ):
            self.lease.lose()
            raise LeaseLost()

    def read(self, fn: Callable[[orm.Session], T]) -> T:
        return read(self.db, fn, retry_while=self.lease.check)

    def hold(self, reason: str, also: Callable[[orm.Session], None]) -> None:
        """Hold the notification for an operator and give the claim up, in one fenced
        transaction with ``also``'s writes (made once the hold is written): no engine ever
        sees it new and unheld, and the run must end then (raise
        :class:`~masakari.engine.errors.Held`)."""

        def held(session: orm.Session) -> None:
            notifications.lock(session, self.notification_uuid)
            holds.hold_again(session, self.notification_uuid, reason)
            also(session)
            if not claims.give_up(
                session, self.notification_uuid, self.lease.owner, self.lease.token
            ):
                raise LeaseLost()

        self.write(held)
        self.lease.lose()

    def record_note(self, session: orm.Session, note: TaskNote) -> None:
        """A progress row of this run (recovery_workflow_details), in ``session``."""
        progress.record(
            session,
            self.notification_uuid,
            note.attempt,
            note.position,
            note.name,
            note.state,
            note.progress,
            note.detail,
        )
