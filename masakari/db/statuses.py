"""Names as the reference stores them: the statuses of notifications and vmoves, and the
recovery methods of segments."""

from __future__ import annotations

import enum

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


class RecoveryMethod(enum.StrEnum):
    """A segment's recovery method (failover_segments.recovery_method)."""

    AUTO = "auto"
    RESERVED_HOST = "reserved_host"
    AUTO_PRIORITY = "auto_priority"
    RH_PRIORITY = "rh_priority"


RECOVERY_METHODS = tuple(method.value for method in RecoveryMethod)
