"""A run's evidence of a host failure (masakari.db.evidence) and the hold its verdict may end
in; the verdict's part of :class:`masakari.engine.effects.Effects`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from sqlalchemy import orm

from masakari.db import evidence as evidence_db
from masakari.db import holds
from masakari.engine.seam import Seam

T = TypeVar("T")


class EvidenceChanges:
    """``effects.evidence``."""

    def __init__(self, seam: Seam) -> None:
        self._seam = seam

    def recorded(self) -> list[evidence_db.Evidence]:
        return self._seam.read(lambda s: evidence_db.of(s, self._seam.notification_uuid))

    def record_evidence(self, items: Sequence[evidence_db.Evidence]) -> None:
        self._seam.write(lambda s: evidence_db.add(s, self._seam.notification_uuid, items))

    def hold_unconfirmed(
        self,
        reason: str,
        items: Sequence[evidence_db.Evidence],
        reports_seen: int | None = None,
    ) -> None:
        """Hold the notification and give the claim up, with the verdict's evidence, in one
        fenced transaction; the run must end then (raise Held).

        ``reports_seen``: the reports the verdict judged on. One that came in since (its
        intake found no hold to end yet) ends the new hold at once, in the same transaction:
        an engine judges the failure again with it.
        """
        uuid = self._seam.notification_uuid

        def with_evidence(session: orm.Session) -> None:
            evidence_db.add(session, uuid, items)
            if reports_seen is not None and evidence_db.reports(session, uuid) > reports_seen:
                holds.judge_again(session, uuid)

        self._seam.hold(reason, with_evidence)
