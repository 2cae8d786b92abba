"""What a run does to the world: its own records here, the rest in facets on one seam.

Every change goes through the run's :class:`~masakari.engine.seam.Seam`, taken only while
the run's lease holds (:mod:`masakari.engine.lease`): a database write fences the claim
first, a Nova change checks the lease right before its request is sent. While the database
is unreachable, reads and writes are retried until the lease runs out: an outage shorter
than the lease goes unnoticed, a longer one abandons the run.

A refused change raises :class:`LeaseLost` (a :class:`Cancelled`): the run stops there and
leaves what it did for the engine that takes the notification over. Nova reads
(:class:`LeasedReads`) stop with the lease too; database reads are not fenced.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import orm

from masakari import metrics
from masakari.db import claims, failures, instances, progress, vmoves
from masakari.db import statuses as st
from masakari.db.database import Database, transaction
from masakari.db.hosts import RecoveryHost
from masakari.db.instances import Plan
from masakari.db.progress import TaskNote
from masakari.db.vmoves import VMoveData
from masakari.engine.evidence_effects import EvidenceChanges
from masakari.engine.fence_effects import FenceChanges
from masakari.engine.host_effects import HostChanges
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.nova_effects import LeasedReads, NovaChanges, guarded
from masakari.engine.ports import Clock, Nova, Server
from masakari.engine.seam import Seam
from masakari.engine.slot_effects import SlotChanges

T = TypeVar("T")

__all__ = [
    "Effects",
    "LeaseLost",
    "LeasedReads",
    "Plan",
    "RecoveryHost",
    "TaskNote",
    "VMoveData",
    "guarded",
]


class Effects:
    """The reads and the fenced changes of one run of one notification: the run's own records
    (vmoves, instance plans, progress, the outcome) here, the rest in facets that each take
    the run's :class:`Seam`: ``nova``, ``hosts``, ``slots``, ``fencing``, ``evidence``."""

    def __init__(
        self,
        db: Database,
        nova: Nova,
        clock: Clock,
        lease: Lease,
        notification_uuid: str,
        reported_at: datetime.datetime | None = None,
    ) -> None:
        self.seam = Seam(db, nova, clock, lease, notification_uuid)
        self.lease = lease
        self.notification_uuid = notification_uuid
        # When the failure was reported (the notification's generated_time).
        self.reported_at = reported_at
        self.nova = NovaChanges(self.seam, reported_at)
        self.hosts = HostChanges(self.seam)
        self.slots = SlotChanges(self.seam)
        self.fencing = FenceChanges(self.seam)
        self.evidence = EvidenceChanges(self.seam)

    @property
    def reads(self) -> LeasedReads:
        """Nova reads: refused too once the lease is over."""
        return self.nova.reads

    # --- reads -------------------------------------------------------------------------------

    def vmoves(
        self, statuses: Sequence[str] | None = None, ids: Sequence[int] | None = None
    ) -> list[VMoveData]:
        return self.seam.read(
            lambda s: vmoves.of_notification(s, self.notification_uuid, statuses, ids)
        )

    def locked_instances(self) -> list[str]:
        return self.seam.read(lambda s: instances.locked(s, self.notification_uuid))

    def plan(self, instance_uuid: str) -> Plan | None:
        return self.seam.read(
            lambda s: instances.get_plan(s, self.notification_uuid, instance_uuid)
        )

    def last_attempt_end(self) -> datetime.datetime | None:
        """When the earlier attempts last wrote: their failure reason or a progress row, each
        written after the Nova change it follows (the engines' clock, in whole seconds).
        None: no attempt wrote anything."""

        def last(session: orm.Session) -> datetime.datetime | None:
            failure = failures.get(session, self.notification_uuid)
            written = [
                failure.updated_at if failure is not None else None,
                progress.last_written(session, self.notification_uuid),
            ]
            return max((t for t in written if t is not None), default=None)

        return self.seam.read(last)

    # --- database changes ------------------------------------------------------------------------

    def record_moves(
        self, servers: Sequence[Server], source_host: str, now: datetime.datetime
    ) -> list[VMoveData]:
        """One pending vmove per server; pending rows of an earlier try are reused.

        An instance never has two pending moves; pending rows of instances no longer
        selected end failed (their evacuation never started).
        """

        def record(session: orm.Session) -> list[VMoveData]:
            pending = {
                v.instance_uuid: v
                for v in vmoves.of_notification(
                    session, self.notification_uuid, statuses=[st.VMOVE_PENDING]
                )
            }
            created = [
                pending.pop(server.id)
                if server.id in pending
                else vmoves.create(
                    session,
                    self.notification_uuid,
                    server.id,
                    server.name,
                    source_host,
                )
                for server in servers
            ]
            for stale in pending.values():
                vmoves.update(
                    session,
                    stale.id,
                    {
                        "status": st.VMOVE_FAILED,
                        "message": "Failed reason: evacuation not started.",
                        "end_time": now,
                    },
                )
            return created

        return self.seam.write(record)

    def update_vmove(self, vmove_id: int, **values: Any) -> None:
        self.seam.write(lambda session: vmoves.update(session, vmove_id, values))
        if "status" in values:
            metrics.vmove_written(values["status"])

    def put_plan(self, instance_uuid: str, plan: Plan) -> Plan:
        """Record how the instance was found; the first record wins and is returned."""

        def put(session: orm.Session) -> Plan:
            instances.put_plan(session, self.notification_uuid, instance_uuid, plan)
            found = instances.get_plan(session, self.notification_uuid, instance_uuid)
            return found or plan

        return self.seam.write(put)

    def next_attempt(self) -> int:
        return self.seam.write(lambda s: progress.next_attempt(s, self.notification_uuid))

    def record_task(
        self,
        attempt: int,
        position: int,
        name: str,
        state: str,
        task_progress: float,
        detail: dict[str, str] | None,
    ) -> None:
        note = TaskNote(attempt, position, name, state, task_progress, detail)
        self.seam.write(lambda s: self.seam.record_note(s, note))

    def record_failure(self, reason: str) -> None:
        """Keep why this attempt failed: the notification's failure_reason (API 1.4)."""
        self.seam.write(lambda s: failures.record(s, self.notification_uuid, reason))

    def finish(self, status: str, message: str | None) -> bool:
        """Write the outcome and drop the claim; False when the claim is no longer ours.

        Fenced by the claim in the database only: an outcome reached just after the local
        deadline is still the truth while nobody else took the notification over.
        """

        def finish(session: orm.Session) -> bool:
            if not claims.finish(
                session, self.notification_uuid, self.lease.owner, self.lease.token, status, message
            ):
                return False
            instances.forget_actions(session, self.notification_uuid)
            return True

        return transaction(self.seam.db, finish, retry_while=self.lease.check)
