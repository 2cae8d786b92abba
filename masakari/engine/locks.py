"""Nothing left locked: the servers of recoveries that ended are unlocked by any engine.

A run unlocks what it locked (masakari.engine.effects, fenced by its claim). What it could
not unlock (Nova unreachable at that moment, the engine killed, a takeover that found the
notification ended) stays recorded in ``masakari_instance_locks``; every engine looks at
those rows every :data:`INTERVAL` seconds. For each row whose notification ended and that
no live claim holds (rows of a live claim are that run's business):

1. take the row (a conditional update: one engine wins, the others skip it for ``hold``);
2. unlock the server in Nova, sent only while the take holds (a reconciler frozen past
   ``hold`` sends nothing: another engine may be at it);
3. delete the row, if it is still the one taken and the notification did not start again.

A crash between 1 and 3 leaves the row taken for ``hold`` seconds, then another engine
redoes it: an unlock is harmless when repeated. A server deleted meanwhile counts as unlocked.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable

from masakari import exception
from masakari.compute.transport import send_guard
from masakari.db import instances
from masakari.db.database import Database, transaction
from masakari.engine.ports import Nova

LOG = logging.getLogger(__name__)

INTERVAL = 10.0
# How long a taken row is left to its taker before another engine may redo it.
HOLD = 60.0
BATCH = 50


class TakeExpired(exception.NovaError):
    """The reconciler held the row too long to send the unlock."""


class LockReconciler:
    """Unlocks the servers of ended recoveries; the engine runs :meth:`reconcile` every
    :attr:`interval` seconds as a periodic task of its own, so a slow Nova delays no other."""

    def __init__(
        self,
        db: Database,
        nova: Callable[[], Nova],
        now: Callable[[], datetime.datetime],
        monotonic: Callable[[], float],
        interval: float = INTERVAL,
        hold: float = HOLD,
    ) -> None:
        self._db = db
        self._nova = nova
        self._now = now
        self._monotonic = monotonic
        self.interval = interval
        self.hold = hold

    def reconcile(self) -> int:
        """One pass; returns how many servers it unlocked."""
        done = 0
        # a database that is away fails the pass: the engine's loop says so and goes on
        with self._db.reader() as session:
            left = instances.left_locks(session, self._now(), self.hold, BATCH)
        for lock in left:
            if self._unlock(lock):
                done += 1
        return done

    def _unlock(self, lock: instances.LeftLock) -> bool:
        taken_at = self._now()
        started = self._monotonic()
        if not transaction(
            self._db, lambda s: instances.take_left_lock(s, lock, taken_at, self.hold)
        ):
            return False

        def still_ours() -> None:
            # half the hold: the rest is the margin for the request and clock differences
            if self._monotonic() - started > self.hold / 2:
                raise TakeExpired("the lock row's take expired before the unlock was sent")

        try:
            with send_guard(still_ours):
                self._nova().unlock_server(lock.instance_uuid)
        except exception.NovaError as exc:
            if exc.status != 404:
                LOG.warning(
                    "Unlocking instance %s (notification %s ended) failed, tried again later: %s",
                    lock.instance_uuid,
                    lock.notification_uuid,
                    exc,
                )
                return False
        LOG.info(
            "Unlocked instance %s, left locked by notification %s",
            lock.instance_uuid,
            lock.notification_uuid,
        )
        transaction(self._db, lambda s: instances.drop_left_lock(s, lock, taken_at, self._now()))
        return True
