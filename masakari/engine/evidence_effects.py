"""A run's evidence of a host failure (masakari.db.evidence) and the hold its verdict may end
in; the verdict's half of :class:`masakari.engine.effects.Effects`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from sqlalchemy import orm

from masakari.db import claims, holds
from masakari.db import evidence as evidence_db
from masakari.db.database import Database, transaction
from masakari.db.statuses import NEW
from masakari.engine.lease import Lease

T = TypeVar("T")


class EvidenceChanges:
    _db: Database
    lease: Lease
    notification_uuid: str

    def _write(self, fn: Callable[[orm.Session], T]) -> T:
        raise NotImplementedError

    def _read(self, fn: Callable[[orm.Session], T]) -> T:
        raise NotImplementedError

    def evidence(self) -> list[evidence_db.Evidence]:
        return self._read(lambda s: evidence_db.of(s, self.notification_uuid))

    def was_released(self) -> bool:
        """An operator released this notification from a hold: their word confirms it."""
        return self._read(lambda s: holds.released(s, self.notification_uuid))

    def record_evidence(self, items: Sequence[evidence_db.Evidence]) -> None:
        self._write(lambda s: evidence_db.add(s, self.notification_uuid, items))

    def hold(self, reason: str) -> bool:
        """Give the notification back as ``new``, held for an operator with ``reason``, and
        drop the claim; False when the claim is no longer ours. One transaction: no engine
        ever sees it new and unheld."""

        def hold(session: orm.Session) -> bool:
            owner, token = self.lease.owner, self.lease.token
            if not claims.finish(session, self.notification_uuid, owner, token, NEW):
                return False
            holds.hold_again(session, self.notification_uuid, reason)
            return True

        return transaction(self._db, hold, retry_while=self.lease.check)
