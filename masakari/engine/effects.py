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

import dataclasses
import datetime
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import orm

from masakari import exception, metrics
from masakari.compute.nova import send_guard
from masakari.db import claims, failures, hosts, instances, progress, slots, spares, vmoves
from masakari.db import statuses as st
from masakari.db.database import Database, read, transaction
from masakari.db.hosts import RecoveryHost
from masakari.db.instances import Plan
from masakari.db.vmoves import VMoveData
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.ports import Clock, Nova, NovaReads, Server, Service

T = TypeVar("T")

__all__ = [
    "Effects",
    "LeaseLost",
    "LeasedReads",
    "Plan",
    "RecoveryHost",
    "TaskNote",
    "VMoveData",
]


def guarded(lease: Lease, call: Callable[[], T]) -> T:
    """A Nova call made only while the lease runs: checked now, and again by the transport
    right before the request is sent (after token and endpoint work that can take time)."""
    lease.check()
    with send_guard(lease.check):
        return call()


@dataclasses.dataclass(frozen=True)
class TaskNote:
    """One write of a task's progress row (masakari.db.progress.record)."""

    attempt: int
    position: int
    name: str
    state: str
    progress: float
    detail: dict[str, str] | None


class LeasedReads:
    """Nova reads for a run: refused too once the lease is over (the run has no business left
    with Nova, and another engine may be recovering the same instances)."""

    def __init__(self, nova: NovaReads, lease: Lease) -> None:
        self._nova = nova
        self._lease = lease

    def find_compute_services(self, host: str) -> list[Service]:
        return guarded(self._lease, lambda: self._nova.find_compute_services(host))

    def list_servers_on_host(self, host: str) -> list[Server]:
        return guarded(self._lease, lambda: self._nova.list_servers_on_host(host))

    def get_server(self, server_id: str) -> Server:
        return guarded(self._lease, lambda: self._nova.get_server(server_id))

    def list_aggregates(self) -> list[dict[str, Any]]:
        return guarded(self._lease, lambda: self._nova.list_aggregates())

    def list_server_groups(self) -> list[dict[str, Any]]:
        return guarded(self._lease, lambda: self._nova.list_server_groups())


