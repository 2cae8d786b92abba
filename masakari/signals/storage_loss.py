"""Quarantine's storage signal: I/O errors of several instances of one host, judged a lost
storage path of the host ([quarantine] storage_error_instances; docs/operations.md,
Storage-path loss).

Judged by the engine as it handles each I/O error report (a VM notification, event
``IO_ERROR``), so that the reports of every API process count: when ``storage_error_instances``
distinct instances of the host reported one within ``storage_error_window`` seconds before
this report, the host's segment's action is taken. ``conservative`` requests the host's
quarantine (source ``storage``, signal ``storage:<host>``: every engine that judges the same
burst finds the one quarantine); ``aggressive`` records a host failure notification, which
the host-failure flow fences and evacuates (an equal payload each time: the intake's
duplicate rule keeps one per window). Both writes are fenced by the claim on the report.

A report of a judged host does not restart its instance in place: the quarantine or the
host's recovery moves it. When the action was refused (quarantine off), the report is
handled as the reference handles it.
"""

from __future__ import annotations

import datetime
import logging

from oslo_config import cfg

from masakari import exception, notifier
from masakari.conf import quarantine as quarantine_opts
from masakari.db import notifications as notifications_db
from masakari.db.database import Database
from masakari.db.hosts import RecoveryHost
from masakari.db.queue import NotificationData
from masakari.engine.context import RunContext
from masakari.engine.judges import Judged
from masakari.engine.payloads import InstancePayload
from masakari.ha import intake, notifications, quarantines
from masakari.metrics import quarantine as quarantine_metrics

LOG = logging.getLogger(__name__)

IO_ERROR = "IO_ERROR"
SIGNAL_PREFIX = "storage:"
# Instances named in a reason, at most.
NAMED = 5
# What the aggressive action reports: constant, so that two engines judging one burst record
# equal payloads (one is a duplicate). masakari_signal says who wrote it.
HOST_FAILURE = {
    "event": "STOPPED",
    "host_status": "NORMAL",
    "cluster_status": "ONLINE",
    "masakari_signal": "storage",
}
# Outcomes after which the host's instances are another recovery's to move.
_TAKEN = ("requested", "held", "already", "recovering", "recorded", "duplicate", "maintenance")
# What the aggressive action's outcome means for the reporting instance.
_AFTER = {
    "maintenance": ": its instances are another's to move",
    "refused": ": the instance is restarted in place",
}


class StorageJudge:
    """The engine's InstanceJudge: :func:`judge`, and the versioned notification of a host
    failure it records (``notification.create.end``, as the API's create and the detector
    send)."""

    def __init__(self, notifier_: notifier.Notifier) -> None:
        self.notifier = notifier_

    def __call__(self, run: RunContext, notification: NotificationData) -> Judged | None:
        return judge(run, notification, self.notifier)


def judge(
    run: RunContext, notification: NotificationData, notifier_: notifier.Notifier | None = None
) -> Judged | None:
    """The judgement of the host of an I/O error report; None when it is not judged (off,
    another event, too few instances within the window, the host gone)."""
    options = run.conf.quarantine
    payload = InstancePayload.parse(notification.payload)
    if options.storage_error_instances <= 0 or (payload.event or "").upper() != IO_ERROR:
        return None
    until = notification.generated_time
    since = until - datetime.timedelta(seconds=options.storage_error_window)
    host_uuid = notification.source_host_uuid
    stored = run.effects.seam.read(
        lambda s: notifications_db.payloads_of_host(s, "VM", host_uuid, since, until)
    )
    failing = sorted(_io_error_instances(stored))
    if len(failing) < options.storage_error_instances:
        return None
    host = run.effects.hosts.host(host_uuid)
    if host is None:
        return None
    action = quarantine_opts.storage_loss_action(
        run.conf, host.failover_segment_id, host.segment_name or ""
    )
    named = ", ".join(failing[:NAMED]) + (", ..." if len(failing) > NAMED else "")
    reason = (
        f"storage path lost: {len(failing)} instances reported I/O errors within "
        f"{options.storage_error_window} s ({named})"
    )
    if action == quarantine_opts.AGGRESSIVE:
        outcome, what = record_host_failure(
            run.conf,
            run.effects.seam.db,
            host.name,
            run.clock.now(),
            notifier_,
            run.effects.seam.fence,
        )
        what += _AFTER.get(outcome, "")
    else:
        outcome, what = _quarantine(run, host, reason)
    quarantine_metrics.storage_judged(action, outcome)
    message = f"Host {host.name} judged: {reason}; {action}: {what}"
    LOG.warning("Notification %s: %s", run.notification_uuid, message)
    return Judged(message, takes_instance=outcome in _TAKEN)


def _io_error_instances(stored: list[str | None]) -> set[str]:
    found = set()
    for text in stored:
        payload = InstancePayload.parse(text)
        if (payload.event or "").upper() == IO_ERROR and payload.instance_uuid:
            found.add(payload.instance_uuid)
    return found


def _quarantine(run: RunContext, host: RecoveryHost, reason: str) -> tuple[str, str]:
    try:
        row, new = quarantines.request(
            run.conf,
            run.effects.seam.db,
            host.uuid,
            quarantines.STORAGE,
            reason,
            signal=SIGNAL_PREFIX + host.name,
            fence=run.effects.seam.fence,
        )
    except quarantines.HostInRecovery as exc:
        return "recovering", exc.message
    except exception.MasakariError as exc:
        return "refused", f"no quarantine ({exc.message}): the instance is restarted in place"
    if not new:
        return "already", f"quarantine {row.uuid} ({row.status}) already open"
    outcome = "held" if row.status == "held" else "requested"
    return outcome, f"quarantine {row.uuid} {outcome}"


def record_host_failure(
    conf: cfg.ConfigOpts,
    db: Database,
    host_name: str,
    now: datetime.datetime,
    notifier_: notifier.Notifier | None,
    fence: notifications.Fence | None = None,
) -> tuple[str, str]:
    """Record the host failure a lost storage path asks for, through the intake as a
    monitor's report (the mass-failure guard counts it): the aggressive action, and the
    conservative one's fallback for instances that could not be live-migrated
    (masakari.engine.quarantine). Its outcome and what it did, said for a message."""
    data = {
        "type": "COMPUTE_HOST",
        "hostname": host_name,
        "generated_time": now.isoformat(),
        "payload": HOST_FAILURE,
    }
    try:
        row, held = notifications.record(db, data, intake.Rules.from_conf(conf), fence=fence)
    except exception.DuplicateNotification:
        return "duplicate", "its host failure is already recorded"
    except exception.HostOnMaintenance:
        return "maintenance", "the host is on maintenance"
    except exception.MasakariError as exc:
        return "refused", f"no host failure ({exc.message})"
    if notifier_ is not None:
        fields = notifier.notification_fields(row)
        notifier_.emit("notification.create.end", notifier.notification_payload(fields))
    where = f", held ({held})" if held else ""
    return "recorded", f"host failure notification {row.notification_uuid} recorded{where}"
