"""The one seam between a recovery and the world: every change it makes goes through here.

A change is taken only while the run's lease holds (:mod:`masakari.engine.lease`):

- a Nova call that changes something checks the lease right before the request is sent;
- a database write runs in a transaction that first fences the claim
  (:func:`masakari.db.claims.fence`: owner, token, expiry, notification still running,
  and a change of the claim row that a concurrent takeover conflicts with).

While the database is unreachable, reads and writes are retried until the lease runs out:
an outage shorter than the lease goes unnoticed, a longer one abandons the run.

A refused change raises :class:`LeaseLost` (a :class:`Cancelled`): the run stops there and
leaves what it did for the engine that takes the notification over. Nova reads
(:class:`LeasedReads`) stop with the lease too; database reads are not fenced.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import orm

from masakari import exception, metrics
from masakari.db import claims, failures, holds, instances, notifications, progress, vmoves
from masakari.db import statuses as st
from masakari.db.database import Database, read, transaction
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


class Effects(NovaChanges, SlotChanges, HostChanges, FenceChanges, EvidenceChanges):
    """The reads and the fenced changes of one run of one notification."""

    def __init__(
        self, db: Database, nova: Nova, clock: Clock, lease: Lease, notification_uuid: str
    ) -> None:
        self._db = db
        self._nova = nova
        self._clock = clock
        self.lease = lease
        self.notification_uuid = notification_uuid
        # Reads need no fence, but a run whose lease is over has no business with Nova.
        self.reads = LeasedReads(nova, lease)
        # When the failure was reported (the notification's generated_time), for the
        # report-to-first-evacuation metric; None once observed in this run.
        self.reported_at: datetime.datetime | None = None
        # Per instance, from when Nova's instance actions count as this run's evacuation.
        self.evacuations_sent: dict[str, datetime.datetime] = {}

    # --- the fence ---------------------------------------------------------------------------

    def _write(self, fn: Callable[[orm.Session], T]) -> T:
        def fenced(session: orm.Session) -> T:
            if not claims.fence(
                session,
                self.notification_uuid,
                self.lease.owner,
                self.lease.token,
                now=self._clock.now(),
            ):
                self.lease.lose()
                raise LeaseLost()
            return fn(session)

        # A database that is away for less than the lease is waited for; past it, LeaseLost.
        self.lease.check()
        return transaction(self._db, fenced, retry_while=self.lease.check)

    def _read(self, fn: Callable[[orm.Session], T]) -> T:
        return read(self._db, fn, retry_while=self.lease.check)

    def _hold(self, reason: str, also: Callable[[orm.Session], None]) -> None:
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

        self._write(held)
        self.lease.lose()

    # --- reads -------------------------------------------------------------------------------

    def vmoves(
        self, statuses: Sequence[str] | None = None, ids: Sequence[int] | None = None
    ) -> list[VMoveData]:
        return self._read(
            lambda s: vmoves.of_notification(s, self.notification_uuid, statuses, ids)
        )

    def locked_instances(self) -> list[str]:
        return self._read(lambda s: instances.locked(s, self.notification_uuid))

    def plan(self, instance_uuid: str) -> Plan | None:
        return self._read(lambda s: instances.get_plan(s, self.notification_uuid, instance_uuid))

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

        return self._read(last)

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

        return self._write(record)

    def update_vmove(self, vmove_id: int, **values: Any) -> None:
        self._write(lambda session: vmoves.update(session, vmove_id, values))
        if "status" in values:
            metrics.vmove_written(values["status"])

    def put_plan(self, instance_uuid: str, plan: Plan) -> Plan:
        """Record how the instance was found; the first record wins and is returned."""

        def put(session: orm.Session) -> Plan:
            instances.put_plan(session, self.notification_uuid, instance_uuid, plan)
            found = instances.get_plan(session, self.notification_uuid, instance_uuid)
            return found or plan

        return self._write(put)

    def next_attempt(self) -> int:
        return self._write(lambda s: progress.next_attempt(s, self.notification_uuid))

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
        self._write(lambda s: self._record_note(s, note))

    def _record_note(self, session: orm.Session, note: TaskNote) -> None:
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

    def record_failure(self, reason: str) -> None:
        """Keep why this attempt failed: the notification's failure_reason (API 1.4)."""
        self._write(lambda s: failures.record(s, self.notification_uuid, reason))

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

        return transaction(self._db, finish, retry_while=self.lease.check)

    # --- Nova changes that the database records (the others: NovaChanges) -------------------

    def lock_server(self, instance_uuid: str) -> None:
        """Lock in Nova; recorded first, so that whoever finishes the notification unlocks."""
        self._write(lambda s: instances.record_lock(s, self.notification_uuid, instance_uuid))
        self._nova_call(lambda: self._nova.lock_server(instance_uuid))

    def unlock_server(self, instance_uuid: str) -> None:
        """Unlock in Nova, then forget the record; a deleted instance counts as unlocked."""
        try:
            self._nova_call(lambda: self._nova.unlock_server(instance_uuid))
        except exception.NovaError as exc:
            if exc.status != 404:
                raise
        self._write(lambda s: instances.forget_lock(s, instance_uuid))

    def _note(self, instance_uuid: str, action: str) -> None:
        self._write(
            lambda s: instances.note_action(s, self.notification_uuid, instance_uuid, action)
        )

    def _evacuated_from(self, instance_uuid: str) -> str | None:
        ongoing = self.vmoves(statuses=[st.VMOVE_ONGOING])
        return next((v.source_host for v in ongoing if v.instance_uuid == instance_uuid), None)

    def evacuate(self, instance_uuid: str, host: str | None) -> None:
        if self.reported_at is not None:
            metrics.first_evacuation((self._clock.now() - self.reported_at).total_seconds())
            self.reported_at = None
        self.send_evacuate(instance_uuid, host)
