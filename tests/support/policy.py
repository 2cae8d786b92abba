"""The policy tests' facts: a member's credentials, the rules the reference does not have, and
an entry point as installed."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from masakari.policies import drills, hosts, notifications, quarantines, segments

MEMBER = {"user_id": "u-member", "project_id": "p-member", "roles": ["member", "reader"]}


def entry_point(group: str, name: str) -> Any:
    return {ep.name: ep for ep in metadata.entry_points(group=group)}[name].load()


# Rules the reference does not have: the held-notification action of microversion 1.4, the
# recovery plan and readiness of 1.5, the fencing and evidence fields of 1.6 and 1.7, the
# fire drills of 1.9.
PROJECT_ONLY = {
    notifications.RELEASE,
    notifications.CANCEL,
    notifications.FENCING,
    notifications.EVIDENCE,
    hosts.RECOVERY_PLAN,
    segments.READINESS,
    quarantines.CREATE,
    quarantines.INDEX,
    quarantines.DETAIL,
    quarantines.START,
    quarantines.CANCEL,
    quarantines.RELEASE,
    drills.CREATE,
    drills.INDEX,
    drills.SHOW,
}
