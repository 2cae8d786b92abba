"""Recovery of one notification: which handler, and the status (and message) it ends with."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import TYPE_CHECKING, Any

from masakari.db import work
from masakari.engine.context import RunContext

if TYPE_CHECKING:
    from masakari.engine.tasks import FlowTasks

LOG = logging.getLogger(__name__)

# The reference's text, typo included: clients see it (engine-segment-disabled).
SEGMENT_DISABLED_MESSAGE = "Recovery aboart: the segment HA is disabled."


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: str
    message: str | None = None


def _payload(notification: work.NotificationData) -> dict[str, Any]:
    try:
        payload = json.loads(notification.payload or "{}")
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def recover(run: RunContext, flows: FlowTasks, notification: work.NotificationData) -> Outcome:
    """Run the recovery a notification asks for. Raises Cancelled when the run must stop."""
    from masakari.engine.recovery import host, instance, process

    with run.db.reader() as session:
        source = work.get_host(session, notification.source_host_uuid)
    if source is None:
        LOG.error(
            "Notification %s: its host %s no longer exists.",
            notification.notification_uuid,
            notification.source_host_uuid,
        )
        return Outcome(work.ERROR)
    if not source.segment_enabled:
        LOG.info(
            "Notification %s of type %s is ignored, because the failover segment is disabled.",
            notification.notification_uuid,
            notification.type,
        )
        return Outcome(work.IGNORED, SEGMENT_DISABLED_MESSAGE)

    LOG.info(
        "Processing notification %s of type: %s",
        notification.notification_uuid,
        notification.type,
    )
    payload = _payload(notification)
    handlers = {
        "PROCESS": process.handle,
        "VM": instance.handle,
        "COMPUTE_HOST": host.handle,
    }
    handler = handlers.get(notification.type)
    if handler is None:
        LOG.warning(
            "Notification %s has an unknown type %s",
            notification.notification_uuid,
            notification.type,
        )
        return Outcome(work.IGNORED)
    status = handler(run, flows, notification, payload)
    LOG.info("Notification %s exits with status: %s.", notification.notification_uuid, status)
    return Outcome(status)
