"""A run's evidence of a host failure (masakari.db.evidence) and the hold its verdict may end
in; the verdict's part of :class:`masakari.engine.effects.Effects`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from sqlalchemy import orm

from masakari.db import evidence as evidence_db
from masakari.engine.lease import Lease

T = TypeVar("T")


class EvidenceChanges:
    lease: Lease
    notification_uuid: str

    def _write(self, fn: Callable[[orm.Session], T]) -> T:
        raise NotImplementedError

    def _read(self, fn: Callable[[orm.Session], T]) -> T:
        raise NotImplementedError

    def _hold(self, reason: str, also: Callable[[orm.Session], None]) -> None:
        raise NotImplementedError

    def evidence(self) -> list[evidence_db.Evidence]:
        return self._read(lambda s: evidence_db.of(s, self.notification_uuid))

    def record_evidence(self, items: Sequence[evidence_db.Evidence]) -> None:
        self._write(lambda s: evidence_db.add(s, self.notification_uuid, items))

    def hold_unconfirmed(self, reason: str, items: Sequence[evidence_db.Evidence]) -> None:
        """Hold the notification and give the claim up, with the verdict's evidence, in one
        fenced transaction; the run must end then (raise Held)."""
        self._hold(reason, lambda session: evidence_db.add(session, self.notification_uuid, items))
