"""One recovery run: a claimed notification through its flow to its outcome and notifications.

The run acts only through its :class:`Effects` (fenced by the claim's lease). It ends in one
of three ways: the outcome written (and the versioned notification sent), the claim released
without an outcome (cancelled: another engine takes it over at once), or nothing written at
all (the lease ran out: the engine that takes it over finishes it).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from oslo_config import cfg

from masakari import metrics, notifier
from masakari.db import holds, queue, statuses
from masakari.db.database import Database
from masakari.engine.capacity import Capacities
from masakari.engine.context import InstanceJudge, RunContext
from masakari.engine.effects import Effects
from masakari.engine.errors import Cancelled, Held
from masakari.engine.fencing import HostFencing
from masakari.engine.host_notices import HostNotices
from masakari.engine.hostpoll import HostPoller
from masakari.engine.lease import Lease, LeaseLost
from masakari.engine.ports import Clock, Nova, RoomRelease
from masakari.engine.recovery import dispatch
from masakari.engine.recovery.flow import FlowTasks
from masakari.engine.slots import EvacuationSlots
from masakari.engine.workers import Work

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Runner:
    """What every run of this engine shares: options, database, clients, flows."""

    conf: cfg.ConfigOpts
    db: Database
    nova: Nova
    placement: Capacities
    clock: Clock
    flows: FlowTasks
    notifier: notifier.Notifier
    # Gives a claim up without an outcome (the heartbeat's release).
    release: Callable[[dict[str, int]], None]
    slots: EvacuationSlots | None = None
    host_poller: HostPoller | None = None
    fencing: HostFencing | None = None
    room: RoomRelease | None = None
    judge_instance: InstanceJudge | None = None

    def process(self, item: Work, lease: Lease) -> str | None:
        """Recover a notification we hold a claim on; write the outcome. Returns the status."""
        notification_uuid = item.notification_uuid
        with self.db.reader() as session:
            notification = queue.get_notification(session, notification_uuid)
        if notification is None or notification.status != statuses.RUNNING:
            self.release({notification_uuid: item.token})
            return None
        fields = notifier.notification_fields(notification)
        effects = Effects(
            self.db,
            self.nova,
            self.clock,
            lease,
            notification_uuid,
            reported_at=notification.generated_time,
        )
        announced = self.notifier.enabled and _announced(effects, item, notification)
        if announced:
            start = {**fields, "status": _found_as(item)}
            self.notifier.emit("notification.process.start", notifier.notification_payload(start))
        effects.hosts.host_notices = HostNotices(self.notifier)
        run = RunContext(
            conf=self.conf,
            effects=effects,
            clock=self.clock,
            cancel=item.cancel,
            slots=self.slots,
            host_poller=self.host_poller,
            placement=self.placement,
            fencing=self.fencing,
            room=self.room,
            after_error=item.after_error,
            judge_instance=self.judge_instance,
        )
        started = self.clock.monotonic()
        try:
            outcome = dispatch.recover(run, self.flows, notification)
        except Held as held:
            # Written with the claim given up: an operator releases or cancels it.
            metrics.notification_held(holds.metric_reason(held.reason))
            fault = notifier.exception_payload(held)
            payload = notifier.notification_payload({**fields, "status": statuses.HELD}, fault)
            self.notifier.emit("notification.process.held", payload, warning=True)
            return None
        except LeaseLost:
            LOG.warning(
                "Notification %s: claim not renewed in time or taken over; this engine stops "
                "acting on it",
                notification_uuid,
            )
            return None
        except Cancelled:
            LOG.warning("Recovery of notification %s stopped before its end", notification_uuid)
            self.release({notification_uuid: item.token})
            return None
        except Exception as exc:
            LOG.exception("Recovery of notification %s failed", notification_uuid)
            outcome = dispatch.Outcome(statuses.ERROR)
            run.failure = exc
        status = outcome.status
        if item.retry and status == statuses.ERROR:
            # The retry loop gives a notification one more chance, then gives up on it.
            status = statuses.FAILED
        log_outcome(notification_uuid, status, item.retry)
        item.finishing = True
        try:
            written = effects.finish(status, outcome.message)
        except LeaseLost:
            LOG.warning(
                "Notification %s: the database stayed away past the claim; its outcome %s is "
                "left to the engine that takes it over",
                notification_uuid,
                status,
            )
            return None
        if not written:
            LOG.warning(
                "Notification %s was taken from this engine; its outcome %s is dropped",
                notification_uuid,
                status,
            )
            return None
        if announced and (run.failure is not None or outcome.announce_end):
            self._notify_outcome(fields, run.failure)
        metrics.recovery_finished(
            notification.type,
            outcome.recovery_method or "none",
            status,
            self.clock.monotonic() - started,
        )
        return status

    def _notify_outcome(self, fields: dict[str, Any], failure: BaseException | None) -> None:
        # As the reference: a failed recovery sends process.error (with why) instead of end,
        # both with the notification as it was during the recovery (``fields``: running),
        # the reference's engine sending them before it writes the outcome.
        if failure is None:
            payload = notifier.notification_payload(fields)
            self.notifier.emit("notification.process.end", payload)
            return
        fault = notifier.exception_payload(failure)
        payload = notifier.notification_payload(fields, fault)
        self.notifier.emit("notification.process.error", payload, error=True)


def _announced(effects: Effects, item: Work, notification: queue.NotificationData) -> bool:
    """Whether the run sends notification.process.* at all. The reference's engine checks
    a reported notification's host and segment before it says anything: a host gone or a
    disabled segment ends it without a versioned notification. Its retry task goes straight
    to the recovery, announced."""
    if item.retry:
        return True
    try:
        source = effects.hosts.host(notification.source_host_uuid)
    except LeaseLost:
        return False  # the recovery that follows finds it out and stops
    return source is not None and source.segment_enabled


def _found_as(item: Work) -> str:
    """The status the engine found the notification in, which process.start shows as the
    reference's does: ``error`` for the retry of a failed attempt, ``running`` for a
    takeover (the project's: a claim that expired), else ``new``."""
    if item.after_error:
        return statuses.ERROR
    if item.host_uuid is None:
        return statuses.RUNNING
    return statuses.NEW


def log_outcome(notification_uuid: str, status: str, retry: bool) -> None:
    """One line per attempt, saying whether another attempt follows, so that an attempt's
    error and the final failure of the same notification do not read as a contradiction."""
    attempt = "retry" if retry else "attempt"
    if status == statuses.FAILED:
        LOG.error(
            "Notification %s: recovery %s failed; final status: failed (no further retry).",
            notification_uuid,
            attempt,
        )
    elif status == statuses.ERROR:
        LOG.warning(
            "Notification %s: recovery %s failed; status: error (process_unfinished_notifications "
            "retries it once).",
            notification_uuid,
            attempt,
        )
    else:
        LOG.info(
            "Notification %s: recovery %s ended; status: %s.", notification_uuid, attempt, status
        )
