"""Recovery of one notification: which handler, and the status (and message) it ends with."""

from __future__ import annotations

import dataclasses
import logging

from masakari.db import statuses
from masakari.db.queue import NotificationData
from masakari.engine.context import RunContext
from masakari.engine.payloads import InstancePayload
from masakari.engine.recovery import host, instance, process
from masakari.engine.recovery.flow import FlowTasks

LOG = logging.getLogger(__name__)

# The reference's text, typo included: clients see it (engine-segment-disabled).
SEGMENT_DISABLED_MESSAGE = "Recovery aboart: the segment HA is disabled."


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: str
    message: str | None = None
    # The source host's segment's method, for the recovery duration metric.
    recovery_method: str | None = None
    # Whether notification.process.end is sent: the reference's engine sends none for a VM
    # event it does not handle.
    announce_end: bool = True


def recover(run: RunContext, flows: FlowTasks, notification: NotificationData) -> Outcome:
    """Run the recovery a notification asks for. Raises Cancelled when the run must stop."""
    source = run.effects.hosts.host(notification.source_host_uuid)
    if source is None:
        LOG.error(
            "Notification %s: its host %s no longer exists.",
            notification.notification_uuid,
            notification.source_host_uuid,
        )
        run.effects.record_failure(f"Host {notification.source_host_uuid} no longer exists.")
        return Outcome(statuses.ERROR)
    if not source.segment_enabled:
        LOG.info(
            "Notification %s of type %s is ignored, because the failover segment is disabled.",
            notification.notification_uuid,
            notification.type,
        )
        return Outcome(statuses.IGNORED, SEGMENT_DISABLED_MESSAGE, source.recovery_method)

    LOG.info(
        "Processing notification %s of type: %s",
        notification.notification_uuid,
        notification.type,
    )
    kind, host_uuid, text = notification.type, notification.source_host_uuid, notification.payload
    if kind == "COMPUTE_HOST":
        status = host.handle(run, flows, kind, host_uuid, text, notification.generated_time)
    elif kind == "PROCESS":
        status = process.handle(run, flows, kind, host_uuid, text)
    elif kind == "VM":
        judged = run.judge_instance(run, notification) if run.judge_instance else None
        if judged is not None and judged.takes_instance:
            # Left to the recovery the judgement asked for (a storage path lost: restarted in
            # place, the instance would hang on the same path).
            return Outcome(statuses.IGNORED, judged.message, source.recovery_method)
        status = instance.handle(run, flows, text)
        if not instance.is_handled_event(InstancePayload.parse(text)):
            return Outcome(status, recovery_method=source.recovery_method, announce_end=False)
    else:
        LOG.warning("Notification %s has an unknown type %s", notification.notification_uuid, kind)
        return Outcome(statuses.IGNORED, recovery_method=source.recovery_method)
    # The engine logs the outcome: only it knows whether an error is final (a retry) or not.
    return Outcome(status, recovery_method=source.recovery_method)
