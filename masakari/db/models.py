"""SQLAlchemy models: the reference's four tables, column for column, and the project's own."""

from __future__ import annotations

import datetime
from typing import Any

import sqlalchemy as sa
from oslo_db.sqlalchemy import types as oslo_types
from sqlalchemy import (
    Boolean,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from masakari.db.statuses import RECOVERY_METHODS

NOTIFICATION_STATUSES = ("new", "running", "error", "failed", "ignored", "finished")


def utcnow() -> datetime.datetime:
    """Naive UTC with microseconds zeroed, as the reference stores every timestamp."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


class Base(DeclarativeBase):
    pass


class _Timestamps:
    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, onupdate=utcnow)


class _SoftDelete(_Timestamps):
    """Soft delete as oslo.db does it: ``deleted`` holds the row id once deleted, else 0."""

    deleted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    deleted: Mapped[int | None] = mapped_column(oslo_types.SoftDeleteInteger, default=0)


def soft_delete(model: Any, *criteria: Any, now: datetime.datetime | None = None) -> sa.Update:
    """The UPDATE that soft-deletes the live rows of ``model`` matching ``criteria``.

    ``updated_at`` is set to itself so that its onupdate default does not fire: the reference
    leaves it alone on delete.
    """
    return (
        sa.update(model)
        .where(*criteria, model.deleted == 0)
        .values(deleted=model.id, deleted_at=now or utcnow(), updated_at=model.updated_at)
        .execution_options(synchronize_session=False)
    )


class Segment(_SoftDelete, Base):
    __tablename__ = "failover_segments"
    __table_args__ = (
        UniqueConstraint("name", "deleted", name="uniq_segment0name0deleted"),
        UniqueConstraint("uuid", name="uniq_segments0uuid"),
        Index("segments_service_type_idx", "service_type"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    service_type: Mapped[str] = mapped_column(String(255), nullable=False)
    description: Mapped[str | None] = mapped_column(Text)
    recovery_method: Mapped[str] = mapped_column(
        Enum(*RECOVERY_METHODS, name="recovery_methods"), nullable=False
    )
    enabled: Mapped[bool | None] = mapped_column(Boolean, default=True)


class Host(_SoftDelete, Base):
    __tablename__ = "hosts"
    __table_args__ = (
        UniqueConstraint("name", "deleted", name="uniq_host0name0deleted"),
        UniqueConstraint("uuid", name="uniq_host0uuid"),
        Index("hosts_type_idx", "type"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    reserved: Mapped[bool | None] = mapped_column(Boolean, default=False)
    type: Mapped[str] = mapped_column(String(255), nullable=False)
    control_attributes: Mapped[str] = mapped_column(Text, nullable=False)
    failover_segment_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("failover_segments.uuid"), nullable=False
    )
    on_maintenance: Mapped[bool | None] = mapped_column(Boolean, default=False)

    # Eager: every host body nests its segment, and sessions close before serialisation.
    failover_segment: Mapped[Segment] = relationship(
        Segment,
        primaryjoin="and_(Host.failover_segment_id == Segment.uuid, Segment.deleted == 0)",
        foreign_keys=[failover_segment_id],
        lazy="joined",
        viewonly=True,
    )


class Notification(_SoftDelete, Base):
    __tablename__ = "notifications"
    __table_args__ = (
        UniqueConstraint("notification_uuid", name="uniq_notification0uuid"),
        # The project's (migration d4e6f8a0b2c4): the lists' filters, then their order.
        Index("masakari_notifications_created_idx", "deleted", "created_at", "id"),
        Index("masakari_notifications_status_idx", "status", "deleted", "created_at", "id"),
        Index(
            "masakari_notifications_source_host_idx",
            "source_host_uuid",
            "deleted",
            "created_at",
            "id",
        ),
        Index(
            "masakari_notifications_generated_idx", "deleted", "generated_time", "created_at", "id"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    notification_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    generated_time: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    source_host_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    type: Mapped[str] = mapped_column(String(36), nullable=False)
    payload: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(
        Enum(*NOTIFICATION_STATUSES, name="notification_status"), nullable=False
    )
    failover_segment_uuid: Mapped[str | None] = mapped_column(String(36))
    message: Mapped[str | None] = mapped_column(Text)


class VMove(_SoftDelete, Base):
    __tablename__ = "vmoves"
    __table_args__ = (
        UniqueConstraint("uuid", name="uniq_vmove0uuid"),
        Index("masakari_vmoves_notification_idx", "notification_uuid"),  # the project's
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    notification_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    instance_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    instance_name: Mapped[str] = mapped_column(String(255), nullable=False)
    source_host: Mapped[str | None] = mapped_column(String(255))
    dest_host: Mapped[str | None] = mapped_column(String(255))
    start_time: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    end_time: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    type: Mapped[str | None] = mapped_column(String(36))
    status: Mapped[str | None] = mapped_column(String(255))
    message: Mapped[str | None] = mapped_column(Text)


# --- the project's own tables (migrations b6e0c1a2f9d4, e7a2c9d41f03, c3f1d8a7b2e5,
# c3d5f7a9b1e2, a3d5f7c9e1b2, d4e6f8a0b2c4, f2b4d6e8a0c1, f1c3e5a7b9d2, a7c9e1b3d5f8,
# b8d0f2a4c6e9,
# after the reference's head)


class RecoveryTask(_Timestamps, Base):
    """One task of one recovery attempt: what recovery_workflow_details shows."""

    __tablename__ = "masakari_recovery_tasks"
    __table_args__ = (
        UniqueConstraint(
            "notification_uuid", "attempt", "position", name="uniq_recovery_task0attempt0position"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    notification_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    progress: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    # JSON list of {"timestamp", "message", "progress"}, appended as the task goes.
    details: Mapped[str] = mapped_column(Text, nullable=False, default="[]")


class NotificationClaim(_Timestamps, Base):
    """Which engine owns a running notification, until when; an expired claim is taken over."""

    __tablename__ = "masakari_notification_claims"

    notification_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner: Mapped[str] = mapped_column(String(255), nullable=False)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    expires_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    # Bumped by every fenced write (migration e7a2c9d41f03): see masakari/db/claims.py.
    fence: Mapped[int] = mapped_column(sa.BigInteger, nullable=False, default=0, server_default="0")


class InstanceLock(_Timestamps, Base):
    """An instance the engine locked in Nova for an evacuation and has not unlocked yet.

    The lock is the engine's, not the user's: whoever finishes the notification (another
    engine after a crash, or a retry after a failed unlock) unlocks what is listed here.
    """

    __tablename__ = "masakari_instance_locks"

    instance_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    notification_uuid: Mapped[str] = mapped_column(String(36), nullable=False)


class HostGuard(Base):
    """A row per host whose change serialises per-host decisions across every process.

    A locking read is node-local on Galera; two transactions that both change this row
    conflict on every backend, and one of them fails or waits.
    """

    __tablename__ = "masakari_host_guards"

    host_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    version: Mapped[int] = mapped_column(
        sa.BigInteger, nullable=False, default=0, server_default="0"
    )


class InstancePlan(Base):
    """How a recovery found an instance before it first changed it, and what it asked since."""

    __tablename__ = "masakari_instance_plans"

    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)
    notification_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    vm_state: Mapped[str | None] = mapped_column(String(255))
    stop_after: Mapped[bool] = mapped_column(Boolean, nullable=False)
    last_action: Mapped[str | None] = mapped_column(String(16))


class NotificationHold(Base):
    """A notification the engine must not take until an operator releases it (c3f1d8a7b2e5).

    Its status stays ``new`` in the reference's table; the API shows ``held`` from 1.4.
    """

    __tablename__ = "masakari_notification_holds"

    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)
    notification_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    # Why it is held: one of masakari.db.holds' REASON_* values.
    reason: Mapped[str] = mapped_column(String(255), nullable=False)
    # Set by the operator's release; until then the engine does not take the notification.
    released_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class NotificationFailure(Base):
    """Why the last failed attempt of a notification failed (c3f1d8a7b2e5); API 1.4 shows it."""

    __tablename__ = "masakari_notification_failures"

    updated_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime, default=utcnow, onupdate=utcnow
    )
    notification_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    reason: Mapped[str] = mapped_column(Text, nullable=False)


class EngineHeartbeat(Base):
    """A running engine (its claim owner id) and when it last said it was alive."""

    __tablename__ = "masakari_engine_heartbeats"

    engine: Mapped[str] = mapped_column(String(255), primary_key=True)
    host: Mapped[str] = mapped_column(String(255), nullable=False)
    started_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    heartbeat_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)


class EvacuationSlot(Base):
    """One of ``max_evacuations_in_flight`` slots, numbered from 0 (migration a3d5f7c9e1b2).

    Held while its holder's claim on the notification lives (same owner and attempt, not
    expired): a slot needs no renewal of its own, and the slots of an engine that died are
    free when its claims expire. The primary key makes two holders of one number impossible.
    """

    __tablename__ = "masakari_evacuation_slots"

    slot: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    notification_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    owner: Mapped[str] = mapped_column(String(255), nullable=False)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False)
    instance_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    taken_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)


class DetectorLease(_Timestamps, Base):
    """Which engine runs the failure detector, until when (migration f1c3e5a7b9d2).

    One row per detector (``name``); the holder renews ``expires_at``, an expired row is taken
    by another engine with a new ``token``. ``fence`` is bumped by every notification the
    detector records, in the transaction that records it: a takeover and a late report of
    the lease's former holder conflict on this row (masakari/db/detector_lease.py).
    """

    __tablename__ = "masakari_detector_leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(255), nullable=False)
    token: Mapped[int] = mapped_column(Integer, nullable=False)
    expires_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    fence: Mapped[int] = mapped_column(sa.BigInteger, nullable=False, default=0, server_default="0")
    # Until when a mass event's storm cooldown holds what the detector finds (None: none).
    storm_until: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class FailureEvidence(Base):
    """One signal about a host failure, kept with its notification (migration f1c3e5a7b9d2).

    ``kind``: ``report`` (a monitor's or the detector's report), ``nova`` (the host's
    nova-compute state and heartbeat age), ``fence`` (what of host fencing's word a verdict
    used), ``verdict`` (what the engine's rule decided; ``value``: the host_status a
    confirmation gave the flow), ``shadow`` (what [verdict] shadow_rule would have decided,
    without effect; ``value``: confirm, wait or hold). ``failed``: whether the signal says
    the host failed (True), is alive (False), or cannot tell (None); for a verdict, whether
    it confirmed (a shadow's: would confirm, would hold, None: would wait).
    """

    __tablename__ = "masakari_failure_evidence"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    notification_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    source: Mapped[str] = mapped_column(String(255), nullable=False)
    failed: Mapped[bool | None] = mapped_column(Boolean)
    # The signal's value, for code: a report's host_status, nova-compute's state, a power state.
    value: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[str] = mapped_column(Text, nullable=False)
    observed_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)


class DetectorShadowReport(Base):
    """What the failure detector in shadow mode would have done with a host it found down
    (migration a7c9e1b3d5f8; the project's own table, the reference has no detector).

    ``decision``: ``report`` (a notification for recovery), ``hold`` (one held for an
    operator, ``gate`` breaker or storm) or ``defer`` (nothing this poll, ``gate`` cliff, cap,
    breaker or storm). A row per change of decision for one failure, not per poll.
    """

    __tablename__ = "masakari_detector_shadow_reports"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    detector: Mapped[str] = mapped_column(String(64), nullable=False)
    engine: Mapped[str] = mapped_column(String(255), nullable=False)
    host_name: Mapped[str] = mapped_column(String(255), nullable=False)
    segment_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    decision: Mapped[str] = mapped_column(String(16), nullable=False)
    gate: Mapped[str | None] = mapped_column(String(16))
    detail: Mapped[str] = mapped_column(Text, nullable=False)
    observed_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)


# Fencing evidence carries microseconds (MariaDB's DATETIME keeps whole seconds otherwise).
PreciseTime = DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


class FenceAttempt(Base):
    """One call an engine made to prove a failed host dead (migration f2b4d6e8a0c1).

    Written before the call (``result`` ``sent``) and completed after it, under the run's
    claim: an engine that takes the recovery over reads what was sent and what answered.
    """

    __tablename__ = "masakari_fence_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    notification_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    # The claim it was made under: the engine and its fencing token.
    owner: Mapped[str] = mapped_column(String(255), nullable=False)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False)
    host_name: Mapped[str] = mapped_column(String(255), nullable=False)
    # The driver's place in the host's escalation list (0 first; -1: no driver).
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    # DriverSpec.describe(): type, label and address, never a credential.
    driver: Mapped[str] = mapped_column(String(255), nullable=False)
    action: Mapped[str] = mapped_column(String(16), nullable=False)
    result: Mapped[str] = mapped_column(String(16), nullable=False)
    message: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime.datetime] = mapped_column(PreciseTime, nullable=False)
    duration: Mapped[float | None] = mapped_column(Float)


class KdumpMessage(Base):
    """A fence_kdump message an engine's listener received (migration f2b4d6e8a0c1)."""

    __tablename__ = "masakari_kdump_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source_address: Mapped[str] = mapped_column(String(255), nullable=False)
    received_at: Mapped[datetime.datetime] = mapped_column(PreciseTime, nullable=False)
    engine: Mapped[str] = mapped_column(String(255), nullable=False)


class FenceCheck(Base):
    """The last readiness check of one driver of a host's escalation list (f2b4d6e8a0c1).

    Written by the engines (the API never reads the fencing file); a host the file gives
    no driver has one row, position 0, result ``unfenced``.
    """

    __tablename__ = "masakari_fence_checks"

    host_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    driver: Mapped[str] = mapped_column(String(255), nullable=False)
    result: Mapped[str] = mapped_column(String(16), nullable=False)
    message: Mapped[str | None] = mapped_column(Text)
    checked_at: Mapped[datetime.datetime] = mapped_column(PreciseTime, nullable=False)
    duration: Mapped[float | None] = mapped_column(Float)
    engine: Mapped[str] = mapped_column(String(255), nullable=False)


class Drill(Base):
    """A fire drill on one host (migration b8d0f2a4c6e9): the database is its work queue.

    ``new`` until an engine claims it (``owner``, ``token``, ``lease_expires_at``, renewed
    while it runs), ``running``, then ``succeeded`` or ``failed``. ``active_host`` holds the
    host's uuid until the drill ends: its unique key lets one drill at a time run on a host
    without a lock (two creations conflict on the insert). ``report``: JSON, the canaries,
    the plan's predictions and what was measured.
    """

    __tablename__ = "masakari_drills"
    __table_args__ = (
        UniqueConstraint("uuid", name="uniq_drill0uuid"),
        UniqueConstraint("active_host", name="uniq_drill0active_host"),
        Index("drills_segment_idx", "segment_uuid", "id"),
        Index("drills_status_idx", "status", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    segment_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    host_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    host_name: Mapped[str] = mapped_column(String(255), nullable=False)
    active_host: Mapped[str | None] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    no_fence: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    allow_untagged: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    move_back: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    requested_by: Mapped[str] = mapped_column(String(16), nullable=False)
    owner: Mapped[str | None] = mapped_column(String(255))
    token: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # Bumped by every fenced write: a takeover racing with it conflicts on the row.
    fence: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    lease_expires_at: Mapped[datetime.datetime | None] = mapped_column(PreciseTime)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    report: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime.datetime] = mapped_column(PreciseTime, nullable=False)
    started_at: Mapped[datetime.datetime | None] = mapped_column(PreciseTime)
    ended_at: Mapped[datetime.datetime | None] = mapped_column(PreciseTime)


class DrillPhase(Base):
    """One timed phase of a drill (migration b8d0f2a4c6e9): written when it starts
    (``result`` ``running``) and completed when it ends, by the claim's holder."""

    __tablename__ = "masakari_drill_phases"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    drill_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    name: Mapped[str] = mapped_column(String(32), nullable=False)
    # running, ok, late (ok, past the plan's prediction), failed
    result: Mapped[str] = mapped_column(String(16), nullable=False)
    token: Mapped[int] = mapped_column(Integer, nullable=False)
    started_at: Mapped[datetime.datetime] = mapped_column(PreciseTime, nullable=False)
    ended_at: Mapped[datetime.datetime | None] = mapped_column(PreciseTime)
    predicted_seconds: Mapped[float | None] = mapped_column(Float)
    detail: Mapped[str | None] = mapped_column(Text)


Index("recovery_tasks_notification_idx", RecoveryTask.notification_uuid)
Index("instance_locks_notification_idx", InstanceLock.notification_uuid)
Index("failure_evidence_notification_idx", FailureEvidence.notification_uuid)
Index("fence_attempts_notification_idx", FenceAttempt.notification_uuid)
Index("detector_shadow_reports_host_idx", DetectorShadowReport.host_name, DetectorShadowReport.id)
Index("kdump_messages_source_idx", KdumpMessage.source_address, KdumpMessage.received_at)


class RoomHold(Base):
    """Failover room masakari keeps out of reach of new boots: what it added to the
    ``reserved`` amount of one Placement inventory (migration c9e1a3b5d7f0; the project's own
    table, ``[capacity] hold_room``).

    ``base_reserved`` is what the inventory reserved without masakari; ``written`` what
    masakari last wrote (base + held); ``pending`` a write about to be sent, recorded first,
    so that a process that dies between its write and its record still knows the value as
    its own. A reserved amount that is neither ``written`` nor ``pending`` is somebody
    else's (nova-compute writes its own on its inventory refresh): it becomes the new base.
    """

    __tablename__ = "masakari_room_holds"
    __table_args__ = (UniqueConstraint("provider_uuid", "resource_class", name="uniq_room_hold"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    segment_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    host_name: Mapped[str] = mapped_column(String(255), nullable=False)
    provider_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    resource_class: Mapped[str] = mapped_column(String(255), nullable=False)
    base_reserved: Mapped[int] = mapped_column(Integer, nullable=False)
    held: Mapped[int] = mapped_column(Integer, nullable=False)
    written: Mapped[int | None] = mapped_column(Integer)
    pending: Mapped[int | None] = mapped_column(Integer)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)


class RoomHoldSegment(Base):
    """A segment's held room as a whole: the row whose change serialises the engine that
    holds it and a recovery that releases it, and the recovery it is released for (the
    room stays released while that notification is being recovered)."""

    __tablename__ = "masakari_room_hold_segments"

    segment_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    released_for: Mapped[str | None] = mapped_column(String(36))
    released_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class Quarantine(Base):
    """A degraded host taken out of service before it fails: disabled in Nova, on
    maintenance in masakari, its instances live-migrated away (migration d1f3a5c7e9b2; the
    project's own table, ``[quarantine]``).

    ``status``: ``requested`` (waiting for an engine), ``held`` (a gate stopped it: an
    operator starts or cancels it), ``running``, then ``done`` (every instance that could
    move moved), ``partial`` (some left, ``masakari_quarantine_moves`` says why), ``failed``,
    ``cancelled``, ``superseded`` (the host failed meanwhile: its recovery took over) or
    ``released`` (returned to service by an operator). ``owner`` and ``lease_until``: the
    engine running it, and until when its claim holds without a renewal.
    """

    __tablename__ = "masakari_quarantines"
    __table_args__ = (Index("quarantines_host_idx", "host_uuid", "status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False, unique=True)
    host_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    host_name: Mapped[str] = mapped_column(String(255), nullable=False)
    segment_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    source: Mapped[str] = mapped_column(String(16), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    # The signal that asked for it (an alert's fingerprint, a Redfish system), for its end.
    signal: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    hold_reason: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[str | None] = mapped_column(Text)
    owner: Mapped[str | None] = mapped_column(String(255))
    lease_until: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    signal_ended_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    started_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    ended_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class QuarantineMove(Base):
    """One instance of a quarantined host: ``pending``, ``migrating`` (sent, at
    ``sent_at``), ``moved`` (to ``target``), ``failed`` (Nova's migration ended in error) or
    ``left`` (not moved, ``detail`` says why)."""

    __tablename__ = "masakari_quarantine_moves"
    __table_args__ = (
        UniqueConstraint("quarantine_uuid", "server_id", name="uniq_quarantine_move"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    quarantine_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    server_id: Mapped[str] = mapped_column(String(36), nullable=False)
    server_name: Mapped[str] = mapped_column(String(255), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    target: Mapped[str | None] = mapped_column(String(255))
    detail: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    ended_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


Index("drill_phases_drill_idx", DrillPhase.drill_uuid, DrillPhase.id)