class Effects:
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

    def _nova_call(self, call: Callable[[], T]) -> T:
        return guarded(self.lease, call)

    # --- reads -------------------------------------------------------------------------------

    def host(self, host_uuid: str) -> RecoveryHost | None:
        return self._read(lambda s: hosts.get_for_recovery(s, host_uuid))

    def reserved_host_names(self, segment_uuid: str) -> list[str]:
        return self._read(lambda s: hosts.reserved_host_names(s, segment_uuid))

    def spares_taken(self, host: RecoveryHost) -> list[str]:
        """The spares the recoveries of ``host`` took that are still out of the pool."""
        return self._read(
            lambda s: spares.taken_for(
                s, host.uuid, host.failover_segment_id, self.notification_uuid
            )
        )

    def peer_host_names(self, host_name: str) -> list[str]:
        return self._read(lambda s: hosts.peer_names(s, host_name))

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

    # --- database changes ------------------------------------------------------------------------

    def put_host_on_maintenance(self, host_uuid: str, unreserve_spare: bool) -> RecoveryHost:
        """The failed host goes on maintenance (a failed spare is no spare any more)."""

        def maintain(session: orm.Session) -> RecoveryHost:
            host = hosts.get_for_recovery(session, host_uuid)
            if host is None:
                raise exception.HostNotFound(id=host_uuid)
            hosts.put_on_maintenance(
                session, host.uuid, unreserve=unreserve_spare and host.reserved
            )
            return host

        return self._write(maintain)

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

    def take_reserved_host(self, name: str, note: TaskNote | None = None) -> bool:
        """Take a spare; ``note`` is written in the same transaction, only if taken: the
        recovery's progress then names every spare it took (what host return gives back)."""

        def take(session: orm.Session) -> bool:
            if not hosts.take_reserved_host(session, name):
                return False
            if note is not None:
                self._record_note(session, note)
            return True

        return self._write(take)

    def return_spare(self, name: str) -> bool:
        """A spare a recovery took is reserved again; False when it changed meanwhile."""
        return self._write(lambda session: spares.give_back(session, name))

    def give_back_reserved_host(self, name: str) -> None:
        self._write(lambda session: hosts.give_back_reserved_host(session, name))

    def take_evacuation_slot(
        self, cap: int, instance_uuid: str, vmove_id: int | None = None
    ) -> int | None:
        """A slot of the evacuation cap, taken under our claim; None while all are held.

        ``vmove_id``: an evacuation ready to go, whose vmove turns ongoing in the same
        transaction (one write less between the slot and the evacuate request).
        """

        def take(session: orm.Session) -> int | None:
            number = slots.take(
                session,
                cap,
                self.notification_uuid,
                self.lease.owner,
                self.lease.token,
                instance_uuid,
                self._clock.now(),
            )
            if number is not None and vmove_id is not None:
                self._start_vmove(session, vmove_id)
            return number

        started = self._write(take)
        if started is not None and vmove_id is not None:
            metrics.vmove_written(st.VMOVE_ONGOING)
        return started

    def slot_holder(self) -> tuple[str, str, int]:
        """Who our slots name: notification, owner, token (what :meth:`receive_evacuation_slot`
        of another run checks before moving one)."""
        return self.notification_uuid, self.lease.owner, self.lease.token

    def receive_evacuation_slot(
        self,
        number: int,
        giver: tuple[str, str, int],
        instance_uuid: str,
        vmove_id: int | None = None,
    ) -> bool:
        """Take over slot ``number`` from another run of this engine without it ever being
        free; fenced on our claim. False when the giver no longer holds it."""

        def receive(session: orm.Session) -> bool:
            moved = slots.hand_over(
                session,
                number,
                giver,
                self.notification_uuid,
                self.lease.owner,
                self.lease.token,
                instance_uuid,
                self._clock.now(),
            )
            if moved and vmove_id is not None:
                self._start_vmove(session, vmove_id)
            return moved

        moved = self._write(receive)
        if moved and vmove_id is not None:
            metrics.vmove_written(st.VMOVE_ONGOING)
        return moved

    def _start_vmove(self, session: orm.Session, vmove_id: int) -> None:
        vmoves.update(
            session, vmove_id, {"status": st.VMOVE_ONGOING, "start_time": self._clock.now()}
        )

    def give_back_evacuation_slot(self, number: int) -> None:
        """Not fenced: giving a slot back is right whoever owns the claim now."""
        transaction(
            self._db,
            lambda s: slots.give_back(s, number, self.lease.owner, self.lease.token),
            retry_while=self.lease.check,
        )

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

    # --- Nova changes ----------------------------------------------------------------------------

    def disable_service(self, service_id: str, reason: str | None) -> None:
        self._nova_call(lambda: self._nova.disable_service(service_id, reason))

    def enable_service(self, service_id: str) -> None:
        self._nova_call(lambda: self._nova.enable_service(service_id))

    def force_down_service(self, service_id: str) -> None:
        self._nova_call(lambda: self._nova.force_down_service(service_id, True))

    def unset_forced_down(self, service_id: str) -> None:
        self._nova_call(lambda: self._nova.force_down_service(service_id, False))

    def clear_maintenance(self, host_uuid: str) -> bool:
        return self._write(lambda session: hosts.clear_maintenance(session, host_uuid))

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

    def reset_state(self, instance_uuid: str, state: str) -> None:
        self._nova_call(lambda: self._nova.reset_state(instance_uuid, state))

    def stop_server(self, instance_uuid: str) -> None:
        """Stop; recorded first, so that an engine taking over knows what was asked."""
        self._note(instance_uuid, "stop")
        self._nova_call(lambda: self._nova.stop_server(instance_uuid))

    def start_server(self, instance_uuid: str) -> None:
        """Start; recorded first: an engine taking over does not restart it a second time."""
        self._note(instance_uuid, "start")
        self._nova_call(lambda: self._nova.start_server(instance_uuid))

    def _note(self, instance_uuid: str, action: str) -> None:
        self._write(
            lambda s: instances.note_action(s, self.notification_uuid, instance_uuid, action)
        )

    def evacuate(self, instance_uuid: str, host: str | None) -> None:
        if self.reported_at is not None:
            metrics.first_evacuation((self._clock.now() - self.reported_at).total_seconds())
            self.reported_at = None
        self._nova_call(lambda: self._nova.evacuate(instance_uuid, host=host))

    def add_host_to_aggregate(self, aggregate_id: Any, host: str) -> None:
        self._nova_call(lambda: self._nova.add_host_to_aggregate(aggregate_id, host))
