"""The reason of a failed recovery as the last progress message of its failed task.

Rendered when read (API microversion 1.4, ``masakari-manage notification show``), never
stored: the progress rows stay as the engine wrote them, so the details a 1.3 client reads
are unchanged. The failed task is the last one shown: a flow stops at the task that fails,
and when a recovery fails outside any task (no reserved host left, say) the message goes to
the last task that ran.
"""

from __future__ import annotations

from typing import Any

from masakari.db import statuses
from masakari.db.models import NotificationFailure

MESSAGE = "Recovery failed: %s"


def failed(status: str) -> bool:
    """Whether a notification in ``status`` has a failed task: ``running`` may be a retry
    whose tasks have not failed (yet), ``finished`` a retry that succeeded."""
    return status in (statuses.ERROR, statuses.FAILED)


def with_reason(
    details: list[dict[str, Any]], failure: NotificationFailure | None
) -> list[dict[str, Any]]:
    """``details`` (recovery_workflow_details of a failed notification) with the recorded
    reason appended to the last task's progress_details."""
    if failure is None or not details:
        return details
    last = details[-1]
    entry = {
        # As the engine writes its own timestamps: str() of a naive UTC time.
        "timestamp": "" if failure.updated_at is None else str(failure.updated_at),
        "message": MESSAGE % failure.reason,
        "progress": str(float(last["progress"])),
    }
    return [*details[:-1], {**last, "progress_details": [*last["progress_details"], entry]}]
