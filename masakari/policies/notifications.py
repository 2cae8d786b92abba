"""Rules of the notification API."""

from __future__ import annotations

from oslo_policy import policy

from masakari.policies import base

_NAME = base.PREFIX + ":notifications:%s"

INDEX = _NAME % "index"
DETAIL = _NAME % "detail"
CREATE = _NAME % "create"
DISCOVERABLE = _NAME % "discoverable"
RELEASE = _NAME % "release"
CANCEL = _NAME % "cancel"

RULES: list[policy.RuleDefault] = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.RULE_ADMIN_API,
        description="List notifications.",
        operations=[{"method": "GET", "path": "/notifications"}],
    ),
    policy.DocumentedRuleDefault(
        name=DETAIL,
        check_str=base.RULE_ADMIN_API,
        description="Show one notification, with its recovery progress from microversion 1.1.",
        operations=[{"method": "GET", "path": "/notifications/{notification_id}"}],
    ),
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.RULE_ADMIN_API,
        description="Report a failure: what the masakari monitors call.",
        operations=[{"method": "POST", "path": "/notifications"}],
    ),
    policy.DocumentedRuleDefault(
        name=RELEASE,
        check_str=base.RULE_ADMIN_API,
        description="Release a held notification for recovery (microversion 1.4).",
        operations=[{"method": "POST", "path": "/notifications/{notification_id}/action"}],
    ),
    policy.DocumentedRuleDefault(
        name=CANCEL,
        check_str=base.RULE_ADMIN_API,
        description="Cancel a held notification: nothing is recovered (microversion 1.4).",
        operations=[{"method": "POST", "path": "/notifications/{notification_id}/action"}],
    ),
    policy.RuleDefault(
        name=DISCOVERABLE,
        check_str=base.RULE_ADMIN_API,
        description="Whether the notifications extension is listed by the extensions API.",
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    return RULES
