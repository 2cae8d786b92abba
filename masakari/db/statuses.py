"""Status names as the reference stores them: notifications and vmoves."""

from __future__ import annotations

# Notifications.
NEW = "new"
RUNNING = "running"
ERROR = "error"
FAILED = "failed"
IGNORED = "ignored"
FINISHED = "finished"
# Never stored in notifications.status: a ``new`` notification with a hold row
# (masakari.db.holds), shown as held from API microversion 1.4.
HELD = "held"

# VMoves, and their one type.
VMOVE_PENDING = "pending"
VMOVE_ONGOING = "ongoing"
VMOVE_SUCCEEDED = "succeeded"
VMOVE_FAILED = "failed"
VMOVE_EVACUATION = "evacuation"
